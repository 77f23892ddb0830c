"""The judges' spec reader (superb.judges.registry: build_judge, read_judge_options) is the rerankers' typed reader
(superb.options.read_options): the same error form (``judge.KEY: ...`` listing the allowed keys), the
renamed product-text budget ``max_tokens`` -> ``text_tokens`` refused with its hint, and schema defaults that are the
constructors' own (so a judge built from a spec gets what the Python constructor would have given it)."""

from __future__ import annotations

import inspect
import tomllib
from pathlib import Path

import pytest

from superb.errors import SpecError
from superb.judges.pointwise import PointwiseJudge
from superb.judges.registry import JUDGE_TYPES as JUDGES, PRESETS, build_judge, read_judge_options, schema
from superb.llm.answers import ExpectedGrade, YesProbability
from superb.options import REQUIRED, constructor_options
from superb.judges.commands.spec import load_judge_spec
from superb.llm import ideal
from superb.llm.prompts import load_template
from superb.llm.text import ProductText
from tiny_dataset import TinyDataset

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
DS = TinyDataset({"d1": "g3 steel bottle", "d2": "g0 bottle brush"}, {"q1": "steel bottle"})


def constructor_defaults(cls) -> dict:
    """Keyword defaults of ``cls`` and its bases' __init__ (a subclass's default wins)."""
    out = {}
    for klass in reversed(cls.__mro__):
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.default is not inspect.Parameter.empty:
                out[p.name] = p.default
    return out


@pytest.mark.parametrize("kind", sorted(JUDGES))
def test_judge_schema_defaults_are_the_constructors(kind):
    defaults = constructor_defaults(JUDGES[kind])
    options = schema(JUDGES[kind])
    own = {k: opt.default for k, opt in options.items() if k not in ("preset", "template")}
    assert {k: tuple(v) if k == "fields" and v is not None else v for k, v in defaults.items() if k in own} == own
    declared = constructor_options(JUDGES[kind])
    assert set(options) - set(declared) == {"preset"}  # the one spec-only key: a shorthand for a table of options
    if declared["template"].default is not REQUIRED:  # a default template is the constructor's own
        assert options["template"].default == declared["template"].default


def test_a_reading_is_named_in_python_as_in_a_spec():
    by_name = PointwiseJudge(None, DS, template="pointwise_yesno_product", reading="p_yes")
    by_object = PointwiseJudge(None, DS, template="pointwise_yesno_product", reading=YesProbability())
    assert repr(by_name) == repr(by_object)
    assert type(PointwiseJudge(None, DS, template="pointwise_best_product").reading) is ExpectedGrade
    with pytest.raises(SpecError, match=r"^reading: "):  # from Python too: the names, not a KeyError
        PointwiseJudge(None, DS, template="pointwise_yesno_product", reading="p_no")
    with pytest.raises(SpecError, match=r"judge\.reading"):
        read_judge_options({"template": "pointwise_best_product", "reading": "p_no"})


def test_what_the_constructors_receive_is_unchanged():
    judge = build_judge({"type": "deliberated", "reading": "grade"}, llm=None, dataset=DS)
    assert (judge.text.fields, judge.text.text_tokens, judge.default_label) == (("title",), 64, 0)
    assert judge.template_ids() == {"ideal": judge.ideal_template.id, "grade": judge.template.id}
    assert (judge.ideal_template.name, judge.template.name, judge.ideal_max_tokens) == \
        (ideal.TEMPLATE, "deliberated_label", ideal.MAX_TOKENS)
    pair = build_judge({"type": "pairwise", "fields": ["title", "description"], "text_tokens": 48, "seed": 3,
                        "both_orders": True}, llm=None, dataset=DS)
    assert (pair.text.fields, pair.text.text_tokens, pair.seed, pair.opponents, pair.max_pairs) == \
        (("title", "description"), 48, 3, 4, 45)
    for preset, table in PRESETS.items():
        scorer = build_judge(preset, llm=None, dataset=DS)
        assert (scorer.name, scorer.template.name, scorer.reading.name, scorer.text.text_tokens) == \
            (preset, table["template"], table["reading"], 64)
    scorer = build_judge({"preset": "yesno", "text_tokens": 32, "fields": ["description"]}, llm=None,
                                 dataset=DS, name="mine")
    assert (scorer.name, scorer.text.fields, scorer.text.text_tokens) == ("mine", ("description",), 32)
    # the budget is the same value under its new name: the same prompt, so the same cache key
    product = ProductText(DS, fields=("description",), text_tokens=32).get("d1")
    prompt = load_template("pointwise_yesno").render(query="steel bottle", product=product)
    assert scorer.request("steel bottle", "d1").messages[-1] == ("user", prompt) and "about g3" in prompt


