"""Pairwise reranking by label probabilities (type ``pairwise_prob``; PRP, Qin et al. 2023).

Every comparison is ``superb.llm.preference.PairwisePreference``: a one-token "A or B" label request on the template
``pairwise_ab``, read from the probabilities of the letter tokens, over both orders by default, so that
p(i over j) = mean(P_A(i, j), 1 - P_A(j, i)) and a position bias cancels. The preferences are aggregated by a
strategy object from ``selection.py`` (``strategy``):

- ``"allpairs"`` (default): every pair, soft win sums (``pairwise_prob_score`` = sum over opponents of p). k(k-1)/2 pairs.
- ``"sliding"``: PRP-sliding, ``passes`` m bubble passes from the bottom (the top m settled, the rest in prior
  order): sum over t < m of (k-1-t) pairs, fewer when a pair is asked again (memo).
- ``"sort"``: stable merge sort deciding i before j when p > 0.5: at most k*ceil(log2 k) - 2**ceil(log2 k) + 1 pairs.
- ``"heap"``: PRP heapsort (llm-rankers' ``pairwise --method heapsort``): a binary max-heap of preferences settles the
  top ``select`` (the rest in prior order): at most 2(k-1) + (select-1) x 2 floor(log2 k) pairs (k = 20, select =
  10: 110).

LLM calls per query = pairs asked x 2 (both orders) or x 1 (``both_orders = false``). Within one query a pair is asked
once (memo; ``comparisons_memo`` counts the repeats answered without a call). With ``allpairs`` and both orders, the
k(k-1) ordered prompts are submitted grouped by the product shown as A, so that consecutive prompts share
instructions, query and first product (llama.cpp's prompt cache reuses the longest shared prefix). A pair without a
preference (p None: a failed call or no letter in either order) counts as 0.5 in ``allpairs`` and keeps the prior
order in ``sliding`` and ``sort``. ``stats``: the base counters, ``comparisons`` (strategy questions),
``comparisons_memo``, ``comparison_ties``, ``comparison_unanswered``, the preference counters prefixed ``pref_``
(pairs, orders, answered_logprobs, no_preference, ties), and its fallbacks unprefixed (``fallback_generated_letter``
when the endpoint returns no logprobs, ``fallback_no_label``, ``fallback_failed_call``) so that a results table shows
them.
"""

from __future__ import annotations

import asyncio
from typing import Any, Mapping, Sequence

from superb.errors import SpecError
from superb.llm.preference import DEFAULT_TEMPLATE, PairwisePreference
from superb.llm.prompts import TemplateName
from superb.llm.types import ChatRequest, Completion
from superb.options import Flag, OneOf, PositiveInt, TopK
from superb.transformers.base import Candidates, Reranker, Text, scores_from_order, text_dataset
from superb.transformers.templates import stage_template
from superb.transformers.selection import BubbleTopK, PairHeapTopK, PairMergeSort, SoftAllPairs, check_select

STRATEGIES = ("allpairs", "sliding", "sort", "heap")



def pair_strategy(name: str, passes: int = 10, select: int = 10) -> SoftAllPairs | BubbleTopK | PairMergeSort | PairHeapTopK:
    """The strategy object for ``name`` ("allpairs" | "sliding" | "sort" | "heap")."""
    if name == "allpairs":
        return SoftAllPairs()
    if name == "sliding":
        return BubbleTopK(size=2, passes=passes)
    if name == "sort":
        return PairMergeSort()
    if name == "heap":
        return PairHeapTopK(select=select)
    raise ValueError(f"unknown pairwise strategy {name!r}; allowed: {list(STRATEGIES)}")


class Counted:
    """An ``acomplete`` that goes through a reranker's counted ``complete`` (for LLM-layer objects)."""

    def __init__(self, reranker: Reranker):
        self._reranker = reranker

    async def acomplete(self, request: ChatRequest) -> Completion:
        return await self._reranker.complete(request)


