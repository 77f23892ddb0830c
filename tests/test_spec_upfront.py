"""Every spec error is reported before the first LLM call, and by --dry-run (issue 12.1 and 12.3).

End to end through `superb run` on a local TREC-style data set, a real PISA first stage and pointwise rerankers on the
fake OpenAI server: each bad spec exits 2 with the key path and the allowed values on stderr, and the fake server
received 0 chat requests. The spec's first reranked pipeline is valid, so a check that came after it ran would show
up as requests.
"""

from __future__ import annotations

import pytest

from superb.testing.fakeserver import FakeServer, yes
from local_data import data, dataset_table  # noqa: F401 (data: a fixture)
from superb.cli import main

GOOD_RERANK = '{ type = "pointwise", variant = "yesno", top_k = 3, fields = ["title"] }'


def write_spec(folder, url: str, *, evaluation: str = 'measures = ["nDCG@10"]', llm: str = "",
               third: str = f"rerank = [ {GOOD_RERANK} ]", second_name: str = "BM25 >> pointwise",
               third_name: str = "BM25 >> pointwise 2", extra: str = "") -> str:
    path = folder / "spec.toml"
    path.write_text(f"""
name = "upfront"
{dataset_table(folder)}
[evaluation]
{evaluation}
[llm]
model = "fake-model"
base_urls = ["{url}"]
cache = "off"
max_retries = 0
{llm}
[[pipelines]]
name = "BM25"
first_stage = {{ engine = "pisa", model = "bm25", depth = 10 }}
[[pipelines]]
name = "{second_name}"
input = "BM25"
rerank = [ {GOOD_RERANK} ]
[[pipelines]]
name = "{third_name}"
input = "BM25"
{third}
{extra}
""")
    return str(path)


def refused(data, capsys, **parts) -> tuple[str, int]:
    """Run the spec for real, then with --dry-run: both exit 2 with the same error; returns it and the number of
    chat requests the fake server received during the real run."""
    out = data / "out"
    with FakeServer(responder=yes) as srv:
        spec = write_spec(data, srv.base_url, **parts)
        code = main(["run", spec, "--out", str(out)])
        requests = srv.requests
    err = capsys.readouterr().err
    assert code == 2, err
    assert main(["run", spec, "--dry-run", "--out", str(out)]) == 2
    assert capsys.readouterr().err == err  # the dry run reports exactly the same error
    assert not out.exists()
    return err, requests


MEASURE_CASES = {
    "typo": (['"nDCG@10"', '"nDCG@l0"'], "evaluation.measures[1]: cannot parse measure 'nDCG@l0'", "e.g. P@5"),
    "cut-off 0 (pytrec_eval aborts)": (['"P@0"'], "evaluation.measures[0]: measure 'P@0' has the cut-off 0",
                                       "an integer >= 1"),
    "rel 0": (['"P(rel=0)@5"'], "evaluation.measures[0]: measure 'P(rel=0)@5' has rel=0", "an integer >= 1"),
    "parameter the measure lacks": (['"Rprec@5"'], "evaluation.measures[0]: measure 'Rprec@5': Rprec takes no "
                                                   "cut-off (@k)", "['judged_only', 'rel']"),
    "no installed provider": (['"alpha_nDCG@10"'], "evaluation.measures[0]: measure 'alpha_nDCG@10' cannot be "
                                                   "computed", "pip install ir-measures[pyndeval]"),
    "bad parameter value": (['"RBP(p=2)"'], "evaluation.measures[0]: measure 'RBP(p=2)' cannot be computed",
                            "invalid param p=2"),
}


@pytest.mark.parametrize("case", list(MEASURE_CASES))
def test_bad_measures_stop_before_any_llm_call(data, capsys, case):
    measures, where, allowed = MEASURE_CASES[case]
    err, requests = refused(data, capsys, evaluation=f"measures = [{', '.join(measures)}]")
    assert requests == 0
    assert f"superb: error: {where}" in err and allowed in err


def test_a_measure_without_a_condensed_form_stops_before_any_llm_call(data, capsys):
    err, requests = refused(data, capsys, evaluation='measures = ["nDCG@10", "ERR@10"]\nviews = ["full", "condensed"]')
    assert requests == 0
    assert "superb: error: evaluation.views: ERR@10 cannot be computed on condensed lists" in err
    assert 'use views = ["full"]' in err


RERANK_CASES = {
    "unknown option": ('rerank = [ { type = "pointwise", top_kk = 3, fields = ["title"] } ]',
                       "pipelines[2].rerank[0].top_kk: unknown option", "allowed keys: ['alpha', 'fields', "),
    "bad value": ('rerank = [ { type = "pointwise", variant = "maybe", fields = ["title"] } ]',
                  "pipelines[2].rerank[0].variant", "expected one of ['best', 'yesno']"),
    "unknown product field": ('rerank = [ { type = "pointwise", fields = ["colour"] } ]',
                              "pipelines[2].rerank[0].fields: unknown product field(s) ['colour']",
                              "the documents of data set 'local' have ['title', 'text']"),
    "second reranker of a chain": (f'rerank = [ {GOOD_RERANK}, {{ type = "listwise", window = 0 }} ]',
                                   "pipelines[2].rerank[1].window: unknown option",
                                   "allowed keys: ['calibrate', 'fields', "),
    "unknown type": ('rerank = [ { type = "pointwize" } ]', "pipelines[2].rerank[0].type: unknown reranker type",
                     "'pointwise'"),
}


