"""Spec parsing: the shape, defaults, baselines, and errors that name the key path."""

from pathlib import Path

import pytest

from superb.errors import SpecError
from superb.eval.measures import DEFAULT_MEASURES
from superb.run.spec import load_spec, parse_spec

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def _spec(**over):
    raw = {
        "name": "t",
        "dataset": {"name": "chorus"},
        "pipelines": [
            {"name": "BM25", "first_stage": {"engine": "terrier", "model": "bm25"}},
            {"name": "BM25 >> pointwise", "input": "BM25", "rerank": [{"type": "pointwise", "top_k": 20}]},
        ],
    }
    raw.update(over)
    return raw


def test_defaults_and_baseline_defaults_to_input():
    spec = parse_spec(_spec())
    assert spec.evaluation.measures == DEFAULT_MEASURES
    assert (spec.evaluation.test, spec.evaluation.correction, spec.evaluation.alpha) == ("t", "holm", 0.05)
    assert spec.baselines == {"BM25": None, "BM25 >> pointwise": "BM25"}
    assert spec.uses_llm
    assert spec.queries.split == "all"


def test_rerank_single_table_is_accepted_and_non_llm_types_need_no_llm():
    raw = _spec()
    raw["pipelines"][1]["rerank"] = {"type": "shuffle", "seed": 1}
    spec = parse_spec(raw)
    assert spec.pipelines[1].rerank == ({"type": "shuffle", "seed": 1},)
    assert not spec.uses_llm


def test_llm_ranked_follows_the_input_chain_through_non_llm_stages():
    raw = _spec()
    raw["pipelines"] += [
        {"name": "fuse(BM25, pointwise)", "input": "BM25 >> pointwise", "rerank": {"type": "fuse", "weights": {"first_stage": 0.5, "pointwise": 0.5}}},
        {"name": "BM25 >> bi-encoder", "input": "BM25", "rerank": {"type": "biencoder"}},
        {"name": "BM25 >> shuffle", "input": "BM25 >> bi-encoder", "rerank": {"type": "shuffle"}},
        {"name": "BM25 >> bi-encoder >> setwise", "input": "BM25 >> bi-encoder", "rerank": {"type": "setwise"}},
    ]
    spec = parse_spec(raw)
    assert spec.llm_ranked() == ["BM25 >> pointwise", "fuse(BM25, pointwise)", "BM25 >> bi-encoder >> setwise"]


def test_baseline_false_disables_comparison():
    raw = _spec()
    raw["pipelines"][1]["baseline"] = False
    assert parse_spec(raw).baselines["BM25 >> pointwise"] is None


@pytest.mark.parametrize("mutate, path, words", [
    (lambda r: r.update(colour="red"), "colour", "unknown key; allowed keys: ['dataset',"),
    (lambda r: r.pop("dataset"), "dataset", "missing"),
    (lambda r: r.update(evaluation={"test": "z"}), "evaluation.test", "'z' is not one of t, wilcoxon, randomization"),
    (lambda r: r.update(evaluation={"alpha": 5}), "evaluation.alpha", "between 0 and 1"),
    (lambda r: r.update(evaluation={"measures": "nDCG@10"}), "evaluation.measures", "expected an array"),
    (lambda r: r.update(evaluation={"condensed": True}), "evaluation.condensed", "views = [\"condensed\"]"),
    (lambda r: r.update(evaluation={"views": ["pooled"]}), "evaluation.views", "distinct views from"),
    (lambda r: r["pipelines"][1].update(compare=["BM25"]), "pipelines[1].compare", "already this pipeline's baseline"),
    (lambda r: r.update(evaluation={"mesures": []}), "evaluation.mesures", "unknown key"),
    (lambda r: r.update(queries={"split": "train"}), "queries.split", "not one of all, dev, test"),
    (lambda r: r.update(queries={"sample": 0}), "queries.sample", "positive"),
    (lambda r: r["pipelines"][1].update(input="BM52"), "pipelines[1].input", "names no earlier pipeline"),
    (lambda r: r["pipelines"][1].update(baseline="nope"), "pipelines[1].baseline", "names no pipeline"),
    (lambda r: r["pipelines"][1].update(first_stage={}), "pipelines[1]", "exactly one of"),
    (lambda r: r["pipelines"][1].update(rerank=[{"top_k": 3}]), "pipelines[1].rerank[0].type", "needs a type"),
    (lambda r: r["pipelines"][1].update(name="BM25"), "pipelines[1].name", "unique"),
    (lambda r: r["pipelines"][0].update(baseline="BM25"), "pipelines[0].baseline", "its own baseline"),
    (lambda r: r.update(name="../x"), "name", "plain name"),
    (lambda r: r.update(evaluation={"measures": ["nDCG@10", "P@0"]}), "evaluation.measures[1]", "cut-off 0"),
    (lambda r: r.update(evaluation={"measures": ["nDCG@l0"]}), "evaluation.measures[0]", "cannot parse"),
    (lambda r: r.update(evaluation={"measures": ["alpha_nDCG@5"]}), "evaluation.measures[0]", "cannot be computed"),
    (lambda r: r.update(evaluation={"measures": ["Judged@10"], "views": ["condensed"]}), "evaluation.views",
     "condensed lists"),
    (lambda r: r["pipelines"][1].update(name="bm25"), "pipelines[1].name", "one file where case is ignored"),
])
def test_errors_name_the_key_path(mutate, path, words):
    raw = _spec()
    mutate(raw)
    with pytest.raises(SpecError) as info:
        parse_spec(raw)
    assert info.value.path == path
    assert words in str(info.value)


