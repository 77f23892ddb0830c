"""End to end on the REAL embedded 0.5B model: the rerankers that read label probabilities (pairwise_prob, setwise,
listwise and sliding by likelihood, permutation self-consistency, the deliberated yes/no and checklist labels) on
one Chorus query, PISA BM25 top 7, k = 5.

Checks that the whole path works with a real model and real data (not that the 0.5B is good): docnos preserved, calls
as the strategy says, llama.cpp's logprobs read (no fallback), letters found in the top logprobs. One server, one index
and one response cache (a temporary file) for the module, so that the deliberated attributes are generated once.
"""

from __future__ import annotations

import pytest

from reranker_helpers import chorus_bm25_run, small_model_client

pytestmark = [pytest.mark.model, pytest.mark.slow]

DEPTH, K = 7, 5


@pytest.fixture(scope="module")
def llm(tmp_path_factory):
    with small_model_client(n_ctx=2048, cache_path=tmp_path_factory.mktemp("llm-cache") / "cache.sqlite") as client:
        yield client


@pytest.fixture(scope="module")
def chorus_run(tmp_path_factory):
    with chorus_bm25_run(tmp_path_factory, DEPTH, lambda t: t[t["query"] == "aa battery"]) as found:
        yield found


def build(options, chorus_run, llm):
    from superb.transformers import BuildContext, build_reranker

    ds, run = chorus_run
    rr = build_reranker({**options, "top_k": K}, context=BuildContext(dataset=ds, llm=llm),
                        path=f"e2e.{options['type']}")
    out = rr(run)
    assert sorted(out["docno"]) == sorted(run["docno"])
    assert sorted(out["rank"]) == list(range(len(run)))
    assert rr.stats["failures"] == 0
    assert sum(v for k, v in rr.stats.items() if k.startswith("fallback_")) == 0  # logprobs with letters, every time
    return rr, out


def test_pairwise_prob(llm, chorus_run):
    rr, out = build({"type": "pairwise_prob", "strategy": "allpairs"}, chorus_run, llm)
    assert rr.stats["calls"] == 2 * 10 == rr.stats["pref_answered_logprobs"]
    head = out.sort_values("rank").head(K)
    assert head[rr.score_column].sum() == pytest.approx(10.0) and head[rr.score_column].nunique() > 1


def test_setwise_heap_debiased(llm, chorus_run):
    rr, out = build({"type": "setwise", "strategy": "heap", "set_size": 3, "select": 3, "debias": True},
                    chorus_run, llm)
    asked = rr.stats["comparisons"] - rr.stats["comparisons_memo"]
    assert rr.stats["calls"] == 2 * asked == rr.stats["answered_logprobs"] > 0
    assert out["setwise_score"].notna().sum() == K


def test_listwise_likelihood_with_self_consistency(llm, chorus_run):
    rr, out = build({"type": "listwise", "method": "likelihood", "shuffles": 2}, chorus_run, llm)
    assert rr.stats["calls"] == 2 == rr.stats["consistency_rankings"] == rr.stats["answered_logprobs"]
    assert rr.stats["likelihood_absent"] <= 2 * K


def test_sliding_likelihood(llm, chorus_run):
    rr, _ = build({"type": "sliding", "method": "likelihood", "window": 3, "step": 2}, chorus_run, llm)
    assert rr.stats["calls"] == rr.stats["windows"] == 2


@pytest.mark.parametrize("question", ["yesno", "checklist"])
def test_deliberated_labels(llm, chorus_run, question):
    rr, out = build({"type": "deliberated", "question": question, "attribute_tokens": 64}, chorus_run, llm)
    assert rr.stats["calls"] == K + 1  # the attributes (a response-cache hit for the second label) + one per product
    scores = out["deliberated_score"].dropna()
    assert len(scores) == K and scores.between(0, 1).all() and scores.nunique() > 1


def test_calibrated_listwise_and_setwise(llm, chorus_run):
    """calibrate = true: one content-free request per query and set size, read from llama.cpp's logprobs."""
    rr, _ = build({"type": "listwise", "method": "likelihood", "calibrate": True}, chorus_run, llm)
    assert rr.stats["calls"] == 2 and rr.stats["calibration_requests"] == 1
    rr, out = build({"type": "setwise", "strategy": "heap", "set_size": 3, "select": 3, "calibrate": True},
                    chorus_run, llm)
    asked = rr.stats["comparisons"] - rr.stats["comparisons_memo"]
    assert rr.stats["calibration_requests"] in (1, 2)  # sets of 3, and of 2 where the heap's last node has one child
    assert rr.stats["calls"] == asked + rr.stats["calibration_requests"]
    assert out["setwise_score"].notna().sum() == K
