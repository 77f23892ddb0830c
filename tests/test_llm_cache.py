"""ResponseCache: what the key covers, the four modes, and concurrent writers (threads and processes)."""

from __future__ import annotations

import subprocess
import sys
import threading
from dataclasses import replace

import pytest

from superb.testing.fakeserver import FakeServer
from superb.errors import LLMError
from superb.llm import ChatRequest, Completion, LLMClient, LLMConfig, ResponseCache, TokenLogprob, cache_key

BASE = ChatRequest.chat("sys", "is this a water bottle?", template="pointwise@abc123", max_tokens=2,
                        logprobs=True, top_logprobs=5)


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


def answer(text: str = "yes") -> Completion:
    return Completion(text=text, logprobs=(TokenLogprob("yes", -0.1, {"yes": -0.1, "no": -2.4}),),
                      prompt_tokens=12, completion_tokens=1, latency_s=0.3)


def test_key_ignores_tag_but_covers_model_template_and_sampling():
    base = cache_key("m", BASE)
    assert cache_key("m", replace(BASE, tag="another pipeline")) == base
    changed = {
        "model": cache_key("m2", BASE),
        "template fingerprint": cache_key("m", replace(BASE, template="pointwise@def456")),
        "temperature": cache_key("m", replace(BASE, temperature=0.5)),
        "seed": cache_key("m", replace(BASE, seed=1)),
        "max_tokens": cache_key("m", replace(BASE, max_tokens=3)),
        "top_logprobs": cache_key("m", replace(BASE, top_logprobs=2)),
        "logit_bias": cache_key("m", replace(BASE, logit_bias=((9454, 5.0),))),
        "stop": cache_key("m", replace(BASE, stop=("\n",))),
        "messages": cache_key("m", ChatRequest.chat("sys", "is this a mug?", template="pointwise@abc123")),
    }
    assert all(k != base for k in changed.values()), [n for n, k in changed.items() if k == base]
    assert len(set(changed.values())) == len(changed)


def test_key_ignores_endpoint_and_api_key(tmp_path, monkeypatch):
    monkeypatch.setenv("KEY_A", "sk-aaaa")
    monkeypatch.setenv("KEY_B", "sk-bbbb")
    with FakeServer() as a, FakeServer() as b, ResponseCache(tmp_path / "c.sqlite") as cache:
        for srv, key in ((a, "KEY_A"), (b, "KEY_B")):
            cfg = LLMConfig(model="fake-model", base_urls=(srv.base_url,), api_key_env=key)
            with LLMClient(cfg, cache=cache) as client:
                client.complete(replace(BASE, tag=key))
        assert (a.requests, b.requests) == (1, 0)  # the second endpoint, key and tag hit the first one's entry


def test_roundtrip_keeps_text_logprobs_and_tokens(tmp_path):
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert cache.get("m", BASE) is None
        cache.put("m", BASE, answer())
        hit = cache.get("m", BASE)
    assert hit.from_cache and hit.text == "yes" and hit.prompt_tokens == 12 and hit.completion_tokens == 1
    assert hit.logprobs == answer().logprobs


def test_failures_are_never_cached(tmp_path):
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert cache.put("m", BASE, Completion.failure("boom")) is False
        assert cache.get("m", BASE) is None and len(cache) == 0


def test_read_only_miss_raises_naming_the_template(tmp_path):
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        cache.put("m", BASE, answer())
    with ResponseCache(path, "read-only") as ro:
        assert ro.get("m", BASE).text == "yes"
        with pytest.raises(LLMError, match=r"cache miss in read-only mode.*pointwise@abc123"):
            ro.get("m", replace(BASE, seed=7))
        assert ro.put("m", replace(BASE, seed=7), answer("no")) is False
    with ResponseCache(path) as cache:
        assert len(cache) == 1


def test_read_only_on_a_missing_file_says_how_to_fill_it(tmp_path):
    with pytest.raises(LLMError, match="read-only"):
        ResponseCache(tmp_path / "absent.sqlite", "read-only")


