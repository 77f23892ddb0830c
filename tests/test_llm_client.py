"""LLMClient against the fake OpenAI server: retries, Retry-After, failure policy, timeouts, concurrency, endpoints."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from superb.testing.fakeserver import FakeServer, Fault, Reply
from superb.errors import LLMError, SpecError
from superb.llm import ChatRequest, LLMClient, LLMConfig, ResponseCache, Usage


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


def make(srv, **kw) -> LLMClient:
    kw.setdefault("backoff_s", 0.01)
    cache = kw.pop("cache", None)
    urls = tuple(s.base_url for s in srv) if isinstance(srv, list) else (srv.base_url,)
    return LLMClient(LLMConfig(model="fake-model", base_urls=urls, **kw), cache=cache, usage=Usage())


def req(text: str = "hello", **kw) -> ChatRequest:
    return ChatRequest.chat("be brief", text, **kw)


def test_success_maps_text_logprobs_and_tokens():
    lp = (("Yes", -0.2, {"Yes": -0.2, "No": -1.8}), ("!", -0.01, {"!": -0.01}))
    with FakeServer(responder=lambda r: Reply("Yes!", lp)) as srv, make(srv) as client:
        c = client.complete(req("a" * 40, logprobs=True, top_logprobs=2, tag="t"))
        sent = srv.received[0]
    assert c.text == "Yes!" and not c.failed
    assert [t.token for t in c.logprobs] == ["Yes", "!"]
    assert c.logprobs[0].top == {"Yes": -0.2, "No": -1.8}
    assert c.prompt_tokens == (len("be brief") + 40) // 4  # the fake counts 4 chars per token
    assert sent["logprobs"] is True and sent["top_logprobs"] == 2 and sent["model"] == "fake-model"
    assert client.usage.row("t").calls == 1


def test_retries_on_500_and_drop_then_succeeds():
    with FakeServer(faults=[Fault.error(500), Fault.drop(), Fault.error(503)]) as srv, make(srv, max_retries=4) as client:
        c = client.complete(req(tag="x"))
        assert srv.requests == 4  # 3 faults + the success
    assert not c.failed and c.text == "ok"
    row = client.usage.row("x")
    assert (row.calls, row.retries, row.failures) == (1, 3, 0)


def test_retry_after_is_honoured():
    with FakeServer(faults=[Fault.rate_limit(retry_after=0.6)]) as srv, make(srv) as client:
        start = time.perf_counter()
        c = client.complete(req())
        elapsed = time.perf_counter() - start
        assert srv.requests == 2
    assert not c.failed
    assert 0.55 <= elapsed < 5  # backoff_s=0.01 alone would retry at once


def test_record_policy_counts_failure_after_max_retries():
    with FakeServer(faults=[Fault.error(500)] * 10) as srv, make(srv, max_retries=2, on_failure="record") as client:
        c = client.complete(req(tag="p"))
        assert srv.requests == 3  # 1 + 2 retries, no more
    assert c.failed and "status 500" in c.error and "3 attempt" in c.error and "fake-model" in c.error
    row = client.usage.row("p")
    assert (row.calls, row.failures, row.retries) == (1, 1, 2)


def test_fail_policy_raises_llmerror_naming_endpoint_model_status_attempts():
    with FakeServer(faults=[Fault.error(502)] * 10) as srv, make(srv, max_retries=1, on_failure="fail") as client:
        with pytest.raises(LLMError) as info:
            client.complete(req())
        msg = str(info.value)
    assert srv.base_url in msg and "fake-model" in msg and "502" in msg and "2 attempt" in msg


def test_client_error_is_not_retried():
    with FakeServer(faults=[None, Fault.error(400)]) as srv, make(srv, max_retries=3) as client:
        assert not client.complete(req("first")).failed
        c = client.complete(req("second"))
        assert srv.requests == 2
    assert c.failed and "status 400" in c.error  # after a success, a 400 is about this request: recorded


def test_timeout_does_not_hang_and_is_retried():
    with FakeServer(faults=[Fault.hang(30), Fault.hang(30)]) as srv, make(srv, timeout_s=0.3, max_retries=1) as client:
        start = time.perf_counter()
        c = client.complete(req())
        elapsed = time.perf_counter() - start
        assert srv.requests == 2
    assert c.failed and "timeout" in c.error
    assert elapsed < 5


def test_malformed_body_is_a_counted_failure():
    with FakeServer(faults=[Fault.malformed()]) as srv, make(srv) as client:
        c = client.complete(req(tag="m"))
    assert c.failed and "malformed" in c.error
    assert client.usage.row("m").failures == 1


def test_concurrency_bound_is_respected():
    with FakeServer(latency=0.05) as srv, make(srv, concurrency=3) as client:
        out = client.complete_many([req(f"q{i}") for i in range(24)])
        assert srv.requests == 24
        assert srv.max_in_flight == 3  # reached, never exceeded
    assert all(not c.failed for c in out)


def test_results_come_back_in_input_order():
    with FakeServer(responder=lambda r: r["messages"][-1]["content"].upper(), latency=0.01) as srv, \
            make(srv, concurrency=8) as client:
        out = client.complete_many([req(f"q{i}") for i in range(30)])
    assert [c.text for c in out] == [f"Q{i}" for i in range(30)]


def test_multiple_base_urls_share_the_load():
    with FakeServer(latency=0.02) as a, FakeServer(latency=0.02) as b, make([a, b], concurrency=2) as client:
        client.complete_many([req(f"q{i}") for i in range(20)])
        assert a.requests + b.requests == 20
        assert a.requests >= 5 and b.requests >= 5
        assert a.max_in_flight <= 2 and b.max_in_flight <= 2


def test_api_key_is_never_in_the_cache(tmp_path, monkeypatch):
    secret = "sk-test-SECRET-0123456789"
    monkeypatch.setenv("FAKE_KEY", secret)
    path = tmp_path / "cache.sqlite"
    with FakeServer() as srv:
        cache = ResponseCache(path)
        client = LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,), api_key_env="FAKE_KEY"),
                           cache=cache)
        client.complete_many([req(f"q{i}") for i in range(5)])
        client.close()
        cache.close()
    blob = b"".join(p.read_bytes() for p in tmp_path.glob("cache.sqlite*"))
    assert b"q3" in blob  # the cache holds the data...
    assert secret.encode() not in blob  # ...but not the key


def test_cache_hit_makes_no_call_and_is_counted(tmp_path):
    with FakeServer() as srv:
        with ResponseCache(tmp_path / "c.sqlite") as cache, make(srv, cache=cache) as client:
            first = client.complete(req("same", tag="a"))
            second = client.complete(req("same", tag="b"))  # another tag: same key
            assert srv.requests == 1
    assert second.from_cache and second.text == first.text
    assert client.usage.row("b").cache_hits == 1 and client.usage.row("b").calls == 0
    assert client.usage.row("b").saved_prompt_tokens == first.prompt_tokens


def test_gather_sync_from_sync_code_and_from_a_running_loop():
    with FakeServer(latency=0.01) as srv, make(srv, concurrency=4) as client:

        async def one_query(q: str) -> list[str]:  # windows of one query sequentially, queries concurrently
            texts = []
            for w in range(3):
                texts.append((await client.acomplete(req(f"{q}-{w}"))).text)
            return texts

        assert client.gather_sync([one_query(f"q{i}") for i in range(4)]) == [["ok"] * 3] * 4

        async def inside_a_loop() -> list[str]:  # e.g. Jupyter: a sync helper called while a loop runs
            direct = await client.acomplete(req("direct"))  # awaited on a foreign loop
            blocking = client.gather_sync([one_query("y")])  # called straight from a coroutine of that loop
            threaded = await asyncio.to_thread(client.gather_sync, [one_query("z")])
            return [direct.text, *blocking[0], *threaded[0]]

        assert asyncio.run(inside_a_loop()) == ["ok"] * 7
        assert srv.requests == 12 + 7


def test_sync_helper_on_the_client_loop_raises_instead_of_deadlocking():
    with FakeServer() as srv, make(srv) as client:

        async def bad():
            return client.complete(req())

        with pytest.raises(RuntimeError, match="await"):
            client.run(bad())


def test_fail_policy_in_complete_many_cancels_the_rest():
    with FakeServer(faults=[Fault.error(500)] * 3, latency=0.05) as srv, \
            make(srv, max_retries=0, on_failure="fail", concurrency=1) as client:
        with pytest.raises(LLMError):
            client.complete_many([req(f"q{i}") for i in range(50)])
        time.sleep(0.2)
        assert srv.requests < 10


def test_config_overrides_temperature_and_seed():
    with FakeServer() as srv, make(srv, temperature=0.7, seed=11) as client:
        client.complete(req(temperature=0.0, seed=0))
        assert srv.received[0]["temperature"] == 0.7 and srv.received[0]["seed"] == 11


def test_config_from_spec_rejects_unknown_keys_and_bad_values():
    with pytest.raises(SpecError) as info:
        LLMConfig.from_spec({"model": "m", "base_urls": ["http://x/v1"], "temprature": 0})
    assert "llm.temprature" in str(info.value) and "temperature" in str(info.value) and "concurrency" in str(info.value)
    with pytest.raises(SpecError, match="llm.cache"):
        LLMConfig.from_spec({"cache": "sometimes"})
    with pytest.raises(SpecError, match="model"):
        LLMConfig.from_spec({"base_urls": ["http://x/v1"]})
    with pytest.raises(SpecError, match="llm.prices.gpt"):
        LLMConfig.from_spec({"prices": {"gpt": {"prompt": "cheap"}}})
    cfg = LLMConfig.from_spec({"model": "m", "base_urls": "http://127.0.0.1:1/v1", "concurrency": 8})
    assert cfg.base_urls == ("http://127.0.0.1:1/v1",) and cfg.concurrency == 8 and cfg.api_key() == "not-needed"


def test_remote_endpoint_without_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    cfg = LLMConfig(model="m", base_urls=("https://api.example.com/v1",), api_key_env="NO_SUCH_KEY_VAR")
    with pytest.raises(LLMError, match="NO_SUCH_KEY_VAR"):
        LLMClient(cfg)


def test_usage_is_thread_safe():
    usage = Usage()

    def work():
        for _ in range(1000):
            usage.record("t", "m", calls=1, prompt_tokens=2)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert usage.row("t").calls == 8000 and usage.total().prompt_tokens == 16000
    assert usage.estimated_cost({"m": {"prompt": 1.0, "completion": 2.0}}) == pytest.approx(16000 / 1e6)
    assert list(usage.to_frame().columns[:3]) == ["tag", "model", "calls"]


# The Ctrl-C tests run in a fresh interpreter that installs Python's own SIGINT handler first: a process started in
# the background by a non-interactive shell (nohup ... &, some CI runners) inherits SIGINT as ignored, and then
# _thread.interrupt_main does nothing (both tests failed with "DID NOT RAISE" in two such full-suite runs and passed
# in the foreground). A user pressing Ctrl-C has that handler.
CTRL_C = """
import _thread, asyncio, gc, json, logging, signal, sys, threading, time
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {tests!r})
from superb.testing.fakeserver import FakeServer
from superb.llm import ChatRequest, LLMClient, LLMConfig, Usage

