"""What only the Terrier first stage does (JVM): its docno length limit, and the slow Chorus check that Terrier and
PISA agree. The behaviour shared with PISA is tested for both engines in test_pipelines_engines.py."""

from __future__ import annotations

import pytest

from superb.errors import DataError
from superb.pipelines import first_stage
from test_pipelines_corpus import PRODUCTS, TinyProducts

pytestmark = pytest.mark.java


@pytest.mark.slow
def test_chorus_bm25_is_plausible_and_agrees_across_engines(tmp_path, monkeypatch):
    import os
    from pathlib import Path

    import ir_measures
    from ir_measures import nDCG

    from superb.data import load_dataset

    mirror = os.environ.get("SUPERB_DATA_MIRROR") or str(Path(__file__).resolve().parents[2] / "shared" / "data")
    monkeypatch.setenv("SUPERB_DATA_MIRROR", mirror)
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path))
    chorus = load_dataset({"name": "chorus"})
    topics = chorus.topics()
    qrels = chorus.qrels().rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    runs = {}
    for engine in ("terrier", "pisa"):
        run = first_stage(chorus, engine=engine, depth=100)(topics)
        assert run["qid"].nunique() == len(topics) and run.groupby("qid").size().max() <= 100
        runs[engine] = run
        ndcg = ir_measures.calc_aggregate(
            [nDCG @ 10], qrels, run.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
        )[nDCG @ 10]
        assert 0.45 <= ndcg <= 0.75, f"{engine} BM25 nDCG@10 = {ndcg:.3f} on Chorus"
    top = {e: r[r["rank"] < 10].groupby("qid")["docno"].apply(set) for e, r in runs.items()}
    shared = [len(top["terrier"][q] & top["pisa"][q]) / 10 for q in topics["qid"]]
    assert sum(shared) / len(shared) >= 0.7  # the same formula on two engines: mostly the same top 10


def test_a_failed_build_leaves_no_index(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path))
    broken = TinyProducts(name="broken", products=PRODUCTS[:5] + [("x" * 200, "x", "y", "z", 1.0)])
    with pytest.raises(DataError, match="is 200 characters"):
        first_stage(broken, engine="terrier").prepare()
    assert list((tmp_path / "indexes" / "broken").iterdir()) == []
