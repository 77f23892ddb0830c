"""Results folders replaced as a whole (issue 12.3, 12.4): no file of an earlier run survives a reuse, a failed or
killed write leaves the earlier folder byte for byte, systems that would share a file are refused, and superb never
replaces a folder it did not write, nor one holding a file it did not write there (issue 46: refused, not deleted).

Real runs: a local TREC-style data set, a real PISA BM25 and the non-LLM shuffle/random rerankers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from local_data import QRELS, QUERIES, data, dataset_table  # noqa: F401 (data: a fixture)
from superb.errors import SpecError, SuperbError

SYSTEMS_A = {"BM25 >> shuffle": '{ type = "shuffle", seed = 1, top_k = 3 }',
             "BM25 >> random": '{ type = "random", seed = 2 }'}
SYSTEMS_B = {"BM25 >> shuffle": '{ type = "shuffle", seed = 5, top_k = 3 }'}


def write_spec(folder: Path, systems: dict[str, str], name: str = "spec") -> Path:
    reranked = "".join(f'[[pipelines]]\nname = "{n}"\ninput = "BM25"\nrerank = {r}\n' for n, r in systems.items())
    path = folder / f"{name}.toml"
    path.write_text(f"""
name = "folder"
{dataset_table(folder)}
[evaluation]
measures = ["P@5", "nDCG@10"]
[[pipelines]]
name = "BM25"
first_stage = {{ engine = "pisa", model = "bm25", depth = 10 }}
{reranked}""")
    return path


def run(folder: Path, systems: dict[str, str]):
    from superb.run.experiment import run_experiment
    from superb.run.spec import load_spec

    return run_experiment(load_spec(write_spec(folder, systems)), progress=False)


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def siblings(out: Path) -> list[str]:
    """What the writer leaves beside the folder (it should leave nothing)."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def test_a_reused_folder_keeps_no_file_of_the_earlier_run(data):
    from superb.run.results import write_results

    out = data / "results" / "folder"
    write_results(run(data, SYSTEMS_A), out)
    assert (out / "runs" / "BM25__random.run").is_file() and (out / "gain_BM25__random.png").is_file()
    (out / "notes.md").write_text("a file the writer did not write")
    (out / "README.md").write_text("the reader's account of these results")
    with pytest.raises(SuperbError, match=r"holds 1 file\(s\) superb did not write there \(notes\.md\)"):
        write_results(run(data, SYSTEMS_B), out)  # a user's file is never deleted: refused, named, left alone
    assert (out / "notes.md").read_text() == "a file the writer did not write"
    (out / "notes.md").unlink()
    write_results(run(data, SYSTEMS_B), out)
    files = set(snapshot(out))
    # exactly what it wrote, and the folder's README.md, which superb never writes and a re-run must not delete
    assert files == set(json.loads((out / "provenance.json").read_text())["files"]) | {"README.md"}
    assert (out / "README.md").read_text() == "the reader's account of these results"
    assert "runs/BM25__random.run" not in files and "gain_BM25__random.png" not in files and "notes.md" not in files
    assert json.loads((out / "systems.json").read_text()) == {"BM25": "runs/BM25.run",
                                                              "BM25 >> shuffle": "runs/BM25__shuffle.run"}
    assert siblings(out) == []


def test_a_write_failing_midway_leaves_the_earlier_folder_whole(data, monkeypatch):
    import superb.run.results
    from superb.run.results import write_results

    out = data / "folder"
    write_results(run(data, SYSTEMS_A), out)
    before = snapshot(out)
    written = []

    def broken_plots(result, ev, usage, folder):  # the tables and run files are written by now
        written.extend(sorted(p.name for p in folder.iterdir()))
        raise OSError("No space left on device")

    monkeypatch.setattr(superb.run.results, "_plots", broken_plots)
    with pytest.raises(OSError, match="No space left"):
        write_results(run(data, SYSTEMS_B), out)
    assert "table.csv" in written and "runs" in written  # it failed midway, not before starting
    assert snapshot(out) == before
    assert siblings(out) == []  # the unfinished folder is removed


KILLED_WRITER = """
import sys, time
import superb.run.results
from superb.run.experiment import run_experiment
from superb.run.spec import load_spec

def slow_plots(result, ev, usage, folder):
    print("WRITING", folder, flush=True)
    time.sleep(120)

superb.run.results._plots = slow_plots
superb.run.results.write_results(run_experiment(load_spec(sys.argv[1]), progress=False), sys.argv[2])
"""


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two renames"])
def test_a_kill_during_the_write_leaves_the_earlier_folder_whole(data, monkeypatch, exchange):
    import superb.atomic
    from superb.run.results import write_results

    if not exchange:  # the swap where RENAME_EXCHANGE is not available (macOS, Windows, some file systems)
        monkeypatch.setattr(superb.atomic, "_exchange", lambda a, b: False)
    out = data / "folder"
    write_results(run(data, SYSTEMS_A), out)
    before = snapshot(out)
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(write_spec(data, SYSTEMS_B, "b")), str(out)],
                            stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        line = proc.stdout.readline()
        assert line.startswith("WRITING"), line
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert snapshot(out) == before
    assert siblings(out) == [f".folder.writing-{proc.pid}"]  # the half-written folder of the killed process
    assert (out.parent / f".folder.writing-{proc.pid}" / "table.csv").is_file()

    write_results(run(data, SYSTEMS_B), out)  # the next write removes it and replaces the folder
    assert siblings(out) == []
    assert "runs/BM25__random.run" not in snapshot(out)


