"""The label-probability rerankers in batch export -> import rounds (superb/llm/batch.py), against a live run of the
same fake model: the ranking from batch answers equals the live ranking and no request is exported twice. allpairs and
listwise by likelihood (with shuffles) need one round; merge sort and the setwise heap one round per sequential step."""

from __future__ import annotations

import zlib

import pytest

from batch_helpers import batch_rounds, candidates, live
from reranker_helpers import relevance_responder
from superb.transformers.listwise import ListwiseReranker
from superb.transformers.pairwise_prob import PairwiseProbReranker
from superb.transformers.setwise import SetwiseReranker


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


MODEL = relevance_responder(lambda text: (zlib.crc32(text.encode()) % 1000) / 200.0, bias=1.0)


def rounds(make, frame, tmp_path):
    """Batch rounds on MODEL; returns (final ranking, requests per round)."""
    got, sizes, _ = batch_rounds(make, frame, tmp_path, MODEL, max_rounds=60, pending_counts=False)
    return got, sizes


def test_pairwise_prob_allpairs_in_one_round(tmp_path):
    frame = candidates(2, 6)
    make = lambda llm: PairwiseProbReranker(llm, top_k=6, strategy="allpairs")  # noqa: E731
    want, calls = live(make, frame, MODEL)
    got, sizes = rounds(make, frame, tmp_path)
    assert got == want and sizes == [calls] == [2 * 6 * 5]  # every ordered pair of both queries at once


def test_pairwise_prob_sort_rounds_equal_live(tmp_path):
    frame = candidates(2, 8)
    make = lambda llm: PairwiseProbReranker(llm, top_k=8, strategy="sort")  # noqa: E731
    want, calls = live(make, frame, MODEL)
    got, sizes = rounds(make, frame, tmp_path)
    assert got == want and sum(sizes) == calls and len(sizes) > 3


def test_setwise_heap_rounds_equal_live(tmp_path):
    frame = candidates(2, 9)
    make = lambda llm: SetwiseReranker(llm, top_k=9, strategy="heap", set_size=3, select=4, debias=True)  # noqa: E731
    want, calls = live(make, frame, MODEL)
    got, sizes = rounds(make, frame, tmp_path)
    assert got == want and sum(sizes) == calls


def test_listwise_likelihood_with_shuffles_in_one_round(tmp_path):
    frame = candidates(3, 7)
    make = lambda llm: ListwiseReranker(llm, method="likelihood", shuffles=3, top_k=7)  # noqa: E731
    want, calls = live(make, frame, MODEL)
    got, sizes = rounds(make, frame, tmp_path)
    assert got == want and sizes == [calls] == [3 * 3]
