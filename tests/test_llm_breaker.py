"""The client's circuit breaker: a run that cannot succeed stops early with the server's message (issue 12.2), even
under on_failure = "record"; failures that concern single requests stay counted fallbacks."""

from __future__ import annotations

import pytest

from superb.testing.fakeserver import FakeServer, Fault
from superb.errors import LLMError
from superb.llm import ChatRequest, LLMClient, LLMConfig, Usage
from superb.llm.failures import BREAKER_FAILURES


def make(srv, **kw) -> LLMClient:
    kw.setdefault("backoff_s", 0.01)
    return LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,), **kw), cache=None, usage=Usage())


def reqs(n: int) -> list[ChatRequest]:
    return [ChatRequest.chat(None, f"question {i}", tag="t") for i in range(n)]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_client_error_on_the_first_call_stops_the_run_with_the_servers_message(status):
    said = f"'temperature' must be a number (server check {status})"
    with FakeServer(faults=[Fault.error(status, said)] * 50) as srv, \
            make(srv, on_failure="record", concurrency=1) as client:
        with pytest.raises(LLMError) as info:
            client.complete_many(reqs(20))
        assert srv.requests == 1  # not retried, and nothing after it
    msg = str(info.value)
    assert said in msg and f"status {status}" in msg and "stopping the run" in msg
    assert client.usage.row("t").failures == 1


def test_every_call_failing_stops_after_the_breaker_count():
    with FakeServer(faults=[Fault.error(500)] * 500) as srv, \
            make(srv, on_failure="record", max_retries=0, concurrency=1) as client:
        with pytest.raises(LLMError, match=rf"the first {BREAKER_FAILURES} calls all failed.*status 500"):
            client.complete_many(reqs(40))
        assert srv.requests == BREAKER_FAILURES  # one attempt each, then the run stops
    assert client.usage.row("t").failures == BREAKER_FAILURES


def test_with_retries_the_breaker_waits_for_calls_to_exhaust_them_then_stops_the_rest():
    # queued calls make their first attempts while the first ones back off; once 5 calls have used their retry,
    # every pending retry and queued call stops: far fewer than the 80 requests the 40 calls could make
    with FakeServer(faults=[Fault.error(500)] * 500) as srv, \
            make(srv, on_failure="record", max_retries=1, concurrency=1) as client:
        with pytest.raises(LLMError, match="stopping the run"):
            client.complete_many(reqs(40))
        assert BREAKER_FAILURES * 2 <= srv.requests <= 40 + BREAKER_FAILURES


def test_once_open_every_call_raises_without_a_request():
    with FakeServer(faults=[Fault.error(401, "invalid api key")] * 5) as srv, make(srv, concurrency=1) as client:
        with pytest.raises(LLMError, match="invalid api key"):
            client.complete(reqs(1)[0])
        with pytest.raises(LLMError, match="stopping the run"):
            client.complete(reqs(2)[1])
        assert srv.requests == 1


def test_failures_after_a_success_are_recorded_not_fatal():
    faults = [None] + [Fault.error(400)] * 3 + [Fault.error(500)] * (BREAKER_FAILURES + 1)
    with FakeServer(faults=faults) as srv, make(srv, on_failure="record", max_retries=0, concurrency=1) as client:
        out = client.complete_many(reqs(12))
    assert [c.failed for c in out] == [False] + [True] * (BREAKER_FAILURES + 4) + [False] * 2
    assert client.usage.row("t").failures == BREAKER_FAILURES + 4


def test_an_auth_error_after_successes_still_stops():
    with FakeServer(faults=[None, None, Fault.error(403, "key revoked")]) as srv, \
            make(srv, on_failure="record", concurrency=1) as client:
        with pytest.raises(LLMError, match="status 403.*key revoked"):
            client.complete_many(reqs(5))
        assert srv.requests == 3


def test_fewer_failures_than_the_breaker_count_are_recorded():
    with FakeServer(faults=[Fault.error(503)] * (BREAKER_FAILURES - 1)) as srv, \
            make(srv, on_failure="record", max_retries=0, concurrency=1) as client:
        out = client.complete_many(reqs(BREAKER_FAILURES + 2))
    assert sum(c.failed for c in out) == BREAKER_FAILURES - 1 and not out[-1].failed
