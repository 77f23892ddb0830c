"""bench/rerankers.py: a ``--rerankers`` subset of the real section keeps the other rows of the same measurement."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "rerankers.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_rerankers", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _out(**changes):
    out = {"model": "m (1 slot)", "queries": 1, "split": "dev", "k": 20, "first_stage": "PISA BM25 top 20"}
    return {**out, **changes}


def test_subset_keeps_other_rows_of_the_same_measurement(bench):
    previous = {**_out(), "rows": [{"reranker": "rubric", "calls_per_query": 2},
                                   {"reranker": "listwise (likelihood)", "calls_per_query": 1},
                                   {"reranker": "a reranker since removed", "calls_per_query": 9}]}
    kept = bench.keep_rows(previous, _out(), ["listwise (likelihood)"])
    assert kept == [{"reranker": "rubric", "calls_per_query": 2}]


@pytest.mark.parametrize("key,value", [("model", "other (1 slot)"), ("queries", 10), ("k", 50),
                                       ("first_stage", "Terrier BM25 top 20")])
def test_nothing_kept_from_another_measurement(bench, key, value):
    previous = {**_out(), "rows": [{"reranker": "rubric", "calls_per_query": 2}]}
    assert bench.keep_rows(previous, _out(**{key: value}), ["listwise (likelihood)"]) == []
    assert bench.keep_rows(None, _out(), ["rubric"]) == []


def test_embedded_uses_every_served_url(bench, monkeypatch):
    import superb.llm.connect as connect

    urls = ("http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1")
    monkeypatch.setattr(connect, "running_embedded_server", lambda alias: urls)
    srv, llm = bench.embedded("1.5b")
    try:
        assert llm.config.base_urls == urls
    finally:
        llm.close()
