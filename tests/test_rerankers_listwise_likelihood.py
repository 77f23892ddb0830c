"""Listwise by likelihood (FIRST-style first-identifier distribution), permutation self-consistency, and both as the
window ranker of sliding windows, against the fake server; orders worked by hand. The real 0.5B end to end is in
test_rerankers_e2e_prob.py."""

from __future__ import annotations

import asyncio
import math

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from superb.testing.fakeserver import FakeServer, Fault, Reply
from reranker_helpers import assert_docnos_preserved, client, lettered, prompt_of, relevance_responder, run_of_sizes
from superb.errors import SpecError
from superb.transformers.listwise import ListwiseReranker
from superb.transformers.registry import BuildContext, build_reranker
from superb.transformers.sliding import SlidingWindowReranker
from superb.transformers.window import LikelihoodRanker, SelfConsistent, window_ranker
from test_rerankers_pairwise_prob import COMPLETIONS, ScriptedLLM


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


def frame(texts: list[str], qid: str = "q") -> pd.DataFrame:
    n = len(texts)
    return pd.DataFrame({"qid": qid, "query": "query", "docno": [f"{qid}-{t}" for t in texts],
                         "score": [float(n - i) for i in range(n)], "rank": range(n), "text": texts})


def order(out: pd.DataFrame, qid: str = "q") -> list[str]:
    return [d.split("-", 1)[1] for d in out[out.qid == qid].sort_values("rank").docno]


def reply(probs: dict[str, float]) -> Reply:
    top = {t: math.log(p) for t, p in probs.items()}
    best = max(probs, key=probs.get)
    return Reply(best, ((best, top[best], top),))


def test_window_ordered_by_first_identifier_probability_by_hand():
    # A .1, B .5, D .3 (and " B" .05 adds to B), C absent, "The" .05: order B, D, A, then C (absent, prior order)
    answer = reply({"A": 0.1, "B": 0.5, " B": 0.05, "D": 0.3, "The": 0.05})
    with FakeServer(responder=lambda r: answer) as srv, client(srv) as llm:
        rr = ListwiseReranker(llm, method="likelihood", top_k=4)
        out = rr(frame(["a", "b", "c", "d", "e"]))
        body = srv.received[0]
    assert order(out) == ["b", "d", "a", "c", "e"]
    assert rr.stats["calls"] == 1 and rr.stats["likelihood_absent"] == 1 and rr.stats["answered_logprobs"] == 1
    assert lettered(body) == [("A", "a"), ("B", "b"), ("C", "c"), ("D", "d")]
    assert body["max_tokens"] == 1 and body["top_logprobs"] == 20 and prompt_of(body).rstrip().endswith("Ranking:")
    got = dict(zip(out.docno, out.listwise_score))
    assert got["q-b"] > got["q-d"] > got["q-a"] > got["q-c"]


def test_twenty_products_with_twenty_top_logprobs_leave_some_absent():
    texts = [f"p{i:02d}" for i in range(20)]
    relevance = {t: (i * 7) % 20 / 4.0 for i, t in enumerate(texts)}  # a known, shuffled order
    with FakeServer(responder=relevance_responder(relevance, mass=0.9, top_n=20)) as srv, client(srv) as llm:
        rr = ListwiseReranker(llm, method="likelihood", top_k=20)
        out = rr(frame(texts))
    # the top 20 tokens: "The" (0.1) plus the 19 most probable letters; the least relevant product is absent
    worst = min(texts, key=relevance.get)
    assert rr.stats["likelihood_absent"] == 1 and order(out)[-1] == worst
    assert order(out)[:19] == sorted((t for t in texts if t != worst), key=lambda t: -relevance[t])


def test_no_logprobs_puts_the_generated_letter_first_and_counts_it():
    with FakeServer(responder=lambda r: Reply("**C**")) as srv, client(srv) as llm:
        rr = ListwiseReranker(llm, method="likelihood", top_k=4)
        out = rr(frame(["a", "b", "c", "d"]))
    assert order(out) == ["c", "a", "b", "d"] and rr.stats["fallback_generated_letter"] == 1


def test_failed_call_or_no_letter_keeps_the_window():
    with FakeServer(responder=lambda r: reply({"The": 0.7, "I": 0.3}), faults=[Fault.error(500)]) as srv, \
            client(srv, max_retries=0) as llm:
        rr = ListwiseReranker(llm, method="likelihood", top_k=3)
        out = rr(pd.concat([frame(["a", "b", "c"], "q1"), frame(["x", "y", "z"], "q2")]))
    assert order(out, "q1") == ["a", "b", "c"] and order(out, "q2") == ["x", "y", "z"]
    assert rr.stats["fallback_failed_call"] == 1 and rr.stats["fallback_no_label"] == 1


