"""The smaller frictions of issue 23.9, each through the `superb` command: `compare --measure` with an unknown name or
the spec's own alias, [llm] checked when no pipeline uses it, replay's closing line, and the request count of a live
run against its cached re-run (identical requests in flight are answered once and still counted as requests)."""

from __future__ import annotations

import gzip
import json
import math
import shutil
from pathlib import Path

import pytest

from fakeserver import FakeServer, Reply
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
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"docno": d, "title": t}) + "\n" for d, t in docs))
    (tmp_path / "queries.tsv").write_text("1\trunning shoes\n2\tmug\n")
    (tmp_path / "qrels.txt").write_text("1 0 d1 2\n1 0 d3 1\n2 0 d5 2\n2 0 d6 1\n")
    return tmp_path


def _spec(folder: Path, llm: str, rerank: bool = True) -> str:
    path = folder / "spec.toml"
    pointwise = """[[pipelines]]
name = "BM25 >> pointwise"
input = "BM25"
rerank = [ { type = "pointwise", variant = "yesno", top_k = 3, fields = ["title"] } ]
""" if rerank else ""
    path.write_text(f"""name = "smaller"
[dataset]
name = "local"
docs = "{folder / 'docs.jsonl'}"
queries = "{folder / 'queries.tsv'}"
qrels = "{folder / 'qrels.txt'}"
[evaluation]
measures = ["nDCG@10"]
[llm]
{llm}
[[pipelines]]
name = "BM25"
first_stage = {{ engine = "pisa", model = "bm25", depth = 10 }}
{pointwise}""")
    return str(path)


@pytest.mark.parametrize("llm, said", [('temperature = "hot"', "llm.temperature: expected"),
                                       ('colour = "red"', "llm.colour: unknown key"),
                                       ('model = "gpt-99"', "llm.model: 'gpt-99' is not an embedded model")])
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


def yes(request: dict) -> Reply:
    return Reply("yes", (("yes", math.log(0.8), {"yes": math.log(0.8), "no": math.log(0.2)}),))


def test_a_live_run_and_its_cached_rerun_count_the_same_requests(local, capsys):
    """Two products with one title give one prompt twice: the live run sends it once (the twin waits for that answer,
    "coalesced"), the re-run serves both from the cache. Both count every request (before: 4 live, 5 cached)."""
    with FakeServer(responder=yes) as srv:
        llm = f'model = "fake-model"\nbase_urls = ["{srv.base_url}"]\ncache_path = "{local / "cache.sqlite"}"'
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
