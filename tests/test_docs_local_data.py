"""docs/local-data.md's worked example works as written: its three files and its spec, taken from the page's code
blocks, pass `superb run --dry-run` (real PISA indexing, nothing called) and print the dry run the page shows."""

from __future__ import annotations

import re
from pathlib import Path

from superb.cli import main

PAGE = Path(__file__).resolve().parents[1] / "docs" / "local-data.md"


def blocks() -> list[tuple[str, str]]:
    return re.findall(r"```(\w*)\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_the_worked_example_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    monkeypatch.chdir(tmp_path)  # the spec's relative paths are read from here
    found = blocks()
    docs = next(text for lang, text in found if lang == "json")
    queries = next(text for lang, text in found if text.startswith("qid\tquery"))
    qrels = next(text for lang, text in found if text.startswith("q1 0 p1"))
    spec = next(text for lang, text in found if lang == "toml")
    shown = next(text for lang, text in found if "dry run:" in text)
    for name, text in (("docs.jsonl", docs), ("queries.tsv", queries), ("qrels.txt", qrels),
                       ("my_products.toml", spec)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert main(["run", "my_products.toml", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    for line in shown.strip().splitlines():
        assert line.strip() in printed, f"the page shows {line!r}; the dry run printed:\n{printed}"
