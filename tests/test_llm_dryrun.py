"""DryRunClient: counts calls and prompt tokens without calling; placeholders are failures; cache hits are free."""

from __future__ import annotations

import pytest

from superb.testing.fakeserver import FakeServer
from superb.llm import ChatRequest, Completion, DryRunClient, LLMConfig, ResponseCache

REMOTE = LLMConfig(model="m", base_urls=("http://127.0.0.1:9/v1",))  # never contacted


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


def test_counts_calls_and_estimates_tokens_without_calling():
    reqs = [ChatRequest.chat("s" * 8, "u" * 39 + str(i), max_tokens=3, tag="pw") for i in range(5)]
    with DryRunClient(REMOTE) as client:
        out = client.complete_many(reqs)
    assert all(c.failed and c.error == "dry-run" and c.text == "" for c in out)
    row = client.usage.row("pw")
    # chars/4 per message (8/4 + 40/4 = 12) plus 4 per message for the chat template (8): 20 per request
    assert (row.calls, row.dry_run, row.prompt_tokens, row.completion_tokens) == (5, 5, 100, 15)


def test_a_repeated_request_is_counted_once_as_the_real_run_would_serve_it_from_the_cache():
    same = ChatRequest.chat(None, "is it a lamp?", tag="pw")
    with DryRunClient(REMOTE) as client:
        first = client.complete(same)
        again = client.complete_many([same, same, ChatRequest.chat(None, "is it a chair?", tag="pw")])
    assert first.failed and all(c.failed and c.error == "dry-run" for c in again)
    row = client.usage.row("pw")
    assert (row.calls, row.dry_run, row.coalesced, row.cache_hits) == (2, 2, 2, 0)


def test_uses_the_server_tokenizer_when_given():
    with FakeServer() as srv, DryRunClient(REMOTE, tokenize_url=srv.base_url[:-3]) as client:
        c = client.complete(ChatRequest.chat(None, "x" * 41))
        assert srv.requests == 0  # no chat call was made
    assert c.prompt_tokens == 41 // 4 + 4  # the fake tokenizer: 4 chars per token (floor), plus the message


def test_cache_hits_are_served_and_misses_counted_even_read_only(tmp_path):
    path = tmp_path / "c.sqlite"
    hit_req = ChatRequest.chat(None, "cached")
    with ResponseCache(path) as cache:
        cache.put("m", hit_req, Completion(text="yes", prompt_tokens=7))
    with ResponseCache(path, "read-only") as cache, DryRunClient(REMOTE, cache=cache) as client:
        hit, miss = client.complete_many([hit_req, ChatRequest.chat(None, "new")])
    assert hit.text == "yes" and hit.from_cache and not hit.failed
    assert miss.failed and miss.error == "dry-run"
    assert (client.usage.total().cache_hits, client.usage.total().dry_run) == (1, 1)


def test_default_model_is_the_embedded_one(monkeypatch):
    monkeypatch.delenv("SUPERB_MODEL_PATH", raising=False)
    with DryRunClient() as client:
        assert client.model == "qwen2.5-coder-1.5b-instruct-q4_k_m"


def test_dry_run_keys_the_cache_like_a_real_run_would(monkeypatch):
    monkeypatch.delenv("SUPERB_MODEL_PATH", raising=False)
    with DryRunClient(LLMConfig(model="qwen2.5-coder-1.5b")) as a, DryRunClient(LLMConfig(embedded_model="1.5b")) as b:
        assert a.model == b.model == "qwen2.5-coder-1.5b-instruct-q4_k_m"
