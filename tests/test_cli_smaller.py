"""The smaller frictions of issue 23.9, each through the `superb` command: `compare --measure` with an unknown name or
the spec's own alias, [llm] checked when no pipeline uses it, replay's closing line, and the request count of a live
run against its cached re-run (identical requests in flight are answered once and still counted as requests)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from superb.testing.fakeserver import FakeServer, yes
from local_data import write_data
from spec_helpers import bm25, write_spec
from superb.cli import main

RESULTS = Path(__file__).resolve().parents[1] / "results"


def test_compare_with_an_unknown_measure_is_an_error_not_a_traceback(capsys):
    code = main(["compare", str(RESULTS / "chorus_dev"), str(RESULTS / "chorus_dev_calibrated"), "--measure", "foo"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--measure 'foo': it is in neither table; the tables have P(rel=2)@10" in err


def test_compare_takes_the_specs_own_name_of_a_measure(capsys):
    """chorus_dev's spec says P@5; its table writes P(rel=2)@5 (Chorus counts labels >= 2 as relevant)."""
    code = main(["compare", str(RESULTS / "chorus_dev"), str(RESULTS / "chorus_dev_calibrated"), "--measure", "P@5"])
    out = capsys.readouterr().out
    assert code == 0
    assert "P(rel=2)@5 [full]" in out and "nDCG" not in out
    code = main(["compare", str(RESULTS / "chorus_dev"), str(RESULTS / "chorus_dev_calibrated"), "--measure",
                 "P(rel=1)@5"])  # an explicit other level is not an alias
    assert code == 2 and "--measure 'P(rel=1)@5': it is in neither table" in capsys.readouterr().err


@pytest.fixture()
def local(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    docs = [("d1", "trail running shoes"), ("d2", "trail running shoes"), ("d3", "running socks"),
            ("d5", "coffee mug"), ("d6", "tea mug with lid")]  # d1 and d2: the same title, so the same prompt
    return write_data(tmp_path, docs, [("1", "running shoes"), ("2", "mug")],
                      [("1", "d1", 2), ("1", "d3", 1), ("2", "d5", 2), ("2", "d6", 1)])


def _spec(folder: Path, llm: dict, rerank: bool = True) -> str:
    return str(write_spec(folder, name="smaller", llm=llm, pipelines=None if rerank else [bm25()]))


@pytest.mark.parametrize("llm, said", [({"temperature": "hot"}, "llm.temperature: expected"),
                                       ({"colour": "red"}, "llm.colour: unknown key"),
                                       ({"model": "gpt-99"}, "llm.model: 'gpt-99' is not an embedded model")])
def test_llm_is_checked_when_no_pipeline_uses_it(local, capsys, llm, said):
    code = main(["run", _spec(local, llm, rerank=False), "--out", str(local / "out")])
    err = capsys.readouterr().err
    assert code == 2 and said in err, err
    assert not (local / "out").exists()


def test_replays_closing_line_does_not_blame_keys_for_a_row_that_is_not_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    shipped = tmp_path / "responses.jsonl.gz"
    with gzip.open(shipped, "wt") as f:
        f.write("this is not json\n")
    code = main(["responses", "replay", str(shipped)])
    captured = capsys.readouterr()
    assert code != 0
    assert "keys do not match their requests" not in captured.err
    assert "1 rows refused (each named above with why" in captured.err
    assert "refused line 1" in captured.out


def test_a_live_run_and_its_cached_rerun_count_the_same_requests(local, capsys):
    """Two products with one title give one prompt twice: the live run sends it once (the twin waits for that answer,
    "coalesced"), the re-run serves both from the cache. Both count every request (before: 4 live, 5 cached)."""
    with FakeServer(responder=yes) as srv:
        llm = {"model": "fake-model", "base_urls": [srv.base_url], "cache_path": str(local / "cache.sqlite")}
        spec = _spec(local, llm)
        assert main(["run", spec, "--out", str(local / "live")]) == 0
        live = capsys.readouterr().err
        sent = srv.requests
        assert main(["run", spec, "--out", str(local / "rerun")]) == 0
        rerun = capsys.readouterr().err
        assert srv.requests == sent == 4  # 3 products of "running shoes" (2 with one prompt) + 2 of "mug": 4 prompts
    assert "superb: LLM requests: 5 (4 calls made, 0 from the cache, 1 answered by an identical request in flight)" \
           in live
    assert "superb: LLM requests: 5 (0 calls made, 5 from the cache), 0 failed" in rerun
    shutil.rmtree(local / "home", ignore_errors=True)


def test_compare_refuses_folders_evaluated_on_different_queries_naming_the_counts(capsys):
    """chorus_dev holds the 40 dev queries, chorus_table4_full the 95 test queries: none shared."""
    code = main(["compare", str(RESULTS / "chorus_dev"), str(RESULTS / "chorus_table4_full"), "--measure", "nDCG@10"])
    err = capsys.readouterr().err
    assert code == 2
    assert "were evaluated on different queries: 0 shared, 40 only in chorus_dev, 95 only in chorus_table4_full" in err
    assert "--different-queries" in err
    code = main(["compare", str(RESULTS / "chorus_dev"), str(RESULTS / "chorus_table4_full"), "--measure", "nDCG@10",
                 "--different-queries"])
    captured = capsys.readouterr()
    assert code == 0 and "superb: warning:" in captured.err and "nDCG@10" in captured.out