def test_a_swap_cut_between_its_two_renames_is_undone(data):
    from superb.atomic import remove_stale
    from superb.run.results import write_results

    out = data / "folder"
    write_results(run(data, SYSTEMS_A), out)
    before = snapshot(out)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    aside = out.with_name(f".folder.replaced-{int(dead.stdout)}")
    os.rename(out, aside)  # what a kill right after the first rename leaves: the old folder aside, none in place
    assert remove_stale(out) == [aside]
    assert snapshot(out) == before and siblings(out) == []


def test_systems_sharing_a_file_are_refused_before_anything_is_written(data):
    from superb.run.results import write_results

    result = run(data, SYSTEMS_A)
    pipelines = dict(result.pipelines)
    pipelines["BM25__shuffle"] = dataclasses.replace(pipelines.pop("BM25 >> random"), name="BM25__shuffle")
    with pytest.raises(SpecError, match=r"^systems: 'BM25__shuffle' and 'BM25 >> shuffle' would write the same "
                                        r"file: runs/BM25__shuffle\.run"):
        write_results(dataclasses.replace(result, pipelines=pipelines), data / "folder")
    assert not (data / "folder").exists() and siblings(data / "folder") == []


def test_a_folder_superb_did_not_write_is_never_replaced(data):
    from superb.run.results import write_results

    result = run(data, SYSTEMS_B)
    mine = data / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    with pytest.raises(SuperbError, match=r"is not a superb results folder .*\['thesis\.tex'\]"):
        write_results(result, mine)
    assert snapshot(mine) == {"thesis.tex": hashlib.sha256(b"years of work").hexdigest()}
    (data / "a_file").write_text("x")
    with pytest.raises(SuperbError, match="is a file, not a results folder"):
        write_results(result, data / "a_file")
    empty = data / "empty"
    empty.mkdir()
    assert (write_results(result, empty) / "table.csv").is_file()  # an empty folder is fine


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux's")
def test_on_linux_the_swap_is_one_atomic_exchange(tmp_path):
    from superb.atomic import _exchange

    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "table.csv").write_text("new")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "table.csv").write_text("old")
    assert _exchange(tmp_path / "new", tmp_path / "old")  # no silent fallback to two renames here
    assert (tmp_path / "old" / "table.csv").read_text() == "new"
    assert (tmp_path / "new" / "table.csv").read_text() == "old"


def test_shard_folders_and_merges_are_replaced_as_a_whole_too(data, monkeypatch, capsys):
    """`superb run --shard i/n` (default folder NAME.shard-i-of-n) and `superb merge` write through the same writer."""
    from superb.cli import main

    monkeypatch.chdir(data)
    more = [("3", "office shoes"), ("4", "tea")]  # two queries per shard: a paired test needs two
    (data / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES + more))
    (data / "qrels.txt").write_text("".join(f"{q} 0 {d} {l}\n" for q, d, l in QRELS + [("3", "d4", 2), ("4", "d6", 1)]))
    spec = write_spec(data, SYSTEMS_A)
    for i in (1, 2):
        assert main(["run", str(spec), "--shard", f"{i}/2"]) == 0
    shards = [data / "results" / f"folder.shard-{i}-of-2" for i in (1, 2)]
    (shards[0] / "stale.txt").write_text("from an earlier run")
    assert main(["run", str(spec), "--shard", "1/2"]) == 2  # a file superb did not write: refused, left alone
    assert (shards[0] / "stale.txt").is_file()
    (shards[0] / "stale.txt").unlink()
    assert main(["run", str(spec), "--shard", "1/2"]) == 0
    assert siblings(shards[0]) == []
    merged = data / "results" / "folder"
    merged.mkdir()
    (merged / "notes.txt").write_text("mine")
    assert main(["merge", *map(str, shards)]) == 2  # not a folder superb wrote: refused, left alone
    assert (merged / "notes.txt").read_text() == "mine"
    (merged / "notes.txt").unlink()
    assert main(["merge", *map(str, shards)]) == 0
    assert (merged / "runs" / "BM25__random.run").is_file() and siblings(merged) == []
    capsys.readouterr()
