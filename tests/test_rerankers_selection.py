"""Ranking strategies over a chooser (transformers/selection.py), worked by hand: soft all-pairs, bubble top-k
(PRP-sliding for two items), setwise heap top-k, merge sort over preferences; ties and unanswered questions keep the
prior order; comparison counts against the documented formulas."""

from __future__ import annotations

import asyncio
import math

import pytest
from hypothesis import given, settings, strategies as st

from superb.transformers.selection import BubbleTopK, HeapTopK, PairMergeSort, SoftAllPairs, best_of


def run(coro):
    return asyncio.run(coro)


def by_value(values, log=None):
    """A chooser that is certain: the item with the highest value is best (one-hot)."""
    async def choose(items):
        if log is not None:
            log.append(items)
        top = max(values[i] for i in items)
        return [1.0 if values[i] == top else 0.0 for i in items]

    return choose


def test_best_of_ties_and_none():
    assert best_of([0.2, 0.5, 0.3]) == 1
    assert best_of([0.4, 0.4, 0.2]) == 0 and best_of([0.1, 0.45, 0.45]) == 1  # first of the tied
    assert best_of(None) is None and best_of([]) is None


def test_soft_all_pairs_by_hand():
    # p(0>1) = 0.6, p(0>2) = 0.2, p(1>2) = no answer (0.5 each)
    p = {(0, 1): 0.6, (0, 2): 0.2, (1, 2): None}

    async def choose(items):
        v = p[items]
        return None if v is None else [v, 1 - v]

    r = run(SoftAllPairs().rank(3, choose))
    # scores: 0: 0.6 + 0.2 = 0.8; 1: 0.4 + 0.5 = 0.9; 2: 0.8 + 0.5 = 1.3
    assert r.scores == pytest.approx([0.8, 0.9, 1.3]) and r.order == [2, 1, 0]
    assert r.comparisons == 3 and r.unanswered == 1
    # every pair undecided: equal scores, prior order
    r = run(SoftAllPairs().rank(4, lambda items: asyncio.sleep(0, result=[0.5, 0.5])))
    assert r.order == [0, 1, 2, 3] and r.ties == 6 and r.comparisons == SoftAllPairs.comparisons(4) == 6


def test_bubble_pairs_is_prp_sliding_by_hand():
    # values: item 3 best, then 1, 0, 2 (prior order 0 1 2 3)
    log = []
    r = run(BubbleTopK(size=2, passes=1).rank(4, by_value([2, 3, 1, 4], log)))
    # one pass from the bottom: (2,3) -> 3 up: 0 1 3 2; (1,3) -> 3 up: 0 3 1 2; (0,3) -> 3 up: 3 0 1 2
    assert log == [(2, 3), (1, 3), (0, 3)]
    # top 1 settled; the rest back in prior order
    assert r.order == [3, 0, 1, 2] and r.comparisons == 3
    r = run(BubbleTopK(size=2, passes=2).rank(4, by_value([2, 3, 1, 4])))
    # second pass: 3 | 0 1 2 -> (1,2): 1 stays; (0,1) -> 1 up: 3 1 0 2
    assert r.order[:2] == [3, 1] and r.order[2:] == [0, 2] and r.comparisons == 3 + 2


def test_bubble_sets_by_hand():
    # 6 items, windows of 3 (step 2); values make item 4 best, item 0 second
    log = []
    r = run(BubbleTopK(size=3, passes=1).rank(6, by_value([5, 1, 2, 3, 9, 0], log)))
    # pass 0: window [3,6) = (3,4,5) -> 4 to the top: 0 1 2 4 3 5; window [1,4) = (1,2,4) -> 4 up: 0 4 1 2 3 5;
    # window [0,2) = (0,4) -> 4 up: 4 0 1 2 3 5 (ceil(5/2) = 3 windows)
    assert log == [(3, 4, 5), (1, 2, 4), (0, 4)]
    assert r.order == [4, 0, 1, 2, 3, 5] and r.comparisons == BubbleTopK(3, 1).comparisons(6) == 3


def test_bubble_unanswered_and_ties_keep_the_order():
    none = lambda items: asyncio.sleep(0, result=None)  # noqa: E731
    r = run(BubbleTopK(size=3, passes=3).rank(7, none))
    assert r.order == list(range(7)) and r.unanswered == r.comparisons == BubbleTopK(3, 3).comparisons(7)
    tie = lambda items: asyncio.sleep(0, result=[0.5] * len(items))  # noqa: E731
    r = run(BubbleTopK(size=2, passes=2).rank(4, tie))
    assert r.order == [0, 1, 2, 3] and r.ties == r.comparisons == 5


