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
