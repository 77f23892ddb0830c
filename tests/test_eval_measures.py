"""Measure parsing and per-query evaluation against values computed by hand on a tiny TREC-style example."""

from math import log2

import ir_measures
import pandas as pd
import pytest

from superb.errors import DataError, SpecError
from superb.eval.evaluate import VIEW_KINDS, View, per_query
from superb.eval.measures import DEFAULT_MEASURES, judged_measure, parse_measure, parse_measures

# q1 judged: d1=3, d2=0, d3=2, d4=1, d5=2, d6=3 (d6 not retrieved); dX is retrieved but unjudged.
# q2 judged: e1=1, e2=2; the run ranks e9 (unjudged), e2, e1.
# q3 judged: f1=3; the run does not answer q3 at all.
QRELS = pd.DataFrame(
    [("q1", "d1", 3), ("q1", "d2", 0), ("q1", "d3", 2), ("q1", "d4", 1), ("q1", "d5", 2), ("q1", "d6", 3),
     ("q2", "e1", 1), ("q2", "e2", 2), ("q3", "f1", 3)],
    columns=["qid", "docno", "label"])
RUN = pd.DataFrame(
    [("q1", "d1", 6.0), ("q1", "d2", 5.0), ("q1", "d3", 4.0), ("q1", "dX", 3.0), ("q1", "d4", 2.0),
     ("q1", "d5", 1.0), ("q2", "e9", 3.0), ("q2", "e2", 2.0), ("q2", "e1", 1.0)],
    columns=["qid", "docno", "score"])


def values(frame: pd.DataFrame) -> dict:
    return {(r.qid, r.measure): r.value for r in frame.itertuples()}


def test_default_measures_are_table4_with_binary_threshold():
    measures = parse_measures(None, rel=2)
    assert [repr(m) for m in measures] == ["P(rel=2)@5", "P(rel=2)@10", "P(rel=2)@20", "nDCG@5", "nDCG@10",
                                           "nDCG@20"]
    assert len(DEFAULT_MEASURES) == 6
    for m in measures:  # repr round-trips
        assert ir_measures.parse_measure(repr(m)) == m


def test_threshold_only_on_binary_measures_and_explicit_rel_kept():
    measures = parse_measures(["P@5", "P(rel=1)@10", "nDCG@10", "AP", "RR", "Judged@10"], rel=3)
    assert [repr(m) for m in measures] == ["P(rel=3)@5", "P@10", "nDCG@10", "AP(rel=3)", "RR(rel=3)",
                                           "Judged@10"]
    assert [repr(m) for m in parse_measures(["P@5"], rel=None)] == ["P@5"]


@pytest.mark.parametrize("bad", ["Foo@5", "P@x", "", "P@5@3"])
def test_bad_measure_names_raise_spec_error_naming_the_entry(bad):
    with pytest.raises(SpecError) as err:
        parse_measures(["nDCG@10", bad], rel=2)
    assert err.value.path == "evaluation.measures[1]"
    message = str(err.value)
    assert repr(bad) in message and "P(rel=2)@10" in message  # names the entry and lists examples


def test_wrong_case_gets_a_suggestion():
    with pytest.raises(SpecError, match=r"Did you mean 'Judged@10'"):
        parse_measures(["judged@10"], rel=2)
    with pytest.raises(SpecError, match=r"Did you mean 'nDCG@10'"):
        parse_measures(["ndcg@10"], rel=2)


def test_bad_lists_and_thresholds_rejected():
    with pytest.raises(SpecError, match="list"):
        parse_measures("P@5", rel=2)
    with pytest.raises(SpecError, match="twice"):
        parse_measures(["P@5", "P(rel=2)@5"], rel=2)
    with pytest.raises(SpecError, match="rel"):
        parse_measures(["P@5"], rel=0)
    with pytest.raises(SpecError, match="empty"):
        parse_measures([], rel=2)


def evaluate(run, measures, *, view="full", qrels=QRELS, topics=("q1", "q2", "q3")):
    measures = [parse_measure(m) if isinstance(m, str) else m for m in measures]
    v = View(view, qrels, VIEW_KINDS[view])
    return per_query({"S": run}, pd.DataFrame({"qid": list(topics), "query": "x"}), v, measures)


def test_per_query_matches_hand_computed_p5_and_ndcg5():
    measures = [parse_measure("P@5", 2), parse_measure("P@5"), parse_measure("nDCG@5")]
    got = values(evaluate(RUN, measures))
    # q1 top 5: d1(3) d2(0) d3(2) dX(-) d4(1)
    assert got[("q1", "P(rel=2)@5")] == pytest.approx(2 / 5)
    assert got[("q1", "P@5")] == pytest.approx(3 / 5)
    dcg = 3 / log2(2) + 0 / log2(3) + 2 / log2(4) + 0 / log2(5) + 1 / log2(6)
    idcg = 3 / log2(2) + 3 / log2(3) + 2 / log2(4) + 2 / log2(5) + 1 / log2(6)  # labels 3,3,2,2,1
    assert got[("q1", "nDCG@5")] == pytest.approx(dcg / idcg)
    # q2: e9(-) e2(2) e1(1); P@5 divides by 5 even with 3 documents
    assert got[("q2", "P(rel=2)@5")] == pytest.approx(1 / 5)
    assert got[("q2", "nDCG@5")] == pytest.approx((2 / log2(3) + 1 / log2(4)) / (2 / log2(2) + 1 / log2(3)))


