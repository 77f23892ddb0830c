"""What the free preflight of `superb run` costs on a cached re-run (superb.run.preflight): the same spec run from its
folder's shipped answers (0 LLM calls) with and without the preflight, each the `superb` command in a child process,
timed wall-clock, alternating, after one warm-up run (which encodes the bi-encoder's passages once). Writes one row per
variant: the median, min and max seconds, the preflight's own seconds (from its line) and the ratio to the run without
it; and checks that both variants write byte-identical run files; records the figure in results/bench/provenance.json.

    SUPERB_HOME=/tmp/home SUPERB_DATA_MIRROR=../shared/data .venv/bin/python bench/preflight_cost.py \\
        --folder results/trec_dl19 --spec experiments/trec_dl19.toml --repeats 3
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from superb.provenance import record_bench

ROOT = Path(__file__).resolve().parents[1]
SUPERB = [sys.executable, "-m", "superb.cli"]
PREFLIGHT_LINE = re.compile(r"preflight passed in ([0-9.]+) s")


def superb(*args: str) -> tuple[float, str]:
    """Run `superb ARGS`; (wall-clock seconds, stderr). A failure ends the benchmark with its output."""
    t0 = time.perf_counter()
    done = subprocess.run([*SUPERB, *args], capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"superb {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds, done.stderr


def run_digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((folder / "runs").glob("*.run"))}


def commit() -> str:
    found = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return found.stdout.strip() or "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=Path("results/trec_dl19"))
    parser.add_argument("--spec", type=Path, default=Path("experiments/trec_dl19.toml"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("results/bench/preflight_cost.csv"))
    args = parser.parse_args()

    superb("responses", "replay", str(args.folder))
    work = Path(tempfile.mkdtemp(prefix="preflight-cost-"))
    superb("run", str(args.spec), "--out", str(work / "warm-up"), "--no-preflight")
    seconds: dict[str, list[float]] = {"preflight": [], "no_preflight": []}
    own: list[float] = []
    digests: dict[str, dict[str, str]] = {}
    for i in range(args.repeats):
        for variant in ("preflight", "no_preflight"):
            out = work / f"{variant}-{i}"
            took, err = superb("run", str(args.spec), "--out", str(out),
                               *(["--no-preflight"] if variant == "no_preflight" else []))
            seconds[variant].append(took)
            if variant == "preflight":
                found = PREFLIGHT_LINE.search(err)
                if found is None:
                    sys.exit(f"no preflight line in the run's output:\n{err[-2000:]}")
                own.append(float(found.group(1)))
            digests.setdefault(variant, run_digests(out))
    identical = digests["preflight"] == digests["no_preflight"]
    base = statistics.median(seconds["no_preflight"])
    rows = []
    for variant in ("no_preflight", "preflight"):
        median = statistics.median(seconds[variant])
        rows.append({"spec": args.spec.as_posix(), "variant": variant, "repeats": args.repeats,
                     "median_s": round(median, 2), "min_s": round(min(seconds[variant]), 2),
                     "max_s": round(max(seconds[variant]), 2),
                     "preflight_s": round(statistics.median(own), 2) if variant == "preflight" else "",
                     "ratio": round(median / base, 3), "run_files_identical": identical, "commit": commit()})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    record_bench(args.out.parent, [args.out], "preflight_cost")  # results/bench/provenance.json (superb.provenance)
    for row in rows:
        print(row)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
