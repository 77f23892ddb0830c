"""Turning pairwise preferences into a ranking: strategies over items 0..n-1 given in their prior order.

A comparator is a coroutine ``cmp(i, j) -> "A" | "B" | None``: "A" means item i is preferred, "B" item j, None an
abstention (no decision). Strategies are objects with ``async rank(n, cmp) -> Ranking``:

* :class:`AllPairs` asks all n(n-1)/2 pairs (i before j in prior order), concurrently, and orders by Copeland
  score (1 per win, 0.5 per abstention); equal scores keep their prior order.
* :class:`MergeSort` is a stable top-down merge sort: at most about n*log2(n) comparisons; the two halves of each
  split are sorted concurrently. An abstention keeps the prior order (the element from the left half, which came
  first, goes first).

Both are pure apart from awaiting ``cmp``; :func:`win_count_order` is the pure scoring of a finished set of decisions.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Awaitable, Callable, Mapping

Comparator = Callable[[int, int], Awaitable["str | None"]]


@dataclass
class Ranking:
    """The new order (item indices, best first), and what it cost."""

    order: list[int]
    comparisons: int = 0
    abstentions: int = 0
    decisions: dict[tuple[int, int], str | None] = field(default_factory=dict)  # (i, j) -> "A" | "B" | None
    scores: list[float] | None = None  # Copeland scores per item index (AllPairs only)


def win_count_order(n: int, decisions: Mapping[tuple[int, int], str | None]) -> tuple[list[int], list[float]]:
    """Order items 0..n-1 by Copeland score from pairwise ``decisions``: a win counts 1, an abstention (None)
    0.5 for both items. Ties keep the prior order. Returns (order, scores)."""
    scores = [0.0] * n
    for (i, j), winner in decisions.items():
        if not (0 <= i < n and 0 <= j < n) or i == j:
            raise ValueError(f"win_count_order: pair {(i, j)} is not a pair of distinct items in 0..{n - 1}")
        if winner == "A":
            scores[i] += 1.0
        elif winner == "B":
            scores[j] += 1.0
        elif winner is None:
            scores[i] += 0.5
            scores[j] += 0.5
        else:
            raise ValueError(f"win_count_order: decision for {(i, j)} is {winner!r}; expected 'A', 'B' or None")
    order = sorted(range(n), key=lambda k: (-scores[k], k))
    return order, scores


class AllPairs:
    """Compare every pair of the n items (n(n-1)/2 comparisons, all concurrent), order by Copeland score."""

    name = "allpairs"
    answer_dependent = False  # the same n(n-1)/2 questions whatever the answers

    @staticmethod
    def comparisons(n: int) -> int:
        return n * (n - 1) // 2

    async def rank(self, n: int, cmp: Comparator) -> Ranking:
        pairs = list(combinations(range(n), 2))
        winners = await asyncio.gather(*(cmp(i, j) for i, j in pairs))
        decisions = dict(zip(pairs, winners))
        order, scores = win_count_order(n, decisions)
        return Ranking(order=order, comparisons=len(pairs), abstentions=sum(w is None for w in winners),
                       decisions=decisions, scores=scores)


class MergeSort:
    """Stable top-down merge sort with a comparator that may abstain (abstention = keep the prior order).

    At most n*ceil(log2 n) - 2**ceil(log2 n) + 1 comparisons (25 for n = 10, against 45 for all pairs); the two
    halves of every split are sorted concurrently."""

    name = "sort"
    answer_dependent = True  # which items meet depends on the earlier decisions (an abstention ends a merge sooner)

    async def rank(self, n: int, cmp: Comparator) -> Ranking:
        result = Ranking(order=[])
        result.order = await self._sort(list(range(n)), cmp, result)
        return result

    @staticmethod
    def comparisons(n: int) -> int:
        """The most comparisons for n items (the class docstring's bound)."""
        if n < 2:
            return 0
        levels = math.ceil(math.log2(n))
        return n * levels - 2 ** levels + 1

    async def _sort(self, items: list[int], cmp: Comparator, result: Ranking) -> list[int]:
        if len(items) <= 1:
            return items
        mid = len(items) // 2
        left, right = await asyncio.gather(self._sort(items[:mid], cmp, result), self._sort(items[mid:], cmp, result))
        return await self._merge(left, right, cmp, result)

    @staticmethod
    async def _merge(left: list[int], right: list[int], cmp: Comparator, result: Ranking) -> list[int]:
        out: list[int] = []
        a = b = 0
        while a < len(left) and b < len(right):
            i, j = left[a], right[b]  # every item of `left` came before every item of `right` in prior order
            winner = await cmp(i, j)
            result.comparisons += 1
            result.decisions[(i, j)] = winner
            if winner is None:
                result.abstentions += 1
            if winner == "B":
                out.append(j)
                b += 1
            else:  # "A" or abstention: the earlier item stays first
                out.append(i)
                a += 1
        return out + left[a:] + right[b:]


STRATEGIES: dict[str, type[AllPairs] | type[MergeSort]] = {AllPairs.name: AllPairs, MergeSort.name: MergeSort}


def strategy(name: str) -> AllPairs | MergeSort:
    """The strategy object for ``name`` ("allpairs" | "sort")."""
    try:
        return STRATEGIES[name]()
    except KeyError:
        raise ValueError(f"unknown pairwise strategy {name!r}; allowed: {sorted(STRATEGIES)}") from None
