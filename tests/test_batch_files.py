"""Batch files line by line: the exported request file (exactly the live body, nothing secret), the result formats
of OpenAI, vLLM and SGLang with their error lines, unknown custom_ids and malformed bodies, and the drain of
concurrent misses."""

from __future__ import annotations

import asyncio
import json

import pytest

from superb.testing.fakeserver import FakeServer, Reply, batch_output_line
from superb.llm import ChatRequest, LLMClient, LLMConfig, ResponseCache, Usage
from superb.llm.batch import CollectingClient, PendingRequest, PendingStore
from superb.llm.batch_results import import_results, result_body
from superb.llm.cache_rows import cache_key
from superb.transformers.base import Reranker

SECRET = "sk-live-batchsecret-0123456789abcdef"


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_BATCH_KEY", SECRET)


CONFIG = LLMConfig(model="gpt-4o-mini", base_urls=("https://api.example.com/v1",), api_key_env="SUPERB_BATCH_KEY")


def requests() -> list[ChatRequest]:
    return [ChatRequest.label(f"Is product {i} relevant to 'lamp'?", template="pointwise_yesno@abc", tag="t")
            for i in range(3)] + [ChatRequest.chat("be brief", "Rank [1] a [2] b", template="listwise@def",
                                                   max_tokens=20, stop=("\n\n",))]


def export(tmp_path, reqs) -> tuple[list[dict], ResponseCache, PendingStore]:
    cache, store = ResponseCache(tmp_path / "c.sqlite"), PendingStore(tmp_path / "c.sqlite")
    rnd = store.new_round()
    with CollectingClient(CONFIG, cache=cache, sink=rnd) as llm:
        for r in reqs:
            with pytest.raises(PendingRequest):
                llm.complete(r)
    n, _ = rnd.write(tmp_path / "batch.jsonl")
    assert n == len({cache_key("gpt-4o-mini", r) for r in reqs})
    return [json.loads(x) for x in (tmp_path / "batch.jsonl").read_text().splitlines()], cache, store


def test_batch_lines_are_exactly_what_the_live_client_sends_and_hold_no_secret(tmp_path):
    lines, cache, store = export(tmp_path, requests() + requests()[:1])  # a repeated request is exported once
    raw = (tmp_path / "batch.jsonl").read_text()
    assert SECRET not in raw and "api.example.com" not in raw and "Authorization" not in raw
    assert [ln["custom_id"] for ln in lines] == sorted(ln["custom_id"] for ln in lines)
    by_key = {ln["custom_id"]: ln for ln in lines}
    with FakeServer(model="gpt-4o-mini") as srv:
        live = LLMClient(CONFIG.with_(base_urls=(srv.base_url,)), cache=None, usage=Usage())
        for r in requests():
            live.complete(r)
        live.close()
        sent = srv.received
    for r, body in zip(requests(), sent):
        line = by_key[cache_key("gpt-4o-mini", r)]
        assert set(line) == {"custom_id", "method", "url", "body"}
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
        assert line["body"] == body  # logprobs, top_logprobs, seed, stop: the same JSON the live client posts
    assert lines[0]["body"].get("top_logprobs") in (20, None)
    assert any(ln["body"].get("logprobs") is True and ln["body"]["top_logprobs"] == 20 for ln in lines)
    cache.close()
    store.close()


