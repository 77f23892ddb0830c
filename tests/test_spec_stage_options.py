"""Every reranker type's options are checked when the spec is read (issue 35): a wrong option of each registered type
is refused with its key path while no data set is loaded and no model is opened (both would fail this test), and
`superb run --dry-run` exits 2 on it the same way."""

from __future__ import annotations

import sys

import pytest

from superb.errors import SpecError
from superb.run.spec import parse_spec
from superb.transformers.registry import RERANKERS


@pytest.fixture()
def nothing_opens(monkeypatch):
    from superb.data import load_dataset
    from superb.llm.connect import open_for_spec

    def refuse(*args, **kw):
        raise AssertionError("a data set or a model was opened while the spec was read")

    for name in ("superb.data.load_dataset", "superb.run.experiment.load_dataset", "superb.llm.connect.open_for_spec",
                 "superb.run.experiment.open_for_spec"):
        monkeypatch.setattr(name, refuse, raising=False)  # patched where it is used, when bound there
    monkeypatch.setattr("superb.llm.server.EmbeddedServer.start", refuse, raising=False)
    yield
    # a module first imported while patched bound `refuse` by `from ... import`; monkeypatch cannot undo that, and
    # later tests would find the data set "opened while the spec was read" (seen when run without the suite's order)
    real = {"load_dataset": load_dataset, "open_for_spec": open_for_spec}
    for module in list(sys.modules.values()):
        for attr, function in real.items():
            if getattr(module, attr, None) is refuse:
                setattr(module, attr, function)


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


@pytest.mark.parametrize("table", [{"type": "setwise", "top_k": 20, "select": 30},
                                   {"type": "setwise", "strategy": "bubble", "top_k": 5, "select": 6},
                                   {"type": "pairwise_prob", "strategy": "heap", "top_k": 10, "select": 11}])
def test_select_beyond_top_k_is_refused(nothing_opens, table):
    with pytest.raises(SpecError) as caught:
        parse_spec(spec(table))
    assert caught.value.path == "pipelines[1].rerank[0].select"
    assert f"is more than top_k = {table['top_k']}" in str(caught.value)
    parse_spec(spec({**table, "select": table["top_k"]}))  # select = top_k orders them all
    parse_spec(spec({key: value for key, value in table.items() if key != "select"} | {"top_k": 3}))  # the default


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


def docs_example() -> dict:
    """The reranker of docs/spec.md ("A reranker of your own"), executed from the page itself."""
    from pathlib import Path

    page = (Path(__file__).parents[1] / "docs" / "spec.md").read_text(encoding="utf-8")
    section = page[page.index("### A reranker of your own"):]
    code = section[section.index("```python") + len("```python"):section.index("```", section.index("```python") + 9)]
    namespace: dict = {"__name__": "docs_example"}
    exec(compile(code, "docs/spec.md", "exec"), namespace)  # noqa: S102 - our own documentation's example
    namespace["__source__"] = code
    return namespace


def test_the_docs_example_reranker_reads_its_options_from_its_constructor(nothing_opens, monkeypatch, tmp_path):
    from superb.transformers import registry
    from superb.transformers.base import spec_options

    LengthPrior = docs_example()["LengthPrior"]
    assert {k: o.default for k, o in spec_options(LengthPrior).items()} == \
        {"order": "short", "min_chars": 1, "fields": None, "text_tokens": 64, "guard": False, "top_k": 20}
    (tmp_path / "my_methods.py").write_text(docs_example()["__source__"], encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the docs' file, in the user's folder: no edit to superb names it
    with pytest.raises(SpecError, match=r"^pipelines\[1\]\.rerank\[0\]\.order: expected one of \['short', 'long'\]"):
        parse_spec(spec({"type": "my_methods.py:LengthPrior", "order": "longest"}))
    parse_spec(spec({"type": "my_methods.py:LengthPrior", "order": "long", "top_k": 10, "fields": ["title"]}))

    class Titles:
        fields, prompt_fields, text_kind = ("title",), ("title",), "product"

        def doc(self, docno):
            return {"title": "x" * int(docno)}

    stage = registry.build_reranker({"type": "my_methods.py:LengthPrior", "order": "long", "top_k": 10, "fields": ["title"]},
                                    context=registry.BuildContext(dataset=Titles()), path="r")
    assert (stage.order, stage.min_chars, stage.top_k, stage.text.fields, stage.tag) == ("long", 1, 10, ("title",), "r")
    import asyncio

    from superb.transformers.base import Candidates

    texts = (stage.text.get("3"), stage.text.get("12"))
    scores = asyncio.run(stage.score(Candidates("q1", "q", ("3", "12"), texts, (2.0, 1.0))))
    assert scores == [3.0, 12.0]
