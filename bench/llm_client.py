"""Benchmark of the LLM client layer: concurrency efficiency, per-call overhead, cached re-runs; optionally the
embedded server's n_parallel on this machine.

    python bench/llm_client.py            # fake server only (seconds)
    python bench/llm_client.py --model    # also the real 0.5B model: n_parallel 1 vs 2 (a minute or two)

Writes results/bench/llm_client.json and .md. Ratios are measured within one run:
  (a) efficiency at concurrency C = ideal time (N * L / C) / elapsed, N calls to a fake server answering after L s;
  (b) client overhead per call = elapsed / N against a zero-latency fake server (sequential, and at C = 8);
  (c) a fully cached re-run: calls made (should be 0) and its time as a fraction of the first run.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import urllib.request
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from superb.provenance import record_bench
from superb.llm import ChatRequest, LLMClient, LLMConfig, ResponseCache, Usage  # noqa: E402
from superb.llm import client_base  # noqa: E402

client_base.PROGRESS_MIN = 10**9  # no progress bars in benchmark output

PROMPT = "Query: stainless steel water bottle\nProduct: {i}: insulated bottle, 1 litre, blue\nRelevant? Answer yes or no."


def requests(n: int, salt: str = "") -> list[ChatRequest]:
    return [ChatRequest.chat("You judge product relevance.", PROMPT.format(i=f"{salt}{i}"), max_tokens=1,
                             tag="bench") for i in range(n)]


class RemoteFake:
    """superb/testing/fakeserver.py in a child process, so the server's work does not compete with the client for one GIL."""

    def __init__(self, latency: float):
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "superb" / "testing" / "fakeserver.py"), "--latency", str(latency)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.close()
            raise RuntimeError(f"the fake server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats") as r:
            return json.loads(r.read())

    def reset_counters(self) -> None:
        urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{self.port}/reset", data=b"{}")).read()

    @property
    def requests(self) -> int:
        return self.stats()["requests"]

    @property
    def max_in_flight(self) -> int:
        return self.stats()["max_in_flight"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)

    def __enter__(self) -> "RemoteFake":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def client_for(srv, concurrency: int, cache: ResponseCache | None = None) -> LLMClient:
    cfg = LLMConfig(model="fake-model", base_urls=(srv.base_url,), concurrency=concurrency)
    return LLMClient(cfg, cache=cache, usage=Usage())


def timed_many(client: LLMClient, reqs: list[ChatRequest]) -> float:
    start = time.perf_counter()
    out = client.complete_many(reqs)
    elapsed = time.perf_counter() - start
    failed = sum(c.failed for c in out)
    if failed:
        raise RuntimeError(f"{failed} calls failed during the benchmark")
    return elapsed


def efficiency(latency: float, calls_per_slot: int) -> list[dict]:
    rows = []
    with RemoteFake(latency) as srv:
        for c in (1, 8, 32):
            n = calls_per_slot * c
            with client_for(srv, c) as client:
                client.complete_many(requests(c, "warm"))  # open C connections first, not timed
                srv.reset_counters()
                elapsed = timed_many(client, requests(n, f"eff{c}-"))
            ideal = n * latency / c
            rows.append({"concurrency": c, "calls": n, "latency_s": latency, "ideal_s": round(ideal, 3),
                         "elapsed_s": round(elapsed, 3), "efficiency": round(ideal / elapsed, 3),
                         "max_in_flight_seen": srv.max_in_flight})
    return rows


