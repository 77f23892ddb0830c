"""Two processes on one response cache never send the same prompt at the same time (issue 23.6): before a call, a
client claims its key in the cache (table ``claims``); a second process that misses on a claimed key waits for the
answer to appear in the cache instead of sending it, and re-checks; a claim whose owner died (its process is gone,
or its heartbeat stopped) is taken over. Measured at the fake server: requests = unique prompts."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd

from superb.testing.fakeserver import FakeServer, yes
from local_data import write_data
from spec_helpers import write_spec
from superb.llm import ChatRequest, LLMClient, LLMConfig, ResponseCache

WORDS = ["running shoes", "coffee mug", "desk lamp", "water bottle"]
DOCS = [f"{adj} {w}" for w in WORDS for adj in ("red", "blue", "small", "large", "cheap", "steel")]


def spec(folder: Path, url: str) -> Path:
    write_data(folder, [(f"d{i}", t) for i, t in enumerate(DOCS)], [(f"q{i}", w) for i, w in enumerate(WORDS)],
               [(f"q{i}", f"d{6 * i + j}", j % 3) for i in range(len(WORDS)) for j in range(6)])
    return write_spec(folder, name="claims", top_k=6, llm={
        "model": "fake-model", "base_urls": [url], "cache_path": str(folder / "shared.sqlite"), "concurrency": 2,
        "max_retries": 0})


def prompt(body: dict) -> str:
    return json.dumps(body["messages"], sort_keys=True)


def test_two_concurrent_runs_of_one_spec_send_each_prompt_once(tmp_path):
    """The first run's answers are held at the server until the second run says it is waiting for them, so the two
    runs overlap whatever the machine's load; then every answer is released."""
    gate = threading.Event()

    def held_yes(request: dict):
        gate.wait(120)
        return yes(request)

    with FakeServer(responder=held_yes) as srv:
        path = spec(tmp_path, srv.base_url)

        def start(i: int) -> subprocess.Popen:  # own SUPERB_HOME each (own index), one cache: the spec's cache_path
            env = {**os.environ, "SUPERB_HOME": str(tmp_path / f"home{i}"), "SUPERB_PROGRESS": "0"}
            return subprocess.Popen([sys.executable, "-m", "superb.cli", "run", str(path), "--out",
                                     str(tmp_path / f"out{i}")], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)

        first = start(1)
        deadline = time.monotonic() + 120
        while srv.requests == 0 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # the first run is in its LLM stage: its first requests are held at the server
        second = start(2)
        said: list[str] = []
        reader = threading.Thread(target=lambda: said.extend(second.stderr), daemon=True)
        reader.start()
        while not any("another process is making" in line for line in said) and second.poll() is None \
                and time.monotonic() < deadline + 120:
            time.sleep(0.05)
        gate.set()
        outcomes = [first.communicate(timeout=300), second.wait(timeout=300)]
        reader.join(10)
        assert [first.returncode, second.returncode] == [0, 0], (outcomes[0][1], "".join(said))
        unique = {prompt(body) for body in srv.received}
        requests = srv.requests
    usage = [pd.read_csv(tmp_path / f"out{i}" / "usage.csv").set_index("system").loc["BM25 >> pointwise"]
             for i in (1, 2)]
    assert len(unique) >= 20 and requests == len(unique)  # before: every prompt twice (2 x unique)
    assert usage[0]["requests"] == usage[1]["requests"] == len(unique)
    assert usage[0]["calls"] + usage[1]["calls"] == len(unique)  # each call made by one of the two runs
    claims = json.loads((tmp_path / "out2" / "provenance.json").read_text())["llm"]["claims"]
    assert claims["waited"] >= 1 and claims["served_by_other"] >= 1  # (here: all 24 answers came from the first)


def requests(n: int) -> list[ChatRequest]:
    return [ChatRequest.chat(None, f"product {i}", tag="claims") for i in range(n)]