@pytest.mark.parametrize("kind", sorted(JUDGES))
def test_the_old_budget_name_is_refused_with_the_new_one(kind):
    with pytest.raises(SpecError, match=r"^judge\.max_tokens: renamed to 'text_tokens' \(the product-text budget.*"
                                        r"write text_tokens = 48"):
        build_judge({"type": kind, "template": "pointwise_best", "max_tokens": 48}, llm=None, dataset=DS)


@pytest.mark.parametrize("options", ["superb_product", "deliberated"])
def test_the_old_budget_name_is_refused_by_scoring_judges(options):
    with pytest.raises(SpecError, match=r"^judge\.max_tokens: renamed to 'text_tokens' .*write text_tokens = 64"):
        build_judge({"preset": options, "max_tokens": 64}, llm=None, dataset=DS)
    with pytest.raises(SpecError, match=r"^judges\[x\]\.max_tokens: renamed to 'text_tokens'"):
        from superb.judges.from_cache import score_from_cache

        score_from_cache([{"name": "x", "preset": options, "max_tokens": 64}], DS, None, llm=object())


def test_unknown_keys_are_refused_listing_the_allowed_ones():
    with pytest.raises(SpecError) as err:
        build_judge({"type": "pairwise", "colour": "red"}, llm=None, dataset=DS)
    assert str(err.value) == ("judge.colour: unknown option for type 'pairwise'; allowed keys: ['allow_neither', "
                              "'both_orders', 'default_label', 'fields', 'max_pairs', 'opponents', 'preset', 'seed', "
                              "'template', 'text_tokens', 'type']")
    with pytest.raises(SpecError) as err:
        build_judge({"preset": "deliberated", "window": 3}, llm=None, dataset=DS)
    assert str(err.value) == ("judge.window: unknown option for type 'deliberated'; allowed keys: ['answer_tokens', "
                              "'cue', 'default_label', 'fields', 'ideal_max_tokens', 'ideal_template', 'preset', "
                              "'reading', 'template', 'text_tokens', 'type']")
    with pytest.raises(SpecError, match=r"^judge\[x\]\.ideal_template: unknown option for type 'pointwise'"):
        build_judge({"preset": "superb", "ideal_template": "x"}, llm=None, dataset=DS, path="judge[x]")


@pytest.mark.parametrize("options, message", [
    ({"type": "listwise", "window": "4"}, r"judge\.window: expected an integer >= 1, got '4'"),
    ({"preset": "superb", "text_tokens": 0}, r"judge\.text_tokens: expected an integer >= 1, got 0"),
    ({"preset": "superb", "fields": []}, r"judge\.fields: expected a non-empty list of field names"),
    ({"type": "pairwise", "allow_neither": 1}, r"judge\.allow_neither: expected true or false, got 1"),
    ({"type": "pairwise", "seed": -1}, r"judge\.seed: expected an integer >= 0, got -1"),
    ({"type": "deliberated", "ideal_max_tokens": True}, r"judge\.ideal_max_tokens: expected an integer >= 1"),
    ({"type": "pointwise", "template": "no_such_prompt"}, r"judge\.template: expected the name of a prompt "
                                                          r"template, one of \[.*'pointwise_best_product'"),
    ({"preset": "superb", "reading": "grade", "default_label": 7},
     r"judge\.default_label: expected a grade of the scale 0\.\.3, got 7"),
    ({"preset": "superb", "fields": ["colour"]}, r"judge\.fields: unknown product field\(s\) \['colour'\]"),
])
def test_wrong_values_are_refused_naming_the_key(options, message):
    with pytest.raises(SpecError, match=f"^{message}"):
        build_judge(options, llm=None, dataset=DS)


@pytest.mark.parametrize("options, message", [
    ({"preset": "superb", "text_tokens": "64"}, r"judge\.text_tokens: expected an integer >= 1, got '64'"),
    ({"template": "pointwise_best", "reading": "argmax"}, r"judge\.reading: expected one of \['expected_grade', "
                                                         r"'p_yes', 'grade', 'written'\], got 'argmax'"),
    ({"preset": "nope"}, r"judge\.preset: unknown judge preset 'nope'; choose one of"),
    ({"type": "magic", "template": "judge_listwise"}, r"judge\.type: unknown judge type 'magic'"),
    ({"type": "pointwise"}, r"judge\.template: missing: name the grading prompt template"),
    ({"preset": "yesno", "template": "nowhere"}, r"judge\.template: expected the name of a prompt template"),
    ({"preset": "yesno", "fields": ["colour"]}, r"judge\.fields: unknown product field\(s\) \['colour'\]"),
])
def test_preset_values_are_refused_naming_the_key(options, message):
    with pytest.raises(SpecError, match=f"^{message}"):
        build_judge(options, llm=None, dataset=DS)