def overhead(n: int) -> dict:
    """Per-call time through LLMClient, and the floors under it measured against the same server in the same run:
    raw http.client (sync, one write per request), raw httpx2 (the HTTP library openai uses), raw
    openai chat.completions.create (what a naive client would call)."""
    import asyncio
    import http.client

    import httpx2
    import openai

    out: dict = {"calls": n}
    body = json.dumps({"model": "fake-model", "messages": [{"role": "user", "content": "x"}], "max_tokens": 1})
    with RemoteFake(0.0) as srv:
        url = f"{srv.base_url}/chat/completions"
        for c in (1, 8):
            with client_for(srv, c) as client:
                client.complete_many(requests(2 * c, "warm"))
                elapsed = timed_many(client, requests(n, f"ovh{c}-"))
            out[f"llmclient_ms_c{c}"] = round(1000 * elapsed / n, 3)

        conn = http.client.HTTPConnection("127.0.0.1", srv.port)
        start = time.perf_counter()
        for _ in range(n):
            conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            conn.getresponse().read()
        out["raw_http_client_ms"] = round(1000 * (time.perf_counter() - start) / n, 3)
        conn.close()

        async def raw_httpx() -> float:
            async with httpx2.AsyncClient() as hc:
                await hc.post(url, content=body)
                start = time.perf_counter()
                for _ in range(n):
                    (await hc.post(url, content=body, headers={"Content-Type": "application/json"})).json()
                return time.perf_counter() - start

        async def raw_openai() -> float:
            api = openai.AsyncOpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
            msgs = [{"role": "user", "content": "x"}]
            await api.chat.completions.create(model="fake-model", messages=msgs, max_tokens=1)
            start = time.perf_counter()
            for _ in range(n):
                await api.chat.completions.create(model="fake-model", messages=msgs, max_tokens=1)
            await api.close()
            return time.perf_counter() - start

        out["raw_httpx2_ms"] = round(1000 * asyncio.run(raw_httpx()) / n, 3)
        out["raw_openai_create_ms"] = round(1000 * asyncio.run(raw_openai()) / n, 3)
    out["overhead_vs_http_client_ms"] = round(out["llmclient_ms_c1"] - out["raw_http_client_ms"], 3)
    out["overhead_vs_httpx2_ms"] = round(out["llmclient_ms_c1"] - out["raw_httpx2_ms"], 3)
    return out


