"""Stage score columns (each reranker keeps its raw score as <type>_score, the first stage's as first_stage_score) and
the fuse transformer (weighted min-max fusion per query), by hand and through a real spec:
BM25 >> bi-encoder >> pointwise >> fuse on Chorus with PISA and the fake LLM server."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from superb.testing.fakeserver import FakeServer, Reply
from reranker_helpers import client, prompt_of
from superb.errors import SpecError
from superb.transformers.controls import RandomReranker, Shuffle
from superb.transformers.fuse import Fuse
from superb.transformers.pointwise import PointwiseReranker
from superb.transformers.registry import BuildContext, build_reranker


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


def frame(n: int, qid: str = "q") -> pd.DataFrame:
    return pd.DataFrame({"qid": qid, "query": "water bottle", "docno": [f"{qid}-d{i}" for i in range(n)],
                         "score": [10.0 * (n - i) for i in range(n)], "rank": range(n),
                         "text": [f"product {i}" for i in range(n)]})


def p_yes(req: dict) -> Reply:
    """P(yes) = 0.1 + 0.2 x the product number (product 3 most liked)."""
    i = int(prompt_of(req).split("Product: <<< product ")[1].split(" ")[0])
    y = min(0.1 + 0.2 * i, 0.95)
    top = {"yes": math.log(y), "no": math.log(1 - y)}
    return Reply("yes" if y > 0.5 else "no", (("yes" if y > 0.5 else "no", -0.1, top),))


def test_every_stage_keeps_its_raw_score_and_the_first_stage_score_survives():
    inp = frame(5)
    with FakeServer(responder=p_yes) as srv, client(srv) as llm:
        out = (RandomReranker(seed=1, top_k=5) >> PointwiseReranker(llm, variant="yesno", top_k=3))(inp)
    by_doc = out.set_index("docno")
    # the retrieval score, kept through both stages
    assert by_doc["first_stage_score"].to_dict() == dict(zip(inp.docno, inp.score))
    # the random stage scored all 5; pointwise only its top 3 (NaN below); no copy under another name
    assert by_doc["random_score"].notna().all()
    assert by_doc["pointwise_score"].notna().sum() == 3
    assert "llm_score" not in out.columns
    # score is rank-derived (n - position)
    assert list(out.sort_values("rank")["score"]) == [5.0, 4.0, 3.0, 2.0, 1.0]


def test_shuffle_keeps_the_first_stage_score_too():
    out = Shuffle(seed=2)(frame(4))
    assert out.set_index("docno")["first_stage_score"].to_dict() == {f"q-d{i}": 10.0 * (4 - i) for i in range(4)}


def test_named_stages_keep_two_pointwise_scores_for_fuse():
    """stage = "NAME": two stages of one type keep their raw scores apart (NAME_score), and fuse reads both."""
    class Products:
        fields = ("title",)

        def doc(self, docno):
            return {"title": f"product {docno.split('-d')[1]} "}

    ctx = BuildContext()
    with FakeServer(responder=p_yes) as srv, client(srv) as llm:
        ctx = BuildContext(llm=llm, dataset=Products())
        yes = build_reranker({"type": "pointwise", "variant": "yesno", "top_k": 4}, context=ctx, path="r[0]")
        other = build_reranker({"type": "pointwise", "variant": "yesno", "template": "pointwise_yesno_product",
                                "top_k": 4, "stage": "product"}, context=ctx, path="r[1]")
        fuse = build_reranker({"type": "fuse", "weights": {"pointwise": 1, "product": 1}}, context=ctx, path="r[2]")
        out = (yes >> other >> fuse)(frame(5)).set_index("docno")
    assert other.score_column == "product_score" and yes.score_column == "pointwise_score"
    assert out["pointwise_score"].notna().sum() == 4 and out["product_score"].notna().sum() == 4
    assert not np.allclose(out["pointwise_score"].dropna(), -1)  # both kept, neither overwritten by the other
    assert out["fuse_score"].notna().sum() == 4
    with pytest.raises(SpecError, match=r"r\[2\]\.stage"):
        build_reranker({"type": "fuse", "weights": {"pointwise": 1}, "stage": "x"}, context=ctx, path="r[2]")
    with pytest.raises(SpecError, match=r"r\[0\]\.stage.*<stage>_score"):
        build_reranker({"type": "pointwise", "stage": "two words"}, context=ctx, path="r[0]")


def test_fuse_by_hand():
    inp = pd.DataFrame({"qid": "q", "docno": ["a", "b", "c", "d"], "score": [4.0, 3.0, 2.0, 1.0],
                        "first_stage_score": [30.0, 20.0, 10.0, 0.0], "pointwise_score": [0.2, 0.8, 0.6, 0.2],
                        "biencoder_score": [0.5, 0.5, 0.5, 0.5]})
    out = Fuse({"first_stage": 1.0, "pointwise": 2.0, "biencoder_score": 5.0})(inp)
    # minmax first stage: 1, 2/3, 1/3, 0; pointwise: 0, 1, 2/3, 0; bi-encoder constant -> 0
    # fused: a 1, b 2/3 + 2 = 2.667, c 1/3 + 4/3 = 1.667, d 0 -> b, c, a, d
    assert list(out.sort_values("rank").docno) == ["b", "c", "a", "d"]
    fused = out.set_index("docno")["fuse_score"]
    assert fused["b"] == pytest.approx(8 / 3) and fused["c"] == pytest.approx(5 / 3) and fused["d"] == 0.0
    assert list(out.sort_values("rank")["score"]) == [4.0, 3.0, 2.0, 1.0]


def test_fuse_puts_rows_missing_a_score_below_in_prior_order_and_keeps_ties_in_order():
    inp = pd.DataFrame({"qid": ["q"] * 5 + ["r"] * 2, "docno": list("abcde") + ["x", "y"],
                        "score": [5.0, 4.0, 3.0, 2.0, 1.0, 2.0, 1.0],
                        "pointwise_score": [0.1, 0.9, 0.9, np.nan, np.nan, 0.5, 0.5]})
    f = Fuse({"pointwise": 1.0, "first_stage": 0.0})
    out = f(inp)
    assert list(out[out.qid == "q"].sort_values("rank").docno) == ["b", "c", "a", "d", "e"]
    assert list(out[out.qid == "r"].sort_values("rank").docno) == ["x", "y"]  # tie: prior order
    assert f.stats["unscored"] == 2 and f.stats["queries"] == 2
    assert out.set_index("docno")["fuse_score"][["d", "e"]].isna().all()


def test_fuse_errors_name_what_is_missing():
    inp = frame(3).assign(pointwise_score=[0.1, 0.2, 0.3])
    missing = r"no column for weight\(s\) \['biencoder'\].*\['first_stage_score', 'pointwise_score'\]"
    with pytest.raises(ValueError, match=missing):
        Fuse({"biencoder": 1.0, "pointwise": 1.0})(inp)
    ctx = BuildContext()
    with pytest.raises(SpecError, match=r"r\.weights: missing"):
        build_reranker({"type": "fuse"}, context=ctx, path="r")
    with pytest.raises(SpecError, match=r"r\.weights\.pointwise: expected a number >= 0"):
        build_reranker({"type": "fuse", "weights": {"pointwise": -1}}, context=ctx, path="r")
    with pytest.raises(SpecError, match=r"r\.weights: all weights are 0"):
        build_reranker({"type": "fuse", "weights": {"pointwise": 0}}, context=ctx, path="r")
    with pytest.raises(SpecError, match=r"r\.alpha.*allowed keys"):
        build_reranker({"type": "fuse", "weights": {"pointwise": 1}, "alpha": 0.5}, context=ctx, path="r")
    empty = Fuse({"pointwise": 1.0})(frame(0))
    assert len(empty) == 0 and "fuse_score" in empty.columns


@pytest.mark.slow
def test_spec_bm25_biencoder_pointwise_fuse(tmp_path, chorus_mirror):
    pytest.importorskip("onnxruntime")
    from superb.run.experiment import run_experiment
    from superb.run.spec import parse_spec
    from superb.transformers.biencoder import MiniLMEncoder  # noqa: F401  (skips below if its files are missing)

    def yes_by_length(req):
        product = prompt_of(req).split("Product: <<< ")[1].split(" >>>")[0]
        y = 0.2 + 0.6 * (len(product) % 7) / 6
        top = {"yes": math.log(y), "no": math.log(1 - y)}
        return Reply("yes", (("yes", top["yes"], top),))

    with FakeServer(responder=yes_by_length) as srv:
        raw = {
            "name": "fuse_spec", "dataset": {"name": "chorus"}, "queries": {"subset": ["aa battery", "laptop"]},
            "evaluation": {"measures": ["nDCG@10"]},
            "llm": {"model": "fake-model", "base_urls": [srv.base_url], "cache": "off"},
            "pipelines": [
                {"name": "BM25", "first_stage": {"engine": "pisa", "model": "bm25", "depth": 20}},
                {"name": "BM25 >> bi >> pointwise >> fuse", "input": "BM25", "rerank": [
                    {"type": "biencoder", "top_k": 20},
                    {"type": "pointwise", "variant": "yesno", "top_k": 10},
                    {"type": "fuse", "weights": {"first_stage": 0.2, "biencoder": 0.3, "pointwise": 0.5}}]},
            ]}
        result = run_experiment(parse_spec(raw), progress=False)
        assert srv.requests == 2 * 10  # pointwise on the bi-encoder's top 10 of each query
    run = result.pipelines["BM25 >> bi >> pointwise >> fuse"].run
    for qid, g in run.groupby("qid"):
        g = g.sort_values("rank")
        head = g.iloc[:10]
        assert head[["first_stage_score", "biencoder_score", "pointwise_score"]].notna().all().all()
        assert g.iloc[10:]["pointwise_score"].isna().all() and g.iloc[10:]["fuse_score"].isna().all()

        def mm(col):
            v = head[col].to_numpy()
            return (v - v.min()) / (v.max() - v.min()) if v.max() > v.min() else np.zeros_like(v)

        expected = 0.2 * mm("first_stage_score") + 0.3 * mm("biencoder_score") + 0.5 * mm("pointwise_score")
        np.testing.assert_allclose(head["fuse_score"].to_numpy(), expected)
        assert list(head["fuse_score"]) == sorted(head["fuse_score"], reverse=True)
    stats = result.pipelines["BM25 >> bi >> pointwise >> fuse"].stats
    assert stats["unscored"] == 2 * 10 and stats["calls"] == 20
