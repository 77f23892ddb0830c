"""Pairwise LLM reranking: compare products two at a time, aggregate the preferences into an order.

``PairwiseReranker`` reranks the top ``top_k`` (default 10) of each query with a :class:`PairwiseComparator`
(forced choice, ``allow_neither``, ``both_orders``) and an aggregation strategy from ``aggregation.py``:
"allpairs" (k(k-1)/2 comparisons, all concurrent, Copeland win counts) or "sort" (stable merge sort, about
k*log2(k) comparisons; an abstention keeps the prior order). Queries run concurrently (the base class), and the
comparisons of one query run concurrently as far as the strategy allows. A pair without a decision is not an
error: it is an abstention, counted, that leaves the prior order in place.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from superb.llm.comparator import PairwiseComparator, PromptTemplate
from superb.llm.types import ChatRequest, Completion
from superb.options import Flag, OneOf, TopK
from superb.transformers.aggregation import AllPairs, MergeSort, strategy as make_strategy
from superb.transformers.base import Candidates, Reranker, Text, scores_from_order

DEFAULT_TEMPLATE = "pairwise_compare"
STRATEGIES = ("allpairs", "sort")





class _Counted:
    """Adapter giving the comparator an ``acomplete`` that goes through the reranker's counted ``complete``."""

    def __init__(self, reranker: Reranker):
        self._reranker = reranker

    async def acomplete(self, request: ChatRequest) -> Completion:
        return await self._reranker.complete(request)


class PairwiseReranker(Reranker):
    """Rerank the top_k of each query by pairwise LLM preferences.

    ``stats`` holds the base counters (calls, failures, tokens, queries, reranked...) plus ``comparisons`` (pairs
    the strategy asked for), ``comparison_abstentions`` and the comparator's counters prefixed ``pairwise_``
    (pairs, calls, decisions, abstentions, neither, disagreements, unparseable, failed_calls, forced_neither).
    """

    type_name = "pairwise"

    @classmethod
    def default_template(cls, options: Mapping[str, Any]) -> str | None:
        return DEFAULT_TEMPLATE

    def __init__(self, llm: Any = None, *, text: Text = None, top_k: TopK = 10,
                 strategy: OneOf(*STRATEGIES) = "allpairs", allow_neither: Flag = False, both_orders: Flag = False,
                 template: str | PromptTemplate = DEFAULT_TEMPLATE, answer_tokens: int = 8, tag: str = ""):
        super().__init__(llm, text=text, top_k=top_k, tag=tag)
        self.strategy: AllPairs | MergeSort = make_strategy(strategy)
        # Candidates arrive as rendered text (ProductText, already within its token budget): passed as strings.
        self.comparator = PairwiseComparator(_Counted(self), template, fields=("text",),
                                             allow_neither=allow_neither, both_orders=both_orders,
                                             max_chars=10**6, max_tokens=answer_tokens, tag=self.tag)

    def max_calls(self, n: int) -> int:
        """The strategy's most comparisons for n, each asked in both orders with ``both_orders``."""
        return self.strategy.comparisons(n) * (2 if self.comparator.both_orders else 1)

    def __repr__(self) -> str:
        c = self.comparator
        return (f"PairwiseReranker(top_k={self.top_k}, strategy={self.strategy.name!r}, "
                f"allow_neither={c.allow_neither}, both_orders={c.both_orders}, text={self.text!r})")

    async def score(self, cands: Candidates) -> Sequence[float]:
        docs = cands.texts

        async def cmp(i: int, j: int) -> str | None:
            return (await self.comparator.compare(cands.query, docs[i], docs[j])).winner

        ranking = await self.strategy.rank(len(cands), cmp)
        self.stats["comparisons"] += ranking.comparisons
        self.stats["comparison_abstentions"] += ranking.abstentions
        self._sync_comparator_stats()
        return scores_from_order(ranking.order)

    def _sync_comparator_stats(self) -> None:
        for key, value in self.comparator.stats.items():
            self.stats[f"pairwise_{key}"] = value

    @property
    def comparator_stats(self) -> Counter:
        return self.comparator.stats