def test_two_clients_in_one_process_on_one_cache_file_send_each_prompt_once(tmp_path):
    path = tmp_path / "cache.sqlite"
    with FakeServer(latency=0.05) as srv:
        config = LLMConfig(model="fake-model", base_urls=(srv.base_url,), concurrency=4)
        clients = [LLMClient(config, cache=ResponseCache(path)) for _ in range(2)]
        out: list = [None, None]

        def work(i: int) -> None:
            out[i] = clients[i].complete_many(requests(30))

        threads = [threading.Thread(target=work, args=(i,)) for i in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for c in clients:
            c.close()
            c.cache.close()
        assert srv.requests == 30
    assert [c.text for c in out[0]] == [c.text for c in out[1]] == ["ok"] * 30


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_claim_whose_owner_died_is_taken_over_at_once(tmp_path):
    path = tmp_path / "cache.sqlite"
    with FakeServer() as srv:
        config = LLMConfig(model="fake-model", base_urls=(srv.base_url,))
        with ResponseCache(path) as cache:
            request = requests(1)[0]
            from superb.llm.cache_rows import cache_key

            cache.claims.force(cache_key("fake-model", request), owner="ghost", pid=dead_pid())
            client = LLMClient(config, cache=cache)
            assert client.complete(request).text == "ok"
            client.close()
            assert cache.claims.counts["stale_taken_over"] == 1
        assert srv.requests == 1


def test_a_claim_whose_heartbeat_stopped_is_taken_over(tmp_path):
    path = tmp_path / "cache.sqlite"
    with FakeServer() as srv, ResponseCache(path) as cache:
        from superb.llm.cache_rows import cache_key
        from superb.llm.claims import STALE_S

        request = requests(1)[0]
        cache.claims.force(cache_key("fake-model", request), owner="elsewhere", host="another-host", pid=1,
                           age_s=STALE_S + 1)
        client = LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,)), cache=cache)
        assert client.complete(request).text == "ok"
        client.close()
        assert cache.claims.counts["stale_taken_over"] == 1 and srv.requests == 1


def test_a_live_claim_is_waited_for_and_its_answer_served(tmp_path):
    """Another owner (alive: this process) holds the claim; its answer lands in the cache 0.5 s later: the client
    waits, re-checks, and serves it without a call."""
    from superb.llm import Completion
    from superb.llm.cache_rows import cache_key

    path = tmp_path / "cache.sqlite"
    with FakeServer() as srv, ResponseCache(path) as cache, ResponseCache(path) as other:
        request = requests(1)[0]
        key = cache_key("fake-model", request)
        assert other.claims.claim(key) == "mine"
        timer = threading.Timer(0.5, lambda: (other.put("fake-model", request, Completion(text="from the other")),
                                              other.claims.release(key)))
        timer.start()
        client = LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,)), cache=cache)
        got = client.complete(request)
        client.close()
        timer.join()
        assert got.text == "from the other" and got.from_cache and srv.requests == 0
        assert cache.claims.counts["served_by_other"] == 1


def test_closing_the_cache_drops_its_own_claims_and_a_second_close_is_quiet(tmp_path):
    from superb.llm.cache_rows import cache_key

    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    key = cache_key("fake-model", requests(1)[0])
    assert cache.claims.claim(key) == "mine" and cache.is_open
    cache.claims.force("k-other", owner="elsewhere", pid=os.getpid())
    cache.close()
    assert not cache.is_open
    cache.close()  # closed already: no claim to drop, no error
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT key, owner FROM claims").fetchall() == [("k-other", "elsewhere")]


def test_claims_that_cannot_be_dropped_at_close_are_warned_not_raised(tmp_path, monkeypatch, caplog):
    from superb.llm.cache_rows import cache_key

    cache = ResponseCache(tmp_path / "cache.sqlite")
    assert cache.claims.claim(cache_key("fake-model", requests(1)[0])) == "mine"

    def broken(action):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(cache, "locked", broken)
    cache.close()
    assert not cache.is_open
    warned = [r.getMessage() for r in caplog.records if r.name == "superb.llm.claims"]
    assert len(warned) == 1
    assert "could not drop this process's 1 claim(s)" in warned[0] and "disk I/O error" in warned[0]
