"""The engines' native output stays off the terminal unless asked for (pipelines/native_output.py, issue 35): PISA's
C++ progress and [info] lines while it builds and first queries an index, measured at the process's descriptors in a
child process; SUPERB_ENGINE_LOGS=1 shows them; a failing block replays what it captured on stderr."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from local_data import write_data

CODE = """
from superb.data import load_dataset
from superb.pipelines import first_stage
ds = load_dataset({"name": "local", "docs": "%(f)s/docs.jsonl", "queries": "%(f)s/queries.tsv",
                   "qrels": "%(f)s/qrels.txt"})
run = first_stage(ds, engine="pisa", model="bm25", depth=5)(ds.topics())
print("rows", len(run))
"""


def run_child(folder, logs: str | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "SUPERB_HOME": str(folder / "home"), "SUPERB_PROGRESS": "0"}
    env.pop("SUPERB_ENGINE_LOGS", None)
    if logs is not None:
        env["SUPERB_ENGINE_LOGS"] = logs
    return subprocess.run([sys.executable, "-c", CODE % {"f": folder}], capture_output=True, text=True, env=env,
                          timeout=300)


def test_a_pisa_build_prints_nothing_unless_asked(tmp_path):
    write_data(tmp_path)
    quiet = run_child(tmp_path, None)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.strip() == "rows 6" and "[info]" not in quiet.stderr and "Create index" not in quiet.stderr
    import shutil

    shutil.rmtree(tmp_path / "home")  # build again, with the engine's output asked for
    loud = run_child(tmp_path, "1")
    assert loud.returncode == 0, loud.stderr
    assert "[info]" in loud.stdout + loud.stderr


def test_a_failing_block_replays_what_it_captured(capfd):
    from superb.pipelines.native_output import quiet

    with pytest.raises(RuntimeError):
        with quiet():
            os.write(1, b"native progress 42%\n")
            raise RuntimeError("build failed")
    err = capfd.readouterr().err
    assert "engine output before the error" in err and "native progress 42%" in err
    with quiet():
        os.write(2, b"hidden\n")
    assert "hidden" not in capfd.readouterr().err
