"""Every reranker type's options are checked when the spec is read (issue 35): a wrong option of each registered type
is refused with its key path while no data set is loaded and no model is opened (both would fail this test), and
`superb run --dry-run` exits 2 on it the same way."""

from __future__ import annotations

import pytest

from superb.errors import SpecError
from superb.spec import parse_spec
from superb.transformers.registry import RERANKERS


@pytest.fixture()
def nothing_opens(monkeypatch):
    def refuse(*args, **kw):
        raise AssertionError("a data set or a model was opened while the spec was read")

    monkeypatch.setattr("superb.data.load_dataset", refuse)
    monkeypatch.setattr("superb.llm.connect.open_for_spec", refuse)
    monkeypatch.setattr("superb.llm.server.EmbeddedServer.start", refuse, raising=False)


def spec(stage: dict) -> dict:
    return {"name": "opts", "dataset": {"name": "chorus"},
            "pipelines": [{"name": "BM25", "first_stage": {"engine": "pisa"}},
                          {"name": "X", "input": "BM25", "rerank": [stage]}]}


@pytest.mark.parametrize("type_name", sorted(RERANKERS))
def test_an_unknown_option_of_every_type_is_refused_when_the_spec_is_read(nothing_opens, type_name):
    with pytest.raises(SpecError) as caught:
        parse_spec(spec({"type": type_name, "colour": "red"}))
    assert caught.value.path == "pipelines[1].rerank[0].colour", str(caught.value)
    assert "allowed keys" in str(caught.value)


BAD_VALUES = {
    "pointwise": ({"variant": "maybe"}, "variant"), "listwise": ({"method": "telepathy"}, "method"),
    "sliding": ({"window": 10, "step": 20}, "step"), "setwise": ({"set_size": "three"}, "set_size"),
    "pairwise_prob": ({"select": 5}, "select"), "pairwise": ({"strategy": "vote"}, "strategy"),
    "biencoder": ({"alpha": 2}, "alpha"), "fuse": ({"weights": "equal"}, "weights"),
    "deliberated": ({"question": "why"}, "question"), "rubric": ({"m": 0}, "m"),
    "random": ({"top_k": 0}, "top_k"),
}


@pytest.mark.parametrize("type_name", sorted(BAD_VALUES))
def test_a_wrong_value_is_refused_with_its_key(nothing_opens, type_name):
    options, key = BAD_VALUES[type_name]
    with pytest.raises(SpecError) as caught:
        parse_spec(spec({"type": type_name, **options}))
    assert caught.value.path == f"pipelines[1].rerank[0].{key}", str(caught.value)


def test_superb_run_dry_run_refuses_it_without_opening_anything(nothing_opens, tmp_path, capsys):
    from superb.cli import main

    path = tmp_path / "s.toml"
    path.write_text('name = "opts"\n[dataset]\nname = "chorus"\n[[pipelines]]\nname = "BM25"\n'
                    'first_stage = { engine = "pisa" }\n[[pipelines]]\nname = "X"\ninput = "BM25"\n'
                    'rerank = { type = "setwise", set_size = 30 }\n')
    assert main(["run", str(path), "--dry-run"]) == 2
    assert "pipelines[1].rerank[0]" in capsys.readouterr().err