def test_self_consistency_aggregates_mean_ranks_by_hand():
    class Scripted:
        """Ranks a shown window by a fixed preference: products earlier in ``prefs`` first."""
        def __init__(self, prefs):
            self.prefs = prefs

        async def rank(self, owner, query, texts):
            return sorted(range(len(texts)), key=lambda i: self.prefs.index(texts[i]))

    owner = type("Owner", (), {"stats": __import__("collections").Counter(), "tag": "t"})()
    sc = SelfConsistent(Scripted(["c", "a", "b", "d"]), shuffles=3, seed=7)
    perms = sc.permutations("query", ["a", "b", "c", "d"])
    assert perms == sc.permutations("query", ["a", "b", "c", "d"]) and len(perms) == 3  # seeded: same shuffles
    assert perms != SelfConsistent(Scripted([]), shuffles=3, seed=8).permutations("query", ["a", "b", "c", "d"])
    order_ = asyncio.run(sc.rank(owner, "query", ["a", "b", "c", "d"]))
    assert order_ == [2, 0, 1, 3] and owner.stats["consistency_rankings"] == 3  # the same preference every time

    # a pure position bias (always the shown order) averages out to mean ranks over the shuffles
    class Shown:
        async def rank(self, owner, query, texts):
            return list(range(len(texts)))

    sc = SelfConsistent(Shown(), shuffles=2, seed=1)
    p1, p2 = sc.permutations("query", ["a", "b", "c"])
    mean = [(p1.index(i) + p2.index(i)) / 2 for i in range(3)]
    assert asyncio.run(sc.rank(owner, "query", ["a", "b", "c"])) == sorted(range(3), key=lambda i: (mean[i], i))


def test_self_consistency_against_the_server_shows_every_shuffle():
    relevance = {"a": 0.0, "b": 3.0, "c": 1.0, "d": 2.0}
    with FakeServer(responder=relevance_responder(relevance)) as srv, client(srv) as llm:
        rr = ListwiseReranker(llm, method="likelihood", shuffles=4, top_k=4, seed=3)
        out = rr(frame(["a", "b", "c", "d"]))
        shown = [tuple(t for _, t in lettered(r)) for r in srv.received]
    assert order(out) == ["b", "d", "c", "a"]
    assert rr.stats["calls"] == 4 == rr.stats["consistency_rankings"] and len(set(shown)) > 1
    assert sorted(map(sorted, shown)) == [["a", "b", "c", "d"]] * 4


def test_sliding_windows_with_the_likelihood_ranker_by_hand():
    # 5 products, window 3, step 2: windows [2,5) then [0,3); the model knows e > d > c > b > a
    relevance = {"a": 0.0, "b": 1.0, "c": 2.0, "d": 3.0, "e": 4.0}
    with FakeServer(responder=relevance_responder(relevance)) as srv, client(srv) as llm:
        rr = SlidingWindowReranker(llm, method="likelihood", window=3, step=2, top_k=5)
        out = rr(frame(["a", "b", "c", "d", "e"]))
        shown = [[t for _, t in lettered(r)] for r in srv.received]
    # [c d e] -> e d c: a b e d c; [a b e] -> e b a: e b a d c
    assert shown == [["c", "d", "e"], ["a", "b", "e"]]
    assert order(out) == ["e", "b", "a", "d", "c"] and rr.stats["windows"] == 2


def test_empty_frame_makes_no_call():
    with FakeServer() as srv, client(srv) as llm:
        for rr in (ListwiseReranker(llm, method="likelihood", shuffles=2, top_k=5),
                   SlidingWindowReranker(llm, method="likelihood", window=3, step=2, top_k=5)):
            out = rr(frame([]))
            assert len(out) == 0 and {rr.score_column, "first_stage_score", "rank"} <= set(out.columns)
        assert srv.requests == 0


def test_spec_options_and_limits():
    with FakeServer() as srv, client(srv) as llm:
        ctx = BuildContext(dataset=None, llm=llm, seed=5)
        with pytest.raises(SpecError, match=r"r\.top_k.*at most 20"):
            build_reranker({"type": "listwise", "method": "likelihood", "top_k": 30}, context=ctx, path="r")
        with pytest.raises(SpecError, match=r"r\.window.*at most 20"):
            build_reranker({"type": "sliding", "method": "likelihood", "window": 25, "step": 5}, context=ctx, path="r")
        with pytest.raises(SpecError, match=r"r\.method.*generation"):
            build_reranker({"type": "listwise", "method": "first"}, context=ctx, path="r")
        with pytest.raises(SpecError, match=r"r\.shuffles.*>= 0"):
            build_reranker({"type": "listwise", "shuffles": -1}, context=ctx, path="r")
    with pytest.raises(ValueError, match="at most 20"):
        ListwiseReranker(None, method="likelihood", top_k=None)
    assert isinstance(window_ranker("likelihood", 0), LikelihoodRanker)
    assert window_ranker("generation", 2, seed=5).seed == 5


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies=st.lists(COMPLETIONS, min_size=1, max_size=10),
       sizes=st.lists(st.integers(0, 9), min_size=1, max_size=3),
       kind=st.sampled_from(["listwise", "sliding"]), shuffles=st.integers(0, 3))
def test_docnos_preserved_for_any_model_output(replies, sizes, kind, shuffles):
    inp = run_of_sizes(sizes, text="text ")
    if kind == "listwise":
        rr = ListwiseReranker(ScriptedLLM(replies), method="likelihood", shuffles=shuffles, top_k=6)
    else:
        rr = SlidingWindowReranker(ScriptedLLM(replies), method="likelihood", shuffles=shuffles, window=3, step=2,
                                   top_k=8)
    assert_docnos_preserved(inp, rr(inp))
