"""TransformerStage: any pt.Transformer as a stage, checked and ordered (issue 44), on inline frames."""

from __future__ import annotations

import pandas as pd
import pyterrier as pt
import pytest

from superb.errors import StageError
from superb.transformers.transformer_stage import TransformerStage


def frame() -> pd.DataFrame:
    rows = [("q1", "red shoe", f"d{i}", 10.0 - i, f"text {'x' * i}") for i in range(5)]
    rows += [("q2", "lamp", f"e{i}", 5.0 - i, f"lamp {'y' * (3 - i)}") for i in range(3)]
    return pt.model.add_ranks(pd.DataFrame(rows, columns=["qid", "query", "docno", "score", "text"]))


def stage(inner, top_k=None) -> TransformerStage:
    return TransformerStage(inner, type_name="mine", tag="pipelines[1].rerank[0]", top_k=top_k)


def test_a_pyterrier_transformer_reorders_the_head_and_keeps_the_tail_and_every_column():
    shortest = pt.apply.doc_score(lambda row: -float(len(row["text"])))
    out = stage(shortest, top_k=3)(frame())
    q1 = out[out.qid == "q1"]
    assert list(q1.docno) == ["d0", "d1", "d2", "d3", "d4"]  # already shortest first: kept
    q2 = out[out.qid == "q2"]
    assert list(q2.docno) == ["e2", "e1", "e0"]  # reversed by length
    assert list(q2.score) == [3.0, 2.0, 1.0] and list(q2["rank"]) == [0, 1, 2]
    assert list(q2.mine_score) == [-6.0, -7.0, -8.0]  # the transformer's own score, kept
    assert list(q2.first_stage_score) == [3.0, 4.0, 5.0]
    assert q1.mine_score.isna().tolist() == [False] * 3 + [True] * 2  # below top_k: not given to it
    assert "text" in out.columns


def test_ties_follow_the_run_order_rule_score_then_docno_descending():
    out = stage(pt.apply.doc_score(lambda row: 1.0))(frame())
    assert list(out[out.qid == "q2"].docno) == ["e2", "e1", "e0"]  # trec_eval's order of equal scores


def test_an_empty_input_gives_the_columns_and_calls_nothing():
    def boom(row):
        raise AssertionError("called")

    out = stage(pt.apply.doc_score(boom))(frame().head(0))
    assert {"mine_score", "first_stage_score", "rank"} <= set(out.columns) and len(out) == 0


def test_a_left_out_document_is_kept_below_and_counted():
    drop = pt.apply.generic(lambda df: df[df.docno != "e0"].assign(score=1.0))
    s = stage(drop)
    out = s(frame())
    assert list(out[out.qid == "q2"].docno) == ["e2", "e1", "e0"] and s.stats["dropped_by_stage"] == 1


@pytest.mark.parametrize("inner, message", [
    (pt.apply.generic(lambda df: df.drop(columns=["score"])), r"returned no \['score'\] column"),
    (pt.apply.generic(lambda df: pd.concat([df, df.head(1)])), r"returned document 'd0' of query 'q1' 2 times"),
    (pt.apply.generic(lambda df: df.assign(docno=df.docno + "x")), r"returned 8 document\(s\) it was not given"),
    (pt.apply.generic(lambda df: 1 / 0), r"raised ZeroDivisionError"),
])
def test_what_a_transformer_returns_is_checked_and_a_failure_names_the_stage(inner, message):
    with pytest.raises(StageError, match=r"^pipelines\[1\]\.rerank\[0\] \(type 'mine', .*" + message):
        stage(inner)(frame())
