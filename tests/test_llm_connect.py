"""open_llm/connect/describe with an external endpoint (the fake server): cache wiring, closing, no key recorded."""

from __future__ import annotations

import pytest

from superb.testing.fakeserver import FakeServer
from superb.errors import LLMError
from superb.llm import ChatRequest, LLMConfig, ResponseCache, describe, open_llm
from superb.llm.connect import connect


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


def test_open_llm_uses_the_configured_cache_and_closes_everything(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-do-not-record-me")
    path = tmp_path / "llm.sqlite"
    with FakeServer() as srv:
        cfg = LLMConfig(model="fake-model", base_urls=(srv.base_url,), api_key_env="MY_KEY", cache_path=str(path))
        with open_llm(cfg) as client:
            client.complete(ChatRequest.chat(None, "hello", tag="t"))
            info = describe(client)
        with open_llm(cfg) as again:
            assert again.complete(ChatRequest.chat(None, "hello")).from_cache
        assert srv.requests == 1
    assert info["model"] == "fake-model" and info["endpoints"] == [srv.base_url] and info["embedded"] is False
    assert info["cache"] == {"path": str(path), "mode": "normal"}
    assert "sk-do-not-record-me" not in repr(info)
    assert client.cache._conn is None  # closed with the block
    with ResponseCache(path, "read-only") as cache:
        assert len(cache) == 1


def test_default_cache_lives_under_superb_home(tmp_path):
    with FakeServer() as srv:
        client, close = connect(LLMConfig(model="fake-model", base_urls=(srv.base_url,)))
        try:
            assert client.cache.path == tmp_path / "home" / "llm-cache.sqlite"
        finally:
            close()


def test_cache_off_opens_no_cache(tmp_path):
    with FakeServer() as srv, open_llm(LLMConfig(model="fake-model", base_urls=(srv.base_url,), cache="off")) as c:
        c.complete(ChatRequest.chat(None, "x"))
        c.complete(ChatRequest.chat(None, "x"))
        assert c.cache is None and srv.requests == 2
    assert not (tmp_path / "home" / "llm-cache.sqlite").exists()


def test_read_only_cache_miss_raises_through_the_client(tmp_path):
    path = tmp_path / "c.sqlite"
    ResponseCache(path).close()
    with FakeServer() as srv:
        cfg = LLMConfig(model="fake-model", base_urls=(srv.base_url,), cache="read-only", cache_path=str(path))
        with open_llm(cfg) as client, pytest.raises(LLMError, match="read-only.*tpl@123"):
            client.complete_many([ChatRequest.chat(None, f"q{i}", template="tpl@123") for i in range(3)])
        assert srv.requests == 0


def test_embedded_model_starts_only_when_the_cache_cannot_answer(tmp_path, monkeypatch):
    """A run served from the cache (replayed responses, imported batches) resolves, downloads and starts no model; the
    first miss starts it, and a model that cannot be found stops the run (it is not a counted call failure)."""
    from superb.errors import DataError
    from superb.llm import ChatRequest, Completion, ResponseCache, describe
    from superb.llm.model import model_id

    monkeypatch.setenv("SUPERB_MODEL_PATH", str(tmp_path / "no-such-model.gguf"))
    cfg = LLMConfig(embedded_model="0.5b", cache_path=str(tmp_path / "cache.sqlite"))
    cached = ChatRequest.label("Is water wet?", template="t@1")
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        cache.put(model_id(cfg), cached, Completion(text="yes", prompt_tokens=5, completion_tokens=1))
    with open_llm(cfg) as client:
        assert client.complete(cached).from_cache
        assert client.info["server_started"] is False and describe(client)["endpoints"] == []
        with pytest.raises(DataError, match="no-such-model.gguf"):
            client.complete(ChatRequest.label("Is fire wet?", template="t@1"))
        assert client.usage.total().failures == 0
