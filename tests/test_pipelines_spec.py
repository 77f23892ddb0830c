"""First-stage options, the query sanitiser, the RM3 formula and the index cache: no JVM, no engine start."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from hypothesis import given, strategies as st

from superb.errors import SpecError
from superb.pipelines import FIRST_STAGE_KEYS, first_stage, from_spec, sanitise_query
from superb.pipelines import index_cache
from superb.pipelines.rm3 import relevance_model, rm3_expansion
from test_pipelines_corpus import TinyProducts


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


# ---- sanitiser ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw, clean",
    [
        ("usb-c cable", "usb c cable"),
        ('"noise cancelling" headphones', "noise cancelling headphones"),
        ("men's shoes", "men s shoes"),
        ("salt & pepper", "salt pepper"),
        ("c++ book", "c book"),
        ("applypipeline:off batteries", "applypipeline off batteries"),
        ("ssd 1tb/2tb (nvme) [m.2]", "ssd 1tb 2tb nvme m 2"),
        ("battery^2 ~3 !x {y} |z| \\w *", "battery 2 3 x y z w"),
        ("snake_case_sku", "snake case sku"),
        ("  café   crème\tcup\n", "café crème cup"),
        ("ＵＳＢ　cable", "USB cable"),  # full-width letters and space (NFKC)
        ("---", ""),
        ("", ""),
        (None, ""),
        (float("nan"), ""),
    ],
)
def test_sanitise_query(raw, clean):
    assert sanitise_query(raw) == clean


@given(st.text())
def test_sanitised_queries_are_only_words_and_single_spaces(text):
    clean = sanitise_query(text)
    assert clean == clean.strip()
    assert "  " not in clean
    assert all(c.isalnum() or c == " " for c in clean)


# ---- spec validation ------------------------------------------------------------------------------------------------
PATH = "pipelines[2].first_stage"


@pytest.mark.parametrize(
    "table, key, fragment",
    [
        ({"engine": "lucene"}, "engine", "['terrier', 'pisa']"),
        ({"model": "dph"}, "model", "['bm25', 'rm3']"),
        ({"depth": 0}, "depth", "integer >= 1"),
        ({"depth": "100"}, "depth", "integer >= 1"),
        ({"depth": True}, "depth", "integer >= 1"),
        ({"k1": "1.2"}, "k1", "number"),
        ({"b": 1.5}, "b", "between 0.0 and 1.0"),
        ({"model": "rm3", "fb_lambda": -0.1}, "fb_lambda", "between 0.0 and 1.0"),
        ({"model": "rm3", "fb_docs": 0}, "fb_docs", "integer >= 1"),
        ({"fb_terms": 5}, "fb_terms", "model = 'rm3'"),
        ({"fields": ["title", "colour"]}, "fields", "unknown field(s) ['colour']"),
        ({"fields": []}, "fields", "non-empty list"),
        ({"fields": ["title", "title"]}, "fields", "repeat"),
        ({"engine": "pisa", "topk": 10}, "topk", "allowed keys:"),
    ],
)
def test_spec_errors_name_the_key(table, key, fragment):
    with pytest.raises(SpecError) as caught:
        from_spec(table, TinyProducts(), path=PATH)
    assert caught.value.path == f"{PATH}.{key}"
    assert str(caught.value).startswith(f"{PATH}.{key}: ")
    assert fragment in str(caught.value)


def test_unknown_key_lists_every_allowed_key():
    with pytest.raises(SpecError) as caught:
        from_spec({"wmodel": "BM25"}, TinyProducts(), path=PATH)
    for key in FIRST_STAGE_KEYS:
        assert repr(key) in str(caught.value)


def test_keyword_api_validates_parameter_tables():
    with pytest.raises(SpecError, match=r"^first_stage\.k3: unknown option"):
        first_stage(TinyProducts(), bm25={"k3": 8})
    with pytest.raises(SpecError, match=r"^first_stage\.fb_docs: RM3 options"):
        first_stage(TinyProducts(), model="bm25", rm3={"fb_docs": 5})


def test_from_spec_resolves_defaults_and_given_values():
    stage = from_spec({"engine": "PISA", "model": "rm3", "depth": 50, "fields": ["title", "description"],
                       "k1": 0.9, "fb_terms": 20}, TinyProducts())
    o = stage.options
    assert (o.engine, o.model, o.depth, o.fields) == ("pisa", "rm3", 50, ("title", "description"))
    assert (o.k1, o.b, o.fb_docs, o.fb_terms, o.fb_lambda) == (0.9, 0.75, 3, 20, 0.6)
    assert from_spec({}, TinyProducts()).options.fields == ("text",)


@pytest.mark.parametrize("engine", ["terrier", "pisa"])
def test_empty_input_gives_empty_output_without_starting_the_engine(engine, tmp_path):
    ds = TinyProducts()
    stage = first_stage(ds, engine=engine, model="rm3")
    out = stage(pd.DataFrame({"qid": pd.Series([], dtype=str), "query": pd.Series([], dtype=str)}))
    assert list(out.columns) == ["qid", "query", "docno", "score", "rank"]
    assert len(out) == 0
    assert stage.index is None and ds.iterations == 0
    assert not (tmp_path / "home" / "indexes").exists()


def test_results_frame_and_repeated_qids_are_rejected():
    import pyterrier as pt

    stage = first_stage(TinyProducts(), engine="pisa")
    with pytest.raises(pt.validate.InputValidationError, match="docno"):
        stage(pd.DataFrame({"qid": ["q1", "q1"], "query": ["a", "a"], "docno": ["p01", "p02"]}))
    with pytest.raises(ValueError, match="one row per query"):
        stage(pd.DataFrame({"qid": ["q1", "q1"], "query": ["aa batteries", "cable"]}))
    assert stage.index is None


# ---- RM3 formula ------------------------------------------------------------------------------------------------------
def test_relevance_model_weights_documents_by_normalised_score():
    # d1 (score 3): a a b -> P(a|d1)=2/3, P(b|d1)=1/3; d2 (score 1): b c -> 1/2 each. w = 3/4, 1/4.
    model = relevance_model([({"a": 2, "b": 1}, 3.0), ({"b": 1, "c": 1}, 1.0)], fb_terms=10)
    assert model["a"] == pytest.approx(0.75 * 2 / 3)
    assert model["b"] == pytest.approx(0.75 / 3 + 0.25 / 2)
    assert model["c"] == pytest.approx(0.25 / 2)
    assert sum(model.values()) == pytest.approx(1.0)


def test_relevance_model_keeps_top_terms_renormalised_and_excludes_stopwords():
    model = relevance_model([({"a": 5, "the": 9, "b": 3, "c": 1}, 1.0)], fb_terms=2, exclude={"the"})
    assert model == pytest.approx({"a": 5 / 8, "b": 3 / 8})


def test_rm3_interpolates_with_the_original_query():
    expanded = rm3_expansion(["a", "x"], [({"a": 1, "b": 1}, 2.0)], fb_terms=5, fb_lambda=0.6)
    assert expanded == pytest.approx({"a": 0.6 * 0.5 + 0.4 * 0.5, "b": 0.4 * 0.5, "x": 0.6 * 0.5})
    assert rm3_expansion(["a", "a", "b"], [], fb_terms=5, fb_lambda=0.6) == pytest.approx({"a": 2 / 3, "b": 1 / 3})
    assert rm3_expansion([], [], fb_terms=5, fb_lambda=0.6) == {}


def test_non_positive_scores_weight_feedback_documents_uniformly():
    model = relevance_model([({"a": 1}, -2.0), ({"b": 1}, -1.0)], fb_terms=5)
    assert model == pytest.approx({"a": 0.5, "b": 0.5})


# ---- index cache ----------------------------------------------------------------------------------------------------
def _build_into(folder):
    (folder / "postings").write_text("built")
    return 30


def test_index_cache_builds_once_then_reopens():
    ds = TinyProducts()
    first = index_cache.open_or_build(ds, "fake", ("text",), {"v": 1}, _build_into)
    assert first.built_now and (first.path / "postings").read_text() == "built"
    marker = json.loads((first.path / index_cache.MARKER).read_text())
    assert marker["num_docs"] == 30 and marker["dataset"]["provenance"] == ds.provenance()

    def must_not_build(folder):
        raise AssertionError("the complete index should have been reopened")

    again = index_cache.open_or_build(ds, "fake", ("text",), {"v": 1}, must_not_build)
    assert not again.built_now and again.path == first.path and again.info["build_id"] == marker["build_id"]
    other = index_cache.open_or_build(ds, "fake", ("title",), {"v": 1}, _build_into)
    assert other.path != first.path


def test_changed_data_gets_another_index():
    a = index_cache.open_or_build(TinyProducts(), "fake", ("text",), {}, _build_into)
    changed = TinyProducts(products=TinyProducts().products[:10])
    b = index_cache.open_or_build(changed, "fake", ("text",), {}, _build_into)
    assert a.path != b.path


def test_interrupted_build_is_not_taken_as_complete():
    ds = TinyProducts()
    fingerprint, _ = index_cache.index_key(ds, "fake", ("text",), {})
    final = index_cache.index_folder(ds, "fake", fingerprint)
    final.parent.mkdir(parents=True)
    dead_tmp = final.parent / f"{final.name}.tmp-999999999-abcd"  # a build whose process died half-way
    dead_tmp.mkdir()
    (dead_tmp / "postings").write_text("half")
    final.mkdir()  # and a folder without marker (copied by hand, say)
    (final / "postings").write_text("half")
    built = index_cache.open_or_build(ds, "fake", ("text",), {}, _build_into)
    assert built.built_now and (built.path / "postings").read_text() == "built"
    assert not dead_tmp.exists()


def test_failed_build_leaves_nothing_that_looks_built():
    ds = TinyProducts()

    def failing(folder):
        (folder / "postings").write_text("partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        index_cache.open_or_build(ds, "fake", ("text",), {}, failing)
    fingerprint, _ = index_cache.index_key(ds, "fake", ("text",), {})
    final = index_cache.index_folder(ds, "fake", fingerprint)
    assert index_cache.read_marker(final) is None
    assert list(final.parent.iterdir()) == []


def test_field_text_flattens_values():
    assert index_cache.field_text(None) == ""
    assert index_cache.field_text(math.nan) == ""
    assert index_cache.field_text(12.5) == "12.5"
    assert index_cache.field_text(["red", "blue"]) == "red blue"
    assert index_cache.field_text({"colour": "red", "size": 10}) == "colour red size 10"


def test_document_stream_ends_at_the_first_error_and_reraises_it():
    def docs():
        yield {"docno": "a"}
        raise KeyError("price")

    stream = index_cache.DocumentStream(docs())
    assert [d["docno"] for d in stream] == ["a"]  # what an indexer thread would see: a clean end
    with pytest.raises(KeyError, match="price"):
        stream.check()
    clean = index_cache.DocumentStream(iter([{"docno": "a"}, {"docno": "b"}]))
    assert len(list(clean)) == 2 and clean.check() == 2


def test_missing_field_is_a_data_error_naming_document_and_field():
    from superb.errors import DataError

    class NoBrand(TinyProducts):
        def docs_iter(self):
            for doc in super().docs_iter():
                yield {k: v for k, v in doc.items() if k != "brand"}

    with pytest.raises(DataError, match=r"document 'p01' has no field 'brand'"):
        list(index_cache.document_fields(NoBrand(), ("title", "brand")))
