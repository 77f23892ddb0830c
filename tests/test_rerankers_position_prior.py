"""Contextual calibration of letter distributions (``calibrate = true`` on setwise and listwise/sliding by likelihood):
the content-free prior divided out by hand, a first-position bias cancelled where the uncalibrated reranker follows
it, one content-free request per query and set size, the fallback counted, spec errors naming the key, docnos kept
under arbitrary output. Fake server: P(letter) = softmax(relevance + bias on the first-shown product), so the
content-free prompt (every product "N/A", relevance 0) gives exactly the position prior."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from superb.testing.fakeserver import FakeServer, Reply
from reranker_helpers import assert_docnos_preserved, client, lettered, relevance_responder, run_of_sizes
from superb.errors import SpecError
from superb.transformers.listwise import ListwiseReranker
from superb.transformers.position_prior import FILLER, calibrate
from superb.transformers.registry import BuildContext, build_reranker
from superb.transformers.setwise import SetwiseReranker
from superb.transformers.sliding import SlidingWindowReranker
from test_rerankers_pairwise_prob import COMPLETIONS, ScriptedLLM
from test_rerankers_setwise import _Dataset


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


RELEVANCE = {f"p{i}": r for i, r in enumerate([0.3, 2.0, 0.0, 1.4, 0.9, 1.7, 0.1, 1.1, 0.6, 2.4, 0.2, 1.9])}
TRUE_ORDER = sorted(range(12), key=lambda i: -RELEVANCE[f"p{i}"])
BIAS = 4.0  # the first-shown product's logit bonus: larger than any relevance difference above


def relevance(text: str) -> float:
    return 0.0 if text == FILLER else RELEVANCE[text]


def frame(n: int, qids=("q1",)) -> pd.DataFrame:
    rows = [(q, "query " + q, f"{q}-d{i}", float(100 - i), i, f"p{i}") for q in qids for i in range(n)]
    return pd.DataFrame(rows, columns=["qid", "query", "docno", "score", "rank", "text"])


def order(out: pd.DataFrame, qid: str = "q1") -> list[int]:
    return [int(d.rsplit("-d", 1)[1]) for d in out[out.qid == qid].sort_values("rank").docno]


def content_free(req: dict) -> bool:
    return all(text == FILLER for _, text in lettered(req))


def test_calibrate_by_hand():
    # (0.5, 0.3, 0.2) / (0.5, 0.25, 0.25) = (1.0, 1.2, 0.8) -> / 3.0
    assert calibrate([0.5, 0.3, 0.2], [0.5, 0.25, 0.25]) == pytest.approx([1 / 3, 0.4, 0.8 / 3])
    # a prior letter absent (0) counts as the floor 1e-3: no division by zero, a large but finite boost
    got = calibrate([0.9, 0.1], [1.0, 0.0])
    assert got == pytest.approx([0.9 / (0.9 + 100.0), 100.0 / (0.9 + 100.0)])
    assert calibrate([0.0, 0.0], [0.5, 0.5]) == (0.0, 0.0)
    with pytest.raises(ValueError, match="3 probabilities but a prior over 2"):
        calibrate([0.2, 0.3, 0.5], [0.5, 0.5])


@pytest.mark.parametrize("strategy, size", [("heap", 3), ("bubble", 3), ("heap", 4)])
def test_setwise_calibration_cancels_a_first_position_bias(strategy, size):
    with FakeServer(responder=relevance_responder(relevance, bias=BIAS)) as srv, client(srv) as llm:
        biased = SetwiseReranker(llm, top_k=12, strategy=strategy, set_size=size, select=4)
        assert order(biased(frame(12)))[:4] != TRUE_ORDER[:4]
        before = srv.requests
        fair = SetwiseReranker(llm, top_k=12, strategy=strategy, set_size=size, select=4, calibrate=True)
        out = fair(frame(12, qids=("q1", "q2")))
        asked = srv.received[before:]
    for qid in ("q1", "q2"):
        assert order(out, qid)[:4] == TRUE_ORDER[:4]
    free = [r for r in asked if content_free(r)]
    sizes = {len(lettered(r)) for r in asked if not content_free(r)}
    # one content-free request per query and set size shown (a heap's last node may show fewer products)
    assert len(free) == fair.stats["calibration_requests"] == 2 * len(sizes)
    assert fair.stats["calls"] == len(asked) and fair.stats.get("fallback_uncalibrated", 0) == 0


def test_listwise_likelihood_calibration_cancels_a_first_position_bias():
    with FakeServer(responder=relevance_responder(relevance, bias=BIAS)) as srv, client(srv) as llm:
        biased = ListwiseReranker(llm, method="likelihood", top_k=12)
        assert order(biased(frame(12)))[0] == 0  # the first-shown product, not the best
        fair = ListwiseReranker(llm, method="likelihood", top_k=12, calibrate=True)
        out = fair(frame(12))
    assert order(out) == TRUE_ORDER
    assert fair.stats["calls"] == 2 and fair.stats["calibration_requests"] == 1


def test_sliding_windows_of_one_size_share_one_content_free_request():
    # 12 products, windows of 6, step 3: windows at 6, 3, 0 -> 3 window calls + 1 content-free per query
    with FakeServer(responder=relevance_responder(relevance, bias=BIAS)) as srv, client(srv) as llm:
        rr = SlidingWindowReranker(llm, method="likelihood", window=6, step=3, top_k=12, calibrate=True)
        out = rr(frame(12, qids=("q1", "q2", "q3")))
        free = [r for r in srv.received if content_free(r)]
    assert rr.stats["windows"] == 9 and rr.stats["calibration_requests"] == 3 == len(free)
    assert {len(lettered(r)) for r in free} == {6}
    for qid in ("q1", "q2", "q3"):  # the best of the bottom windows climbs: the top 3 of the true order lead
        assert order(out, qid)[:3] == TRUE_ORDER[:3]


def test_a_content_free_request_without_logprobs_leaves_the_distribution_uncalibrated_and_counted():
    biased = relevance_responder(relevance, bias=BIAS)

    def responder(req: dict) -> Reply:
        return Reply("A") if content_free(req) else biased(req)

    with FakeServer(responder=responder) as srv, client(srv) as llm:
        rr = ListwiseReranker(llm, method="likelihood", top_k=12, calibrate=True)
        out = rr(frame(12))
    assert order(out)[0] == 0  # the uncalibrated order: the first-shown product leads
    assert rr.stats["fallback_uncalibrated"] == 1 and rr.stats["calibration_requests"] == 1


def test_answers_without_logprobs_are_not_calibrated_and_ask_no_content_free_request():
    with FakeServer(responder=relevance_responder(relevance, logprobs=False)) as srv, client(srv) as llm:
        rr = SetwiseReranker(llm, top_k=12, strategy="heap", select=3, calibrate=True)
        out = rr(frame(12))
        free = [r for r in srv.received if content_free(r)]
    assert order(out)[:3] == TRUE_ORDER[:3]  # the generated letters, one-hot, decide as without calibrate
    assert free == [] and rr.stats.get("calibration_requests", 0) == 0
    assert rr.stats["fallback_generated_letter"] == rr.stats["calls"] > 0


def test_calibration_is_a_spec_option_for_likelihood_and_setwise_only():
    ctx = BuildContext(dataset=_Dataset(), llm=object())
    rr = build_reranker({"type": "setwise", "calibrate": True}, context=ctx, path="r")
    assert rr.prior is not None and "calibrate=True" in repr(rr)
    rr = build_reranker({"type": "listwise", "method": "likelihood", "calibrate": True}, context=ctx, path="r")
    assert "calibrate=True" in repr(rr)
    with pytest.raises(SpecError, match=r"r\.calibrate.*method = \"likelihood\", got 'generation'"):
        build_reranker({"type": "listwise", "calibrate": True}, context=ctx, path="r")
    with pytest.raises(SpecError, match=r"r\.calibrate.*method = \"likelihood\""):
        build_reranker({"type": "sliding", "method": "generation", "calibrate": True}, context=ctx, path="r")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies=st.lists(COMPLETIONS, min_size=1, max_size=10),
       sizes=st.lists(st.integers(0, 9), min_size=1, max_size=3), top_k=st.integers(1, 9),
       kind=st.sampled_from(["setwise", "listwise", "sliding"]))
def test_docnos_preserved_for_any_model_output(replies, sizes, top_k, kind):
    inp = run_of_sizes(sizes, text="text ")
    llm = ScriptedLLM(replies)
    if kind == "setwise":
        rr = SetwiseReranker(llm, top_k=top_k, set_size=3, select=3, calibrate=True)
    elif kind == "listwise":
        rr = ListwiseReranker(llm, method="likelihood", top_k=top_k, calibrate=True)
    else:
        rr = SlidingWindowReranker(llm, method="likelihood", window=3, step=2, top_k=top_k, calibrate=True)
    out = rr(inp)
    assert_docnos_preserved(inp, out)
    head = out.merge(inp[["qid", "docno", "rank"]].rename(columns={"rank": "prior"}), on=["qid", "docno"])
    head = head[head["prior"] < top_k]  # the reranked head (the tail's own score is NaN by design)
    assert all(math.isfinite(x) for x in head[rr.score_column])
