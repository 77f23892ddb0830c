"""What checking stored bytes costs: a cached re-run of results/trec_dl19 with the checksums checked and not.

Usage: SUPERB_HOME=DIR python bench/checksum_cost.py [--repeats 5]

The folder's shipped answers are replayed into SUPERB_HOME's response cache (``superb responses replay``), then
``superb run experiments/trec_dl19.toml --out TMP`` runs in this process: once to warm up (the bi-encoder encodes the
passages into the embedding store the first time; not counted), then ``--repeats`` pairs, one run with the checks
(every cached answer's and every stored vector's checksum recomputed on read: superb.llm.cache_checksum,
superb.transformers.embedding_cache) and one without (their ``VERIFY`` switched off, which only this bench does), the
order alternating from pair to pair. Every answer comes from the cache: SUPERB_EMBEDDED_URL points at a closed port,
so a miss fails at once instead of starting the embedded model.

The checks alone are timed too: the checksum of every answer the folder shipped and of every stored vector, recomputed
and compared (the median of ``--repeats`` passes): the check's own cost, free of the noise of a shared machine.

Each run is timed by the wall clock and by this process's CPU time (the machine is shared: the CPU time is what
other processes' load disturbs least). Writes results/bench/checksum_cost.csv (kind, checks, repeat, wall_s, cpu_s)
with the medians, their ratio (on / off) and the median of the ratios of the pairs run one after the other (what a
load that drifts over minutes disturbs least) as its last rows, and records it in results/bench/provenance.json.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "results" / "trec_dl19"
SPEC = ROOT / "experiments" / "trec_dl19.toml"
OUT = ROOT / "results" / "bench" / "checksum_cost.csv"


def switch(on: bool) -> None:
    from superb.llm import cache_checksum
    from superb.transformers import embedding_cache

    cache_checksum.VERIFY = on
    embedding_cache.VERIFY = on


def timed_run(out: Path, on: bool) -> tuple[float, float]:
    """(wall-clock seconds, CPU seconds of this process) of one `superb run` of the spec into ``out``."""
    from superb.cli import main

    switch(on)
    t0, c0 = time.perf_counter(), time.process_time()
    code = main(["run", str(SPEC), "--out", str(out)])
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    switch(True)
    if code != 0:
        raise SystemExit(f"superb run exited {code}: the cached re-run must make no call (replay {FOLDER} first)")
    return seconds, cpu


def checks_alone(repeats: int) -> float:
    """Seconds per pass of the checks a cached re-run makes: the checksum of each cached answer the folder shipped
    and of each stored vector, recomputed and compared (the rows read beforehand, so only the checks are timed)."""
    import json
    import sqlite3

    from superb import paths
    from superb.llm.cache_checksum import answer_checksum
    from superb.llm.ship import read_lines
    from superb.transformers.embedding_cache import vector_checksum

    keys = [json.loads(line)["key"] for _, _, line in read_lines(FOLDER / "responses.jsonl.gz") if line]
    with sqlite3.connect(paths.llm_cache_path()) as conn:
        answers = [conn.execute("SELECT key, text, logprobs, prompt_tokens, completion_tokens, checksum FROM "
                                "responses WHERE key = ?", (k,)).fetchone() for k in keys]
    conn.close()
    vectors = []
    for store in sorted((paths.home() / "embeddings").glob("*.sqlite")):
        with sqlite3.connect(store) as conn:
            vectors += conn.execute("SELECT key, vector, checksum FROM embeddings").fetchall()
        conn.close()
    passes = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        bad = sum(answer_checksum(*row[:5]) != row[5] for row in answers)
        bad += sum(vector_checksum(k, v) != c for k, v, c in vectors)
        passes.append(time.perf_counter() - t0)
        if bad:
            raise SystemExit(f"{bad} stored answers or vectors do not match their checksum")
    print(f"the checks alone: {len(answers)} answers and {len(vectors)} vectors", flush=True)
    return statistics.median(passes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("SUPERB_DATA_MIRROR", str(ROOT.parent / "shared" / "data"))
    os.environ["SUPERB_EMBEDDED_URL"] = "http://127.0.0.1:9/v1"  # a miss fails fast: no model is started
    os.environ["SUPERB_PROGRESS"] = "0"
    os.chdir(ROOT)  # the spec names its run files relative to the project
    from superb.cli import main as superb

    if superb(["responses", "replay", str(FOLDER)]) != 0:
        return 1
    rows = []
    with tempfile.TemporaryDirectory(prefix="superb-checksum-cost-") as tmp:
        out = Path(tmp) / "trec_dl19"
        print(f"warm-up: {timed_run(out, True)[0]:.1f} s", flush=True)
        times: dict[tuple[str, bool], list[float]] = {(c, on): [] for c in ("wall", "cpu") for on in (True, False)}
        for i in range(args.repeats):
            for on in ((True, False) if i % 2 == 0 else (False, True)):
                seconds, cpu = timed_run(out, on)
                times["wall", on].append(seconds)
                times["cpu", on].append(cpu)
                rows.append({"kind": "run", "checks": "on" if on else "off", "repeat": i + 1,
                             "wall_s": round(seconds, 3), "cpu_s": round(cpu, 3)})
                print(f"repeat {i + 1}, checks {'on' if on else 'off'}: {seconds:.2f} s ({cpu:.2f} s CPU)",
                      flush=True)
        alone = checks_alone(args.repeats)
    median = {k: statistics.median(v) for k, v in times.items()}
    rows += [{"kind": "run median", "checks": "on" if on else "off", "repeat": "",
              "wall_s": round(median["wall", on], 3), "cpu_s": round(median["cpu", on], 3)} for on in (True, False)]
    rows.append({"kind": "run ratio on/off (medians)", "checks": "", "repeat": "",
                 "wall_s": round(median["wall", True] / median["wall", False], 4),
                 "cpu_s": round(median["cpu", True] / median["cpu", False], 4)})
    pairs = {c: statistics.median(on / off for on, off in zip(times[c, True], times[c, False]))
             for c in ("wall", "cpu")}
    rows.append({"kind": "run ratio on/off (median over the pairs run one after the other)", "checks": "",
                 "repeat": "", "wall_s": round(pairs["wall"], 4), "cpu_s": round(pairs["cpu"], 4)})
    rows.append({"kind": "checks alone (every answer and vector of the run)", "checks": "on", "repeat": "",
                 "wall_s": round(alone, 4), "cpu_s": ""})
    rows.append({"kind": "checks alone / median run off", "checks": "", "repeat": "",
                 "wall_s": round(alone / median["wall", False], 5), "cpu_s": round(alone / median["cpu", False], 5)})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["kind", "checks", "repeat", "wall_s", "cpu_s"])
        writer.writeheader()
        writer.writerows(rows)
    from superb.provenance import record_bench

    record_bench(OUT.parent, [OUT], "checksum_cost")
    print(f"median wall on {median['wall', True]:.2f} s, off {median['wall', False]:.2f} s (ratio "
          f"{median['wall', True] / median['wall', False]:.4f}); CPU on {median['cpu', True]:.2f} s, off "
          f"{median['cpu', False]:.2f} s (ratio {median['cpu', True] / median['cpu', False]:.4f}); the checks alone "
          f"{alone:.4f} s per run; written to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
