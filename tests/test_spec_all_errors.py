"""A spec's independent errors are reported together, each with its key path (superb.run.spec.Errors).

One reading of a spec with four unrelated mistakes names all four, in the spec's order, and `superb run` prints them
all and exits 2; an entry that reads a broken one is not reported again (its error would only repeat the first).
"""

from __future__ import annotations

import pytest

from superb.errors import SpecError, SpecErrors
from superb.run.spec import parse_spec


def spec(**over) -> dict:
    raw = {
        "name": "many",
        "dataset": {"name": "chorus"},
        "evaluation": {"measures": ["nDCG@10"], "test": "z-test"},
        "pipelines": [
            {"name": "BM25", "first_stage": {"engine": "pisa"}},
            {"name": "A", "input": "BM52", "rerank": {"type": "pointwise"}},
            {"name": "B", "input": "BM25", "rerank": {"type": "pointwise"}, "compare": ["nobody"]},
        ],
    }
    raw.update(over)
    return raw


def test_every_independent_error_is_reported_at_once():
    with pytest.raises(SpecErrors) as caught:
        parse_spec(spec(queries={"split": "devv"}))
    paths = [e.path for e in caught.value.errors]
    assert paths == ["queries.split", "evaluation.test", "pipelines[1].input", "pipelines[2].compare"]
    text = str(caught.value)
    assert text.splitlines()[0].startswith("queries.split: 'devv' is not one of")
    assert "'BM52' names no earlier pipeline" in text and "'nobody' is not another pipeline" in text
    assert "(4 errors in this spec; fix them all before running)" in text
    assert isinstance(caught.value, SpecError) and caught.value.path == "queries.split"


def test_one_error_is_raised_as_itself():
    with pytest.raises(SpecError) as caught:
        parse_spec(spec(evaluation={"measures": ["nDCG@10"]}, pipelines=spec()["pipelines"][:1] + [
            {"name": "A", "input": "BM52", "rerank": {"type": "pointwise"}}]))
    assert not isinstance(caught.value, SpecErrors)
    assert str(caught.value).startswith("pipelines[1].input: 'BM52' names no earlier pipeline")


def test_an_entry_reading_a_broken_one_is_not_reported_again():
    pipelines = [{"name": "BM25", "first_stage": {"engine": "pisa"}},
                 {"name": "A", "input": "BM25", "rerank": {"type": "pointwise"}, "colour": "red"},
                 {"name": "A2", "input": "A", "rerank": {"type": "listwise"}},
                 {"name": "C", "input": "BM25", "rerank": {"type": "pointwise"}, "compare": ["A"]}]
    with pytest.raises(SpecError) as caught:
        parse_spec(spec(evaluation={"measures": ["nDCG@10"]}, pipelines=pipelines))
    assert not isinstance(caught.value, SpecErrors)  # only pipelines[1] itself is wrong
    assert caught.value.path == "pipelines[1].colour"


def test_hypothesis_errors_come_together(tmp_path):
    raw = spec(evaluation={"measures": ["nDCG@10"]}, pipelines=spec()["pipelines"][:1] + [
        {"name": "A", "input": "BM25", "rerank": {"type": "pointwise"}}])
    raw["hypotheses"] = [{"system": "A", "against": "BM25", "measures": ["P@99"]},
                         {"system": "Z", "against": "BM25"}]
    with pytest.raises(SpecErrors) as caught:
        parse_spec(raw)
    assert [e.path for e in caught.value.errors] == ["hypotheses[0].measures", "hypotheses[1].system"]


def test_superb_run_prints_every_error_and_exits_2(tmp_path, capsys):
    from superb.cli import main

    path = tmp_path / "s.toml"
    path.write_text('''name = "many"
[dataset]
name = "chorus"
[evaluation]
test = "z-test"
[[pipelines]]
name = "BM25"
first_stage = { engine = "pisa" }
[[pipelines]]
name = "A"
input = "BM52"
rerank = { type = "pointwise" }
''')
    assert main(["run", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "superb: error: evaluation.test: 'z-test' is not one of" in err
    assert "pipelines[1].input: 'BM52' names no earlier pipeline" in err and "Traceback" not in err


# ---- measures, hypotheses and `superb evaluate`: every independent error in one report (issue 46) ---------------
def test_every_bad_measure_and_evaluation_key_is_reported_at_once():
    raw = spec(evaluation={"measures": ["nDCG@l0", "P@0", "nDCG@10", "nDCG@10", "Bogus@5"], "test": "z-test",
                           "alpha": 2, "interval": "wide"},
               pipelines=spec()["pipelines"][:1])
    with pytest.raises(SpecErrors) as caught:
        parse_spec(raw)
    paths = [e.path for e in caught.value.errors]
    assert paths == ["evaluation.measures[0]", "evaluation.measures[1]", "evaluation.measures[3]",
                     "evaluation.measures[4]", "evaluation.test", "evaluation.alpha", "evaluation.interval"]


def test_every_error_of_a_hypothesis_and_of_several_is_reported_at_once():
    raw = spec(evaluation={"measures": ["nDCG@10"]}, pipelines=[
        {"name": "BM25", "first_stage": {"engine": "pisa"}},
        {"name": "A", "input": "BM25", "rerank": {"type": "pointwise"}}],
        hypotheses=[{"system": "Z", "against": "BM25", "measures": ["P@5"], "views": ["sideways"], "family": " "},
                    {"system": "A", "against": "Y"}])
    with pytest.raises(SpecErrors) as caught:
        parse_spec(raw)
    assert [e.path for e in caught.value.errors] == [
        "hypotheses[0].system", "hypotheses[0].measures", "hypotheses[0].views", "hypotheses[0].family",
        "hypotheses[1].against"]


def test_hypotheses_are_checked_even_when_evaluation_is_wrong():
    raw = spec(evaluation={"measures": ["nDCG@l0"]}, pipelines=spec()["pipelines"][:1],
               hypotheses=[{"system": "Z", "against": "BM25"}])
    with pytest.raises(SpecErrors) as caught:
        parse_spec(raw)
    assert [e.path for e in caught.value.errors] == ["evaluation.measures[0]", "hypotheses[0].system"]


def test_superb_evaluate_reports_every_measure_and_hypothesis_error_at_once(tmp_path, capsys, monkeypatch):
    from superb.cli import main

    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    (tmp_path / "q.txt").write_text("1 0 a 1\n2 0 a 1\n")
    for name in ("a", "b"):
        (tmp_path / f"{name}.run").write_text("1 Q0 a 1 1 t\n2 Q0 a 1 1 t\n")
    (tmp_path / "h.toml").write_text('[[hypotheses]]\nsystem = "c"\nagainst = "a"\n\n'
                                     '[[hypotheses]]\nsystem = "b"\nagainst = "d"\n')
    code = main(["evaluate", "--qrels", str(tmp_path / "q.txt"), str(tmp_path / "a.run"), str(tmp_path / "b.run"),
                 "--measures", "nDCG@l0", "P@0", "nDCG@10", "--hypotheses", str(tmp_path / "h.toml"),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    for place in ("evaluation.measures[0]", "evaluation.measures[1]", "hypotheses[0].system",
                  "hypotheses[1].against"):
        assert place in err
    assert "(4 errors in this spec" in err
