"""Contextual calibration of a letter distribution (Zhao et al., ICML 2021): the position prior divided out.

A small model asked "which of Products A, B, C is best?" answers mostly with the letter's position: on the Chorus dev
split the 1.5B put "A" first in 679 of 683 three-product sets (results/chorus_dev_comparative). Asked the same
question with every product replaced by a content-free filler ("N/A"), it gives about the same distribution
(A 0.41, B 0.32, C 0.27): that is its prior over positions for this query and this number of products. Calibration
divides the answer by that prior, item by item, and renormalises:

    p_cal(i) = (p(i) / prior(i)) / sum_j p(j) / prior(j)

so a product is preferred only where the model moved probability towards it beyond its position's share.

:class:`PositionPrior` asks the content-free request once per (query, number of products) and reuses it (a memo of
tasks per event loop, dropped with the loop; the response cache serves later runs). Costs 1 call per query and set size, short
prompts. A prior floor of ``FLOOR`` stands in for a letter absent from the top logprobs. When the content-free request
has no answer (failed call, no letter, no logprobs), the distribution is used uncalibrated and the owner's stats
count ``fallback_uncalibrated``; ``calibration_requests`` counts the content-free requests asked. Only distributions
read from logprobs are calibrated: a generated letter (one-hot) or no answer is returned as it is, with no request.
"""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from typing import Any, Callable, Sequence

from superb.llm.answers import Choice, read_choice
from superb.llm.types import ChatRequest

FILLER = "N/A"
FLOOR = 1e-3  # a prior probability below this (or absent) counts as this: no division by zero, no huge boost

RequestFor = Callable[[str, Sequence[str], str], ChatRequest]  # (query, product texts, tag) -> the label request


def calibrate(dist: Sequence[float], prior: Sequence[float]) -> tuple[float, ...]:
    """``dist`` divided by ``prior`` item by item and renormalised; all-zero stays all-zero."""
    if len(dist) != len(prior):
        raise ValueError(f"calibrate: {len(dist)} probabilities but a prior over {len(prior)} positions")
    ratios = [p / max(q, FLOOR) for p, q in zip(dist, prior)]
    total = sum(ratios)
    return tuple(r / total for r in ratios) if total > 0 else tuple(0.0 for _ in ratios)


class PositionPrior:
    """The content-free distribution over n letters for a query, asked once through ``owner.complete``."""

    def __init__(self, request_for: RequestFor):
        self.request_for = request_for
        # loop -> {(query, n): task}; a task belongs to its loop, and a closed loop's entries go with it
        self._memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"PositionPrior(filler={FILLER!r})"

    def request(self, query: str, n: int, tag: str = "") -> ChatRequest:
        return self.request_for(query, [FILLER] * n, tag)

    async def prior(self, owner: Any, query: str, n: int) -> tuple[float, ...] | None:
        tasks = self._memo.setdefault(asyncio.get_running_loop(), {})
        if (query, n) not in tasks:
            tasks[(query, n)] = asyncio.ensure_future(self._ask(owner, query, n))
        return await tasks[(query, n)]

    async def _ask(self, owner: Any, query: str, n: int) -> tuple[float, ...] | None:
        owner.stats["calibration_requests"] += 1
        choice = read_choice(await owner.complete(self.request(query, n, getattr(owner, "tag", ""))), n)
        return choice.dist if choice.source == "logprobs" else None

    async def apply(self, owner: Any, query: str, choice: Choice) -> Choice:
        """``choice`` with its distribution calibrated by the query's prior for its number of letters; as it is when
        it was not read from logprobs, and (counted) when the prior has no answer."""
        if choice.source != "logprobs" or choice.dist is None:
            return choice
        prior = await self.prior(owner, query, len(choice.dist))
        if prior is None:
            owner.stats["fallback_uncalibrated"] += 1
            return choice
        return dataclasses.replace(choice, dist=calibrate(choice.dist, prior))
