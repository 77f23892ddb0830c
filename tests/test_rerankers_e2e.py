"""End to end on the REAL embedded 0.5B model: Chorus, PISA BM25 top 10, pointwise and listwise reranking.

Checks that the whole path works with a real model and real data (not that the model is good): docnos preserved,
calls and tokens counted, pointwise scores that vary. The model file is resolved from the default SUPERB_HOME
(deliberately shared: joining 490 MB per test run would be wasteful); indexes go to a temporary SUPERB_HOME.
"""

from __future__ import annotations

import pytest

from reranker_helpers import chorus_bm25_run, small_model_client

pytestmark = [pytest.mark.model, pytest.mark.slow]

QIDS = 2
DEPTH = 10


@pytest.fixture(scope="module")
def llm():
    with small_model_client(n_ctx=4096) as client:
        yield client


@pytest.fixture(scope="module")
def chorus_run(tmp_path_factory):
    def select(topics):
        return topics[topics["query"].isin(["aa battery", "laptop"])].head(QIDS)

    with chorus_bm25_run(tmp_path_factory, DEPTH, select) as found:
        yield found


def _same_docnos(inp, out):
    for qid, g in inp.groupby("qid"):
        assert sorted(out[out.qid == qid].docno) == sorted(g.docno)


def test_pointwise_real_model(llm, chorus_run):
    from superb.transformers import BuildContext, build_reranker

    ds, run = chorus_run
    rr = build_reranker({"type": "pointwise", "variant": "yesno", "template": "pointwise_yesno_product",
                         "top_k": DEPTH}, context=BuildContext(dataset=ds, llm=llm), path="e2e.pointwise")
    out = rr(run)
    _same_docnos(run, out)
    assert rr.stats["calls"] == len(run) and rr.stats["failures"] == 0
    assert rr.stats["prompt_tokens"] > 0
    assert rr.stats["fallback_parsed_label"] + rr.stats["fallback_unparsed"] == 0  # llama.cpp gives logprobs
    assert out["llm_score"].nunique() > 1
    assert out["llm_score"].between(0, 1).all()


def test_listwise_real_model(llm, chorus_run):
    from superb.transformers import BuildContext, build_reranker

    ds, run = chorus_run
    rr = build_reranker({"type": "listwise", "top_k": DEPTH}, context=BuildContext(dataset=ds, llm=llm),
                        path="e2e.listwise")
    out = rr(run)
    _same_docnos(run, out)
    assert rr.stats["calls"] == run.qid.nunique() and rr.stats["failures"] == 0
    assert rr.stats["completion_tokens"] > 0
    ranks = out.groupby("qid")["rank"].apply(sorted)
    assert all(list(r) == list(range(len(r))) for r in ranks)