@pytest.mark.parametrize("n, size, passes", [(20, 2, 10), (20, 3, 10), (20, 4, 5), (5, 3, 10), (1, 2, 3), (2, 2, 1)])
def test_bubble_comparisons_formula(n, size, passes):
    r = run(BubbleTopK(size=size, passes=passes).rank(n, by_value([(i * 7) % 11 for i in range(n)])))
    expected = sum(math.ceil((n - 1 - t) / (size - 1)) for t in range(min(passes, max(n - 1, 0))))
    assert r.comparisons == expected == BubbleTopK(size, passes).comparisons(n)


def test_heap_by_hand():
    # 7 items, sets of 3 (two children per node): a binary heap over positions 0..6
    log = []
    values = [1, 5, 2, 7, 3, 6, 4]
    r = run(HeapTopK(size=3, select=3).rank(7, by_value(values, log)))
    # build: node 2 asks (2,5,6) -> 5 wins, swap: heap [0,1,5,3,4,2,6]; node 1 asks (1,3,4) -> 3 wins, swap:
    # [0,3,5,1,4,2,6]; node 0 asks (0,3,5) -> 3 wins, swap to node 1 -> asks (0,1,4) at node 1 -> 1 wins:
    # [3,1,5,0,4,2,6]
    assert log[:4] == [(2, 5, 6), (1, 3, 4), (0, 3, 5), (0, 1, 4)]
    # pop 3; the last leaf (6) to the root: [6,1,5,0,4,2]; (6,1,5) -> 5 wins, swap; node 2 asks (6,2) -> 6 stays
    # pop 5; the last leaf (2) to the root: [2,1,6,0,4]; (2,1,6) -> 1 wins, swap; node 1 asks (2,0,4) -> 4 wins
    # pop 1: the top 3 = [3, 5, 1] (values 7, 6, 5); the rest in prior order. 4 + 2 + 2 = 8 sets asked
    assert log[4:] == [(6, 1, 5), (6, 2), (2, 1, 6), (2, 0, 4)]
    assert r.order == [3, 5, 1, 0, 2, 4, 6]
    assert r.comparisons == len(log) == 8


def test_heap_unanswered_keeps_prior_order_and_select_bounds():
    none = lambda items: asyncio.sleep(0, result=None)  # noqa: E731
    r = run(HeapTopK(size=3, select=4).rank(10, none))
    assert r.order == list(range(10)) and r.unanswered == r.comparisons > 0
    r = run(HeapTopK(size=4, select=50).rank(5, by_value([3, 1, 4, 0, 2])))
    assert r.order == [2, 0, 4, 1, 3]  # select > n: a full sort
    with pytest.raises(ValueError, match="size must be >= 3"):
        HeapTopK(size=2)


def test_merge_sort_over_preferences():
    r = run(PairMergeSort().rank(5, by_value([3, 1, 4, 0, 2])))
    assert r.order == [2, 0, 4, 1, 3] and r.comparisons <= 5 * 3 - 8 + 1
    tie = lambda items: asyncio.sleep(0, result=[0.5, 0.5])  # noqa: E731
    r = run(PairMergeSort().rank(5, tie))
    assert r.order == [0, 1, 2, 3, 4] and r.ties == r.comparisons


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(0, 5), min_size=0, max_size=12), size=st.integers(2, 5), k=st.integers(1, 12),
       strategy=st.sampled_from(["bubble", "heap", "sort", "allpairs"]))
def test_strategies_return_permutations_and_the_true_top_for_a_certain_chooser(values, size, k, strategy):
    n = len(values)
    s = {"bubble": BubbleTopK(size, k), "heap": HeapTopK(max(size, 3), k), "sort": PairMergeSort(),
         "allpairs": SoftAllPairs()}[strategy]
    pair_only = strategy in ("sort", "allpairs")

    async def choose(items):
        assert len(items) == 2 if pair_only else 1 <= len(items) <= max(size, 3 if strategy == "heap" else size)
        return await by_value(values)(items)

    r = run(s.rank(n, choose))
    assert sorted(r.order) == list(range(n))
    if strategy == "heap" and n > 1:  # the documented bound: n + (k-1) x ceil(log_{c-1} n)
        c = max(size, 3)
        assert r.comparisons <= n + (k - 1) * math.ceil(math.log(n) / math.log(c - 1) - 1e-9)
    settled = min(k, n) if strategy in ("bubble", "heap") else n
    # a consistent chooser: the settled top holds the best values, best first
    assert [values[i] for i in r.order[:settled]] == sorted(values, reverse=True)[:settled]
