"""What a plug-in's scores leave out is said, not hidden (issue 50): NaN and infinite scores, documents a stage
drops and queries it gives no score at all are printed on the terminal and noted under table.md (a NaN counted as
non-finite, not as dropped; a query without scores not shown as a tie); a re-run into a folder whose plug-in file has
changed since names the file and both sha256."""

from __future__ import annotations

import hashlib
import textwrap

import pandas as pd
import pytest

from plugin_lab import lab, spec
from superb.cli import main

PLUGIN = textwrap.dedent('''
    import math

    import pandas as pd
    import pyterrier as pt

    from superb.extend import Reranker


    def gaps() -> pt.Transformer:
        """d2 gets NaN, d3 infinity, d4 is left out; the rest their text length."""

        def transform(frame):
            frame = frame[frame["docno"] != "d4"].copy()
            frame["score"] = [math.nan if d == "d2" else math.inf if d == "d3" else float(len(t))
                              for d, t in zip(frame["docno"], frame["text"])]
            return frame

        return pt.apply.generic(transform)


    class Silent(Reranker):
        """Forgets to score: every score is NaN."""

        type_name = "silent"
        calls_llm = False

        def __init__(self, **kw):
            super().__init__(None, **kw)

        async def score(self, cands):
            return [math.nan] * len(cands)
''')


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    lab(tmp_path, monkeypatch)
    (tmp_path / "gappy.py").write_text(PLUGIN, encoding="utf-8")
    return tmp_path


def test_nonfinite_dropped_and_unscored_are_printed_counted_apart_and_noted_under_the_table(folder, caplog):
    path = spec(folder, "gaps", ['{ type = "gappy.py:gaps" }', '{ type = "gappy.py:Silent", top_k = 6 }'])
    assert main(["run", str(path), "--out", str(folder / "out")]) == 0
    err = caplog.text  # the warnings superb's log handler prints on the terminal
    usage = pd.read_csv(folder / "out" / "usage.csv").set_index("system")
    assert usage.loc["R >> 0", "stat:nonfinite_scores"] == 4  # d2 and d3 of two queries: not counted as dropped
    assert usage.loc["R >> 0", "stat:dropped_by_stage"] == 2  # d4 of two queries
    assert usage.loc["R >> 1", "stat:queries_without_scores"] == 2
    assert "R >> 0: 4 non-finite score(s)" in err and "2 document(s) a stage left out" in err, err
    assert "R >> 1: 12 non-finite score(s)" in err and "2 quer(ies) with no score for any document" in err
    table = (folder / "out" / "table.md").read_text(encoding="utf-8")
    assert "**Scores the stages did not give**" in table and "R >> 1: 12 non-finite score(s)" in table
    assert "no ranking, not a tie" in table


def test_a_rerun_after_the_plugin_file_changed_names_the_file_and_both_hashes(folder, capsys):
    path = spec(folder, "edited", ['{ type = "gappy.py:gaps" }'])
    assert main(["run", str(path), "--out", str(folder / "out")]) == 0
    before = hashlib.sha256((folder / "gappy.py").read_bytes()).hexdigest()
    assert "changed since" not in capsys.readouterr().err
    (folder / "gappy.py").write_text(PLUGIN.replace("float(len(t))", "-float(len(t))"), encoding="utf-8")
    after = hashlib.sha256((folder / "gappy.py").read_bytes()).hexdigest()
    assert main(["run", str(path), "--out", str(folder / "out")]) == 0
    err = capsys.readouterr().err
    assert (f"superb: warning: plug-in gappy.py (pipelines[1].rerank[0]) changed since {folder / 'out'} was "
            f"written: sha256 {before} there, {after} now") in err, err
