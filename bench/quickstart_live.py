"""What the README's main command does live: experiments/quickstart.toml in a fresh SUPERB_HOME, timed and compared.

Usage: SUPERB_DATA_MIRROR=../shared/data python bench/quickstart_live.py [--models DIR]

A fresh SUPERB_HOME (a temporary folder; the model files are linked in from ``--models``, default
``~/.cache/superb/models``, so nothing is downloaded: the response cache, Terrier index and data copies start empty)
runs ``superb run experiments/quickstart.toml`` as the README shows it, every answer asked of the embedded model.
Writes results/bench/quickstart_live.csv: one ``run`` row (wall seconds of the whole command; LLM requests and calls,
summed over the live folder's usage.csv) and one row per (system, measure) of the table: the committed results/quickstart value, the live
value and their difference. The README's words on a live re-run ("how long", "how far it moves") are bound to it.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "experiments" / "quickstart.toml"
COMMITTED = ROOT / "results" / "quickstart"
OUT = ROOT / "results" / "bench" / "quickstart_live.csv"


def run_live(models: Path, out: Path) -> float:
    """Seconds of ``superb run`` of the quickstart into ``out``, in a fresh SUPERB_HOME holding only the models."""
    with tempfile.TemporaryDirectory(prefix="superb-qs-home-") as home:
        (Path(home) / "models").symlink_to(models)
        env = {**os.environ, "SUPERB_HOME": home}
        start = time.monotonic()
        done = subprocess.run([str(Path(sys.executable).with_name("superb")), "run", str(SPEC), "--out", str(out)],
                              env=env, cwd=ROOT, capture_output=True, text=True)
        seconds = time.monotonic() - start
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"quickstart_live: superb run exited {done.returncode}")
    return seconds


def cells(opened) -> dict[tuple[str, str], float]:
    """The full view's cells of an opened run folder's table."""
    table = opened.tables()
    return {(r.system, r.measure): float(r.mean) for r in table[table["view"] == "full"].itertuples()}


def usage_of(opened, folder: Path) -> tuple[int, int]:
    """LLM requests and calls of a run folder (usage.csv); a live run without one is an error, not 0 calls."""
    usage = opened.usage()
    if usage is None:
        raise SystemExit(f"quickstart_live: {folder} has no usage.csv: the live run's calls cannot be counted")
    return int(usage["requests"].sum()), int(usage["calls"].sum())


def main() -> int:
    from superb.folder.kinds import open_folder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=Path.home() / ".cache" / "superb" / "models")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="superb-qs-out-") as tmp:
        out = Path(tmp) / "quickstart"
        seconds = run_live(args.models.resolve(), out)
        opened = open_folder(out)
        live, (requests, calls) = cells(opened), usage_of(opened, out)
    committed = cells(open_folder(COMMITTED))
    rows = [{"kind": "run", "system": "", "measure": "", "committed": "", "live": "", "diff": "",
             "wall_s": f"{seconds:.1f}", "requests": requests, "calls": calls}]
    for key in sorted(committed):
        rows.append({"kind": "cell", "system": key[0], "measure": key[1], "committed": f"{committed[key]:.4f}",
                     "live": f"{live[key]:.4f}", "diff": f"{live[key] - committed[key]:+.4f}", "wall_s": "",
                     "requests": "", "calls": ""})
    with OUT.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    from superb.provenance import record_bench
    record_bench(OUT.parent, [OUT], "quickstart_live")
    moved = [r for r in rows[1:] if float(r["diff"]) != 0.0]
    print(f"quickstart live: {seconds:.1f} s, {calls} calls; {len(moved)} of {len(rows) - 1} cells moved; "
          f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