def test_missing_file_and_bad_toml(tmp_path):
    with pytest.raises(SpecError, match="does not exist"):
        load_spec(tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(SpecError, match="not valid TOML"):
        load_spec(bad)


def test_every_shipped_spec_parses():
    import tomllib

    specs = [p for p in sorted(EXPERIMENTS.glob("*.toml")) if "pipelines" in tomllib.loads(p.read_text())]
    assert specs, "experiments/ holds the example experiment specs (judge specs are checked by the judge tests)"
    for path in specs:
        spec = load_spec(path)
        assert spec.pipelines and spec.name


def _fused(*rerank, input_rerank=None):
    raw = _spec()
    if input_rerank is not None:
        raw["pipelines"][1]["rerank"] = input_rerank
    raw["pipelines"].append({"name": "fused", "input": "BM25 >> pointwise", "rerank": list(rerank)})
    return raw


def test_fuse_weights_may_name_columns_of_earlier_stages_and_of_the_input_chain():
    spec = parse_spec(_fused({"type": "biencoder", "stage": "dense"},
                             {"type": "fuse", "weights": {"first_stage": 1, "pointwise_score": 1, "dense": 1}}))
    assert spec.pipelines[2].rerank[1]["weights"] == {"first_stage": 1, "pointwise_score": 1, "dense": 1}
    parse_spec(_fused({"type": "fuse", "weights": {"umbrela": 1, "random": 1}},
                      input_rerank=[{"type": "random"}, {"type": "pointwise", "stage": "umbrela"}]))


@pytest.mark.parametrize("rerank, key, available", [
    # a later stage's column is not there yet
    ([{"type": "fuse", "weights": {"biencoder": 1}}, {"type": "biencoder"}], "rerank[0].weights.biencoder",
     "['first_stage_score', 'pointwise_score']"),
    # a named stage writes <stage>_score, not <type>_score
    ([{"type": "biencoder", "stage": "dense"}, {"type": "fuse", "weights": {"biencoder": 1}}],
     "rerank[1].weights.biencoder", "['first_stage_score', 'pointwise_score', 'dense_score']"),
    # shuffle, expand, reset and fuse write no score column of their own
    ([{"type": "shuffle"}, {"type": "fuse", "weights": {"pointwise": 1}}, {"type": "fuse", "weights": {"fuse": 1}}],
     "rerank[2].weights.fuse", "['first_stage_score', 'pointwise_score']"),
])
def test_a_fuse_weight_naming_no_earlier_column_is_a_spec_error(rerank, key, available):
    with pytest.raises(SpecError) as err:
        parse_spec(_fused(*rerank))
    assert str(err.value).startswith(f"pipelines[2].{key}: no earlier stage writes") and available in str(err.value)


def test_the_registry_says_which_types_need_an_llm_and_which_write_a_score_column():
    from superb.transformers.registry import RERANKERS, needs_llm, score_column

    assert sorted(t for t in RERANKERS if not needs_llm(t)) == ["biencoder", "bm25", "fuse", "random", "reset",
                                                                "shuffle"]
    assert needs_llm("pointwize")  # unknown: counted as an LLM stage, refused when built
    assert [score_column({"type": t}) for t in ("pointwise", "fuse", "shuffle", "expand")] == [
        "pointwise_score", None, None, None]
    assert score_column({"type": "pointwise", "stage": "umbrela"}) == "umbrela_score"
