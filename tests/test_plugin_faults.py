"""A plug-in's faults are contained (issue 50): SystemExit or a KeyboardInterrupt raised by a plug-in at import, in
its ``transform`` or in ``score()`` ends `superb run` with exit 2 naming the stage and the plug-in's file:line (never a
hang, never exit 0); answers received before a fault are cached; a plain run's free preflight finds a bug in the last
pipeline before any call is paid. Each fault in a child process with a timeout, on the fake server."""

from __future__ import annotations

import textwrap

import pytest

from superb.testing.fakeserver import FakeServer
from plugin_lab import cached_answers, lab, spec, superb
from superb.cli import main

PLUGIN = textwrap.dedent('''
    import asyncio
    import os

    import pyterrier as pt

    from superb.extend import ChatRequest, Reranker

    if os.environ.get("FAULT") == "import":
        raise SystemExit(0)  # FAULT-import


    class Asks(Reranker):
        """One request per document; score = the answer's length."""

        type_name = "asks"

        def __init__(self, llm, **kw):
            super().__init__(llm, **kw)

        async def score(self, cands):
            asks = (self.complete(ChatRequest.chat(None, f"{cands.query}: {t}", tag=self.tag)) for t in cands.texts)
            answers = await asyncio.gather(*asks)
            fault = os.environ.get("FAULT")
            if fault == "score" and cands.qid == "2":
                raise SystemExit(0)  # FAULT-score
            if fault == "interrupt" and cands.qid == "2":
                raise KeyboardInterrupt  # FAULT-interrupt
            if fault == "bug":
                return [float(a.text["length"]) for a in answers]  # FAULT-bug
            if fault == "early" and cands.qid == "1":
                await asyncio.sleep(0.3)
                raise ValueError("no such field")  # FAULT-early
            return [float(len(a.text)) for a in answers]


    def by_length() -> pt.Transformer:
        """Shorter text first."""

        def score(row):
            if os.environ.get("FAULT") == "transform":
                raise SystemExit(0)  # FAULT-transform
            return -float(len(row["text"]))

        return pt.apply.doc_score(score)
''')


def line_of(marker: str) -> int:
    return next(i for i, line in enumerate(PLUGIN.splitlines(), 1) if line.endswith(f"# FAULT-{marker}"))


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    lab(tmp_path, monkeypatch)
    (tmp_path / "faulty.py").write_text(PLUGIN, encoding="utf-8")
    return tmp_path


CASES = {  # the fault -> the stage table that meets it, and the place named
    "score": ('{ type = "faulty.py:Asks", top_k = 6 }', "pipelines[1].rerank[0] (type 'asks', Asks.score) raised "
                                                         "SystemExit"),
    "interrupt": ('{ type = "faulty.py:Asks", top_k = 6 }', "pipelines[1].rerank[0] (type 'asks', Asks.score) raised "
                                                             "KeyboardInterrupt"),
    "import": ('{ type = "faulty.py:Asks", top_k = 6 }', "pipelines[1].rerank[0].type: plug-in file 'faulty.py' "
                                                          "failed to import: SystemExit"),
    "transform": ('{ type = "faulty.py:by_length", top_k = 6 }', "pipelines[1].rerank[0] (type 'by_length'"),
}


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(CASES))
def test_a_plugin_ending_the_process_exits_2_within_seconds_naming_its_stage_and_line(folder, fault):
    table, named = CASES[fault]
    out = folder / "out"
    (out / "runs").mkdir(parents=True)  # an earlier run's folder: it must stay as it was, not pass for this run's
    (out / "table.md").write_text("old\n", encoding="utf-8")
    with FakeServer() as srv:
        path = spec(folder, f"fault_{fault}", [table], base_url=srv.base_url)
        done = superb("run", str(path), "--out", str(out), env={"FAULT": fault}, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert named in done.stderr, done.stderr
    assert f"faulty.py:{line_of(fault)}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert (out / "table.md").read_text(encoding="utf-8") == "old\n"


@pytest.mark.slow
def test_answers_received_before_a_plugins_fault_are_cached(folder, monkeypatch, capsys):
    monkeypatch.setenv("FAULT", "early")
    lab(folder, monkeypatch, queries=5)
    with FakeServer(latency=1.0) as srv:  # query 1 raises at 0.3 s, while other queries' requests are in flight
        path = spec(folder, "early", ['{ type = "faulty.py:Asks", top_k = 6 }'], base_url=srv.base_url,
                    llm="concurrency = 4")
        assert main(["run", str(path), "--out", str(folder / "out"), "--no-preflight"]) == 2
        sent = srv.requests
    assert "raised ValueError: no such field on query '1'" in capsys.readouterr().err
    assert sent >= 4  # the four in flight when it raised ...
    assert cached_answers(folder / "cache.sqlite") == sent  # ... each answer received is kept: none paid twice


@pytest.mark.slow
def test_a_plugin_bug_in_the_last_pipeline_costs_no_call(folder, monkeypatch, capsys):
    monkeypatch.setenv("FAULT", "bug")
    with FakeServer() as srv:
        path = spec(folder, "last", ['{ type = "pointwise", variant = "yesno", top_k = 6 }',
                                     '{ type = "faulty.py:Asks", top_k = 6 }'], base_url=srv.base_url)
        assert main(["run", str(path), "--out", str(folder / "out")]) == 2
        assert srv.requests == 0  # the preflight met it: the pointwise row before it paid for nothing
    err = capsys.readouterr().err
    assert "pipelines[2].rerank[0] (type 'asks', Asks.score) raised TypeError" in err
    assert f"faulty.py:{line_of('bug')}" in err
    assert "the preflight" in err and "before any LLM call was made" in err and not (folder / "out").exists()


@pytest.mark.slow
def test_a_passing_preflight_says_so_and_changes_nothing(folder, capsys):
    with FakeServer() as srv:
        path = spec(folder, "fine", ['{ type = "faulty.py:Asks", top_k = 6 }'], base_url=srv.base_url)
        assert main(["run", str(path), "--out", str(folder / "with")]) == 0
        asked = srv.requests
        err = capsys.readouterr().err
        assert main(["run", str(path), "--out", str(folder / "without"), "--no-preflight"]) == 0
    assert asked == 12  # every request once: the preflight asked nothing
    assert "preflight passed" in err
    for name in ("runs/R.run", "runs/R_0.run", "table.csv"):
        if (folder / "with" / name).exists():
            assert (folder / "with" / name).read_bytes() == (folder / "without" / name).read_bytes()


def test_a_dry_run_skips_a_stage_no_llm_stage_reads(folder, monkeypatch, capsys):
    from superb.transformers.controls import Shuffle

    def costly(self, frame):
        raise AssertionError("a dry run ran a stage whose output no LLM stage reads")

    monkeypatch.setattr(Shuffle, "transform", costly)  # as a bi-encoder encoding every passage would be
    with FakeServer() as srv:
        path = spec(folder, "skips", ['{ type = "pointwise", variant = "yesno", top_k = 6 }', '{ type = "shuffle" }',
                                      '[{ type = "pointwise", variant = "best", top_k = 6 }, { type = "shuffle" }]'],
                    base_url=srv.base_url)
        assert main(["run", str(path), "--dry-run"]) == 0
        assert srv.requests == 0
    out = capsys.readouterr().out
    assert "not run: R >> 1 (no LLM stage reads it" in out, out
    assert "24 calls the real run would make" in out  # both pointwise stages counted, both shuffles skipped
