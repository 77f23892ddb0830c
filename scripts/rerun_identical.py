"""Re-runs committed results folders from their shipped responses alone and compares the run files byte for byte.

The evidence for "no behaviour change" after a refactor: for each folder, a fresh response cache is filled only from
the folder's responses.jsonl.gz (`superb responses replay`), the spec named in its provenance.json is run with that
cache READ-ONLY (a request it cannot serve fails the run instead of calling a model: 0 calls by construction) into a
scratch folder, and every runs/*.run of the committed folder is compared with the re-run's, byte for byte.

    python scripts/rerun_identical.py                       # every folder written by `superb run`
    python scripts/rerun_identical.py results/quickstart    # some

Writes results/bench/rerun_identical.csv (folder, run file, both sha256, identical, seconds of the re-run, the commit
that wrote the folder) and records it in results/bench/provenance.json. Exit code 1 when any file differs.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

from superb.experiment import run_experiment
from superb.llm.cache import ResponseCache
from superb.llm.ship import SHIPPED_FILE, replay
from superb.provenance import record_bench
from superb.results import write_results
from superb.spec import parse_spec, read_toml

OUT = Path("results/bench/rerun_identical.csv")
FIELDS = ["folder", "run_file", "committed_sha256", "rerun_sha256", "identical", "rerun_seconds", "written_at_commit"]


def run_folders() -> list[Path]:
    """Every results folder a `superb run` wrote: its provenance names a spec file and it holds run files."""
    found = []
    for record in sorted(Path("results").glob("*/provenance.json")):
        if json.loads(record.read_text(encoding="utf-8")).get("spec_file") and (record.parent / "runs").is_dir():
            found.append(record.parent)
    return found


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rerun(folder: Path, scratch: Path) -> tuple[Path, float, str]:
    """Run ``folder``'s spec into ``scratch/out`` from its shipped responses only; (run files, seconds, commit)."""
    provenance = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
    spec_file = Path(provenance["spec_file"])
    raw = read_toml(spec_file)
    cache_file = scratch / "cache.sqlite"
    with ResponseCache(cache_file) as cache:
        if (folder / SHIPPED_FILE).is_file():
            report = replay(folder, cache)
            if report.invalid:
                sys.exit(f"{folder}: {report.invalid} shipped rows refused; see `superb responses replay {folder}`")
    raw["llm"] = {**raw.get("llm", {}), "cache": "read-only", "cache_path": str(cache_file)}
    spec = parse_spec(raw, source=spec_file)
    t0 = time.perf_counter()
    result = run_experiment(spec, progress=False)
    write_results(result, scratch / "out")
    commit = (provenance.get("project") or {}).get("commit") or ""
    return scratch / "out" / "runs", time.perf_counter() - t0, commit


def compare(folder: Path) -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory(prefix="superb-rerun-") as tmp:
        runs, seconds, commit = rerun(folder, Path(tmp))
        rows = []
        for committed in sorted((folder / "runs").glob("*.run")):
            again = runs / committed.name
            rerun_sha = sha256(again) if again.is_file() else "missing"
            rows.append({"folder": folder.name, "run_file": committed.name, "committed_sha256": sha256(committed),
                         "rerun_sha256": rerun_sha, "identical": rerun_sha == sha256(committed),
                         "rerun_seconds": round(seconds, 1), "written_at_commit": commit[:12]})
        return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, help="results folders (default: every `superb run` folder)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    for folder in args.folders or run_folders():
        found = compare(folder)
        same = sum(bool(r["identical"]) for r in found)
        print(f"{folder}: {same}/{len(found)} run files byte-identical ({found[0]['rerun_seconds'] if found else 0} s)",
              flush=True)
        rows.extend(found)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    record_bench(args.out.parent, [args.out], "rerun_identical")
    differ = [f"{r['folder']}/{r['run_file']}" for r in rows if not r["identical"]]
    print(f"{len(rows) - len(differ)} of {len(rows)} run files identical; written to {args.out}")
    if differ:
        print("differ: " + ", ".join(differ), file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
