"""A corrupt response cache (garbage bytes, a copy cut short, damaged pages) is refused when it is opened, with an
error naming the file and the way out (issue 12.6); the way out works; a healthy cache in use is never refused."""

from __future__ import annotations

import shutil

import pytest

from superb.testing.fakeserver import FakeServer
from superb.errors import LLMError
from superb.llm import ChatRequest, Completion, LLMConfig, ResponseCache, open_llm
from superb.llm.cache_file import corrupt_cache_error


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


def damaged_while_open(path, n: int = 400) -> ResponseCache:
    """A cache opened (the checks at open pass) and then cut to a third of its size on disk, as a failing disk or
    another program could do mid-run; the open connection has read only the first pages."""
    filled(path, n)
    cache = ResponseCache(path)
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 3)
    return cache


def requests(n: int) -> list:
    return [ChatRequest.chat(None, f"question {i} " + "x" * 300) for i in range(n)]


def test_a_cache_damaged_mid_run_fails_a_lookup_with_the_error_given_at_open(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = damaged_while_open(path)
    try:
        with pytest.raises(LLMError) as info:
            for request in requests(400):  # rows on the pages cut off cannot be read
                cache.get("m", request)
    finally:
        cache.close()
    assert str(info.value) == str(corrupt_cache_error(path, "database disk image is malformed"))


def test_a_cache_damaged_mid_run_fails_a_store_with_the_error_given_at_open(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = damaged_while_open(path)
    try:
        with pytest.raises(LLMError) as info:
            for i in range(400):  # a new key lands on a cut-off page soon
                cache.put("m", ChatRequest.chat(None, f"new question {i}"), Completion(text="new"))
    finally:
        cache.close()
    assert str(info.value) == str(corrupt_cache_error(path, "database disk image is malformed"))


def test_a_run_whose_cache_is_damaged_mid_run_stops_with_the_named_error(tmp_path):
    """Through the client, as a reranker calls it: the first answers are served, then the cache is damaged on disk
    and the next request stops the run with the corrupt-cache error, not a raw sqlite3 traceback."""
    path = tmp_path / "cache.sqlite"
    filled(path)
    with FakeServer() as srv:
        config = LLMConfig(model="m", base_urls=(srv.base_url,), cache_path=str(path))
        with open_llm(config) as llm:
            assert llm.complete(requests(1)[0]).from_cache
            with open(path, "r+b") as handle:
                handle.truncate(path.stat().st_size // 3)
            with pytest.raises(LLMError, match=rf"the LLM response cache {path} is corrupt .*mv {path} "):
                for request in requests(400):
                    llm.complete(request)
        assert srv.requests == 0
