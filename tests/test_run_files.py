"""Given runs (superb/trec/run_files.py, pipelines/run_stage.py): read strictly, refused before any LLM call.

Real files: the TREC DL run and rank_llm's candidates from the data mirror; bad files are copies made broken the way
they arrive (a truncated JSON, an edited line, a repeated document). End to end through `superb run` on the local
test collection with the fake OpenAI server: every bad run exits 2 naming the file (and line) and the server
received 0 chat requests.
"""

from __future__ import annotations

import shutil

import pytest

from superb.testing.fakeserver import FakeServer, yes
from local_data import data, dataset_table  # noqa: F401 (data: a fixture)
from superb.cli import main
from superb.errors import DataError, SpecError
from superb.trec.run_files import read_run_file, run_options


def test_the_rank_llm_json_and_the_trec_file_are_the_same_ranking(trec_dl_files):
    trec = read_run_file(trec_dl_files / "trec_results_dl19.txt")
    cands = read_run_file(trec_dl_files / "retrieve_results_dl19.json")
    assert (trec.format, cands.format) == ("trec", "rank_llm")
    assert len(trec.qids) == 43 and len(trec.rows) == 4300
    assert trec.rows[["qid", "docno", "rank"]].equals(cands.rows[["qid", "docno", "rank"]])
    assert len(cands.query_texts) == 43 and trec.rank_disagreements == 0


def test_rows_follow_trec_evals_order_whatever_the_file_order(tmp_path):
    run = tmp_path / "r.run"
    run.write_text("1 Q0 a 3 1.0 t\n1 Q0 c 1 2.0 t\n1 Q0 b 2 1.0 t\n2 Q0 x 1 5 t\n")
    rows = read_run_file(run).rows
    assert rows["docno"].tolist() == ["c", "b", "a", "x"]  # score desc, then docno desc on the tie
    assert rows["rank"].tolist() == [1, 2, 3, 1]


def test_ranks_that_contradict_the_scores_are_counted(tmp_path):
    run = tmp_path / "r.run"
    run.write_text("1 Q0 a 1 1.0 t\n1 Q0 b 2 2.0 t\n2 Q0 x 1 5 t\n2 Q0 y 2 4 t\n")
    assert read_run_file(run).rank_disagreements == 1


BAD_TREC = {
    "five columns": ("1 Q0 a 1 1.0\n", ":1: expected 6 columns"),
    "rank not an integer": ("1 Q0 a 1 1.0 t\n1 Q0 b first 0.5 t\n", ":2: rank 'first' is not an integer"),
    "score not a number": ("1 Q0 a 1 high t\n", ":1: score 'high' is not a number"),
    "score nan": ("1 Q0 a 1 nan t\n", "is not a finite number"),
    "repeated document": ("1 Q0 a 1 2 t\n1 Q0 b 2 1 t\n1 Q0 a 3 0 t\n", "document 'a' appears more than once "
                                                                          "for query '1'"),
    "empty": ("\n\n", "the run holds no lines"),
}


@pytest.mark.parametrize("case", list(BAD_TREC))
def test_a_malformed_trec_run_names_its_line(tmp_path, case):
    text, message = BAD_TREC[case]
    run = tmp_path / "bad.run"
    run.write_text(text)
    with pytest.raises(DataError, match="bad.run") as err:
        read_run_file(run)
    assert message in str(err.value)


def test_a_repeated_document_names_both_lines(tmp_path):
    run = tmp_path / "bad.run"
    run.write_text("1 Q0 a 1 2 t\n1 Q0 b 2 1 t\n1 Q0 a 3 0 t\n")
    with pytest.raises(DataError) as err:
        read_run_file(run)
    assert "bad.run:1" in str(err.value) and "bad.run:3" in str(err.value)


def test_a_truncated_candidates_file_is_refused_with_its_line(tmp_path, trec_dl_files):
    text = (trec_dl_files / "retrieve_results_dl19.json").read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(DataError, match=r"cut\.json:\d+: not valid JSON .*truncated"):
        read_run_file(cut)


