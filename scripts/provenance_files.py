"""Rewrite the ``files`` of committed results folders' provenance.json as superb now writes it: relative path ->
sha256 of every file of the folder (report.html included, README.md aside, provenance.json None), nothing else
changed. Used once when provenance.json began to carry the hashes (issue 46); a folder written since has them.

    python scripts/provenance_files.py results/NAME [...]   (default: every results/*/ with a files list)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from superb.provenance import folder_files

ROOT = Path(__file__).resolve().parents[1]


def rewrite(folder: Path) -> bool:
    path = folder / "provenance.json"
    text = path.read_text(encoding="utf-8")
    record = json.loads(text)
    if "files" not in record or not isinstance(record["files"], (list, dict)):
        return False
    if isinstance(record["files"], dict) and any(isinstance(v, dict) for v in record["files"].values()):
        return False  # results/bench: a record of figures (superb.provenance.record_bench), not a results folder
    record["files"] = folder_files(folder)
    path.write_text(json.dumps(record, indent=2, ensure_ascii="\\u" in text, default=str)
                    + ("\n" if text.endswith("\n") else ""), encoding="utf-8")
    return True


def main(argv: list[str]) -> int:
    folders = [Path(a) for a in argv] or sorted(p.parent for p in (ROOT / "results").glob("*/provenance.json"))
    for folder in folders:
        print(f"{folder}: {'files hashed' if rewrite(folder) else 'no files list, left as it is'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