def test_the_committed_judge_specs_pass_the_readers():
    spec = load_judge_spec(EXPERIMENTS / "judges_chorus.toml")
    built = [build_judge(o, llm=None, dataset=DS, name=n) for n, o in spec.variants if o.get("type") != "ensemble"]
    assert [j.text.text_tokens for j in built] == [64] * len(built) and len(built) >= 4
    assert all(j.output == "score" for j in built)
    from superb.judges.benchmark import label_judge_options

    bench = load_judge_spec(EXPERIMENTS / "chorus_superlative.toml").benchmark
    judge = build_judge(label_judge_options(bench.judge), llm=None, dataset=DS)
    assert (judge.kind, judge.text.text_tokens, judge.output) == ("deliberated", 48, "label")
    raw = tomllib.loads((EXPERIMENTS / "judges_chorus.toml").read_text())
    assert "max_tokens" not in raw["judge"] and raw["judge"]["text_tokens"] == 64


@pytest.mark.parametrize("judge, where", [
    ({"type": "pointwise", "max_tokens": 64}, "judge.max_tokens"),
    ({"max_tokens": 64, "variants": [{"preset": "superb"}, {"type": "listwise"}]}, "judge.max_tokens"),
    ({"variants": [{"preset": "superb"}, {"type": "deliberated", "max_tokens": 64}]}, r"judge\.variants\[1\]\."
                                                                                        "max_tokens"),
    ({"text_tokens": 64, "variants": [{"preset": "yesno", "max_tokens": 64}]}, r"judge\.variants\[0\]\.max_tokens"),
])
def test_a_judge_spec_is_checked_when_read_naming_the_table_of_the_key(judge, where):
    from superb.judges.commands.spec import parse_judge_spec

    with pytest.raises(SpecError, match=f"^{where}: renamed to 'text_tokens' .*write text_tokens = 64"):
        parse_judge_spec({"name": "x", "dataset": {"name": "chorus"}, "judge": judge})
    with pytest.raises(SpecError, match=r"^judge\.variants\[1\]\.window: expected an integer >= 1, got 'x'"):
        parse_judge_spec({"name": "x", "dataset": {"name": "chorus"},
                          "judge": {"variants": [{"preset": "superb"}, {"type": "listwise", "window": "x"}]}})
    with pytest.raises(SpecError, match=r"^benchmark\.judge\.max_tokens: renamed to 'text_tokens'"):
        parse_judge_spec({"name": "x", "dataset": {"name": "chorus"},
                          "benchmark": {"judge": {"type": "deliberated", "max_tokens": 48}}})


def test_superb_judge_refuses_the_old_key_before_touching_data_or_model(tmp_path, monkeypatch, capsys):
    from superb.cli import main

    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    text = (EXPERIMENTS / "judges_chorus.toml").read_text().replace("text_tokens = 64 ", "max_tokens = 64  ")
    assert "max_tokens = 64" in text
    (tmp_path / "old.toml").write_text(text)
    assert main(["judge", str(tmp_path / "old.toml"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "judge.max_tokens: renamed to 'text_tokens'" in err and "Traceback" not in err
    assert not (tmp_path / "home").exists()  # refused when the spec was read: no data set, cache or model opened


@pytest.mark.parametrize("kind", sorted(JUDGES))
def test_a_wrong_option_of_every_judge_type_is_refused_without_data_or_model(kind):
    """read_judge_options takes neither a data set nor a model: a wrong key or value is refused from the table alone."""
    with pytest.raises(SpecError, match=r"^judge\.colour: unknown option"):
        read_judge_options({"type": kind, "template": "pointwise_best", "colour": "red"})
    with pytest.raises(SpecError, match=r"^judge\.text_tokens: expected an integer >= 1"):
        read_judge_options({"type": kind, "template": "pointwise_best", "text_tokens": 0})


def test_a_judge_spec_reports_the_errors_of_its_parts_together():
    from superb.errors import SpecErrors
    from superb.judges.commands.spec import parse_judge_spec

    raw = {"name": "x y", "dataset": {"name": "chorus"}, "pool": {"sourc": "qrels"}, "calibration": {"folds": 1},
           "judge": {"variants": [{"preset": "umbrela", "text_tokenz": 3}, {"preset": "yesno", "fieldz": ["title"]},
                                  {"type": "ensemble", "members": ["umbrela", "yesno"]}]}}
    with pytest.raises(SpecErrors) as caught:
        parse_judge_spec(raw)
    paths = [e.path for e in caught.value.errors]
    assert paths == ["name", "judge.variants[0].text_tokenz", "judge.variants[1].fieldz", "pool.sourc",
                     "calibration.folds"]  # the ensemble after refused variants is not checked: its members are them
