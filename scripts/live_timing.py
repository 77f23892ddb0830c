"""The wall-clock time of each pipeline of a LIVE `superb run`, read from its progress bars, into a CSV.

A results folder re-derived from shipped responses records the seconds of that re-derivation (the answers come from
the cache), not what the model took. The live run's per-query progress bars (tqdm, one per pipeline: "NAME: 100%|...|
43/43 [29:10<00:00, ...]") hold the elapsed time of each pipeline as it ran; this reads the last one of each pipeline in
each log.

    python scripts/live_timing.py run.log [more.log ...] --spec experiments/trec_dl19.toml \
        --out results/bench/trec_dl19_live_seconds.csv [--usage USAGE|- ...] [--update]

Of several logs, a pipeline's time is its longest bar (a re-derivation from the cache takes seconds). ``--usage``: one
per log, the usage.csv of that run's own folder (or -): ``calls_made`` and ``from_cache`` say how many of a pipeline's
requests the model answered during the timed run (a run that resumes a stopped one times only the rest).
``--update``: keep the rows of an existing CSV for pipelines no log has a bar for or a longer one than.

The CSV (system, queries, seconds, seconds_per_query, complete, calls_made, from_cache; the last two empty where no
usage file names the pipeline) is recorded in results/bench/provenance.json.
"""

from __future__ import annotations

import argparse
import csv
import re
from pathlib import Path

from superb.provenance import record_bench
from superb.run.spec import load_spec

BAR = re.compile(r"(?P<name>[^\r\n|]+?):\s+\d+%\|[^|]*\|\s*(?P<done>\d+)/(?P<total>\d+)\s*\[(?P<elapsed>[\d:]+)<")


def seconds(text: str) -> int:
    parts = [int(p) for p in text.split(":")]
    total = 0
    for p in parts:
        total = total * 60 + p
    return total


COLUMNS = ["system", "queries", "seconds", "seconds_per_query", "complete", "calls_made", "from_cache"]


def bars(log: Path, names: list[str]) -> dict[str, tuple[int, int, int]]:
    """The last progress bar of each pipeline named in ``names``: (queries done, queries, elapsed seconds)."""
    last: dict[str, tuple[int, int, int]] = {}
    for m in BAR.finditer(log.read_text(encoding="utf-8", errors="replace")):
        name = m.group("name").strip()
        if name in names:
            last[name] = (int(m.group("done")), int(m.group("total")), seconds(m.group("elapsed")))
    return last


def live_calls(usage: Path | None) -> dict[str, tuple[int, int]]:
    """(calls made, answers from the cache) of each pipeline that sent requests, from a run's usage.csv."""
    if usage is None:
        return {}
    with usage.open(encoding="utf-8") as f:
        return {row["system"]: (int(float(row["calls"])), int(float(row["cache_hits"])))
                for row in csv.DictReader(f) if int(float(row["requests"] or 0)) > 0}


def timed_rows(logs: list[Path], usages: list[Path | None], names: list[str]) -> dict[str, dict[str, object]]:
    """Per pipeline, the bar of the log where it ran longest (a re-derivation from the cache takes seconds and does
    not replace the live time), with that run's calls made and answers from the cache when its usage is given."""
    best: dict[str, dict[str, object]] = {}
    for log, usage in zip(logs, usages):
        calls = live_calls(usage)
        for name, (done, total, secs) in bars(log, names).items():
            if name in best and int(best[name]["seconds"]) >= secs:
                continue
            made, cached = calls.get(name, ("", "") if usage is None else (0, 0))
            best[name] = {"system": name, "queries": done, "seconds": secs,
                          "seconds_per_query": round(secs / max(done, 1), 1), "complete": done == total,
                          "calls_made": made, "from_cache": cached}
    return best


def main() -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", type=Path, nargs="+")
    parser.add_argument("--spec", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--usage", nargs="*", default=[],
                        help="one per log, in the same order: that run's usage.csv, or - when there is none")
    parser.add_argument("--update", action="store_true")
    args = parser.parse_args()
    if args.usage and len(args.usage) != len(args.logs):
        parser.error(f"--usage takes one file (or -) per log: {len(args.logs)} logs, {len(args.usage)} given")
    usages = [None if u == "-" else Path(u) for u in args.usage] or [None] * len(args.logs)
    names = [p.name for p in load_spec(args.spec).pipelines]
    rows = timed_rows(args.logs, usages, names)
    kept: dict[str, dict[str, str]] = {}
    if args.update and args.out.is_file():
        with args.out.open(encoding="utf-8") as f:
            kept = {row["system"]: row for row in csv.DictReader(f)  # the longest time wins here too
                    if row["system"] not in rows or int(row["seconds"]) > int(rows[row["system"]]["seconds"])}
        rows = {name: row for name, row in rows.items() if name not in kept}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, restval="")
        writer.writeheader()
        for name in names:
            if name in rows:
                writer.writerow(rows[name])
            elif name in kept:
                writer.writerow({k: kept[name].get(k, "") for k in COLUMNS})
    record_bench(args.out.parent, [args.out], args.out.stem)
    return args.out


if __name__ == "__main__":
    print(main())
