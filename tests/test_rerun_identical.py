"""scripts/rerun_identical.py: a committed folder re-run from its shipped responses alone gives byte-identical run
files, and a re-run whose shipped responses lack a request fails instead of calling a model."""

from __future__ import annotations

import csv
import gzip
import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from superb.llm.cache import CacheMiss

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("rerun_identical", ROOT / "scripts" / "rerun_identical.py")
ri = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("rerun_identical", ri)
_spec.loader.exec_module(ri)


@pytest.fixture
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # provenance.json names the spec file relative to the project


def test_every_folder_a_run_or_a_judge_wrote_is_found_with_its_spec(at_root):
    found = {p.name: ri.spec_source(p) for p in ri.run_folders()}
    for name in ("quickstart", "chorus_first_stage", "trec_dl19", "trec_dl20", "chorus_table4_full"):
        assert found[name] == ("run", Path(f"experiments/{name}.toml"))
    for name in ("judges_chorus", "judges_chorus_pairwise", "chorus_superlative"):
        assert found[name] == ("judge", Path(f"experiments/{name}.toml"))
    assert not set(found) & {"bench", "pending"}
    assert all(spec.is_file() for _, spec in found.values())


def test_quickstart_re_runs_byte_identical_from_its_shipped_responses(at_root):
    rows = ri.compare(Path("results/quickstart"))
    assert [r["file"] for r in rows] == ["runs/BM25.run", "runs/BM25__listwise-lik.run", "runs/BM25__pointwise.run"]
    assert all(r["identical"] for r in rows), rows
    assert all(r["rerun_sha256"] == r["committed_sha256"] for r in rows)


def test_a_judge_folder_re_runs_byte_identical_every_output_but_its_records(at_root):
    rows = {r["file"]: r for r in ri.compare(Path("results/judges_chorus_pairwise"))}
    assert {"agreement.csv", "agreement.md", "pairwise.md", "pairwise_decisions.jsonl", "pairwise_pr.png"} <= set(rows)
    assert not {"provenance.json", "README.md", "responses.jsonl.gz"} & set(rows)
    assert all(r["identical"] for r in rows.values()), [f for f, r in rows.items() if not r["identical"]]


def test_a_request_missing_from_the_shipped_responses_fails_the_re_run_without_a_call(at_root, tmp_path, monkeypatch):
    folder = tmp_path / "quickstart"
    folder.mkdir()
    for name in ("provenance.json", "runs"):
        source = ROOT / "results/quickstart" / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, folder / name)
    with gzip.open(ROOT / "results/quickstart/responses.jsonl.gz", "rt", encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    with gzip.open(folder / "responses.jsonl.gz", "wt", encoding="utf-8") as f:
        f.writelines(lines[:-1])  # the last answer is lost
    monkeypatch.setenv("SUPERB_EMBEDDED_URL", "http://127.0.0.1:9/v1")  # were a call made, it would go nowhere
    with pytest.raises(CacheMiss):
        ri.compare(folder)
    assert json.loads((folder / "provenance.json").read_text())["spec_file"] == "experiments/quickstart.toml"
    out = tmp_path / "bench" / "rerun.csv"
    monkeypatch.setattr(sys, "argv", ["rerun_identical.py", str(folder), "--out", str(out)])
    assert ri.main() == 1  # the command names the folder in a row instead of a traceback
    with out.open() as f:
        (row,) = list(csv.DictReader(f))
    assert row["file"] == "(re-run failed)" and row["rerun_sha256"].startswith("CacheMiss: cache miss in read-only")


def test_the_committed_check_covers_every_folder_as_committed(at_root):
    """results/bench/rerun_identical.csv: every folder a run or a judge wrote was re-run from its own shipped answers
    and every compared file came out identical; the sha256 it compared is the committed file's (re-derive a folder,
    then `python scripts/rerun_identical.py --update results/NAME`)."""
    with ri.OUT.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {r["folder"] for r in rows} == {p.name for p in ri.run_folders()}
    assert all(r["identical"] == "True" for r in rows), [r["file"] for r in rows if r["identical"] != "True"]
    for r in rows:
        committed = ROOT / "results" / r["folder"] / r["file"]
        assert ri.sha256(committed) == r["committed_sha256"], f"{r['folder']}/{r['file']} changed since its check"
