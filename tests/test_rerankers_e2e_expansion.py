"""Query expansion end to end on the REAL embedded 0.5B model and real Chorus data, composed from Python with ``>>``:
the expanded query before PISA BM25 (Query2doc), and HyDE (the bi-encoder embedding the generated text over BM25's
top 10). Checks that the path works with a real model (text generated, one call per query, the query restored), not
that the model is good."""

from __future__ import annotations

import pytest

from reranker_helpers import chorus_bm25_run, small_model_client

pytestmark = [pytest.mark.model, pytest.mark.slow]

DEPTH = 10


@pytest.fixture(scope="module")
def llm():
    with small_model_client(n_ctx=2048) as client:
        yield client


@pytest.fixture(scope="module")
def chorus(tmp_path_factory):
    def select(topics):
        return topics[topics["query"].isin(["aa battery", "laptop"])]

    with chorus_bm25_run(tmp_path_factory, DEPTH, select) as found:
        yield found


def test_query2doc_and_hyde_real_model(llm, chorus):
    from superb.pipelines import first_stage
    from superb.llm.text import ProductText
    from superb.transformers.biencoder import BiEncoderReranker
    from superb.transformers.expansion import QueryExpansion, RestoreQuery

    ds, run = chorus
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
