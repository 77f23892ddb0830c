"""The first stage on a tiny synthetic catalogue, the same behaviour asked of both engines: real PISA and real
Terrier (JVM) indexes in a temporary SUPERB_HOME. Engine-specific tests stay in test_pipelines_pisa.py and
test_pipelines_terrier.py."""

from __future__ import annotations

import pandas as pd
import pytest

from superb.pipelines import first_stage
from test_pipelines_corpus import TinyProducts

COLUMNS = ["qid", "query", "docno", "score", "rank"]


@pytest.fixture(scope="module", params=[pytest.param("terrier", marks=pytest.mark.java), "pisa"])
def engine(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def ds(engine, tmp_path_factory):
    """A fresh catalogue and SUPERB_HOME per engine, so each engine builds (and counts reads of) its own indexes."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SUPERB_HOME", str(tmp_path_factory.mktemp(f"superb-home-{engine}")))
        yield TinyProducts()


def _topics(*pairs):
    return pd.DataFrame(pairs, columns=["qid", "query"])


def test_obvious_queries_find_their_product_first(ds, engine):
    out = first_stage(ds, engine=engine)(_topics(("1", "espresso machine"), ("2", "hdmi cable"), ("3", "french press")))
    assert list(out.columns) == COLUMNS and out["score"].dtype == "float64"
    top = out[out["rank"] == 0].set_index("qid")["docno"].to_dict()
    assert top == {"1": "p16", "2": "p07", "3": "p19"}
    ranks = out.groupby("qid")["rank"].apply(list).to_dict()
    assert all(r == list(range(len(r))) for r in ranks.values())
    assert out.groupby("qid")["score"].apply(lambda s: s.is_monotonic_decreasing).all()


def test_depth_is_respected(ds, engine):
    topics = _topics(("1", "coffee"), ("2", "batteries"), ("3", "laptop"))
    deep = first_stage(ds, engine=engine, depth=100)(topics)
    shallow = first_stage(ds, engine=engine, depth=2)(topics)
    assert deep.groupby("qid").size().min() > 2  # the corpus has more than two matches for each query
    assert shallow.groupby("qid").size().to_dict() == {"1": 2, "2": 2, "3": 2}
    head = deep[deep["rank"] < 2].reset_index(drop=True)
    assert shallow["docno"].tolist() == head["docno"].tolist()


def test_original_query_and_extra_columns_are_kept(ds, engine):
    topics = pd.DataFrame({"qid": ["7"], "query": ['"usb-c" cable & charger'], "source": ["log"]})
    out = first_stage(ds, engine=engine, depth=3)(topics)
    assert set(out["query"]) == {'"usb-c" cable & charger'} and set(out["source"]) == {"log"}
    assert out.iloc[0]["docno"] in {"p05", "p08"}


def test_empty_and_unmatched_queries_are_counted_not_fatal(ds, engine):
    stage = first_stage(ds, engine=engine, depth=5)
    out = stage(_topics(("a", "--- // ---"), ("b", "aa batteries"), ("c", "the"), ("d", "zzzqqq")))
    assert set(out["qid"]) == {"b"}
    assert stage.stats["queries"] == 4
    assert stage.stats["empty_queries"] == 1 and stage.stats["empty_qids"] == ["a"]
    assert stage.stats["no_results"] == 2  # a stopword-only query and an unknown word


def test_fields_choose_what_is_indexed(ds, engine):
    # "waterproof" occurs only in descriptions (p09, p11); "sneakers" is in p12's title and description
    topics = _topics(("1", "waterproof"), ("2", "sneakers"))
    text = first_stage(ds, engine=engine)(topics)
    titles = first_stage(ds, engine=engine, fields=["title"])(topics)
    assert set(text.loc[text["qid"] == "1", "docno"]) == {"p09", "p11"}
    assert set(titles["qid"]) == {"2"} and titles["docno"].tolist() == ["p12"]
    # the price field is indexed as text when asked
    prices = first_stage(ds, engine=engine, fields=["price"])(_topics(("1", "599.0")))
    assert prices["docno"].tolist()[0] == "p28"


def test_bm25_parameters_reach_the_engine_and_do_not_leak(ds, engine):
    topics = _topics(("1", "running shoes cushioned"))
    default_stage = first_stage(ds, engine=engine)
    default = default_stage(topics).set_index("docno")["score"].to_dict()
    flat = first_stage(ds, engine=engine, bm25={"b": 0.0})(topics).set_index("docno")["score"].to_dict()
    steep = first_stage(ds, engine=engine, bm25={"k1": 3.0})(topics).set_index("docno")["score"].to_dict()
    assert flat != pytest.approx(default) and steep != pytest.approx(default)
    again = default_stage(topics).set_index("docno")["score"].to_dict()
    assert again == pytest.approx(default)  # k1=3.0 of the other stage did not stick


def test_rm3_expands_the_query_and_changes_results(ds, engine):
    topics = _topics(("1", "aa batteries"), ("2", "headphones"))
    bm25 = first_stage(ds, engine=engine, depth=10)(topics)
    rm3_stage = first_stage(ds, engine=engine, model="rm3", depth=10, rm3={"fb_docs": 3, "fb_terms": 10})
    rm3 = rm3_stage(topics)
    assert list(rm3.columns) == COLUMNS
    assert set(rm3["query"]) == {"aa batteries", "headphones"}  # the original text, not the expansion
    expanded = rm3_stage.expanded_queries(topics).set_index("qid")["expansion"]
    assert {"aa", "batteri"} < set(expanded["1"]) and len(expanded["1"]) > 2
    assert sum(expanded["1"].values()) == pytest.approx(1.0)
    assert expanded["1"]["batteri"] > max(w for t, w in expanded["1"].items() if t not in {"aa", "batteri"})
    # expansion brings in documents BM25 did not retrieve for "headphones" (only two products contain the word)
    assert len(rm3[rm3["qid"] == "2"]) > len(bm25[bm25["qid"] == "2"])
    assert rm3.groupby("qid").size().max() <= 10
    if engine == "pisa":  # only the PISA RM3 counts queries whose feedback retrieval found nothing
        assert rm3_stage.stats["rm3_no_feedback"] == 0


def test_index_is_built_once_and_reused(ds, engine):
    reads = ds.iterations
    first = first_stage(ds, engine=engine, fields=["brand"])
    built = first.prepare()
    assert built.built_now and ds.iterations == reads + 1
    second = first_stage(ds, engine=engine, model="rm3", depth=5, fields=["brand"])
    reopened = second.prepare()
    assert not reopened.built_now and reopened.path == built.path
    assert reopened.info["build_id"] == built.info["build_id"]
    assert ds.iterations == reads + 1  # the documents were not read again
    assert set(second(_topics(("1", "duracell")))["docno"]) == {"p01", "p04"}  # the two Duracell products
