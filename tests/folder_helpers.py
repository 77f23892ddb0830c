"""Helpers for tests that build a results folder by editing a written one."""

from __future__ import annotations

import json
from pathlib import Path

from superb.provenance import folder_files


def rerecord(folder: Path) -> Path:
    """``folder``'s provenance.json records its files as they are now: a test that edits a file to build a case
    (a system left out of table.csv, an LLM judge's labels added) gives it the record superb would have written.
    That an edited file is refused otherwise is tests/test_folder_verified.py's."""
    path = Path(folder) / "provenance.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    record["files"] = folder_files(folder)
    path.write_text(json.dumps(record, indent=2), encoding="utf-8")
    return Path(folder)


def rerun_recorded_table(committed: Path, again: Path) -> list[str]:
    """Run the `superb table` command ``committed``/provenance.json records into ``again`` and compare table.csv,
    table.md and table.tex byte for byte; returns the command. Paths are the project's: chdir to its root first."""
    from superb.cli import main

    command = json.loads((committed / "provenance.json").read_text(encoding="utf-8"))["command"]
    assert command[:2] == ["superb", "table"], command
    assert main([*command[1:], "--out", str(again)]) == 0
    for name in ("table.csv", "table.md", "table.tex"):
        assert (again / name).read_bytes() == (committed / name).read_bytes(), name
    return command