@pytest.mark.parametrize("case", list(RERANK_CASES))
def test_a_bad_reranker_in_a_later_pipeline_stops_before_the_earlier_ones_call(data, capsys, case):
    third, where, allowed = RERANK_CASES[case]
    err, requests = refused(data, capsys, third=third)
    assert requests == 0  # pipelines[1] is valid and would have made 5 calls
    assert f"superb: error: {where}" in err and allowed in err


def test_a_fuse_weight_typo_stops_before_any_llm_call(data, capsys):
    """The fuse's weight keys are checked against the columns the earlier stages write when the spec is read (the
    fuse raised a bare ValueError after the pointwise stage before it had made its calls)."""
    third = (f'rerank = [ {GOOD_RERANK}, {{ type = "biencoder", top_k = 3, stage = "dense" }}, '
             '{ type = "fuse", weights = { first_stage = 0.5, pointwsie = 0.5 } } ]')
    err, requests = refused(data, capsys, third=third)
    assert requests == 0
    assert "superb: error: pipelines[2].rerank[2].weights.pointwsie: no earlier stage writes 'pointwsie'" in err
    assert "['first_stage_score', 'pointwise_score', 'dense_score']" in err


REFERENCE_CASES = {
    "baseline": ('rerank = [ ' + GOOD_RERANK + ' ]\nbaseline = "BM-25"', "pipelines[2].baseline: 'BM-25' names no "
                                                                         "pipeline; known:"),
    "compare": ('rerank = [ ' + GOOD_RERANK + ' ]\ncompare = ["BM25 >> listwise"]',
                "pipelines[2].compare: 'BM25 >> listwise' is not another pipeline; known:"),
    "compare with itself": ('rerank = [ ' + GOOD_RERANK + ' ]\ncompare = ["BM25 >> pointwise 2"]',
                            "pipelines[2].compare: 'BM25 >> pointwise 2' is not another pipeline"),
}


@pytest.mark.parametrize("case", list(REFERENCE_CASES))
def test_bad_references_stop_before_any_llm_call(data, capsys, case):
    third, message = REFERENCE_CASES[case]
    err, requests = refused(data, capsys, third=third)
    assert requests == 0
    assert f"superb: error: {message}" in err and "'BM25 >> pointwise'" in err  # the known names are listed


def test_an_unknown_view_stops_before_any_llm_call(data, capsys):
    err, requests = refused(data, capsys, evaluation='measures = ["nDCG@10"]\nviews = ["full", "condensd"]')
    assert requests == 0
    assert "superb: error: evaluation.views: expected a non-empty list of distinct views from ['full', " \
           "'condensed']" in err


@pytest.mark.parametrize("second, third", [("BM25 >> S", "BM25__S"), ("BM25 >> S", "bm25 >> s")])
def test_system_names_that_share_a_file_are_refused_with_both_names(data, capsys, second, third):
    err, requests = refused(data, capsys, second_name=second, third_name=third)
    assert requests == 0
    assert f"superb: error: pipelines[2].name: '{third}' and '{second}' (pipelines[1].name) would write" in err
    assert "runs/BM25__S.run" in err and "Rename one of them" in err


def test_an_llm_table_error_stops_before_any_llm_call(data, capsys):
    err, requests = refused(data, capsys, llm='temperature = "hot"')
    assert requests == 0
    assert "superb: error: llm.temperature:" in err


def test_an_out_folder_superb_may_not_replace_is_refused_before_any_llm_call(data, capsys):
    out = data / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    with FakeServer(responder=yes) as srv:
        spec = write_spec(data, srv.base_url)
        code = main(["run", spec, "--out", str(out)])
        requests = srv.requests
    err = capsys.readouterr().err
    assert code == 2 and requests == 0
    assert f"superb: error: {out} exists and is not a superb results folder" in err and "['notes.txt']" in err
    assert (out / "notes.txt").read_text() == "my notes" and sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_the_valid_spec_runs(data, capsys):
    """The control: the spec the cases above break runs, and its two reranked pipelines call the server."""
    with FakeServer(responder=yes) as srv:
        code = main(["run", write_spec(data, srv.base_url), "--out", str(data / "out")])
        requests = srv.requests
    assert code == 0, capsys.readouterr().err
    assert requests == 10 and (data / "out" / "runs" / "BM25__pointwise_2.run").is_file()


@pytest.mark.parametrize("queries, judged", [('subset = ["1"]', "1 of the 1"), ('subset = ["2", "3"]', "1 of the 2")])
def test_too_few_labelled_queries_for_a_paired_test_stop_before_any_llm_call(data, capsys, queries, judged):
    """One labelled query cannot be tested (the paired test raised a bare ValueError after every call was paid)."""
    with open(data / "queries.tsv", "a") as f:
        f.write("3\tunjudged\n")
    err, requests = refused(data, capsys, extra=f"[queries]\n{queries}")
    assert requests == 0
    assert f"superb: error: {judged} selected queries have relevance labels" in err
    assert "a paired significance test (a baseline or compare) needs at least 2" in err and "[queries]" in err
