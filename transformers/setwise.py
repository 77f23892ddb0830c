"""Setwise reranking by label probabilities (type ``setwise``; Zhuang et al., SIGIR 2024).

The model sees ``set_size`` c candidates labelled Product A, B, C, ... (template ``setwise_best``: instructions and
query first, the products fenced, the short question last) and is asked for the ONE best as a one-token label
request; the answer is the distribution over the c letters at the first generated position (renormalised over the
letters: ``superb.llm.preference.read_choice``). ``debias = true`` also asks with the set reversed and averages the two
distributions (item by item), so a preference for a label position cancels: 2 calls per comparison (with sets of 3 the
middle position keeps its share). ``calibrate = true`` divides each distribution by the model's content-free
distribution for the query and set size (contextual calibration, ``position_prior.py``): every position cancels, at 1
extra call per query and set size.

Strategies (``strategy``, objects from ``selection.py``), both settling the top ``select`` k of the top_k n and
leaving the rest in their prior order:

- ``"heap"`` (default): a heap whose nodes have c-1 children; building it asks one set per inner node plus one per
  swap down the heap (at most n in all), each of the k-1 further extractions at most ceil(log_{c-1} n) more: at most
  n + (k-1) x ceil(log_{c-1} n) sets. n = 20, c = 3, k = 10: at most 20 + 9 x 5 = 65 (44 measured with the bench's
  consistent fake model: a sift stops when the parent wins).
- ``"bubble"``: k bubble passes of windows of c from the bottom, each pass t asking ceil((n-1-t)/(c-1)) sets
  (n = 20, c = 3, k = 10: 75 sets), fewer when a window is asked again unchanged (memo).

LLM calls per query = sets asked (minus memo repeats) x (2 with ``debias``). Fallbacks, counted under ``fallback_*``
names: the generated letter when the endpoint returns no logprobs (``fallback_generated_letter``), no letter among
the top logprobs (``fallback_no_label``), a failed call (``fallback_failed_call``); a set without an answer (with
``debias``: either order without one) keeps its items where they are (``comparison_unanswered``). ``chose_first_item``
counts the answers whose most probable letter is A, out of ``set_orders``: a model's position bias (a heap's parent
is shown first, so a model that favours A stops every sift at once).
"""

from __future__ import annotations

import asyncio
from typing import Any, Mapping, Sequence

from superb.llm.answers import LETTERS, Choice, read_choice
from superb.llm.preference import count_choice
from superb.llm.prompts import TemplateName
from superb.llm.prompts import load_template
from superb.llm.types import ChatRequest
from superb.options import Flag, OneOf, PositiveInt, TopK
from superb.transformers.base import Candidates, Reranker, Text, scores_from_order, text_dataset
from superb.transformers.templates import stage_template
from superb.transformers.position_prior import PositionPrior
from superb.transformers.selection import BubbleTopK, HeapTopK, check_select

DEFAULT_TEMPLATE = "setwise_best"
STRATEGIES = ("heap", "bubble")


def label_list(n: int) -> str:
    """"A, B or C" for n = 3."""
    labels = list(LETTERS[:n])
    return labels[0] if n == 1 else ", ".join(labels[:-1]) + " or " + labels[-1]


