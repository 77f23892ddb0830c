"""Helpers of the batch-round tests (export -> answer offline -> import, against a live run of the same fake model):
a frame of candidates to rerank, the ranking of a reranked frame, that ranking from a live run, and the rounds."""

from __future__ import annotations

import pandas as pd

from superb.testing.fakeserver import FakeServer, answer_batch_file
from reranker_helpers import client
from superb.llm import LLMConfig, ResponseCache
from superb.llm.batch import CollectingClient, PendingStore
from superb.llm.batch_results import import_results


def candidates(n_queries: int, depth: int, *, marks: bool = False) -> pd.DataFrame:
    """``depth`` candidates for each query ``q<k>`` (docno ``q<k>-d<i>``, text ``product <k>-<i>``, scores falling
    with the rank); with ``marks``, each text ends in a space and ``i % 3`` x's."""
    rows = [(f"q{k}", f"query {k}", f"q{k}-d{i}", float(depth - i), i,
             f"product {k}-{i}" + (f" {'x' * (i % 3)}" if marks else ""))
            for k in range(n_queries) for i in range(depth)]
    return pd.DataFrame(rows, columns=["qid", "query", "docno", "score", "rank", "text"])


def ranking(out: pd.DataFrame) -> dict[str, list[str]]:
    """qid -> docnos in rank order."""
    return {q: g.sort_values("rank")["docno"].tolist() for q, g in out.groupby("qid")}


def live(make, frame: pd.DataFrame, responder):
    """(ranking, requests made) of the reranker ``make(llm)`` on ``frame``, live against the fake server answering
    with ``responder``."""
    with FakeServer(responder=responder) as srv, client(srv) as llm:
        return ranking(make(llm)(frame)), srv.requests


def batch_rounds(make, frame: pd.DataFrame, tmp_path, responder, *, style: str = "openai", max_rounds: int = 50,
                 pending_counts: bool = True):
    """Export/import until nothing is pending; returns (final ranking, requests per round, last reranker).

    Each round runs the reranker ``make(llm)`` on ``frame`` with a CollectingClient (cache hits answered, misses
    recorded, their queries pending), writes the batch file ``round<r>.jsonl`` in ``tmp_path``, answers it offline with
    ``responder`` in the result format ``style`` (``round<r>.out.jsonl``) and imports it. Checked each round: pending
    queries keep every product, every answer is stored. With ``pending_counts`` also: the reranker counts pending
    queries, the store holds none after an import, and the final frame has none.
    """
    config = LLMConfig(model="fake-model", base_urls=("http://127.0.0.1:9/v1",))
    cache_path = tmp_path / "cache.sqlite"
    answerer = FakeServer(responder=responder)  # not started: answers batch files offline, as vllm run-batch would
    sizes = []
    for r in range(max_rounds):
        with ResponseCache(cache_path) as cache, PendingStore(cache_path) as store:
            export = store.new_round()
            llm = CollectingClient(config, cache=cache, sink=export)
            try:
                rr = make(llm)
                out = rr(frame)
                llm.drain()
            finally:
                llm.close()
            batch = tmp_path / f"round{r}.jsonl"
            n, _ = export.write(batch)
            if n == 0:
                if pending_counts:
                    assert "pending" not in out.columns or not out["pending"].any()
                return ranking(out), sizes, rr
            sizes.append(n)
            assert out["pending"].any() and set(out["docno"]) == set(frame["docno"])  # pending: every product kept
            if pending_counts:
                assert rr.stats["pending_queries"] > 0
            results = tmp_path / f"round{r}.out.jsonl"
            answer_batch_file(answerer, batch, results, style)
            report = import_results(results, cache, store)
            assert report.counts.stored == n and report.unknown == report.malformed == 0
            if pending_counts:
                assert store.pending() == 0
    raise AssertionError(f"still pending after {max_rounds} rounds")
