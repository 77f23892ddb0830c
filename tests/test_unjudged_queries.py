"""Selected queries without relevance labels (issue 23.7): warned and counted; by default not sent to the systems, so
no reranker pays for them; `[queries] unjudged = "run"` runs them (unevaluated); --dry-run says which. And a relevance
level that no label reaches (P(rel=9)@5 on a 1..2 scale) is refused before anything runs, naming measure and labels.

End to end: a local data set (3 queries, the third without qrels), a real PISA first stage, a pointwise reranker on
the fake OpenAI server."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from superb.testing.fakeserver import FakeServer, yes
from local_data import data  # noqa: F401 (a fixture)
from spec_helpers import write_spec
from superb.cli import main
from superb.errors import SpecError

@pytest.fixture()
def folder(data) -> Path:
    """The local data set with a third query, "socks", that has no qrels."""
    with open(data / "queries.tsv", "a") as f:
        f.write("3\tsocks\n")
    return data


def spec(folder: Path, url: str, *, queries: dict | None = None, evaluation: dict | None = None) -> str:
    """``queries``: the [queries] table (written empty by default); ``evaluation``: by default nDCG@10."""
    return str(write_spec(folder, name="unjudged", queries=queries or {}, evaluation=evaluation,
                          llm={"model": "fake-model", "base_urls": [url], "cache": "off"}))


def run_qids(out: Path, system: str) -> set[str]:
    return {line.split()[0] for line in (out / "runs" / f"{system}.run").read_text().splitlines()}


def test_a_query_without_qrels_is_warned_counted_and_not_reranked(folder, capsys, caplog):
    caplog.set_level(logging.WARNING)
    with FakeServer(responder=yes) as srv:
        assert main(["run", spec(folder, srv.base_url), "--out", str(folder / "out")]) == 0
        calls = srv.requests
    assert calls == 5  # top 3 of "running shoes" + the 2 products "mug" finds; none for "socks"
    assert "1 of the 3 selected queries have no relevance labels (qids 3): not run" in caplog.text
    assert run_qids(folder / "out", "BM25") == run_qids(folder / "out", "BM25__pointwise") == {"1", "2"}
    checks = json.loads((folder / "out" / "provenance.json").read_text())["dataset"]["checks"]
    assert checks["selected_queries_without_qrels"] == 1 and checks["unjudged_queries"] == "skip"


def test_unjudged_run_sends_them_to_the_rerankers_and_still_counts_them(folder, capsys, caplog):
    caplog.set_level(logging.WARNING)
    with FakeServer(responder=yes) as srv:
        assert main(["run", spec(folder, srv.base_url, queries={"unjudged": "run"}), "--out",
                     str(folder / "out")]) == 0
        calls = srv.requests
    assert calls == 6  # and "running socks" for "socks"
    assert "run, but not evaluated" in caplog.text
    assert run_qids(folder / "out", "BM25__pointwise") == {"1", "2", "3"}
    checks = json.loads((folder / "out" / "provenance.json").read_text())["dataset"]["checks"]
    assert checks["selected_queries_without_qrels"] == 1 and checks["unjudged_queries"] == "run"


@pytest.mark.parametrize("option, calls, said", [({}, 5, "not run"),
                                                 ({"unjudged": "run"}, 6, "run ([queries] unjudged")])
def test_dry_run_counts_them(folder, capsys, option, calls, said):
    with FakeServer(responder=yes) as srv:
        assert main(["run", spec(folder, srv.base_url, queries=option), "--dry-run"]) == 0
        assert srv.requests == 0
    out = capsys.readouterr().out
    assert f"dry run: {calls} calls the real run would make" in out
    assert f"1 selected queries have no relevance labels: {said}" in out


@pytest.mark.parametrize("evaluation, where, said", [
    ({"measures": ["nDCG@10", "P(rel=9)@5"]}, "evaluation.measures[1]", "'P(rel=9)@5' counts labels >= 9 as relevant"),
    ({"measures": ["P@5"], "rel": 3}, "evaluation.rel", "the relevance threshold 3 is above every label"),
])
def test_a_relevance_level_no_label_reaches_is_refused_before_anything_runs(folder, capsys, evaluation, where, said):
    with FakeServer(responder=yes) as srv:
        for dry in ([], ["--dry-run"]):
            code = main(["run", spec(folder, srv.base_url, evaluation=evaluation), *dry, "--out",
                         str(folder / "out")])
            err = capsys.readouterr().err
            assert code == 2, err
            assert where in err and said in err and "run 1..2" in err
        assert srv.requests == 0
    assert not (folder / "out").exists()


def test_the_option_is_checked():
    from superb.judges.commands.spec import parse_judge_spec
    from superb.run.spec import parse_spec

    base = {"name": "x", "dataset": {"name": "chorus"}, "pipelines": [{"name": "B", "first_stage": {
        "engine": "pisa", "model": "bm25"}}]}
    with pytest.raises(SpecError, match=r"queries\.unjudged: 'maybe' is not one of skip, run"):
        parse_spec({**base, "queries": {"unjudged": "maybe"}})
    assert parse_spec(base).queries.unjudged == "skip"
    with pytest.raises(SpecError, match=r"queries.*unjudged"):  # a judge spec has no such option
        parse_judge_spec({"name": "x", "dataset": {"name": "chorus"}, "queries": {"unjudged": "run"},
                          "judge": {"type": "pointwise"}})


def test_a_query_the_first_stage_finds_nothing_for_is_warned_and_counted(folder, capsys, caplog):
    """Issue 23.10: "zebra" matches no product; before, it scored 0 with only stat:no_results in usage.csv."""
    caplog.set_level(logging.WARNING)
    with open(folder / "queries.tsv", "a") as f:
        f.write("4\tzebra\n")
    with open(folder / "qrels.txt", "a") as f:
        f.write("4 0 d4 1\n")
    with FakeServer(responder=yes) as srv:
        assert main(["run", spec(folder, srv.base_url), "--out", str(folder / "out")]) == 0
    assert "pipeline 'BM25' retrieved nothing for 1 of the 3 queries: 4 ('zebra')" in caplog.text
    usage = (folder / "out" / "usage.csv").read_text().splitlines()
    header, bm25 = usage[0].split(","), next(r for r in usage[1:] if r.startswith("BM25,")).split(",")
    assert float(bm25[header.index("stat:queries_without_results")]) == 1  # NaN for the reranker row
