"""The wall-clock time of each pipeline of a LIVE `superb run`, read from its progress bars, into a CSV.

A results folder re-derived from shipped responses records the seconds of that re-derivation (the answers come from
the cache), not what the model took. The live run's per-query progress bars (tqdm, one per pipeline: "NAME: 100%|...|
43/43 [29:10<00:00, ...]") hold the elapsed time of each pipeline as it ran; this keeps the last one of each.

    python scripts/live_timing.py run.log --spec experiments/trec_dl19.toml --out results/bench/trec_dl19_live_seconds.csv

The CSV (system, queries, seconds, seconds_per_query, complete) is recorded in results/bench/provenance.json.
"""

from __future__ import annotations

import argparse
import csv
import re
from pathlib import Path

from superb.provenance import record_bench
from superb.spec import load_spec

BAR = re.compile(r"(?P<name>[^\r\n|]+?):\s+\d+%\|[^|]*\|\s*(?P<done>\d+)/(?P<total>\d+)\s*\[(?P<elapsed>[\d:]+)<")


def seconds(text: str) -> int:
    parts = [int(p) for p in text.split(":")]
    total = 0
    for p in parts:
        total = total * 60 + p
    return total


def main() -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--spec", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    names = [p.name for p in load_spec(args.spec).pipelines]
    last: dict[str, tuple[int, int, int]] = {}
    for m in BAR.finditer(args.log.read_text(encoding="utf-8", errors="replace")):
        name = m.group("name").strip()
        if name in names:
            last[name] = (int(m.group("done")), int(m.group("total")), seconds(m.group("elapsed")))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["system", "queries", "seconds", "seconds_per_query", "complete"])
        for name in names:
            if name in last:
                done, total, secs = last[name]
                writer.writerow([name, done, secs, round(secs / max(done, 1), 1), done == total])
    record_bench(args.out.parent, [args.out], args.out.stem)
    return args.out


if __name__ == "__main__":
    print(main())