class PairwiseProbReranker(Reranker):
    """Orders the top_k of each query by pairwise preferences read from the probabilities of the letters A/B (type
    ``pairwise_prob``): per query, pairs asked x 2 calls (both orders) or x 1 (``both_orders = false``); pairs asked
    = k(k-1)/2 for ``strategy = "allpairs"``, fewer for ``"sliding"`` and ``"sort"`` (module docstring).

    Score: ``"allpairs"``: the soft win count (sum over opponents of p(i over j)), a strength; ``"sliding"`` and
    ``"sort"``: only an order (n - position). Score column: ``pairwise_prob_score`` (``<stage>_score`` when the spec
    names the stage). Options: ``strategy``, ``passes`` (``"sliding"`` only), ``select`` (``"heap"`` only), ``template``, ``both_orders`` and the common options
    (``top_k``, ``fields``, the product-text budget, ``guard``: the base's and ProductText's constructors).
    """

    type_name = "pairwise_prob"

    @classmethod
    def default_template(cls, options: Mapping[str, Any]) -> str | None:
        return DEFAULT_TEMPLATE

    def __init__(self, llm: Any = None, *, text: Text = None, top_k: TopK = 20,
                 strategy: OneOf(*STRATEGIES) = "allpairs", passes: PositiveInt = 10, select: PositiveInt = 10,
                 both_orders: Flag = True, template: TemplateName = None, tag: str = ""):
        super().__init__(llm, text=text, top_k=top_k, tag=tag)
        self.strategy = pair_strategy(strategy, passes, select)
        template = stage_template(template, DEFAULT_TEMPLATE, text_dataset(text), self.type_name)
        self.preference = PairwisePreference(Counted(self), template, both_orders=both_orders, fields=("text",),
                                             max_chars=10**6, tag=self.tag)

    def max_calls(self, n: int) -> int:
        """The strategy's most pairs for n, each asked in both orders with ``both_orders``."""
        return self.strategy.comparisons(n) * (2 if self.preference.both_orders else 1)

    def __repr__(self) -> str:
        return (f"PairwiseProbReranker(top_k={self.top_k}, strategy={self.strategy!r}, "
                f"both_orders={self.preference.both_orders}, text={self.text!r})")

    @classmethod
    def check_options(cls, opts: dict[str, Any], path: str, given: Mapping[str, Any]) -> None:
        if "passes" in given and opts["strategy"] != "sliding":
            raise SpecError(f"{path}.passes", f"only applies to strategy \"sliding\"; strategy is {opts['strategy']!r}")
        if "select" in given and opts["strategy"] != "heap":
            raise SpecError(f"{path}.select", f"only applies to strategy \"heap\"; strategy is {opts['strategy']!r}")
        check_select(opts, given, path)

    async def score(self, cands: Candidates) -> Sequence[float]:
        pref, texts, n = self.preference, cands.texts, len(cands)
        orders: dict[tuple[int, int], asyncio.Future] = {}  # (shown as A, shown as B) -> Choice, asked once
        pairs: dict[tuple[int, int], Any] = {}  # the key of a pair -> its Preference (or the Preference's future)

        def order(a: int, b: int) -> asyncio.Future:
            if (a, b) not in orders:
                orders[(a, b)] = asyncio.ensure_future(pref.ask(cands.query, texts[a], texts[b]))
            return orders[(a, b)]

        if isinstance(self.strategy, SoftAllPairs) and pref.both_orders:
            # every ordered pair will be asked: submit them grouped by Product A, so that consecutive prompts share
            # the instructions, the query AND the first product (llama.cpp's prompt cache reuses that prefix)
            for a in range(n):
                for b in range(n):
                    if a != b:
                        order(a, b)

        async def preference(key: tuple[int, int]):
            i, j = key
            shown = [order(i, j), order(j, i)] if pref.both_orders else [order(i, j)]
            return pref.preference(await asyncio.gather(*shown))

        async def choose(items: tuple[int, ...]) -> list[float] | None:
            i, j = items
            key = (min(i, j), max(i, j)) if pref.both_orders else (i, j)
            if key in pairs:
                self.stats["comparisons_memo"] += 1
            else:
                pairs[key] = asyncio.ensure_future(preference(key))
            p = (await pairs[key]).p
            if p is None:
                return None
            return [p, 1.0 - p] if key == (i, j) else [1.0 - p, p]

        result = await self.strategy.rank(n, choose)
        self.stats["comparisons"] += result.comparisons
        self.stats["comparison_ties"] += result.ties
        self.stats["comparison_unanswered"] += result.unanswered
        self._sync_preference_stats()
        return result.scores if result.scores is not None else scores_from_order(result.order)

    def _sync_preference_stats(self) -> None:
        for key, value in self.preference.stats.items():
            self.stats[key if key.startswith("fallback_") else f"pref_{key}"] = value
