"""Re-runs committed results folders from their shipped responses alone and compares their files byte for byte.

The evidence for "no behaviour change" after a refactor: for each folder, a fresh response cache is filled only from
the folder's responses.jsonl.gz (`superb responses replay`), the spec named in its provenance.json is run with that
cache READ-ONLY (a request it cannot serve fails instead of calling a model: 0 calls by construction) into a scratch
folder, and the committed files are compared with the re-run's, byte for byte: a `superb run` folder's runs/*.run, a
`superb judge` folder's every output but provenance.json, README.md and the responses.

    python scripts/rerun_identical.py                       # every folder written by `superb run` or `superb judge`
    python scripts/rerun_identical.py results/quickstart    # some

Writes results/bench/rerun_identical.csv (folder, file, both sha256, identical, seconds of the re-run, the commit that
wrote the folder, the commit that checked it) and records it in results/bench/provenance.json; `--update` re-checks
the folders given and keeps the other rows. A folder that cannot be re-run (an answer its responses lack) is a row
"(re-run failed)" naming the error; the CSV is written after every folder. Exit code 1 when any file differs.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from superb.errors import SuperbError
from superb.run.experiment import run_experiment
from superb.judges.commands.run import run_judge_spec
from superb.judges.commands.spec import parse_judge_spec
from superb.llm.cache import ResponseCache
from superb.llm.ship import SHIPPED_FILE, replay
from superb.provenance import record_bench
from superb.run.results import write_results
from superb.run.spec import parse_spec, read_toml

OUT = Path("results/bench/rerun_identical.csv")
FIELDS = ["folder", "file", "committed_sha256", "rerun_sha256", "identical", "rerun_seconds", "written_at_commit",
          "checked_at_commit"]


def spec_source(folder: Path) -> tuple[str, Path] | None:
    """("run", spec file) for a folder `superb run` wrote, ("judge", spec file) for one `superb judge` wrote."""
    record = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
    if record.get("spec_file") and (folder / "runs").is_dir():
        return "run", Path(record["spec_file"])
    source = (record.get("spec") or {}).get("source") if isinstance(record.get("spec"), dict) else None
    return ("judge", Path(source)) if source else None


def run_folders() -> list[Path]:
    """Every results folder a `superb run` or a `superb judge` wrote (its provenance names the spec file)."""
    return [record.parent for record in sorted(Path("results").glob("*/provenance.json"))
            if spec_source(record.parent) is not None]


def compared_files(folder: Path, kind: str) -> list[Path]:
    """A run folder's run files; a judge folder's every output (labels, qrels, agreement tables, figures) but the
    records of the run itself (provenance.json, README.md, the shipped responses)."""
    if kind == "run":
        return sorted((folder / "runs").glob("*.run"))
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name not in ("provenance.json", "README.md")
                  and not p.name.startswith("responses."))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rerun(folder: Path, scratch: Path) -> tuple[Path, float, str]:
    """Run ``folder``'s spec into ``scratch/out`` from its shipped responses only; (the folder, seconds, commit)."""
    provenance = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
    kind, spec_file = spec_source(folder)
    raw = read_toml(spec_file)
    cache_file = scratch / "cache.sqlite"
    with ResponseCache(cache_file) as cache:
        if (folder / SHIPPED_FILE).is_file():  # with its parts (responses.2.jsonl.gz, ...)
            report = replay(folder, cache)
            if report.invalid:  # a row of the folder like any other failure, not an exit that loses the others
                raise SuperbError(f"{report.invalid} shipped rows refused; see `superb responses replay {folder}`")
    raw["llm"] = {**raw.get("llm", {}), "cache": "read-only", "cache_path": str(cache_file)}
    t0 = time.perf_counter()
    if kind == "run":
        result = run_experiment(parse_spec(raw, source=spec_file), progress=False)
        write_results(result, scratch / "out")
    else:
        run_judge_spec(parse_judge_spec(raw, source=spec_file), scratch / "out")
    commit = (provenance.get("project") or {}).get("commit") or ""
    return scratch / "out", time.perf_counter() - t0, commit


def head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def compare(folder: Path) -> list[dict[str, object]]:
    kind = spec_source(folder)[0]
    checked = head()[:12]
    with tempfile.TemporaryDirectory(prefix="superb-rerun-") as tmp:
        out, seconds, commit = rerun(folder, Path(tmp))
        rows = []
        for committed in compared_files(folder, kind):
            name = committed.relative_to(folder)
            again = out / name
            rerun_sha = sha256(again) if again.is_file() else "missing"
            committed_sha = sha256(committed)
            rows.append({"folder": folder.name, "file": str(name), "committed_sha256": committed_sha,
                         "rerun_sha256": rerun_sha, "identical": rerun_sha == committed_sha,
                         "rerun_seconds": round(seconds, 1), "written_at_commit": commit[:12],
                         "checked_at_commit": checked})
        return rows


def write(rows: list[dict[str, object]], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(sorted(rows, key=lambda r: (r["folder"], r["file"])))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path,
                        help="results folders (default: every folder `superb run` or `superb judge` wrote)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--update", action="store_true",
                        help="keep the rows of the folders not re-run now (each row names the commit that checked it)")
    args = parser.parse_args()
    folders = args.folders or run_folders()
    rows: list[dict[str, object]] = []
    if args.update and args.out.is_file():
        names = {Path(f).name for f in folders}
        with args.out.open(encoding="utf-8") as f:
            rows = [r for r in csv.DictReader(f) if r["folder"] not in names]
    for folder in folders:
        try:
            found = compare(folder)
        except SuperbError as exc:  # e.g. a CacheMiss: the shipped responses lack an answer the spec asks for
            found = [{"folder": folder.name, "file": "(re-run failed)", "committed_sha256": "",
                      "rerun_sha256": f"{type(exc).__name__}: {str(exc)[:200]}", "identical": False,
                      "rerun_seconds": "", "written_at_commit": "", "checked_at_commit": head()[:12]}]
        same = sum(r["identical"] is True for r in found)
        print(f"{folder}: {same}/{len(found)} files byte-identical ({found[0]['rerun_seconds'] or '-'} s)", flush=True)
        rows = [r for r in rows if r["folder"] != folder.name] + found
        write(rows, args.out)  # after every folder: a run stopped part-way keeps what it checked (--update goes on)
    record_bench(args.out.parent, [args.out], "rerun_identical")
    differ = [f"{r['folder']}/{r['file']}" for r in rows if str(r["identical"]) != "True"]
    print(f"{len(rows) - len(differ)} of {len(rows)} files identical; written to {args.out}")
    if differ:
        print("differ: " + ", ".join(differ), file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
