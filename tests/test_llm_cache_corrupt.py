"""A corrupt response cache (garbage bytes, a copy cut short, damaged pages) is refused when it is opened, with an
error naming the file and the way out (issue 12.6); the way out works; a healthy cache in use is never refused."""

from __future__ import annotations

import shutil

import pytest

from fakeserver import FakeServer
from superb.errors import LLMError
from superb.llm import ChatRequest, Completion, LLMConfig, ResponseCache, open_llm


def filled(path, n: int = 400) -> bytes:
    """A real cache file of n rows (closed, so fully checkpointed into the file); returns its bytes."""
    with ResponseCache(path) as cache:
        for i in range(n):
            cache.put("m", ChatRequest.chat(None, f"question {i} " + "x" * 300), Completion(text=f"answer {i}"))
    return path.read_bytes()


def refused(path) -> str:
    with pytest.raises(LLMError) as info:
        ResponseCache(path)
    msg = str(info.value)
    assert str(path) in msg and f"mv {path} {path}.corrupt" in msg and "creates a new cache" in msg
    return msg


def test_garbage_bytes(tmp_path):
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"this is not a database, it is an old log file\n" * 200)
    assert "not an SQLite database" in refused(path)


def test_half_truncated_file(tmp_path):
    path = tmp_path / "cache.sqlite"
    data = filled(path)
    path.write_bytes(data[: len(data) // 2])
    assert "truncated" in refused(path)


def test_damaged_pages_behind_a_valid_header(tmp_path):
    path = tmp_path / "cache.sqlite"
    data = bytearray(filled(path))
    page = int.from_bytes(data[16:18], "big")
    data[page: len(data) - page] = b"\xab" * (len(data) - 2 * page)  # every page but the first and the last
    path.write_bytes(bytes(data))
    assert "malformed" in refused(path) or "not a database" in refused(path)


def test_the_documented_way_out_works_and_the_run_rebuilds_the_cache(tmp_path):
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"\x00garbage" * 100)
    with FakeServer() as srv:
        config = LLMConfig(model="fake-model", base_urls=(srv.base_url,), cache_path=str(path))
        with pytest.raises(LLMError, match="corrupt"):
            with open_llm(config):
                pass
        shutil.move(path, tmp_path / "cache.sqlite.corrupt")  # the way out the message gives
        with open_llm(config) as llm:
            assert llm.complete(ChatRequest.chat(None, "hello")).text == "ok"
        with open_llm(config) as llm:
            assert llm.complete(ChatRequest.chat(None, "hello")).from_cache
        assert srv.requests == 1


def test_a_healthy_cache_with_a_pending_wal_opens(tmp_path):
    path = tmp_path / "cache.sqlite"
    filled(path, n=50)
    writer = ResponseCache(path)  # keeps a connection open: new pages live in the WAL, not yet in the file
    try:
        for i in range(300):
            writer.put("m", ChatRequest.chat(None, f"new {i} " + "y" * 300), Completion(text="z"))
        assert (tmp_path / "cache.sqlite-wal").stat().st_size > 0
        with ResponseCache(path) as reader:
            assert len(reader) == 350
    finally:
        writer.close()


def test_an_empty_file_is_a_new_cache(tmp_path):
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"")
    with ResponseCache(path) as cache:
        assert len(cache) == 0
