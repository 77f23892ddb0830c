"""The label-probability rerankers in batch export -> import rounds (superb/llm/batch.py), against a live run of the
same fake model: the ranking from batch answers equals the live ranking and no request is exported twice. allpairs and
listwise by likelihood (with shuffles) need one round; merge sort and the setwise heap one round per sequential step."""

from __future__ import annotations

import zlib

import pandas as pd
import pytest

from fakeserver import FakeServer, answer_batch_file
from reranker_helpers import client, relevance_responder
from superb.llm import LLMConfig, ResponseCache
from superb.llm.batch import CollectingClient, PendingStore
from superb.llm.batch_results import import_results
from superb.transformers.listwise import ListwiseReranker
from superb.transformers.pairwise_prob import PairwiseProbReranker
from superb.transformers.setwise import SetwiseReranker


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


MODEL = relevance_responder(lambda text: (zlib.crc32(text.encode()) % 1000) / 200.0, bias=1.0)


def candidates(n_queries: int, depth: int) -> pd.DataFrame:
    rows = [(f"q{k}", f"query {k}", f"q{k}-d{i}", float(depth - i), i, f"product {k}-{i}")
            for k in range(n_queries) for i in range(depth)]
    return pd.DataFrame(rows, columns=["qid", "query", "docno", "score", "rank", "text"])


def ranking(out: pd.DataFrame) -> dict[str, list[str]]:
    return {q: g.sort_values("rank")["docno"].tolist() for q, g in out.groupby("qid")}


def live(make, frame):
    with FakeServer(responder=MODEL) as srv, client(srv) as llm:
        return ranking(make(llm)(frame)), srv.requests


def batch_rounds(make, frame, tmp_path, max_rounds=60):
    """Export/import until nothing is pending; returns (final ranking, requests per round)."""
    config = LLMConfig(model="fake-model", base_urls=("http://127.0.0.1:9/v1",))
    cache_path = tmp_path / "cache.sqlite"
    answerer = FakeServer(responder=MODEL)  # not started: answers the batch files offline
    sizes = []
    for r in range(max_rounds):
        with ResponseCache(cache_path) as cache, PendingStore(cache_path) as store:
            export = store.new_round()
            llm = CollectingClient(config, cache=cache, sink=export)
            try:
                out = make(llm)(frame)
                llm.drain()
            finally:
                llm.close()
            n, _ = export.write(tmp_path / f"round{r}.jsonl")
            if n == 0:
                return ranking(out), sizes
            sizes.append(n)
            assert out["pending"].any() and set(out["docno"]) == set(frame["docno"])
            answer_batch_file(answerer, tmp_path / f"round{r}.jsonl", tmp_path / f"round{r}.out.jsonl", "openai")
            report = import_results(tmp_path / f"round{r}.out.jsonl", cache, store)
            assert report.counts.stored == n and report.unknown == report.malformed == 0
    raise AssertionError(f"still pending after {max_rounds} rounds")


def test_pairwise_prob_allpairs_in_one_round(tmp_path):
    frame = candidates(2, 6)
    make = lambda llm: PairwiseProbReranker(llm, top_k=6, strategy="allpairs")  # noqa: E731
    want, calls = live(make, frame)
    got, sizes = batch_rounds(make, frame, tmp_path)
    assert got == want and sizes == [calls] == [2 * 6 * 5]  # every ordered pair of both queries at once


def test_pairwise_prob_sort_rounds_equal_live(tmp_path):
    frame = candidates(2, 8)
    make = lambda llm: PairwiseProbReranker(llm, top_k=8, strategy="sort")  # noqa: E731
    want, calls = live(make, frame)
    got, sizes = batch_rounds(make, frame, tmp_path)
    assert got == want and sum(sizes) == calls and len(sizes) > 3


def test_setwise_heap_rounds_equal_live(tmp_path):
    frame = candidates(2, 9)
    make = lambda llm: SetwiseReranker(llm, top_k=9, strategy="heap", set_size=3, select=4, debias=True)  # noqa: E731
    want, calls = live(make, frame)
    got, sizes = batch_rounds(make, frame, tmp_path)
    assert got == want and sum(sizes) == calls


def test_listwise_likelihood_with_shuffles_in_one_round(tmp_path):
    frame = candidates(3, 7)
    make = lambda llm: ListwiseReranker(llm, method="likelihood", shuffles=3, top_k=7)  # noqa: E731
    want, calls = live(make, frame)
    got, sizes = batch_rounds(make, frame, tmp_path)
    assert got == want and sizes == [calls] == [3 * 3]