def test_unanswered_queries_count_as_zero_and_unlabelled_ones_are_not_evaluated():
    result = evaluate(RUN, ["nDCG@5"])
    assert sorted(result["qid"]) == ["q1", "q2", "q3"] and set(result["view"]) == {"full"}
    assert values(result)[("q3", "nDCG@5")] == 0.0  # labelled, not answered: 0, not dropped
    # q4 has no labels: it cannot be evaluated and is left out; q2 (labelled, not selected) is not evaluated either
    result = evaluate(RUN, ["nDCG@5"], topics=("q1", "q3", "q4"))
    assert sorted(result["qid"]) == ["q1", "q3"]


def test_condensed_view_removes_unjudged_documents():
    measures = [parse_measure("P@5", 2), parse_measure("nDCG@5")]
    result = evaluate(RUN, measures, view="condensed")
    assert set(result["measure"]) == {"P(rel=2)@5", "nDCG@5"}  # measures keep their own names under every view
    got = values(result)
    # q1 condensed top 5: d1(3) d2(0) d3(2) d4(1) d5(2)
    assert got[("q1", "P(rel=2)@5")] == pytest.approx(3 / 5)
    dcg = 3 / log2(2) + 0 / log2(3) + 2 / log2(4) + 1 / log2(5) + 2 / log2(6)
    idcg = 3 / log2(2) + 3 / log2(3) + 2 / log2(4) + 2 / log2(5) + 1 / log2(6)
    assert got[("q1", "nDCG@5")] == pytest.approx(dcg / idcg)
    # q2 condensed: e2(2) e1(1) is the ideal order
    assert got[("q2", "nDCG@5")] == pytest.approx(1.0)
    with pytest.raises(SpecError, match="condensed lists"):
        evaluate(RUN, [judged_measure()], view="condensed")


def test_judged_at_10_by_hand():
    assert repr(judged_measure()) == "Judged@10"
    got = values(evaluate(RUN, [judged_measure()]))
    assert got[("q1", "Judged@10")] == pytest.approx(5 / 6)  # 6 retrieved (fewer than 10), dX unjudged
    assert got[("q2", "Judged@10")] == pytest.approx(2 / 3)
    assert got[("q3", "Judged@10")] == 0.0  # not answered


def test_rank_column_decides_the_order_and_ties_follow_trec_eval_for_every_measure():
    # same scores everywhere: trec_eval breaks ties by docno descending -> dX, d5, d4 ('X' sorts after '5')
    tied = RUN[RUN.qid == "q1"].assign(score=1.0)
    got = values(evaluate(tied, ["P(rel=2)@3", "Judged@3"], topics=("q1",)))
    assert got[("q1", "P(rel=2)@3")] == pytest.approx(1 / 3)
    assert got[("q1", "Judged@3")] == pytest.approx(2 / 3)  # Judged (its own provider) sees the same order
    # an explicit rank puts d2 (label 0) first whatever the scores say
    ranked = RUN[RUN.qid == "q1"].assign(rank=[1, 0, 2, 3, 4, 5])
    assert values(evaluate(ranked, ["P(rel=2)@1"], topics=("q1",)))[("q1", "P(rel=2)@1")] == 0.0


def test_bad_frames_rejected_with_column_names():
    with pytest.raises(DataError, match="docno"):
        evaluate(RUN.drop(columns="docno"), ["P@5"])
    with pytest.raises(DataError, match="twice"):
        evaluate(pd.concat([RUN, RUN.head(1)]), ["P@5"])
    with pytest.raises(DataError, match="label"):
        evaluate(RUN, ["P@5"], qrels=QRELS.assign(label=QRELS.label.astype(float) + 0.5))
    with pytest.raises(DataError, match="more than once"):
        evaluate(RUN, ["P@5"], qrels=pd.concat([QRELS, QRELS.head(1)]))
    with pytest.raises(DataError, match="no results"):
        evaluate(RUN.head(0), ["P@5"])


def test_the_threshold_renaming_is_logged_once_where_it_happens(caplog, monkeypatch):
    """``P@10`` on a data set with threshold 2 becomes ``P(rel=2)@10``: one INFO line per renaming and process says
    so; a measure that keeps its name (nDCG, or rel=1, ir_measures' default) logs nothing."""
    import logging

    import superb.eval.measures as measures

    monkeypatch.setattr(measures, "_TOLD", set())
    with caplog.at_level(logging.INFO, logger="superb.eval.measures"):
        assert repr(measures.parse_measure("P@10", rel=2)) == "P(rel=2)@10"
        measures.parse_measures(["P@10", "nDCG@10", "P(rel=3)@5"], rel=2)  # the second P@10: not told again
        measures.parse_measure("P@5", rel=1)
    lines = [r.getMessage() for r in caplog.records if r.name == "superb.eval.measures"]
    assert lines == ["measure P@10 is computed as P(rel=2)@10: binary measures count labels >= 2 as relevant (the "
                     "data set's threshold, [evaluation] rel); tables and run files name it P(rel=2)@10"]
