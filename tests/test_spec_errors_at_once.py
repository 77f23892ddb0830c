"""Every independent error of a spec in ONE report, in one run (issue 50, item 5): an unknown top-level key no
longer stops the reading, a table's keys and a stage's options are each checked, an entry reading a broken one
still has its own stages checked, and [llm] and a first stage's options are checked with the rest. Before, this
spec took several runs to see its errors, each run saying it listed them all."""

from __future__ import annotations

import re
from pathlib import Path

from superb.cli import main

BAD = """name = "bad"
colour = 1
[dataset]
name = "chorus"
[queries]
split = "tset"
sample = -3
[evaluation]
measures = ["nDCG@10", "XYZ@3"]
test = "ttest"
views = ["full", "sideways"]
[llm]
temprature = 0.1
[[pipelines]]
name = "BM25"
first_stage = { engine = "lucene", model = "bm25" }
[[pipelines]]
name = "BM25"
input = "BM26"
rerank = { type = "pointwize" }
[[pipelines]]
name = "P"
input = "BM25"
rerank = { type = "pointwise", variant = "yesno", top_k = "ten", template = "nope.j2" }
[[pipelines]]
name = "S"
input = "P"
rerank = { type = "setwise", set_size = 0 }
"""

EXPECTED = ["colour", "queries.split", "queries.sample", "evaluation.views", "evaluation.measures[1]",
            "evaluation.test", "llm.temprature", "pipelines[0].first_stage.engine", "pipelines[1].name",
            "pipelines[1].input", "pipelines[1].rerank[0].type", "pipelines[2].rerank[0].template",
            "pipelines[2].rerank[0].top_k", "pipelines[3].rerank[0].set_size"]


def test_fourteen_independent_errors_come_in_one_report(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    spec = tmp_path / "bad.toml"
    spec.write_text(BAD, encoding="utf-8")
    for args in (["run", str(spec), "--dry-run"], ["run", str(spec), "--out", str(tmp_path / "out")]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err
        lines = [line.removeprefix("superb: error: ") for line in err.splitlines()]
        paths = [line.split(":")[0] for line in lines if re.match(r"^[a-z][\w\[\].]*: ", line)]
        assert paths == EXPECTED, err
        assert "(14 errors in this spec; fix them all before running)" in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "home").exists()  # nothing opened, nothing written
