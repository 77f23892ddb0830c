"""PRP heapsort (transformers/selection.PairHeapTopK; pairwise_prob strategy = "heap"): worked by hand, the true top
k for a consistent model, the prior order kept without answers, pairs within the documented bound, and end to end
through PairwiseProbReranker on the fake OpenAI server (both orders: two calls per pair)."""

from __future__ import annotations

import asyncio
import random

import pytest
from hypothesis import given, settings, strategies as st

from superb.transformers.selection import PairHeapTopK


def run(coro):
    return asyncio.run(coro)


def by_value(values, log=None):
    async def choose(items):
        if log is not None:
            log.append(items)
        a, b = items
        if values[a] == values[b]:
            return [0.5, 0.5]
        return [1.0, 0.0] if values[a] > values[b] else [0.0, 1.0]

    return choose


def test_heap_by_hand():
    # 5 items, values: item 4 best, then 2, 0, 3, 1; select 2
    log = []
    r = run(PairHeapTopK(select=2).rank(5, by_value([3, 1, 4, 2, 5], log)))
    # build, node 1 (item 1): left item 3 beats it, right item 4 beats item 3 -> swap: heap [0, 4, 2, 3, 1]
    #        node 0 (item 0): item 4 beats it, item 2 does not beat item 4 -> swap: [4, 0, 2, 3, 1]; item 0 sifts on
    #        at node 1: neither item 3 nor item 1 beats it
    # extract 4; the last leaf (item 1) to the root: [1, 0, 2, 3]; item 0 beats it, item 2 beats item 0 -> swap
    assert log == [(3, 1), (4, 3), (4, 0), (2, 4), (3, 0), (1, 0), (0, 1), (2, 0)]
    assert r.order[:2] == [4, 2]
    assert r.order[2:] == [0, 1, 3]  # the rest in prior order


def test_no_answer_keeps_the_prior_order():
    async def none(items):
        return None

    r = run(PairHeapTopK(select=4).rank(9, none))
    assert r.order == list(range(9)) and r.unanswered == r.comparisons > 0


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.integers(0, 6), min_size=0, max_size=30), k=st.integers(1, 12))
def test_a_consistent_model_gets_the_true_top_k_within_the_bound(values, k):
    n = len(values)
    strategy = PairHeapTopK(select=k)
    r = run(strategy.rank(n, by_value(values)))
    assert sorted(r.order) == list(range(n))
    settled = min(k, n)
    assert [values[i] for i in r.order[:settled]] == sorted(values, reverse=True)[:settled]
    assert r.comparisons <= strategy.comparisons(n)


def test_measured_pairs_for_the_papers_settings():
    rng = random.Random(0)
    for n, bound in ((20, 95), (30, 0), (100, 0)):
        counts = []
        for _ in range(20):
            values = rng.sample(range(1000), n)
            counts.append(run(PairHeapTopK(select=10).rank(n, by_value(values))).comparisons)
        assert max(counts) <= PairHeapTopK(select=10).comparisons(n)
        if bound:
            assert PairHeapTopK(select=10).comparisons(n) == bound
    # the docstring's measured figures for k = 10 (mean over 20 random orders, seed 0, rounded)
    rng = random.Random(0)
    for n, mean in ((10, 38), (20, 83), (30, 113), (100, 278)):
        counts = [run(PairHeapTopK(select=10).rank(n, by_value(rng.sample(range(1000), n)))).comparisons
                  for _ in range(20)]
        assert round(sum(counts) / len(counts)) == mean


RELEVANCE = {f"p{i}": r for i, r in enumerate([0.3, 2.0, 0.0, 1.4, 0.9, 1.7, 0.1, 1.1, 0.6, 2.4, 0.2, 0.5])}


def test_prp_heap_through_the_reranker_on_the_fake_server(tmp_path, monkeypatch):
    import pandas as pd

    from superb.testing.fakeserver import FakeServer
    from reranker_helpers import client, relevance_responder
    from superb.transformers.pairwise_prob import PairwiseProbReranker

    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    rows = [("q1", "query", f"d{i}", float(100 - i), i, f"p{i}") for i in range(12)]
    frame = pd.DataFrame(rows, columns=["qid", "query", "docno", "score", "rank", "text"])
    # a strong position bias: one order alone would prefer Product A for nearly every pair
    with FakeServer(responder=relevance_responder(RELEVANCE, bias=2.5)) as srv, client(srv) as llm:
        rr = PairwiseProbReranker(llm, top_k=10, strategy="heap", select=4)
        out = rr(frame)
        requests = srv.requests
    got = [int(d[1:]) for d in out.sort_values("rank").docno]
    best = sorted(range(10), key=lambda i: -RELEVANCE[f"p{i}"])[:4]
    assert got[:4] == best
    rest = [i for i in range(10) if i not in best]
    assert got[4:] == rest + [10, 11]  # the unsettled keep their prior order, below top_k untouched
    st = rr.stats
    asked = st["comparisons"] - st["comparisons_memo"]
    assert st["calls"] == requests == 2 * asked  # both orders: two calls per pair
    assert st["comparisons"] <= rr.strategy.comparisons(10)


def test_heap_options_are_checked_when_the_spec_is_read():
    from superb.errors import SpecError
    from superb.transformers.registry import BuildContext, build_reranker

    with pytest.raises(SpecError, match=r"r\.select: only applies to strategy \"heap\""):
        build_reranker({"type": "pairwise_prob", "select": 5}, context=BuildContext(dataset=object(), llm=object()),
                       path="r")
    with pytest.raises(SpecError, match=r"r\.select: expected an integer >= 1"):
        build_reranker({"type": "pairwise_prob", "strategy": "heap", "select": 0},
                       context=BuildContext(dataset=object(), llm=object()), path="r")
