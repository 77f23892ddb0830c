"""How long the model took for the answers a judge folder shipped: per prompt template, from the response cache that
received them live.

A judge folder re-derived from its shipped responses records the seconds of that re-derivation, and a long judge run
is resumed over several sessions, so no one log holds its time. The response cache does: each live answer is stored
with its arrival time and latency (``created``, ``latency_s``; an answer imported from shipped responses has latency 0
and is not counted). For each template of the folder's shipped answers this reads those of its answers the cache got
live and cuts them into stretches of work where two answers are more than 120 s apart (superb.llm.pace: a pause
between sessions is no work; a judge's templates run one after another, so their stretches do not overlap).

    python scripts/judge_live_timing.py results/judges_dl19 --cache ~/.cache/superb/llm-cache.sqlite \
        --out results/bench/judges_dl19_live_seconds.csv

``--without FOLDER`` (repeatable) leaves out the answers another folder ships: a confirmatory judge folder whose cut
points are fitted on another collection (``[calibration] fit_on``) ships that collection's answers too, and their time
belongs to that collection's folder (``results/judges_dl20 --without results/judges_dl19``).

The CSV (template, answers, live_answers, stretches, seconds, seconds_per_answer, prompt_tokens_per_answer; a last
row ``all``) is recorded in results/bench/provenance.json. The cache is opened read-only.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from superb.errors import SuperbError
from superb.llm.pace import live_answers, pace_of
from superb.llm.ship import read_lines, shipped_path
from superb.provenance import record_bench


def shipped_keys(folder: Path) -> dict[str, str]:
    """key -> template of every answer the folder ships (every part of its responses file: superb.llm.ship)."""
    try:
        path = shipped_path(folder)
    except SuperbError as e:
        raise SystemExit(f"judge_live_timing: {e}") from None
    keys = {}
    for _, _, line in read_lines(path):
        if line.strip():
            row = json.loads(line)
            keys[row["key"]] = row["template"]
    return keys


def row(template: str, answers: int, live: list[tuple[float, float, int, str]], seconds: float,
        stretches: int) -> dict[str, object]:
    n = len(live)
    return {"template": template, "answers": answers, "live_answers": n, "stretches": stretches,
            "seconds": round(seconds), "seconds_per_answer": f"{seconds / n:.2f}" if n else "",
            "prompt_tokens_per_answer": f"{sum(r[2] for r in live) / n:.0f}" if n else ""}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--without", type=Path, action="append", default=[], metavar="FOLDER",
                        help="leave out the answers this folder ships (repeatable)")
    args = parser.parse_args()
    keys = shipped_keys(args.folder)
    for other in args.without:
        for key in shipped_keys(other):
            keys.pop(key, None)
    rows = live_answers(args.cache, keys=list(keys))
    groups = {t: [r for r in rows if r[3] == t] for t in sorted(set(keys.values()))}
    paces = {t: pace_of(g) for t, g in groups.items()}
    out = []
    for template, group in groups.items():
        pace = paces[template]
        out.append(row(template, sum(1 for t in keys.values() if t == template), group,
                       pace.seconds if pace else 0.0, pace.stretches if pace else 0))
    out.append(row("all", len(keys), rows, sum(p.seconds for p in paces.values() if p),
                   sum(p.stretches for p in paces.values() if p)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(out[0]))
        writer.writeheader()
        writer.writerows(out)
    record_bench(args.out.parent, [args.out], args.out.stem)
    for line in out:
        print(", ".join(f"{k} {v}" for k, v in line.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
