"""An interrupted run loses no completed call: SIGKILL a run midway, re-run, and only the missing calls are made."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from superb.testing.fakeserver import FakeServer
from superb.llm import ResponseCache

N = 40

RUN = """
import sys
from superb.llm import ChatRequest, LLMClient, LLMConfig, ResponseCache
base_url, path = sys.argv[1], sys.argv[2]
cache = ResponseCache(path)
client = LLMClient(LLMConfig(model="fake-model", base_urls=(base_url,), concurrency=2), cache=cache)
out = client.complete_many([ChatRequest.chat(None, f"product {i}", tag="resume") for i in range({n})])
print(sum(not c.failed for c in out), client.usage.row("resume").calls, client.usage.row("resume").cache_hits)
"""


def run(base_url: str, path, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", RUN.replace("{n}", str(N)), base_url, str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkilled_run_resumes_with_only_the_missing_calls(tmp_path):
    path = tmp_path / "cache.sqlite"
    with FakeServer(latency=0.1) as srv:
        proc = run(srv.base_url, path)
        deadline = time.monotonic() + 60
        while srv.requests < N // 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL
        first = srv.requests
        assert N // 2 <= first < N, "the run should have been killed midway"

        with ResponseCache(path, "read-only") as cache:
            committed = len(cache)
        assert first - 2 <= committed <= first  # at most the 2 in-flight calls (concurrency=2) are lost

        srv.reset_counters()
        rerun = run(srv.base_url, path)
        out, err = rerun.communicate(timeout=60)
        assert rerun.returncode == 0, err.decode()
        assert srv.requests == N - committed  # only the missing calls were made
        ok, calls, hits = map(int, out.split())
        assert (ok, calls, hits) == (N, N - committed, committed)
    with ResponseCache(path, "read-only") as cache:
        assert len(cache) == N