records = []
logging.getLogger("asyncio").addHandler(type("H", (logging.Handler,), {{"emit": lambda self, r: records.append(
    r.getMessage())}})(level=logging.ERROR))
with FakeServer(latency=0.2) as srv:
    client = LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,), concurrency=1, backoff_s=0.01),
                       cache=None, usage=Usage())
    threading.Timer(0.5, _thread.interrupt_main).start()  # Ctrl-C while complete_many waits
    try:
        client.complete_many([ChatRequest.chat("be brief", f"q{{i}}") for i in range({n})])
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
    time.sleep(0.3)
    seen = srv.requests
    time.sleep(0.6)
    later = srv.requests
    loop = client._runner.loop
    client.close()
    left = sum(1 for t in asyncio.all_tasks(loop) if not t.done())  # tasks the closed loop still holds pending
    gc.collect()
print(json.dumps({{"interrupted": interrupted, "seen": seen, "later": later, "left": left,
                  "pending": [r for r in records if "pending" in r]}}))
"""


def ctrl_c(n: int) -> dict:
    code = CTRL_C.format(tests=str(Path(__file__).parent), n=n)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SUPERB_PROGRESS": "0"})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_ctrl_c_during_a_sync_wait_cancels_the_work():
    got = ctrl_c(20)
    assert got["interrupted"]
    assert got["later"] == got["seen"] and got["seen"] < 8  # nothing more was sent after the interrupt


def test_ctrl_c_then_close_leaves_no_task_pending():
    """After a Ctrl-C with many calls queued, closing the client waits for the cancellations: asyncio logs no
    'Task was destroyed but it is pending' (it did, with a traceback, on an interrupted `superb judge`)."""
    got = ctrl_c(200)
    assert got["interrupted"] and got["left"] == 0 and got["pending"] == []


def test_a_coroutine_raising_timeouterror_is_not_mistaken_for_a_wait_slice():
    with FakeServer() as srv, make(srv) as client:

        async def times_out():
            raise TimeoutError("from the coroutine")

        start = time.perf_counter()
        with pytest.raises(TimeoutError, match="from the coroutine"):
            client.run(times_out())
        assert time.perf_counter() - start < 2


def test_identical_requests_in_flight_are_sent_once_and_share_the_answer(tmp_path):
    """A server that answers every call differently: concurrent duplicates still get ONE answer (coalesced, counted),
    and a re-run served from the cache gives each of them that same answer, so ties order as in the live run."""
    counter = iter(range(1000))
    with FakeServer(responder=lambda r: Reply(f"answer {next(counter)}"), latency=0.2) as srv:
        with ResponseCache(tmp_path / "c.sqlite") as cache, make(srv, concurrency=8, cache=cache) as client:
            live = client.complete_many([req("same", tag="t")] * 5 + [req("other", tag="t")])
            assert srv.requests == 2  # "same" once, "other" once
            row = client.usage.row("t")
            assert (row.calls, row.coalesced, row.cache_hits) == (2, 4, 0)
            assert row.saved_prompt_tokens == 4 * live[0].prompt_tokens  # what the 4 coalesced would have cost
        assert len({c.text for c in live[:5]}) == 1 and live[5].text != live[0].text
        with ResponseCache(tmp_path / "c.sqlite") as cache, make(srv, cache=cache) as client:
            again = client.complete_many([req("same")] * 5 + [req("other")])
            assert srv.requests == 2 and client.usage.total().cache_hits == 6
    assert [c.text for c in again] == [c.text for c in live]


def test_a_failure_in_flight_reaches_every_coalesced_caller():
    with FakeServer(faults=[Fault.error(500)], latency=0.1) as srv:
        with make(srv, max_retries=0, concurrency=4) as client:
            out = client.complete_many([req("x")] * 3)
            assert srv.requests == 1 and all(c.failed for c in out)  # record: one counted failure, shared
        with make(srv, max_retries=0, concurrency=4, on_failure="fail") as client:
            srv.faults.append(Fault.error(500))
            with pytest.raises(LLMError, match="500"):
                client.complete_many([req("y")] * 3)
