"""Each answer-dependent stage's worst case per query (``max_calls``, printed by `superb run --dry-run` as at_most)
is never exceeded, whatever the answers: a property test over random answers (issue 46)."""

from __future__ import annotations

import asyncio
import math
import random
from collections import Counter

from hypothesis import given, settings, strategies as st

from superb.llm.types import Completion, TokenLogprob
from superb.transformers.base import Candidates
from superb.transformers.pairwise_prob import PairwiseProbReranker
from superb.transformers.setwise import SetwiseReranker
from superb.transformers.sliding import SlidingWindowReranker


class RandomAnswers:
    """An LLM client answering every request with a random letter distribution (or a failed call), counting them."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.calls = 0

    async def acomplete(self, request) -> Completion:
        self.calls += 1
        if self.rng.random() < 0.1:
            return Completion(text="", failed=True, error="boom")
        weights = [self.rng.random() + 1e-3 for _ in range(20)]
        total = sum(weights)
        top = {chr(65 + i): math.log(w / total) for i, w in enumerate(weights)}
        best = max(top, key=top.get)
        return Completion(text=best, logprobs=(TokenLogprob(best, top[best], top),))


def calls_for(reranker, llm: RandomAnswers, n: int) -> int:
    reranker.llm = llm
    cands = Candidates("q", "query", tuple(f"d{i}" for i in range(n)), tuple(f"text {i}" for i in range(n)),
                       tuple(float(-i) for i in range(n)))
    before = llm.calls
    asyncio.run(reranker.score(cands))
    return llm.calls - before


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 30), size=st.integers(3, 6), select=st.integers(1, 12), debias=st.booleans(),
       calibrate=st.booleans(), strategy=st.sampled_from(["heap", "bubble"]), seed=st.integers(0, 10**6))
def test_setwise_never_asks_more_than_its_ceiling(n, size, select, debias, calibrate, strategy, seed):
    r = SetwiseReranker(None, top_k=None, strategy=strategy, set_size=size, select=select, debias=debias,
                        calibrate=calibrate)
    assert calls_for(r, RandomAnswers(seed), n) <= r.max_calls(n)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 24), select=st.integers(1, 12), both=st.booleans(), passes=st.integers(1, 6),
       strategy=st.sampled_from(["heap", "sort", "sliding", "allpairs"]), seed=st.integers(0, 10**6))
def test_pairwise_never_asks_more_than_its_ceiling(n, select, both, passes, strategy, seed):
    extra = {"select": select} if strategy == "heap" else {"passes": passes} if strategy == "sliding" else {}
    r = PairwiseProbReranker(None, top_k=None, strategy=strategy, both_orders=both, **extra)
    assert calls_for(r, RandomAnswers(seed), n) <= r.max_calls(n)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 40), window=st.integers(2, 20), step_share=st.floats(0.05, 1.0), passes=st.integers(1, 3),
       shuffles=st.integers(0, 2), seed=st.integers(0, 10**6))
def test_sliding_likelihood_never_asks_more_than_its_ceiling(n, window, step_share, passes, shuffles, seed):
    step = max(1, int(window * step_share))
    r = SlidingWindowReranker(None, method="likelihood", window=window, step=step, passes=passes, shuffles=shuffles,
                              top_k=None)
    assert calls_for(r, RandomAnswers(seed), n) <= r.max_calls(n)


def test_the_heap_ceilings_are_reached_by_some_answers_and_below_the_documented_formulas():
    from superb.transformers.selection import HeapTopK, PairHeapTopK

    assert HeapTopK(3, 10).comparisons(20) <= 20 + 9 * 5  # setwise's docstring: n + (k-1) ceil(log_{c-1} n)
    assert PairHeapTopK(10).comparisons(20) <= 38 + 9 * 8  # PRP heapsort's docstring: 2(n-1) + (k-1) 2 floor(log2 n)
    worst = Counter()
    for seed in range(200):  # some answers send every sift to the bottom: the ceiling is tight, not loose
        r = SetwiseReranker(None, top_k=None, strategy="heap", set_size=3, select=10)
        worst["heap"] = max(worst["heap"], calls_for(r, RandomAnswers(seed), 20))
    assert worst["heap"] <= HeapTopK(3, 10).comparisons(20)