class SetwiseReranker(Reranker):
    """Settles the top ``select`` of the top_k of each query by asking for the best of sets of ``set_size`` products
    (type ``setwise``), read from the probabilities of the letters: per query, one call per set asked (at most n +
    (k-1) x ceil(log_(c-1) n) sets for ``strategy = "heap"``; n = 20, c = 3, k = 10: at most 65), x 2 with
    ``debias``, +1 call per query and set size with ``calibrate``.

    Score: only an order (n - position; the products below ``select`` keep their prior order), in ``setwise_score``
    (``<stage>_score`` when the spec names the stage). Options: ``strategy`` ("heap" | "bubble"), ``set_size``,
    ``select``, ``debias``, ``calibrate`` and the common options (``top_k``, ``fields``, the product-text budget,
    ``guard``: the base's and ProductText's constructors).
    """

    type_name = "setwise"

    @classmethod
    def default_template(cls, options: Mapping[str, Any]) -> str | None:
        return DEFAULT_TEMPLATE

    def __init__(self, llm: Any = None, *, text: Text = None, top_k: TopK = 20, strategy: OneOf(*STRATEGIES) = "heap",
                 set_size: PositiveInt = 3, select: PositiveInt = 10, debias: Flag = False, calibrate: Flag = False,
                 template: TemplateName = None, tag: str = ""):
        super().__init__(llm, text=text, top_k=top_k, tag=tag)
        if not 2 <= set_size <= len(LETTERS):
            raise ValueError(f"SetwiseReranker: set_size must be between 2 and {len(LETTERS)} (single-letter labels), "
                             f"got {set_size}")
        if strategy == "heap":
            self.strategy: HeapTopK | BubbleTopK = HeapTopK(size=set_size, select=select)
        elif strategy == "bubble":
            self.strategy = BubbleTopK(size=set_size, passes=select)
        else:
            raise ValueError(f"SetwiseReranker: unknown strategy {strategy!r}; allowed: {list(STRATEGIES)}")

        self.template = load_template(stage_template(template, DEFAULT_TEMPLATE, text_dataset(text), self.type_name))
        self.debias = bool(debias)
        self.prior = PositionPrior(lambda query, texts, tag: self.request(query, texts)) if calibrate else None

    @classmethod
    def check_options(cls, opts: dict[str, Any], path: str, given: Mapping[str, Any]) -> None:
        check_select(opts, given, path)

    def max_calls(self, n: int) -> int:
        """The strategy's most sets for n (x 2 with ``debias``), plus one content-free request per set size (2..c)
        with ``calibrate``."""
        sets = self.strategy.comparisons(n) * (2 if self.debias else 1)
        return sets + (min(self.strategy.size, n) - 1 if self.prior is not None and n > 1 else 0)

    def __repr__(self) -> str:
        return (f"SetwiseReranker(top_k={self.top_k}, strategy={self.strategy!r}, debias={self.debias}, "
                f"calibrate={self.prior is not None})")

    def request(self, query: str, texts: Sequence[str]) -> ChatRequest:
        """The label request showing ``texts`` as Product A, B, ... in this order."""
        prompt = self.template.render(query=query, products=list(zip(LETTERS, texts)), labels=label_list(len(texts)))
        return ChatRequest.label(prompt, template=self.template.id, tag=self.tag)

    async def ask(self, query: str, texts: Sequence[str]) -> Choice:
        self.stats["set_orders"] += 1
        choice = read_choice(await self.complete(self.request(query, texts)), len(texts))
        count_choice(self.stats, choice)
        if choice.dist is not None and len(choice.dist) > 1 and choice.dist[0] > max(choice.dist[1:]):
            self.stats["chose_first_item"] += 1  # position bias, beside set_orders: a heap's sift stops when A wins
        return choice if self.prior is None else await self.prior.apply(self, query, choice)

    async def best(self, query: str, texts: Sequence[str]) -> list[float] | None:
        """P(best) per text in the order given; with ``debias`` the mean over the given and the reversed order."""
        if not self.debias:
            return None if (c := await self.ask(query, texts)).dist is None else list(c.dist)
        given, reverse = await asyncio.gather(self.ask(query, texts), self.ask(query, list(reversed(texts))))
        if given.dist is None or reverse.dist is None:
            return None
        back = list(reversed(reverse.dist))
        return [(a + b) / 2.0 for a, b in zip(given.dist, back)]

    async def score(self, cands: Candidates) -> Sequence[float]:
        memo: dict[tuple[int, ...], asyncio.Future] = {}

        async def choose(items: tuple[int, ...]) -> list[float] | None:
            if items in memo:
                self.stats["comparisons_memo"] += 1
            else:
                memo[items] = asyncio.ensure_future(self.best(cands.query, [cands.texts[i] for i in items]))
            return await memo[items]

        result = await self.strategy.rank(len(cands), choose)
        self.stats["comparisons"] += result.comparisons
        self.stats["comparison_ties"] += result.ties
        self.stats["comparison_unanswered"] += result.unanswered
        return scores_from_order(result.order)
