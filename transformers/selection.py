"""Ranking strategies over a *chooser*: which of a few items is best, as probabilities.

A chooser is a coroutine ``choose(items) -> Sequence[float] | None``: ``items`` are item indices (0..n-1, the prior
order) in the order they are shown to the model; the answer is, per item, the probability that it is the best of
them (a pairwise preference is the chooser of two items: ``[p, 1 - p]``), or None when the model gave no answer.
A strategy is an object with ``async rank(n, choose) -> Selection``. Every decision reads the argmax of the answer;
a tie or no answer is decided by the prior order (bubble and merge sort: the items stay where they are; heap: the
item earliest in the prior order wins), and is counted.

- :class:`SoftAllPairs`: every pair once, concurrently; score = sum over opponents of p(i over j) (no answer = 0.5).
  n(n-1)/2 comparisons. Returns the soft win sums as scores.
- :class:`BubbleTopK` (``size`` c, ``passes`` m): pass t moves a window of c items from the bottom of the list up to
  position t, one step of c-1 at a time, moving the window's best to the window's top, so after pass t the item at
  position t is settled (PRP-sliding for c = 2; the setwise bubble sort for c > 2). Comparisons: sum over t < m of
  ceil((n-1-t)/(c-1)). Items below the m settled ones keep their prior order.
- :class:`HeapTopK` (``size`` c >= 3, ``select`` k): a heap whose nodes have c-1 children; each sift step asks for the
  best of a parent and its children (setwise heap sort, Zhuang et al. 2024). Building the heap asks once per inner
  node ((n-2)//(c-1) + 1) plus once per swap down the heap (at most n comparisons in all: the sum of the nodes'
  heights), each of the k-1 further extractions at most ceil(log_{c-1}(n)) more. The k extracted items come first,
  the rest keep their prior order. Ties and unanswered sets go to the item earliest in
  the prior order, so a model that never answers leaves the prior order intact.
- :class:`PairHeapTopK` (``select`` k): PRP heapsort, a binary max-heap of pairwise preferences (one or two pairs per
  level of a sift); the k extracted items come first, the rest keep their prior order. At most 2(n-1) +
  (k-1) x 2 floor(log2 n) pairs.
- :class:`PairMergeSort`: the stable merge sort of ``aggregation.MergeSort`` deciding i before j when p(i over j) >
  0.5; p = 0.5 or no answer keeps the prior order. At most n*ceil(log2 n) - 2**ceil(log2 n) + 1 comparisons.

``Selection.comparisons`` counts the chooser calls a strategy made; the chooser itself may answer a repeated
question from a per-query memo (the rerankers count that apart), so LLM calls can be fewer.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from itertools import combinations
from typing import Awaitable, Callable, Mapping, Sequence

from superb.errors import SpecError
from superb.transformers.aggregation import MergeSort

Chooser = Callable[[tuple[int, ...]], Awaitable["Sequence[float] | None"]]


def check_select(opts: dict, given: Mapping, path: str) -> None:
    """A spec's ``select`` (setwise bubble: its passes) may not pass ``top_k``, the candidates it works on: a row
    named for its depth would settle fewer than it says. Only a value the spec gives is checked (the default is
    clipped to the candidates, as the strategies do)."""
    top_k = opts.get("top_k")
    if "select" in given and top_k is not None and opts["select"] > top_k:
        raise SpecError(f"{path}.select", f"{opts['select']} is more than top_k = {top_k}, the candidates of each "
                                          f"query it works on; give select <= {top_k} (select = {top_k} orders them "
                                          f"all) or a larger top_k")


@dataclass
class Selection:
    """The new order (item indices, best first), optional scores per item index, and what it took."""

    order: list[int]
    comparisons: int = 0  # chooser calls
    unanswered: int = 0  # chooser calls that returned None (prior order kept)
    ties: int = 0  # answers whose maximum was shared (prior order kept among the tied)
    scores: list[float] | None = None


def best_of(dist: Sequence[float] | None) -> int | None:
    """Index of the most probable item; the first one on ties (the item shown first); None without an answer."""
    if dist is None or not len(dist):
        return None
    top = max(dist)
    return next(i for i, p in enumerate(dist) if p == top)


def best_by_prior(items: Sequence[int], dist: Sequence[float] | None) -> int:
    """Index (into ``items``) of the most probable item; on ties, or without an answer, the item earliest in the prior
    order (the smallest item index)."""
    if dist is None:
        return min(range(len(items)), key=lambda k: items[k])
    top = max(dist)
    return min((k for k, p in enumerate(dist) if p == top), key=lambda k: items[k])


def _is_tie(dist: Sequence[float]) -> bool:
    top = max(dist)
    return sum(1 for p in dist if p == top) > 1


class _Counting:
    """Wraps a chooser to count calls, unanswered calls and ties into a Selection."""

    def __init__(self, choose: Chooser, result: Selection):
        self.choose, self.result = choose, result

    async def __call__(self, items: Sequence[int]) -> Sequence[float] | None:
        dist = await self.choose(tuple(items))
        self.result.comparisons += 1
        if dist is None:
            self.result.unanswered += 1
        elif _is_tie(dist):
            self.result.ties += 1
        return dist


class SoftAllPairs:
    """All pairs, concurrently; score_i = sum_j p(i over j), no answer counting 0.5 for both."""

    name = "allpairs"
    answer_dependent = False  # every pair once, whatever the answers

    async def rank(self, n: int, choose: Chooser) -> Selection:
        result = Selection(order=[])
        ask = _Counting(choose, result)
        pairs = list(combinations(range(n), 2))
        answers = await asyncio.gather(*(ask((i, j)) for i, j in pairs))
        scores = [0.0] * n
        for (i, j), dist in zip(pairs, answers):
            p = 0.5 if dist is None else float(dist[0])
            scores[i] += p
            scores[j] += 1.0 - p
        result.scores = scores
        result.order = sorted(range(n), key=lambda k: (-scores[k], k))
        return result

    @staticmethod
    def comparisons(n: int) -> int:
        return n * (n - 1) // 2


class BubbleTopK:
    """Bubble passes from the bottom with windows of ``size`` items, ``passes`` times (see the module docstring)."""

    name = "bubble"
    answer_dependent = True  # an item that does not move is asked about again: the memo answers, no call

    def __init__(self, size: int = 2, passes: int = 10):
        if size < 2:
            raise ValueError(f"BubbleTopK: size must be >= 2 (items compared at once), got {size}")
        if passes < 1:
            raise ValueError(f"BubbleTopK: passes must be >= 1, got {passes}")
        self.size, self.passes = int(size), int(passes)

    def __repr__(self) -> str:
        return f"BubbleTopK(size={self.size}, passes={self.passes})"

    async def rank(self, n: int, choose: Chooser) -> Selection:
        result = Selection(order=[])
        ask = _Counting(choose, result)
        order = list(range(n))
        settled = min(self.passes, max(n - 1, 0))
        for top in range(settled):
            end = n
            while True:
                start = max(end - self.size, top)
                window = order[start:end]
                best = best_of(await ask(window))
                if best:  # not None and not 0: move the window's best to the window's top
                    order[start:end] = [window[best]] + window[:best] + window[best + 1:]
                if start == top:
                    break
                end = start + 1
        rest = sorted(order[settled:]) if settled else order  # below the settled top: the prior order
        result.order = order[:settled] + rest
        return result

    def comparisons(self, n: int) -> int:
        """Chooser calls for a list of n (an upper bound on LLM calls: a memo may answer repeats)."""
        step = self.size - 1
        return sum(math.ceil((n - 1 - t) / step) for t in range(min(self.passes, max(n - 1, 0))))


def heap_worst_case(n: int, arity: int, select: int, per_level: Callable[[int, int], int]) -> int:
    """The most questions :func:`_heap_select` can ask for a list of n in a heap of ``arity`` children per node,
    whatever the answers: each sift may go down the longest path below its node (the leftmost: a complete heap fills
    left first), asking ``per_level(node, size)`` questions at each node it passes that has children."""
    def sift(node: int, size: int) -> int:
        asked = 0
        while node * arity + 1 < size:
            asked += per_level(node, size)
            node = node * arity + 1
        return asked

    if n < 2:
        return 0
    total = sum(sift(node, n) for node in range((n - 2) // arity + 1))
    size, picked = n, 0
    while size and picked < select:
        picked, size = picked + 1, size - 1
        if picked < select and size > 1:
            total += sift(0, size)
    return total


async def _heap_select(heap: list[int], inner: range, sift: Callable, select: int) -> list[int]:
    """Heap sort's two phases over ``heap`` (item indices): sift every ``inner`` node (bottom-up) to build the heap,
    then extract the root ``select`` times, moving the last leaf to the root and sifting it down after each; the
    picked items first, the rest in their prior order. ``sift(node, size)`` is the strategy's own sift."""
    n = len(heap)
    for node in inner:
        await sift(node, n)
    picked: list[int] = []
    size = n
    while size and len(picked) < select:
        picked.append(heap[0])
        size -= 1
        heap[0] = heap[size]
        if len(picked) < select and size > 1:
            await sift(0, size)
    chosen = set(picked)
    return picked + [i for i in range(n) if i not in chosen]


