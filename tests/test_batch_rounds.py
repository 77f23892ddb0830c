"""Batch export -> import rounds on the rerankers themselves, against a live run of the same fake model.

The fake model answers from the prompt alone (deterministic), so a ranking built from batch answers must equal the
ranking of a live run: pointwise (one round), sliding windows (one round per window), pairwise merge sort (one round
per sequential comparison). Each round: run with a CollectingClient (cache hits answered, misses recorded, their
queries pending), write the batch file, answer it offline in OpenAI's result format, import, again.
"""

from __future__ import annotations

import json
import math
import re
import zlib

import pytest

from batch_helpers import batch_rounds, candidates, live, ranking
from superb.testing.fakeserver import Reply
from reranker_helpers import prompt_of
from superb.llm import LLMConfig, ResponseCache
from superb.llm.batch import CollectingClient, PendingStore
from superb.transformers.pairwise import PairwiseReranker
from superb.transformers.pointwise import PointwiseReranker
from superb.transformers.sliding import SlidingWindowReranker


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


def worth(text: str) -> int:
    """The fake model's hidden relevance of a product text."""
    return zlib.crc32(text.encode("utf-8")) % 1000


def model(request: dict) -> Reply:
    """One fake model for all three methods, answering from the prompt alone."""
    prompt = prompt_of(request)
    shown = re.findall(r"^\[(\d+)\] <<< (.*) >>>$", prompt, re.M)
    if shown:  # listwise: best first by worth
        ranked = sorted(shown, key=lambda item: -worth(item[1]))
        return Reply(" > ".join(f"[{i}]" for i, _ in ranked))
    pair = re.search(r"LHS product:\n<<<\n(.*?)\n>>>.*RHS product:\n<<<\n(.*?)\n>>>", prompt, re.S)
    if pair:  # pairwise
        return Reply("LHS" if worth(pair[1]) >= worth(pair[2]) else "RHS")
    product = re.search(r"^Product: <<< (.*) >>>$", prompt, re.M)[1]  # pointwise
    p = min(max(worth(product) / 1000, 0.001), 0.999)
    return Reply("yes" if p >= 0.5 else "no", (("yes" if p >= 0.5 else "no", math.log(max(p, 1 - p)),
                                                 {"yes": math.log(p), "no": math.log(1 - p)}),))


def test_pointwise_one_round_equals_live(tmp_path):
    frame = candidates(4, 12, marks=True)
    make = lambda llm: PointwiseReranker(llm, variant="yesno", top_k=10)  # noqa: E731
    want, calls = live(make, frame, model)
    got, sizes, rr = batch_rounds(make, frame, tmp_path, model)
    assert got == want
    assert sizes == [calls] == [40]  # every product of every query in the first round, nothing after
    assert rr.stats["from_cache"] == 40 and rr.stats["fallback_parsed_label"] == 0


def test_sliding_windows_take_one_round_per_window(tmp_path):
    frame = candidates(3, 30, marks=True)
    make = lambda llm: SlidingWindowReranker(llm, window=10, step=5, top_k=30)  # noqa: E731
    want, calls = live(make, frame, model)
    got, sizes, _ = batch_rounds(make, frame, tmp_path, model)
    assert got == want
    windows = math.ceil((30 - 10) / 5) + 1
    assert sizes == [3] * windows  # one window per query per round: each window needs the last one's answer
    assert sum(sizes) == calls


def test_pairwise_sort_rounds_equal_live_and_record_concurrent_misses(tmp_path):
    frame = candidates(2, 8, marks=True)
    make = lambda llm: PairwiseReranker(llm, top_k=8, strategy="sort")  # noqa: E731
    want, calls = live(make, frame, model)
    got, sizes, _ = batch_rounds(make, frame, tmp_path, model)
    assert got == want
    assert sum(sizes) == calls  # no request exported twice, none wasted
    assert len(sizes) > 3  # merges are sequential: several rounds
    # the first round holds the first comparison of every independent merge at the bottom level: 4 pairs x 2 queries
    assert sizes[0] == 8


@pytest.mark.parametrize("style", ["vllm", "sglang"])
def test_vllm_and_sglang_result_files_import(tmp_path, style):
    frame = candidates(2, 6, marks=True)
    make = lambda llm: PointwiseReranker(llm, variant="yesno", top_k=6)  # noqa: E731
    want, _ = live(make, frame, model)
    got, sizes, _ = batch_rounds(make, frame, tmp_path, model, style=style)
    assert got == want and sizes == [12]
    line = json.loads((tmp_path / "round0.out.jsonl").read_text().splitlines()[0])
    if style == "vllm":  # the schema of vLLM's BatchRequestOutput (vllm/entrypoints/openai/protocol.py)
        assert line["id"].startswith("vllm-") and line["response"]["request_id"].startswith("vllm-batch-")
        assert set(line) == {"id", "custom_id", "response", "error"} and line["error"] is None
    else:
        assert isinstance(line["response"]["body"]["choices"], dict)


def test_downstream_stage_skips_queries_pending_upstream(tmp_path):
    frame = candidates(2, 6, marks=True)
    config = LLMConfig(model="fake-model", base_urls=("http://127.0.0.1:9/v1",))
    with ResponseCache(tmp_path / "c.sqlite") as cache, PendingStore(tmp_path / "c.sqlite") as store:
        export = store.new_round()
        with CollectingClient(config, cache=cache, sink=export) as llm:
            first = PointwiseReranker(llm, variant="yesno", top_k=6)
            second = SlidingWindowReranker(llm, window=4, step=2, top_k=6)
            out = (first >> second)(frame)
            llm.drain()
        assert export.totals().requests == 12  # only the pointwise requests: nothing derived from missing answers
    assert second.stats["pending_queries"] == 0 and second.stats.get("windows", 0) == 0
    assert out["pending"].all()
    assert ranking(out) == ranking(frame)  # prior order kept
