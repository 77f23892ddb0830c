"""SUPERB_EMBEDDED_URL: a spec on the embedded model uses a model already served (superb llm serve) instead of starting
one, after checking that the server serves the spec's model."""

import pytest

from superb.errors import LLMError
from superb.llm import LLMConfig, open_llm
from superb.llm.types import ChatRequest
from superb.testing.fakeserver import FakeServer

ALIAS = "qwen2.5-coder-0.5b-instruct-q4_k_m"


def test_a_running_server_of_the_same_model_is_used_and_recorded(monkeypatch, tmp_path):
    with FakeServer(responder=lambda r: "yes", model=ALIAS) as srv:
        monkeypatch.setenv("SUPERB_EMBEDDED_URL", srv.base_url)
        config = LLMConfig(embedded_model="0.5b", cache_path=str(tmp_path / "c.sqlite"))
        with open_llm(config) as llm:
            assert llm.complete(ChatRequest.chat(None, "hi")).text == "yes"
            assert llm.info["endpoints"] == [srv.base_url] and llm.info["server_started"] is False
            assert "SUPERB_EMBEDDED_URL" in llm.info["served_by"]
            assert llm.info["threads"] is None and llm.info["n_ctx"] is None  # the server's own, not the spec's
        assert len(srv.received) == 1


def test_a_server_of_another_model_is_refused_by_name(monkeypatch, tmp_path):
    with FakeServer(responder=lambda r: "yes", model="some-other-model") as srv:
        monkeypatch.setenv("SUPERB_EMBEDDED_URL", srv.base_url)
        config = LLMConfig(embedded_model="0.5b", cache_path=str(tmp_path / "c.sqlite"), on_failure="fail")
        with open_llm(config) as llm, pytest.raises(LLMError, match="some-other-model.*qwen2.5-coder-0.5b"):
            llm.complete(ChatRequest.chat(None, "hi"))


def test_nothing_listening_names_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("SUPERB_EMBEDDED_URL", "http://127.0.0.1:9/v1")
    config = LLMConfig(embedded_model="0.5b", cache_path=str(tmp_path / "c.sqlite"), on_failure="fail")
    with open_llm(config) as llm, pytest.raises(LLMError, match="SUPERB_EMBEDDED_URL"):
        llm.complete(ChatRequest.chat(None, "hi"))


def test_several_servers_separated_by_commas_share_the_requests(monkeypatch, tmp_path):
    with FakeServer(responder=lambda r: "yes", model=ALIAS) as a, FakeServer(responder=lambda r: "yes", model=ALIAS) as b:
        monkeypatch.setenv("SUPERB_EMBEDDED_URL", f"{a.base_url}, {b.base_url}/")
        config = LLMConfig(embedded_model="0.5b", cache_path=str(tmp_path / "c.sqlite"))
        with open_llm(config) as llm:
            answers = llm.complete_many([ChatRequest.chat(None, f"hi {i}") for i in range(12)])
            assert [c.text for c in answers] == ["yes"] * 12
            assert llm.info["endpoints"] == [a.base_url, b.base_url]
        assert len(a.received) + len(b.received) == 12 and a.received and b.received


def test_one_of_several_servers_with_another_model_is_refused_by_url(monkeypatch, tmp_path):
    with FakeServer(responder=lambda r: "yes", model=ALIAS) as a, FakeServer(responder=lambda r: "yes",
                                                                               model="other") as b:
        monkeypatch.setenv("SUPERB_EMBEDDED_URL", f"{a.base_url},{b.base_url}")
        config = LLMConfig(embedded_model="0.5b", cache_path=str(tmp_path / "c.sqlite"), on_failure="fail")
        with open_llm(config) as llm, pytest.raises(LLMError, match=f"{b.base_url} serves .'other'."):
            llm.complete(ChatRequest.chat(None, "hi"))