def cached_rerun(n: int, latency: float, concurrency: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp, RemoteFake(latency) as srv:
        path = Path(tmp) / "cache.sqlite"
        reqs = requests(n, "cache-")
        with ResponseCache(path) as cache, client_for(srv, concurrency, cache) as client:
            first = timed_many(client, reqs)
        calls_first = srv.requests
        srv.reset_counters()
        with ResponseCache(path) as cache, client_for(srv, concurrency, cache) as client:
            second = timed_many(client, reqs)
            hits = client.usage.total().cache_hits
        calls_rerun = srv.requests
    return {"calls": n, "latency_s": latency, "concurrency": concurrency, "first_s": round(first, 3),
            "first_calls": calls_first, "rerun_s": round(second, 4), "rerun_calls": calls_rerun, "rerun_hits": hits,
            "rerun_fraction": round(second / first, 4), "per_hit_ms": round(1000 * second / n, 3)}


def embedded_parallel(n: int) -> list[dict]:
    """The real 0.5B model: the same n short pointwise calls with n_parallel = 1 (concurrency 1) and 2 (2)."""
    from superb.llm.model import MODELS, resolve_model
    from superb.llm.server import EmbeddedServer

    path = resolve_model("0.5b", download=False)
    rows = []
    for slots in (1, 2, 1, 2):  # alternate, to spread the noise of a shared machine over both settings
        with EmbeddedServer(path, MODELS["0.5b"].alias, n_ctx=2048, n_parallel=slots) as srv:
            cfg = LLMConfig(model=srv.alias, base_urls=(srv.base_url,), concurrency=slots, timeout_s=300)
            with LLMClient(cfg, cache=None, usage=Usage()) as client:
                client.complete(requests(1, "warm")[0])
                elapsed = timed_many(client, requests(n, f"par{slots}-{len(rows)}-"))
                tokens = client.usage.total().prompt_tokens
        rows.append({"n_parallel": slots, "calls": n, "elapsed_s": round(elapsed, 2),
                     "calls_per_s": round(n / elapsed, 3), "prompt_tokens": tokens})
    return rows


def markdown(res: dict) -> str:
    lines = ["# LLM client benchmark", "", f"Machine: {res['machine']}; load average at start {res['load_avg']} (other jobs share it). Fake OpenAI server: superb/testing/fakeserver.py in its own process.",
             "", "## (a) Concurrency efficiency: ideal (N*L/C) / elapsed", "",
             "| C | calls | L (s) | ideal (s) | elapsed (s) | efficiency | max in flight |", "|---|---|---|---|---|---|---|"]
    for r in res["efficiency"]:
        lines.append(f"| {r['concurrency']} | {r['calls']} | {r['latency_s']} | {r['ideal_s']} | {r['elapsed_s']} | "
                     f"{r['efficiency']:.3f} | {r['max_in_flight_seen']} |")
    o = res["overhead"]
    lines += ["", "## (b) Per-call time against a zero-latency fake server (sequential unless noted)", "",
              "| path | ms/call |", "|---|---|",
              f"| LLMClient.complete_many, concurrency 1 | {o['llmclient_ms_c1']} |",
              f"| LLMClient.complete_many, concurrency 8 (wall time / calls) | {o['llmclient_ms_c8']} |",
              f"| raw openai chat.completions.create | {o['raw_openai_create_ms']} |",
              f"| raw httpx2.AsyncClient.post (openai's HTTP layer) | {o['raw_httpx2_ms']} |",
              f"| raw http.client (sync, keep-alive) | {o['raw_http_client_ms']} |", "",
              f"Overhead of LLMClient over the HTTP library it runs on (httpx2): {o['overhead_vs_httpx2_ms']} ms/call; "
              f"over a bare http.client round trip: {o['overhead_vs_http_client_ms']} ms/call ({o['calls']} calls each).",
              "",
              "## (c) Fully cached re-run", ""]
    c = res["cached_rerun"]
    lines.append(f"- first run: {c['calls']} calls at L={c['latency_s']} s, C={c['concurrency']}: {c['first_s']} s "
                 f"({c['first_calls']} requests reached the server)")
    lines.append(f"- re-run: {c['rerun_calls']} requests reached the server, {c['rerun_hits']} cache hits, "
                 f"{c['rerun_s']} s = {c['rerun_fraction']:.4f} of the first run ({c['per_hit_ms']} ms per hit)")
    if res.get("embedded_parallel"):
        lines += ["", "## (d) Embedded 0.5B model: n_parallel on this machine (2 cores)", "",
                  "| n_parallel (= client concurrency) | calls | elapsed (s) | calls/s |", "|---|---|---|---|"]
        for r in res["embedded_parallel"]:
            lines.append(f"| {r['n_parallel']} | {r['calls']} | {r['elapsed_s']} | {r['calls_per_s']} |")
        lines.append("")
        lines.append(res.get("embedded_note", ""))
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="store_true", help="also measure the real 0.5B model's n_parallel 1 vs 2")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench")
    args = ap.parse_args()
    res: dict = {"machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores, Python {platform.python_version()}"}
    res["load_avg"] = [round(x, 2) for x in __import__("os").getloadavg()]
    res["efficiency"] = efficiency(latency=0.2, calls_per_slot=10)
    res["overhead"] = overhead(n=500)
    res["cached_rerun"] = cached_rerun(n=320, latency=0.2, concurrency=32)
    if args.model:
        rows = embedded_parallel(n=12)
        res["embedded_parallel"] = rows
        rate = {k: sum(r["calls_per_s"] for r in rows if r["n_parallel"] == k) / 2 for k in (1, 2)}
        res["embedded_note"] = (f"Mean calls/s: n_parallel=1 {rate[1]:.3f}, n_parallel=2 {rate[2]:.3f} "
                                f"(ratio {rate[2] / rate[1]:.2f}); short pointwise prompts, max_tokens=1; the machine "
                                f"was shared with other jobs, so treat small differences as noise.")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "llm_client.json").write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    (args.out / "llm_client.md").write_text(markdown(res), encoding="utf-8")
    record_bench(args.out, [args.out / "llm_client.json", args.out / "llm_client.md"], "llm_client")  # superb.provenance
    print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