def test_result_lines_of_every_engine_and_their_errors_are_counted(tmp_path):
    lines, cache, store = export(tmp_path, requests())
    srv = FakeServer(responder=lambda r: Reply("yes", (("yes", -0.1, {"yes": -0.1, "no": -2.4}),)))
    ok_openai = batch_output_line(srv, lines[0], "openai", 1)
    ok_vllm = batch_output_line(srv, lines[1], "vllm", 2)
    ok_sglang = batch_output_line(srv, lines[2], "sglang", 3)
    failed = [
        {"id": "batch_req_9", "custom_id": lines[3]["custom_id"], "response": None,  # OpenAI error file
         "error": {"code": "batch_expired", "message": "not executed before the completion window expired"}},
        {"id": "vllm-1", "custom_id": lines[3]["custom_id"],  # vllm run-batch: make_error_request_output
         "response": {"status_code": 400, "request_id": "vllm-batch-1", "body": None}, "error": "bad prompt"},
        {"id": "batch_req_x", "custom_id": lines[3]["custom_id"], "response": None,  # SGLang
         "error": {"message": "engine error"}},
        {"id": "batch_req_y", "custom_id": lines[3]["custom_id"],  # OpenAI output file, request-level error
         "response": {"status_code": 400, "request_id": "r", "body": {"error": {"message": "x", "type":
                                                                              "invalid_request_error"}}},
         "error": None},
    ]
    unknown = {**ok_openai, "custom_id": "f" * 64}
    malformed_body = {**ok_openai, "custom_id": lines[3]["custom_id"],
                      "response": {"status_code": 200, "request_id": "r", "body": {"object": "chat.completion"}}}
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join([json.dumps(ok_openai), json.dumps(ok_vllm), json.dumps(ok_sglang),
                               *map(json.dumps, failed), json.dumps(unknown), json.dumps(malformed_body),
                               "{not json", json.dumps({"response": None}), ""]) + "\n")
    report = import_results(path, cache, store)
    assert report.lines == 11 and report.counts.stored == 3
    assert report.errors == {"batch_expired": 1, "400": 1, "error": 1, "invalid_request_error": 1}
    assert report.unknown == 1 and "fffff" in report.unknown_examples[0]
    assert report.malformed == 3  # a body without choices, a line that is not JSON, a line without custom_id
    text = "\n".join(report.lines_out())
    assert "unknown custom_id 1" in text and "malformed 3" in text and "line 9" in text
    assert store.pending() == 1  # the failed request waits for the next round
    hit = cache.get("gpt-4o-mini", requests()[0])
    assert hit.text == "yes" and hit.logprobs[0].top["no"] == -2.4 and hit.from_cache
    again = import_results(path, cache, store)  # the same file twice: nothing new, nothing unknown
    assert again.counts.stored == 0 and again.counts.identical == 3 and again.unknown == 1
    assert cache.source_counts([ln["custom_id"] for ln in lines[:3]]) == {"batch:results.jsonl": 3}
    cache.close()
    store.close()


def test_result_body_reads_sglang_single_choice_and_refuses_lines_without_id():
    body = {"choices": {"index": 0, "message": {"content": "no"}}, "usage": {}}
    cid, got, err = result_body({"custom_id": "k", "response": {"status_code": 200, "body": body}, "error": None})
    assert cid == "k" and err is None and got["choices"][0]["message"]["content"] == "no"
    with pytest.raises(ValueError, match="custom_id"):
        result_body({"response": {"status_code": 200, "body": body}})


class Branchy(Reranker):
    """Each query asks two things at once: one at once, one after a pause (a late sibling)."""

    type_name = "branchy"
    needs_text = False

    async def score(self, cands):
        async def late():
            await asyncio.sleep(0.2)
            return await self.complete(ChatRequest.chat(None, f"late {cands.qid}"))

        await asyncio.gather(self.complete(ChatRequest.chat(None, f"early {cands.qid}")), late())
        return [1.0] * len(cands)


def test_drain_records_the_late_siblings_of_a_pending_query(tmp_path):
    import pandas as pd

    frame = pd.DataFrame({"qid": ["a", "b"], "query": "q", "docno": ["a1", "b1"], "score": [1.0, 1.0]})
    with ResponseCache(tmp_path / "c.sqlite") as cache, PendingStore(tmp_path / "c.sqlite") as store:
        rnd = store.new_round()
        with CollectingClient(CONFIG, cache=cache, sink=rnd) as llm:
            out = Branchy(llm)(frame)
            llm.drain()
            assert rnd.totals().requests == 4  # both early and both late requests: the whole round
    assert out["pending"].all()


def test_collecting_client_refuses_a_cache_that_cannot_hold_answers(tmp_path):
    from superb.errors import LLMError

    with ResponseCache(tmp_path / "c.sqlite", "refresh") as cache, PendingStore(tmp_path / "c.sqlite") as store:
        with pytest.raises(LLMError, match="cache = \"normal\""):
            CollectingClient(CONFIG, cache=cache, sink=store.new_round())
