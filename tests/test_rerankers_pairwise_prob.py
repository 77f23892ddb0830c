"""The pairwise-by-probabilities reranker (type pairwise_prob) against the fake server: both orders cancel a position
bias for every strategy, ties and failures keep the prior order, the no-logprobs fallback is counted, calls follow the
documented formulas, docnos in == docnos out under arbitrary output (hypothesis). The real 0.5B end to end is in
test_rerankers_e2e_prob.py."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from superb.testing.fakeserver import FakeServer, Fault, Reply
from reranker_helpers import (
    assert_docnos_preserved, client, lettered, relevance_responder, run_of_sizes,
)
from superb.errors import SpecError
from superb.llm.types import Completion, TokenLogprob
from superb.transformers.pairwise_prob import PairwiseProbReranker
from superb.transformers.registry import BuildContext, build_reranker


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


RELEVANCE = {f"p{i}": r for i, r in enumerate([0.3, 2.0, 0.0, 1.4, 0.9, 1.7, 0.1, 1.1, 0.6, 2.4])}
TRUE_ORDER = sorted(range(10), key=lambda i: -RELEVANCE[f"p{i}"])


def frame(n: int, qids=("q1",)) -> pd.DataFrame:
    rows = [(q, "query " + q, f"{q}-d{i}", float(100 - i), i, f"p{i}") for q in qids for i in range(n)]
    return pd.DataFrame(rows, columns=["qid", "query", "docno", "score", "rank", "text"])


def order(out: pd.DataFrame, qid: str = "q1") -> list[int]:
    return [int(d.rsplit("-d", 1)[1]) for d in out[out.qid == qid].sort_values("rank").docno]


@pytest.mark.parametrize("strategy, options", [("allpairs", {}), ("sort", {}), ("sliding", {"passes": 10})])
def test_both_orders_recover_the_hidden_order_despite_a_strong_position_bias(strategy, options):
    # P_A(i, j) = sigmoid(r_i - r_j + 2.5): one order alone prefers Product A for nearly every pair
    responder = relevance_responder(RELEVANCE, bias=2.5)
    with FakeServer(responder=responder) as srv, client(srv) as llm:
        rr = PairwiseProbReranker(llm, top_k=10, strategy=strategy, **options)
        out = rr(frame(12, qids=("q1", "q2")))
        requests = srv.requests
    for qid in ("q1", "q2"):
        assert order(out, qid) == TRUE_ORDER + [10, 11]
    st_ = rr.stats
    asked = st_["comparisons"] - st_["comparisons_memo"]
    assert st_["calls"] == requests == 2 * asked == 2 * st_["pref_pairs"]
    assert st_["pref_answered_logprobs"] == st_["calls"] and st_["failures"] == 0
    if strategy == "allpairs":
        assert st_["comparisons"] == 2 * 45 and st_["comparisons_memo"] == 0
        # raw scores are the soft win sums: 45 pairs' worth per query
        assert out[out.qid == "q1"]["pairwise_prob_score"].sum() == pytest.approx(45)
    elif strategy == "sort":
        assert st_["comparisons"] <= 2 * 25
    else:  # 10 passes over 10: 9 + 8 + ... + 1 = 45 questions, repeats from the memo
        assert st_["comparisons"] == 2 * 45 and st_["comparisons_memo"] > 0
    assert out[out.qid == "q1"]["pairwise_prob_score"].notna().sum() == 10


def test_one_order_alone_follows_the_position_bias():
    with FakeServer(responder=relevance_responder(RELEVANCE, bias=2.5)) as srv, client(srv) as llm:
        rr = PairwiseProbReranker(llm, top_k=10, strategy="allpairs", both_orders=False)
        out = rr(frame(10))
    assert rr.stats["calls"] == 45
    assert order(out) != TRUE_ORDER  # the bias (first shown = the earlier item) keeps much of the prior order


def test_pure_position_bias_means_no_preference_and_the_prior_order():
    flat = relevance_responder(lambda text: 0.0, bias=3.0)
    with FakeServer(responder=flat) as srv, client(srv) as llm:
        for strategy in ("allpairs", "sort", "sliding"):
            rr = PairwiseProbReranker(llm, top_k=6, strategy=strategy)
            out = rr(frame(8))
            assert order(out) == list(range(8)), strategy
            assert rr.stats["pref_ties"] == rr.stats["pref_pairs"] > 0
            assert rr.stats["comparison_ties"] == rr.stats["comparisons"]


def test_failed_calls_give_no_preference_and_are_counted():
    # 3 items, allpairs: 3 pairs x 2 orders; the first two requests fail (no retries)
    faults = [Fault.error(500), Fault.error(500)]
    with FakeServer(responder=relevance_responder(RELEVANCE), faults=faults) as srv, \
            client(srv, max_retries=0) as llm:
        rr = PairwiseProbReranker(llm, top_k=3)
        out = rr(frame(3))
    assert rr.stats["failures"] == 2 and rr.stats["fallback_failed_call"] == 2
    assert 1 <= rr.stats["pref_no_preference"] <= 2 and rr.stats["comparison_unanswered"] >= 1
    assert sorted(order(out)) == [0, 1, 2]


def test_no_logprobs_falls_back_to_the_generated_letter():
    with FakeServer(responder=relevance_responder(RELEVANCE, logprobs=False)) as srv, client(srv) as llm:
        rr = PairwiseProbReranker(llm, top_k=10, strategy="sort")
        out = rr(frame(10))
    assert order(out) == TRUE_ORDER  # an unbiased model's written letters still sort
    assert rr.stats["fallback_generated_letter"] == rr.stats["calls"] > 0
    assert rr.stats["pref_answered_logprobs"] == 0


def test_no_letter_among_the_top_logprobs():
    no_letter = Reply("The", (("The", -0.1, {"The": -0.1, "I": -2.0}),))
    with FakeServer(responder=lambda req: no_letter) as srv, client(srv) as llm:
        rr = PairwiseProbReranker(llm, top_k=4, strategy="allpairs")
        out = rr(frame(5))
    assert order(out) == [0, 1, 2, 3, 4]
    assert rr.stats["fallback_no_label"] == 12 and rr.stats["pref_no_preference"] == 6


def test_prompts_show_both_orders_and_put_the_query_first():
    with FakeServer(responder=relevance_responder(RELEVANCE)) as srv, client(srv) as llm:
        PairwiseProbReranker(llm, top_k=2)(frame(2))
        shown = sorted(tuple(t for _, t in lettered(r)) for r in srv.received)
        body = srv.received[0]
    assert shown == [("p0", "p1"), ("p1", "p0")]
    text = body["messages"][-1]["content"]
    assert text.index("query q1") < text.index("Product A:") and text.rstrip().endswith("Answer:")
    assert body["max_tokens"] == 1 and body["top_logprobs"] == 20


def test_allpairs_submits_prompts_grouped_by_product_a_for_the_prompt_cache():
    with FakeServer(responder=relevance_responder(RELEVANCE)) as srv, client(srv, concurrency=1) as llm:
        rr = PairwiseProbReranker(llm, top_k=4, strategy="allpairs")
        rr(frame(4))
        shown = [tuple(t for _, t in lettered(r)) for r in srv.received]
    # one request at a time, in submission order: every ordered pair once, grouped by the product shown as A
    assert shown == [(f"p{a}", f"p{b}") for a in range(4) for b in range(4) if a != b]
    assert rr.stats["pref_pairs"] == 6 and rr.stats["calls"] == 12


def test_empty_frame_gives_the_columns_and_makes_no_call():
    with FakeServer() as srv, client(srv) as llm:
        out = PairwiseProbReranker(llm)(frame(0))
        assert srv.requests == 0
    assert len(out) == 0
    assert {"docno", "rank", "score", "pairwise_prob_score", "first_stage_score"} <= set(out.columns)
    assert "llm_score" not in out.columns


def test_from_spec_reads_and_rejects_options():
    ctx = BuildContext(dataset=None, llm=object())
    with pytest.raises(SpecError, match=r"r\.passes.*only applies to strategy \"sliding\""):
        build_reranker({"type": "pairwise_prob", "passes": 3}, context=ctx, path="r")
    with pytest.raises(SpecError, match=r"r\.strategy.*allpairs"):
        build_reranker({"type": "pairwise_prob", "strategy": "bogosort"}, context=ctx, path="r")
    with pytest.raises(SpecError, match=r"r\.allow_neither.*allowed keys"):
        build_reranker({"type": "pairwise_prob", "allow_neither": True}, context=ctx, path="r")
    with pytest.raises(SpecError, match=r"r\.both_orders.*true or false"):
        build_reranker({"type": "pairwise_prob", "both_orders": 1}, context=ctx, path="r")


# ---- docnos in == docnos out, whatever the model says --------------------------------------------------------------

class ScriptedLLM:
    def __init__(self, replies):
        self.replies, self.i = replies, 0

    async def acomplete(self, request):
        reply = self.replies[self.i % len(self.replies)]
        self.i += 1
        return reply


TOKENS = st.sampled_from(["A", "B", " A", "[B", "**A", "C", "The", "", "a", "\n"])
COMPLETIONS = st.one_of(
    st.just(Completion.failure("scripted")),
    st.text(max_size=8).map(lambda t: Completion(text=t)),
    st.tuples(TOKENS, st.dictionaries(TOKENS, st.floats(-30, 5, allow_nan=False), max_size=5)).map(
        lambda tt: Completion(text=tt[0], logprobs=(TokenLogprob(tt[0], -0.5, tt[1]),))),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies=st.lists(COMPLETIONS, min_size=1, max_size=10),
       sizes=st.lists(st.integers(0, 7), min_size=1, max_size=3),
       top_k=st.integers(1, 8), strategy=st.sampled_from(["allpairs", "sort", "sliding"]), both=st.booleans())
def test_docnos_preserved_for_any_model_output(replies, sizes, top_k, strategy, both):
    inp = run_of_sizes(sizes, text="text ")
    rr = PairwiseProbReranker(ScriptedLLM(replies), top_k=top_k, strategy=strategy, both_orders=both)
    out = rr(inp)
    assert_docnos_preserved(inp, out)
    assert out["pairwise_prob_score"].notna().sum() == sum(min(n, top_k) for n in sizes)
    assert all(math.isfinite(x) for x in out["pairwise_prob_score"].dropna())
