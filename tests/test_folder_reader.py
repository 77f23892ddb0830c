"""The results folder's one owner (superb.folder): each committed folder is recognised as its kind from its
provenance.json and reads back verified; the label study, the fill and the report take each system's baseline from
the one reader (a pipeline whose baseline is implicitly its input is tested by all three, which the label study used
to leave untested); the reader's baseline rule is the spec parser's; and the results writer writes provenance.json
once (it wrote it three times, once from the LLM layer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from local_data import write_data
from spec_helpers import bm25, write_spec

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
FOLDERS = sorted(p.parent for p in RESULTS.glob("*/provenance.json"))


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_every_committed_folder_is_recognised_as_its_kind_and_reads_back_verified(folder):
    from superb.folder.kinds import BenchFolder, BenchmarkFolder, JudgeFolder, TableFolder, kind_of, open_folder
    from superb.folder.run_folder import RunFolder

    KINDS = {"chorus_superlative": BenchmarkFolder, "bench": BenchFolder}
    record = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
    kind = kind_of(record)
    expected = KINDS.get(folder.name, TableFolder if folder.name.endswith("_table")
                         else JudgeFolder if folder.name.startswith("judges_") else RunFolder)
    assert kind is expected, folder.name
    if kind is RunFolder:
        opened = open_folder(folder, unverified=False)
        opened.tables(), opened.topics(), opened.qrels(), opened.runs()
        assert opened.verified and set(opened.read) >= {"table.csv", "topics.tsv", "qrels.trec", "systems.json"}


def test_the_readers_baseline_rule_is_the_spec_parsers(monkeypatch):
    """baselines_of (what every reader of a folder uses) against superb.run.spec.parse_spec's on every committed run
    folder's spec that names no plug-in (parsing one imports its code)."""
    from superb.folder.kinds import kind_of
    from superb.folder.run_folder import RunFolder, baselines_of
    from superb.run.spec import parse_spec

    monkeypatch.chdir(ROOT)  # the specs name their run files relative to the project
    checked = 0
    for folder in FOLDERS:
        record = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
        if kind_of(record) is not RunFolder or record.get("plugins"):
            continue
        assert baselines_of(record["spec"]["pipelines"]) == parse_spec(record["spec"]).baselines, folder.name
        checked += 1
    assert checked >= 10
    explicit = [{"name": "A"}, {"name": "B", "input": "A"}, {"name": "C", "input": "B", "baseline": "A"},
                {"name": "D", "input": "A", "baseline": False}]
    assert baselines_of(explicit) == {"A": None, "B": "A", "C": "A", "D": None}


@pytest.fixture(scope="module")
def chained(tmp_path_factory):
    """A `superb run` folder (tiny local data, no LLM) whose systems have every kind of baseline: none (BM25), its
    input implicitly (shuffle), another system named (random, against BM25), and none by `baseline = false`."""
    from superb.cli import main

    root = tmp_path_factory.mktemp("baselines")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SUPERB_HOME", str(root / "home"))
        mp.setenv("SUPERB_PROGRESS", "0")
        data = write_data(root)
        spec = write_spec(data, name="baselines", evaluation={"measures": ["P@1", "nDCG@10"]}, pipelines=[
            bm25(), {"name": "BM25 >> shuffle", "input": "BM25", "rerank": {"type": "shuffle", "seed": 1, "top_k": 3}},
            {"name": "BM25 >> shuffle >> random", "input": "BM25 >> shuffle", "baseline": "BM25",
             "rerank": {"type": "random", "seed": 2}},
            {"name": "BM25 >> random", "input": "BM25", "baseline": False, "rerank": {"type": "random", "seed": 3}}])
        out = data / "results" / "baselines"
        assert main(["run", str(spec), "--out", str(out)]) == 0
        yield out


EXPECTED = {"BM25": None, "BM25 >> shuffle": "BM25", "BM25 >> shuffle >> random": "BM25", "BM25 >> random": None}


def test_the_label_study_the_fill_and_the_report_take_the_same_baselines(chained):
    from superb.judges.fill.label import read_folder
    from superb.judges.studies.label_run import runs_from_folder
    from superb.report.data import collect

    _, study, info = runs_from_folder(chained, None, "local")
    assert study == EXPECTED and info["untested_without_baseline"] == []  # shuffle is tested against its input
    assert read_folder(chained).spec.baselines == EXPECTED
    assert collect(chained)["baselines"] == {s: b for s, b in EXPECTED.items() if b}
    from superb.folder.kinds import open_folder

    assert open_folder(chained).baselines == EXPECTED  # the one reader they all go through


def test_the_results_writer_writes_provenance_once(tmp_path, monkeypatch):
    from superb.run.evaluate_runs import evaluate_runs
    from superb.run.results import write_results

    quickstart = RESULTS / "quickstart"
    result, unverified = evaluate_runs([quickstart / "runs" / "BM25.run", quickstart / "runs" / "BM25__pointwise.run"],
                                       qrels=quickstart / "qrels.trec", rel=2)
    assert unverified == []
    written = []
    original = Path.write_text

    def counting(self, *args, **kwargs):
        if self.name == "provenance.json":
            written.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", counting)
    write_results(result, tmp_path / "out")
    assert len(written) == 1
    record = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert record["responses"] is None and record["files"]["table.csv"] and record["files"]["provenance.json"] is None


def edited_copy(chained: Path, tmp_path: Path) -> Path:
    import shutil

    copy = shutil.copytree(chained, tmp_path / "baselines")
    run = copy / "runs" / "BM25__shuffle.run"
    lines = run.read_text().splitlines(keepends=True)
    a, b = lines[0].split(), lines[1].split()
    a[2], b[2] = b[2], a[2]  # two products swap places: well formed, and not what the run wrote
    run.write_text(" ".join(a) + "\n" + " ".join(b) + "\n" + "".join(lines[2:]))
    return copy


def test_the_fill_refuses_an_edited_run_file_before_any_call(chained, tmp_path, capsys):
    from superb.cli import main

    copy = edited_copy(chained, tmp_path)
    assert main(["judge", "--fill", str(copy)]) == 2
    err = capsys.readouterr().err
    assert f"{copy}/runs/BM25__shuffle.run is not the file superb wrote" in err and "--unverified" in err


def test_what_the_fill_and_the_label_study_read_unverified_is_marked(chained, tmp_path):
    from superb.folder.verify import reading_unverified
    from superb.judges.fill.label import read_folder
    from superb.judges.studies.label_run import runs_from_folder

    copy = edited_copy(chained, tmp_path)
    with reading_unverified(True):  # what `superb judge --fill ... --unverified` sets for the command
        folder = read_folder(copy)
        _, _, info = runs_from_folder(copy, None, "local")
    assert "**Unverified**" in folder.spec.description and "runs/BM25__shuffle.run" in folder.spec.description
    assert [u["file"] for u in folder.provenance["unverified"]] == ["runs/BM25__shuffle.run"]
    assert "**Unverified**" in info["source"] and info["unverified"][0]["file"] == "runs/BM25__shuffle.run"