def test_a_hit_without_a_docid_is_refused_with_its_place(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text('[{"query": "q", "hits": [{"qid": 1, "docid": "a", "score": 1.0}, {"qid": 1, "score": 0.5}]}]')
    with pytest.raises(DataError, match=r"c\.json: entry 0, hit 1: missing \['docid'\]"):
        read_run_file(bad)


def test_a_non_utf8_run_names_the_line(tmp_path):
    bad = tmp_path / "latin.run"
    bad.write_bytes(b"1 Q0 a 1 2 t\n1 Q0 caf\xe9 2 1 t\n")
    with pytest.raises(DataError, match=r"latin\.run:2: not UTF-8"):
        read_run_file(bad)


def test_run_table_keys_and_values_are_checked_with_their_path(tmp_path):
    run = tmp_path / "r.run"
    run.write_text("1 Q0 a 1 1.0 t\n")
    with pytest.raises(SpecError, match=r"p\.engine: unknown key .* allowed keys: \['run', 'depth', 'format'\]"):
        run_options({"run": str(run), "engine": "pisa"}, "p")
    with pytest.raises(SpecError, match=r"p\.depth: expected an integer >= 1, got 0"):
        run_options({"run": str(run), "depth": 0}, "p")
    with pytest.raises(SpecError, match=r"p\.format: expected one of \['trec', 'rank_llm'\]"):
        run_options({"run": str(run), "format": "csv"}, "p")
    with pytest.raises(SpecError, match=r"p\.run: run file not found: .*nope\.run"):
        run_options({"run": str(tmp_path / "nope.run")}, "p")
    assert run_options({"run": "dataset:bm25"}, "p").run == "dataset:bm25"  # resolved when the data set is open


# ---- end to end: refused before any LLM call -------------------------------------------------------------------
def write_spec(folder, url: str, run: str, rerank: bool = True, name: str = "given") -> str:
    path = folder / "spec.toml"
    second = f"""
[[pipelines]]
name = "given >> pointwise"
input = "{name}"
rerank = {{ type = "pointwise", variant = "yesno", top_k = 3, fields = ["title"] }}""" if rerank else ""
    path.write_text(f"""
name = "given_run"
{dataset_table(folder)}
[evaluation]
measures = ["nDCG@10"]
[llm]
model = "fake-model"
base_urls = ["{url}"]
cache = "off"
max_retries = 0
[[pipelines]]
name = "{name}"
first_stage = {{ run = "{run}", depth = 10 }}
{second}
""")
    return str(path)


def run_cli(data, capsys, run_text: str | None, *, rerank: bool = True, run: str | None = None):
    out = data / "out"
    if run_text is not None:
        (data / "given.run").write_text(run_text)
    with FakeServer(responder=yes) as srv:
        spec = write_spec(data, srv.base_url, run or str(data / "given.run"), rerank=rerank)
        code = main(["run", spec, "--out", str(out)])
        requests = srv.requests
    return code, capsys.readouterr().err, requests, out


GOOD = "1 Q0 d1 1 3 x\n1 Q0 d3 2 2 x\n1 Q0 d4 3 1 x\n2 Q0 d6 1 2 x\n2 Q0 d5 2 1 x\n"


def test_a_given_run_is_reranked_and_evaluated(data, capsys):
    code, err, requests, out = run_cli(data, capsys, GOOD)
    assert code == 0, err
    assert requests == 5  # 3 + 2 candidates, pointwise top_k 3
    table = (out / "table.csv").read_text()
    assert "given >> pointwise" in table


BAD_CASES = {
    "malformed line": ("1 Q0 d1 1 3 x\n1 Q0 d3 2\n", "given.run:2: expected 6 columns"),
    "repeated document": ("1 Q0 d1 1 3 x\n1 Q0 d1 2 2 x\n", "document 'd1' appears more than once for query '1'"),
    "documents the data set lacks": ("1 Q0 d1 1 3 x\n1 Q0 zz9 2 2 x\n",
                                     "reranks run", ),
}


@pytest.mark.parametrize("case", list(BAD_CASES))
def test_a_bad_given_run_stops_before_any_llm_call(data, capsys, case):
    text, message = BAD_CASES[case][0], BAD_CASES[case][1]
    code, err, requests, out = run_cli(data, capsys, text)
    assert code == 2, err
    assert requests == 0 and not out.exists()
    assert message in err and "Traceback" not in err


def test_a_missing_run_file_is_a_spec_error_naming_the_key(data, capsys):
    code, err, requests, _ = run_cli(data, capsys, None, run=str(data / "absent.run"))
    assert code == 2 and requests == 0
    assert "pipelines[0].first_stage.run: run file not found" in err and "absent.run" in err


def test_documents_the_data_set_lacks_are_evaluated_when_nothing_reranks_them(data, capsys, caplog):
    code, err, requests, out = run_cli(data, capsys, "1 Q0 d1 1 3 x\n1 Q0 zz9 2 2 x\n2 Q0 d5 1 1 x\n", rerank=False)
    assert code == 0, err
    assert requests == 0
    assert "1 documents of run" in caplog.text and "not in data set 'local'" in caplog.text
    usage = (out / "usage.csv").read_text()
    assert "stat:run_docnos_not_in_dataset" in usage


def test_queries_the_run_lacks_are_warned_named_and_counted(data, capsys, caplog):
    code, err, _, out = run_cli(data, capsys, "1 Q0 d1 1 3 x\n1 Q0 d2 2 2 x\n", rerank=False)
    assert code == 0, err
    assert "retrieved nothing for 1 of the 2 queries: 2 ('mug')" in caplog.text
    assert "stat:queries_without_results" in (out / "usage.csv").read_text()


def test_a_data_set_without_runs_refuses_a_dataset_run(data, capsys):
    code, err, requests, _ = run_cli(data, capsys, None, run="dataset:bm25")
    assert code == 2 and requests == 0
    assert "data set 'local' provides no runs" in err


@pytest.fixture()
def trec_dl_files(tmp_path):
    """The mirrored TREC DL files (SUPERB_DATA_MIRROR/trec-dl), copied so a test may break its copy."""
    import os
    from pathlib import Path

    mirror = os.environ.get("SUPERB_DATA_MIRROR")
    if not mirror or not (Path(mirror) / "trec-dl").is_dir():
        pytest.skip("SUPERB_DATA_MIRROR/trec-dl is not here (set SUPERB_DATA_MIRROR=../shared/data)")
    target = tmp_path / "trec-dl"
    shutil.copytree(Path(mirror) / "trec-dl", target)
    return target


def test_provenance_records_each_given_run_file(data, capsys):
    import hashlib
    import json

    code, err, _, out = run_cli(data, capsys, GOOD, rerank=False)
    assert code == 0, err
    given = json.loads((out / "provenance.json").read_text())["given_runs"]["given"]
    assert given["sha256"] == hashlib.sha256((data / "given.run").read_bytes()).hexdigest()
    assert given["format"] == "trec" and given["rows"] == 5 and given["depth"] == 10