def test_refresh_ignores_hits_and_overwrites(tmp_path):
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        cache.put("m", BASE, answer("old"))
    with ResponseCache(path, "refresh") as fresh:
        assert fresh.get("m", BASE) is None
        fresh.put("m", BASE, answer("new"))
    with ResponseCache(path) as cache:
        assert cache.get("m", BASE).text == "new" and len(cache) == 1


def test_off_neither_reads_nor_writes(tmp_path):
    path = tmp_path / "c.sqlite"
    off = ResponseCache(path, "off")
    assert off.put("m", BASE, answer()) is False and off.get("m", BASE) is None
    assert not path.exists()


def test_refresh_mode_through_the_client_calls_again(tmp_path):
    path = tmp_path / "c.sqlite"
    with FakeServer() as srv:
        cfg = LLMConfig(model="fake-model", base_urls=(srv.base_url,))
        for mode in ("normal", "normal", "refresh", "read-only"):
            with ResponseCache(path, mode) as cache, LLMClient(cfg, cache=cache) as client:
                client.complete(BASE)
        assert srv.requests == 2  # normal (miss), normal (hit), refresh (call), read-only (hit)


def test_concurrent_thread_writers_lose_nothing(tmp_path):
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:

        def write(worker: int) -> None:
            for i in range(100):
                cache.put("m", ChatRequest.chat(None, f"w{worker}-{i}"), answer(f"{worker}-{i}"))

        threads = [threading.Thread(target=write, args=(w,)) for w in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(cache) == 600
        assert cache.get("m", ChatRequest.chat(None, "w5-99")).text == "5-99"


WRITER = """
import sys
from superb.llm import ChatRequest, Completion, ResponseCache
path, worker = sys.argv[1], sys.argv[2]
cache = ResponseCache(path)
for i in range(200):
    cache.put("m", ChatRequest.chat(None, f"p{worker}-{i}"), Completion(text=f"{worker}-{i}"))
cache.close()
"""


def run_together(script: str, path, workers: int, timeout: float = 120) -> None:
    """Start ``workers`` Python processes running ``script`` (argv: path, worker number) at once; each must succeed."""
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), str(w)], stderr=subprocess.PIPE)
             for w in range(workers)]
    for p in procs:
        _, err = p.communicate(timeout=timeout)
        assert p.returncode == 0, err.decode()


def test_two_processes_writing_lose_nothing(tmp_path):
    path = tmp_path / "shared.sqlite"
    run_together(WRITER, path, 2)
    with ResponseCache(path, "read-only") as cache:
        assert len(cache) == 400
        assert cache.get("m", ChatRequest.chat(None, "p1-199")).text == "1-199"
        assert cache.get("m", ChatRequest.chat(None, "p0-0")).text == "0-0"


OPENER = """
import sys
from superb.llm import ChatRequest, Completion, ResponseCache
with ResponseCache(sys.argv[1]) as cache:
    cache.put("m", ChatRequest.chat(None, "p" + sys.argv[2]), Completion(text=sys.argv[2]))
"""


def test_processes_opening_a_fresh_cache_together_all_get_in(tmp_path):
    # switching a new file to WAL returns "database is locked" at once to the other openers; the cache retries
    for attempt in range(3):
        path = tmp_path / f"fresh{attempt}.sqlite"
        run_together(OPENER, path, 4)
        with ResponseCache(path, "read-only") as cache:
            assert len(cache) == 4 and cache.get("m", ChatRequest.chat(None, "p3")).text == "3"


def test_a_cache_locked_by_another_program_fails_after_the_busy_timeout_naming_the_file(tmp_path):
    import sqlite3
    import time

    path = tmp_path / "held.sqlite"
    ResponseCache(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode = DELETE")  # leave WAL, so the next opener must switch it back
    holder.execute("BEGIN EXCLUSIVE")
    try:
        t = time.monotonic()
        with pytest.raises(LLMError, match=r"cannot open the LLM response cache .*held\.sqlite.*locked"):
            ResponseCache(path, busy_timeout_s=0.5)
        assert 0.4 < time.monotonic() - t < 30
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with ResponseCache(path) as cache:  # released: it opens
        assert len(cache) == 0