class HeapTopK:
    """Select the best ``select`` items with a heap of nodes with ``size`` - 1 children (setwise heap sort)."""

    name = "heap"
    answer_dependent = True  # a sift goes down only as far as the answers send it

    def __init__(self, size: int = 3, select: int = 10):
        if size < 3:
            raise ValueError(f"HeapTopK: size must be >= 3 (a parent and at least two children), got {size}; "
                             "for two items at a time use BubbleTopK or PairMergeSort")
        if select < 1:
            raise ValueError(f"HeapTopK: select must be >= 1, got {select}")
        self.size, self.select = int(size), int(select)

    def __repr__(self) -> str:
        return f"HeapTopK(size={self.size}, select={self.select})"

    async def rank(self, n: int, choose: Chooser) -> Selection:
        result = Selection(order=[])
        ask = _Counting(choose, result)
        heap = list(range(n))
        arity = self.size - 1

        async def sift(node: int, size: int) -> None:
            while True:
                children = list(range(node * arity + 1, min(node * arity + arity + 1, size)))
                if not children:
                    return
                shown = [heap[node]] + [heap[c] for c in children]
                best = best_by_prior(shown, await ask(shown))
                if best == 0:  # the parent is best (ties and no answer: the earliest in the prior order)
                    return
                child = children[best - 1]
                heap[node], heap[child] = heap[child], heap[node]
                node = child

        inner = range((n - 2) // arity, -1, -1) if n > 1 else range(0)
        result.order = await _heap_select(heap, inner, sift, self.select)
        return result

    def comparisons(self, n: int) -> int:
        """The most sets a list of n can ask (whatever the answers): :func:`heap_worst_case` with one set per level."""
        return heap_worst_case(n, self.size - 1, self.select, per_level=lambda node, size: 1)


class PairHeapTopK:
    """Select the best ``select`` items with a binary max-heap decided by pairwise preferences (PRP heapsort: Qin et
    al. 2024; llm-rankers' ``pairwise --method heapsort``). A sift compares the node with its left child, then the
    winner with the right child (one or two pairs per level), and swaps the node with the winner; building the heap
    sifts every inner node from the last up, then each of the ``select`` - 1 further extractions moves the last leaf
    to the root and sifts it down. A pair decides for the item with p > 0.5; a tie or no answer for the item earliest
    in the prior order, so a model that never answers leaves the prior order intact. Pairs asked: at most two per
    level of the longest path below each sift's node (``comparisons``: every inner node to build, then the root for
    each of the k - 1 further extractions): n = 20, k = 10: at most 95 (below the textbook 2 x (n - 1) + (k - 1) x 2 x
    floor(log2 n) = 110); measured with a consistent model over 20 random orders
    (tests/test_rerankers_prp_heap.py): 83 on average for n = 20, 38 for n = 10, 113 for n = 30, 278 for n = 100
    (k = 10). Each pair is two LLM calls when both orders are asked (PRP's default)."""

    name = "heap"
    answer_dependent = True  # a sift goes down only as far as the answers send it

    def __init__(self, select: int = 10):
        if select < 1:
            raise ValueError(f"PairHeapTopK: select must be >= 1, got {select}")
        self.select = int(select)

    def __repr__(self) -> str:
        return f"PairHeapTopK(select={self.select})"

    async def rank(self, n: int, choose: Chooser) -> Selection:
        result = Selection(order=[])
        ask = _Counting(choose, result)
        heap = list(range(n))

        async def beats(a: int, b: int) -> bool:
            """Whether item ``a`` goes above item ``b``: p(a over b) > 0.5; a tie or no answer: the prior order."""
            dist = await ask((a, b))
            if dist is None or dist[0] == dist[1]:
                return a < b
            return dist[0] > dist[1]

        async def sift(node: int, size: int) -> None:
            while True:
                top = node
                for child in (2 * node + 1, 2 * node + 2):
                    if child < size and await beats(heap[child], heap[top]):
                        top = child
                if top == node:
                    return
                heap[node], heap[top] = heap[top], heap[node]
                node = top

        result.order = await _heap_select(heap, range(n // 2 - 1, -1, -1), sift, self.select)
        return result

    def comparisons(self, n: int) -> int:
        """The most pairs a list of n can ask (whatever the answers): :func:`heap_worst_case` with one pair per child
        of each level."""
        return heap_worst_case(n, 2, self.select,
                               per_level=lambda node, size: sum(c < size for c in (2 * node + 1, 2 * node + 2)))


class PairMergeSort:
    """Merge sort over pairwise preferences: i before j when p(i over j) > 0.5 (``aggregation.MergeSort``)."""

    name = "sort"
    answer_dependent = True  # which items meet depends on the earlier decisions

    async def rank(self, n: int, choose: Chooser) -> Selection:
        result = Selection(order=[])
        ask = _Counting(choose, result)

        async def cmp(i: int, j: int) -> str | None:
            dist = await ask((i, j))
            best = None if dist is None or _is_tie(dist) else best_of(dist)
            return None if best is None else "AB"[best]

        result.order = (await MergeSort().rank(n, cmp)).order
        return result

    @staticmethod
    def comparisons(n: int) -> int:
        """The most pairs merge sort asks for a list of n: n ceil(log2 n) - 2^ceil(log2 n) + 1."""
        return MergeSort.comparisons(n)
