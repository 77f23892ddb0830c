"""End to end on the REAL embedded 0.5B model: Chorus, PISA BM25 top 10, pointwise and listwise reranking, and query
expansion composed from Python with ``>>`` (Query2doc: the expanded query before PISA BM25; HyDE: the bi-encoder
embedding the generated text over BM25's top 10), sharing one model server and one BM25 run.

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
    assert out["pointwise_score"].nunique() > 1
    assert out["pointwise_score"].between(0, 1).all()


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


def test_query2doc_and_hyde_real_model(llm, chorus_run):
    from superb.pipelines import first_stage
    from superb.llm.text import ProductText
    from superb.transformers.biencoder import BiEncoderReranker
    from superb.transformers.expansion import QueryExpansion, RestoreQuery

    ds, run = chorus_run
    topics = run[["qid", "query"]].drop_duplicates().reset_index(drop=True)
    expand = QueryExpansion(llm, repeat=2, max_tokens=48)
    bm25 = first_stage(ds, engine="pisa", depth=DEPTH)
    q2d = (expand >> bm25 >> RestoreQuery())(topics)
    assert expand.stats["calls"] == len(topics) and expand.stats["failures"] == 0
    assert expand.stats["completion_tokens"] > 0 and expand.stats["fallback_no_expansion"] == 0
    assert sorted(q2d["query"].unique()) == sorted(topics["query"])  # the original query is back
    assert (q2d["expansion"].str.len() > 0).all()  # the generated text is kept beside the restored query
    assert q2d.groupby("qid").size().min() > 0

    hyde = BiEncoderReranker(text=ProductText(ds, fields=["title"]), top_k=DEPTH, alpha=0.5)
    out = (bm25 >> QueryExpansion(llm, repeat=0, sanitise=False, max_tokens=48) >> hyde >> RestoreQuery())(topics)
    assert sorted(out["docno"]) == sorted(run["docno"])  # HyDE reranks BM25's list: the same products
    assert sorted(out["query"].unique()) == sorted(topics["query"])
    assert out["biencoder_score"].notna().all()
