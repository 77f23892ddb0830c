"""provenance.json's ``files``: the sha256 of every file of a results folder, report.html included (written after
provenance.json, then recorded), README.md aside (the reader's, edited by hand); checked on a fresh `superb run` and
on every committed results folder (superb.provenance.folder_files, record_file)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from superb.testing.fakeserver import FakeServer, yes
from local_data import data, dataset_table  # noqa: F401 (data: a fixture)
from superb.cli import main

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = sorted(p.parent for p in (ROOT / "results").glob("*/provenance.json")
                   if isinstance(json.loads(p.read_text(encoding="utf-8")).get("files"), (list, dict))
                   and p.parent.name != "bench")


def unlisted_or_wrong(folder: Path) -> list[str]:
    files = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))["files"]
    if not isinstance(files, dict):
        return ["files is a list of names, not name -> sha256"]
    wrong = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = path.relative_to(folder).as_posix()
        if name in ("README.md", "provenance.json"):
            continue
        if name not in files:
            wrong.append(f"{name} not listed")
        elif files[name] != hashlib.sha256(path.read_bytes()).hexdigest():
            wrong.append(f"{name}: sha256 differs")
    wrong += [f"{name} listed but absent" for name in files if name != "provenance.json" and not (folder / name).is_file()]
    return wrong


def test_a_run_records_every_file_with_its_sha256_report_included(data):
    (data / "spec.toml").write_text(f"""
name = "hashed"
{dataset_table(data)}
[evaluation]
measures = ["nDCG@10"]
[llm]
model = "fake-model"
base_urls = ["URL"]
cache = "off"
[[pipelines]]
name = "BM25"
first_stage = {{ engine = "pisa", depth = 5 }}
[[pipelines]]
name = "pointwise"
input = "BM25"
rerank = {{ type = "pointwise", variant = "yesno", top_k = 3, fields = ["title"] }}
""")
    with FakeServer(responder=yes) as srv:
        spec = data / "spec.toml"
        spec.write_text(spec.read_text().replace("URL", srv.base_url))
        assert main(["run", str(spec), "--out", str(data / "out")]) == 0
    files = json.loads((data / "out" / "provenance.json").read_text())["files"]
    assert "report.html" in files and files["provenance.json"] is None
    assert unlisted_or_wrong(data / "out") == []


@pytest.mark.parametrize("folder", COMMITTED, ids=lambda p: p.name)
def test_every_committed_folder_hashes_every_file(folder):
    assert unlisted_or_wrong(folder) == []
