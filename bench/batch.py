"""Benchmark of batch files and shipped responses at scale: export, import, ship and replay of N requests.

    python bench/batch.py                 # N = 100,000 (and 10,000, to show memory does not grow with N)
    python bench/batch.py --n 20000       # one size only

Each stage runs in its own process, so its peak resident memory (ru_maxrss) is its own; "base" is that peak after
the process's imports, before any work, and "growth" = peak - base is what the stage itself added.
Stages (all against a fresh SQLite cache in a temporary folder):
  export  a CollectingClient receives N distinct one-token label requests (pointwise-sized prompts, about 400
          characters) through its async path, records each miss, and writes the batch JSONL sorted by key
  answer  (the engine's part, not superb's) the fake model answers the file line by line into OpenAI result lines
  import  import_results reads the result file into the cache
  ship    the N rows a run used are written to responses.jsonl.gz (sorted, gzip mtime 0)
  replay  the shipped file is verified row by row and stored in another fresh cache
Writes results/bench/batch.json and .md.
"""

from __future__ import annotations

from superb.provenance import record_bench

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

STAGES = ("export", "answer", "import", "ship", "replay")
PRODUCT = ("Stainless steel insulated water bottle {i}, 1 litre, leak-proof lid, keeps drinks cold 24 hours, "
           "BPA free, powder-coated finish, fits most cup holders, dishwasher safe")


def rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def requests(n: int):
    from superb.llm import ChatRequest

    for i in range(n):  # a generator: the requests are never all in memory
        prompt = (f"You rank products for an online shop. Query: water bottle\nProduct: <<< {PRODUCT.format(i=i)} >>>"
                  f"\nWould the shopper want this product? Answer with one word, yes or no.\nAnswer:")
        yield ChatRequest.label(prompt, template="pointwise_yesno@bench", tag="bench")


def stage_export(n: int, folder: Path) -> dict:
    from superb.llm import LLMConfig, ResponseCache
    from superb.llm.batch import CollectingClient, PendingRequest, PendingStore

    config = LLMConfig(model="bench-model", base_urls=("http://127.0.0.1:9/v1",))
    with ResponseCache(folder / "cache.sqlite") as cache, PendingStore(folder / "cache.sqlite") as store:
        rnd = store.new_round()
        client = CollectingClient(config, cache=cache, sink=rnd)

        async def feed() -> int:
            pending = 0
            for r in requests(n):
                try:
                    await client.acomplete(r)
                except PendingRequest:
                    pending += 1
            return pending

        pending = client.run(feed())
        client.close()
        lines, sha = rnd.write(folder / "batch.jsonl")
    return {"pending": pending, "lines": lines, "file_mb": round((folder / "batch.jsonl").stat().st_size / 2**20, 1)}


def stage_answer(n: int, folder: Path) -> dict:
    from superb.testing.fakeserver import FakeServer, Reply, answer_batch_file

    server = FakeServer(responder=lambda r: Reply("yes", (("yes", -0.2, {"yes": -0.2, "no": -1.7}),)))
    lines = answer_batch_file(server, folder / "batch.jsonl", folder / "results.jsonl")
    return {"lines": lines, "file_mb": round((folder / "results.jsonl").stat().st_size / 2**20, 1)}


def stage_import(n: int, folder: Path) -> dict:
    from superb.llm import ResponseCache
    from superb.llm.batch import PendingStore
    from superb.llm.batch_results import import_results

    with ResponseCache(folder / "cache.sqlite") as cache, PendingStore(folder / "cache.sqlite") as store:
        report = import_results(folder / "results.jsonl", cache, store)
        left = store.pending()
    return {"stored": report.counts.stored, "errors": sum(report.errors.values()), "unknown": report.unknown,
            "malformed": report.malformed, "still_pending": left}


def stage_ship(n: int, folder: Path) -> dict:
    import sqlite3

    from superb.llm.ship import ResponseLog, write_shipped

    with sqlite3.connect(folder / "cache.sqlite") as conn:  # the keys a run of these N requests would have used
        keys = tuple(k for (k,) in conn.execute("SELECT key FROM responses ORDER BY key"))
    summary = write_shipped(ResponseLog(folder / "cache.sqlite", keys), folder / "responses.jsonl.gz")
    return {"rows": summary["rows"], "file_mb": round((folder / "responses.jsonl.gz").stat().st_size / 2**20, 1)}


