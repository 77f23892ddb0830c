"""A tiny local-files data set for end-to-end `superb run` tests: six products, two queries, graded qrels.

``data`` (a fixture: import it into a test module) writes docs.jsonl, queries.tsv and qrels.txt into ``tmp_path``
with SUPERB_HOME under it and progress bars off (``write_data`` writes them, or other products, anywhere);
``dataset_table(folder)`` is the spec's [dataset] table reading them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DOCS = [("d1", "trail running shoes"), ("d2", "road running shoes"), ("d3", "running socks"),
        ("d4", "leather office shoes"), ("d5", "coffee mug"), ("d6", "tea mug with lid")]
QUERIES = [("1", "running shoes"), ("2", "mug")]
QRELS = [("1", "d1", 2), ("1", "d2", 2), ("1", "d3", 1), ("2", "d5", 2), ("2", "d6", 2)]


@pytest.fixture()
def data(tmp_path, monkeypatch) -> Path:
    """``tmp_path`` holding the data set, with SUPERB_HOME at tmp_path/home and SUPERB_PROGRESS=0."""
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    return write_data(tmp_path)


def write_data(folder: Path, docs=DOCS, queries=QUERIES, qrels=QRELS) -> Path:
    """Writes docs.jsonl, queries.tsv and qrels.txt into ``folder`` (by default the six products above); returns it."""
    (folder / "docs.jsonl").write_text("".join(json.dumps({"docno": d, "title": t}) + "\n" for d, t in docs))
    (folder / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in queries))
    (folder / "qrels.txt").write_text("".join(f"{q} 0 {d} {l}\n" for q, d, l in qrels))
    return folder


def dataset_table(folder: Path) -> str:
    """The [dataset] table of a spec reading the local data set in ``folder`` (docs.jsonl, queries.tsv, qrels.txt)."""
    return f"""[dataset]
name = "local"
docs = "{folder / 'docs.jsonl'}"
queries = "{folder / 'queries.tsv'}"
qrels = "{folder / 'qrels.txt'}\""""
