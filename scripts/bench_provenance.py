"""Backfill results/bench/provenance.json for figures written before the benches recorded their provenance.

Each such figure gets the commit that last changed it in git history (the code in the repository when the figure was
committed; its bench's own run did not record the checkout, so this is marked ``recorded: "from git history"``), the
bench script that writes it and its sha256. Figures that already have an entry written by their bench's run
(superb.provenance.record_bench) keep it.

    python scripts/bench_provenance.py
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "results" / "bench"
SCRIPTS = {"batch": "batch", "drift": "drift", "first_stage": "first_stage", "llm_client": "llm_client",
           "prompt_injection": "prompt_injection", "rerankers": "rerankers"}


def bench_of(name: str) -> str:
    for prefix, script in SCRIPTS.items():
        if name.startswith(prefix):
            return f"bench/{script}.py"
    return "?"


def main() -> Path:
    path = BENCH / "provenance.json"
    record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"files": {}}
    for file in sorted(BENCH.iterdir()):
        if file.name == "provenance.json" or file.name.startswith("source.patch") or not file.is_file():
            continue
        entry = record["files"].get(file.name)
        if entry and entry.get("recorded") == "by the bench's run":
            continue
        commit = subprocess.run(["git", "log", "-1", "--format=%H", "--", str(file.relative_to(ROOT))], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.strip()
        record["files"][file.name] = {"bench": bench_of(file.name), "project": {"commit": commit or None},
                                      "recorded": "from git history: the commit that last changed the file",
                                      "sha256": hashlib.sha256(file.read_bytes()).hexdigest()}
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    print(main())