def stage_replay(n: int, folder: Path) -> dict:
    from superb.llm import ResponseCache
    from superb.llm.ship import replay

    with ResponseCache(folder / "fresh.sqlite") as cache:
        report = replay(folder / "responses.jsonl.gz", cache)
    return {"stored": report.counts.stored, "refused": report.invalid}


def run_stage(stage: str, n: int, folder: Path) -> dict:
    import superb.llm.batch  # noqa: F401  (imports count in the base, not in the stage)
    import superb.llm.batch_results  # noqa: F401
    import superb.llm.ship  # noqa: F401
    import superb.testing.fakeserver as fakeserver  # noqa: F401

    base = rss_mb()  # peak so far (after the imports): growth is what the stage adds
    start = time.perf_counter()
    out = globals()[f"stage_{stage}"](n, folder)
    seconds = time.perf_counter() - start
    peak = rss_mb()
    return {"stage": stage, "n": n, "seconds": round(seconds, 2), "per_1k_s": round(seconds / n * 1000, 3),
            "rss_base_mb": round(base, 1), "rss_peak_mb": round(peak, 1), "growth_mb": round(peak - base, 1), **out}


def measure(n: int) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="superb-bench-batch-") as tmp:
        for stage in STAGES:
            proc = subprocess.run([sys.executable, __file__, "--stage", stage, "--n", str(n), "--dir", tmp],
                                  capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise RuntimeError(f"stage {stage} failed:\n{proc.stderr[-3000:]}")
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def markdown(res: dict) -> str:
    lines = ["# Batch files and shipped responses at scale", "",
             f"Machine: {res['machine']}; load average at start {res['load_avg']} (other jobs share it). Each stage "
             "runs in its own process: peak = its maximum resident memory, base = the same after its imports, growth = "
             "peak - base. See bench/batch.py for what each stage does.", "",
             "| N | stage | seconds | s per 1,000 | base MB | peak MB | growth MB | file MB | notes |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        notes = ", ".join(f"{k} {r[k]}" for k in ("lines", "pending", "stored", "rows", "errors", "unknown",
                                                   "malformed", "still_pending", "refused") if k in r)
        lines.append(f"| {r['n']:,} | {r['stage']} | {r['seconds']} | {r['per_1k_s']} | {r['rss_base_mb']} | "
                     f"{r['rss_peak_mb']} | {r['growth_mb']} | {r.get('file_mb', '')} | {notes} |")
    lines += ["", res["note"]]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, action="append", help="number of requests (default: 10,000 and 100,000)")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench")
    ap.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)
    ap.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage:
        print(json.dumps(run_stage(args.stage, args.n[0], args.dir)))
        return 0
    sizes = args.n or [10_000, 100_000]
    res: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
                 "load_avg": [round(x, 2) for x in os.getloadavg()], "rows": []}
    for n in sizes:
        res["rows"] += measure(n)
    by = {(r["n"], r["stage"]): r for r in res["rows"]}
    if len(sizes) > 1:
        small, large = min(sizes), max(sizes)
        growth = {s: (by[(small, s)]["growth_mb"], by[(large, s)]["growth_mb"]) for s in STAGES}
        res["note"] = ("Memory growth from N = {:,} to N = {:,} ({}x the requests): ".format(small, large, large // small)
                       + "; ".join(f"{s} {a} -> {b} MB" for s, (a, b) in growth.items())
                       + ". The files are written and read line by line and the cache is written in chunks; what "
                         "grows with N is the set of keys a run used (64-character keys) and SQLite's page cache.")
    else:
        res["note"] = "One size only: run without --n to compare 10,000 and 100,000."
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "batch.json").write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    (args.out / "batch.md").write_text(markdown(res), encoding="utf-8")
    record_bench(args.out, [args.out / "batch.json", args.out / "batch.md"], "batch")  # superb.provenance
    print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
