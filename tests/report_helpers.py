"""A real results folder for the report tests: `superb run` on the tiny local data set (tests/local_data.py), PISA
BM25 and two non-LLM rerankers chained (BM25 -> shuffle -> random), so no model and no JVM are needed. Made once per
test module (``tiny_folder``); a test that changes the folder works on a copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from local_data import write_data
from spec_helpers import bm25, write_spec


def run_folder(data: Path) -> Path:
    """Runs the spec with `superb run` (which writes report.html at its end); returns the results folder."""
    from superb.cli import main

    spec = write_spec(data, name="tiny_report", file="tiny_report.toml",
                      description="BM25 and two chained non-LLM rerankers on the tiny local data set",
                      evaluation={"measures": ["P@5", "nDCG@10"]}, pipelines=[
                          bm25(), {"name": "BM25 >> shuffle", "input": "BM25",
                                   "rerank": {"type": "shuffle", "seed": 1, "top_k": 3}},
                          {"name": "BM25 >> shuffle >> random", "input": "BM25 >> shuffle",
                           "rerank": {"type": "random", "seed": 2}}])
    out = data / "results" / "tiny_report"
    assert main(["run", str(spec), "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    """The results folder of ``run_folder``, made once per module (on the data set of tests/local_data.py)."""
    root = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SUPERB_HOME", str(root / "home"))
        mp.setenv("SUPERB_PROGRESS", "0")
        yield run_folder(write_data(root))
