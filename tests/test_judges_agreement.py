"""Agreement statistics: hand-computed values on tiny inputs, and statsmodels as an independent reference."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa, fleiss_kappa as sm_fleiss

from superb.judges import agreement as ag

# a vs b, labels 0..3 (label 3 never used by b): the confusion table and every statistic below is worked out by hand.
A = [0, 0, 1, 1, 2, 3]
B = [0, 1, 1, 1, 2, 2]


def test_confusion_matrix_keeps_fixed_label_order_and_absent_labels():
    cm = ag.confusion_matrix(A, B)
    assert list(cm.index) == [0, 1, 2, 3] and list(cm.columns) == [0, 1, 2, 3]
    expected = [[1, 1, 0, 0], [0, 2, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0]]
    assert cm.to_numpy().tolist() == expected


def test_exact_agreement_by_hand():
    assert ag.exact_agreement(A, B) == pytest.approx(4 / 6)


def test_cohen_kappa_unweighted_by_hand():
    # p_o = 4/6; marginals a = [2,2,1,1]/6, b = [1,3,2,0]/6; p_e = 10/36 -> kappa = (24-10)/(36-10) = 7/13
    assert ag.cohen_kappa(A, B) == pytest.approx(7 / 13)


def test_cohen_kappa_linear_by_hand():
    # observed weighted disagreement 2/(6*3) = 1/9; expected sum(ra*cb*|i-j|) = 36 -> 36/(36*3) = 1/3 -> 1 - 1/3
    assert ag.cohen_kappa(A, B, weights="linear") == pytest.approx(2 / 3)


def test_cohen_kappa_quadratic_by_hand():
    # observed 2/(6*9); expected sum(ra*cb*(i-j)^2) = 58 -> 58/(36*9) -> 1 - 12/58 = 23/29
    assert ag.cohen_kappa(A, B, weights="quadratic") == pytest.approx(23 / 29)


def test_absent_label_changes_kappa_only_through_label_set():
    # with the label set restricted to 0..2 label 3 is out of range -> a clear error, not a silent drop
    with pytest.raises(ValueError, match=r"a\[5\] = 3 is not in the label set"):
        ag.cohen_kappa(A, B, labels=(0, 1, 2))
    # unweighted kappa does not depend on unused labels, linear kappa does (the weights are spread over k-1 steps)
    a3, b3 = [0, 0, 1, 2], [0, 1, 1, 2]
    assert ag.cohen_kappa(a3, b3, labels=(0, 1, 2)) == pytest.approx(ag.cohen_kappa(a3, b3, labels=(0, 1, 2, 3)))


def test_statsmodels_reference_on_fixed_example():
    table = ag.confusion_matrix(A, B).to_numpy()
    assert ag.cohen_kappa(A, B) == pytest.approx(cohens_kappa(table, return_results=False))
    assert ag.cohen_kappa(A, B, weights="linear") == pytest.approx(cohens_kappa(table, wt="linear", return_results=False))
    assert ag.cohen_kappa(A, B, weights="quadratic") == pytest.approx(
        cohens_kappa(table, wt="quadratic", return_results=False))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # statsmodels divides by zero where kappa is undefined
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=2, max_size=40))
def test_cohen_kappa_matches_statsmodels(pairs):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    table = ag.confusion_matrix(a, b).to_numpy().astype(float)
    for ours, wt in (("none", None), ("linear", "linear"), ("quadratic", "quadratic")):
        mine = ag.cohen_kappa(a, b, weights=ours)
        ref = cohens_kappa(table, wt=wt, return_results=False)
        if math.isnan(mine):  # chance disagreement is zero: undefined
            assert not np.isfinite(ref) or np.isnan(ref)
        else:
            assert mine == pytest.approx(ref, abs=1e-9)


def test_kappa_undefined_when_both_constant_and_perfect_when_equal():
    assert math.isnan(ag.cohen_kappa([2, 2, 2], [2, 2, 2]))
    assert ag.cohen_kappa([0, 1, 2, 3], [0, 1, 2, 3]) == pytest.approx(1.0)


def test_per_label_precision_recall_by_hand():
    t = ag.per_label(A, B).set_index("label")
    assert t.loc[0, "precision"] == pytest.approx(1.0) and t.loc[0, "recall"] == pytest.approx(0.5)
    assert t.loc[1, "precision"] == pytest.approx(2 / 3) and t.loc[1, "recall"] == pytest.approx(1.0)
    assert t.loc[2, "precision"] == pytest.approx(0.5) and t.loc[2, "recall"] == pytest.approx(1.0)
    assert math.isnan(t.loc[3, "precision"]) and t.loc[3, "recall"] == pytest.approx(0.0)
    assert t["support"].tolist() == [2, 2, 1, 1] and t["predicted"].tolist() == [1, 3, 2, 0]


FLEISS = [[0, 0, 0], [0, 0, 1], [1, 1, 1], [2, 3, 3]]


def test_fleiss_kappa_by_hand():
    # P_i = 1, 1/3, 1, 1/3 -> P_bar = 2/3; p_j = 5,4,1,2 /12 -> P_e = 46/144 -> kappa = 50/98
    assert ag.fleiss_kappa(FLEISS) == pytest.approx(25 / 49)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=3, max_size=3), min_size=2, max_size=30))
def test_fleiss_kappa_matches_statsmodels(rows):
    counts, _ = aggregate_raters(np.array(rows), n_cat=4)
    mine, ref = ag.fleiss_kappa(rows), sm_fleiss(counts)
    if math.isnan(mine):
        assert not np.isfinite(ref) or np.isnan(ref)
    else:
        assert mine == pytest.approx(ref, abs=1e-9)


def test_human_ceiling_rows_by_hand():
    ratings = pd.DataFrame(FLEISS, columns=["rater_1", "rater_2", "rater_3"])
    ratings["final"] = [0, 0, 1, 3]
    t = ag.human_ceiling(ratings).set_index(["a", "b"])
    # rater_1 = [0,0,1,2], rater_2 = [0,0,1,3], rater_3 = [0,1,1,3]
    assert t.loc[("rater_1", "rater_2"), "agreement"] == pytest.approx(3 / 4)
    assert t.loc[("rater_1", "rater_3"), "agreement"] == pytest.approx(2 / 4)
    # leave-one-out: rater_1 against round-down mean of rater_2, rater_3 = [0, 0.5->0, 1, 3] -> [0,0,1,3]: 3 of 4
    assert t.loc[("rater_1", ag.OTHERS), "agreement"] == pytest.approx(3 / 4)
    # rater_3 against rater_1, rater_2 = [0, 0, 1, 2.5->2]: [0,1,1,3] agrees on 2 of 4
    assert t.loc[("rater_3", ag.OTHERS), "agreement"] == pytest.approx(2 / 4)
    assert t.loc[("all raters", "Fleiss"), "kappa"] == pytest.approx(25 / 49)
    assert t.loc[("all raters", "Fleiss"), "agreement"] == pytest.approx(2 / 4)
    assert len(t) == 3 + 3 + 1 and "final" not in {b for _, b in t.index}  # never against the combined label
    with pytest.raises(ValueError, match="lacks columns"):
        ag.human_ceiling(ratings.drop(columns=["rater_3"]))


def test_others_consensus_rounds_ties_down_and_leaves_the_rater_out():
    ratings = pd.DataFrame({"r1": [3, 3, 0, 2], "r2": [0, 1, 2, 2], "r3": [1, 2, 3, 2]})
    assert ag.others_consensus(ratings, "r1", ["r1", "r2", "r3"]).tolist() == [0, 1, 2, 2]
    assert ag.others_consensus(ratings, "r2", ["r1", "r2", "r3"]).tolist() == [2, 2, 1, 2]
    assert ag.others_consensus(ratings, "r1", ["r1", "r2"]).tolist() == [0, 1, 2, 2]
    with pytest.raises(ValueError, match="no other rater"):
        ag.others_consensus(ratings, "r1", ["r1"])


def test_agreement_summary_binary_threshold():
    s = ag.agreement_summary(A, B, rel_threshold=2)
    # binary a = [0,0,0,0,1,1], b = [0,0,0,0,1,1] -> identical
    assert s["binary_agreement"] == pytest.approx(1.0) and s["binary_kappa"] == pytest.approx(1.0)
    assert s["n"] == 6 and s["kappa"] == pytest.approx(7 / 13)


def test_pairwise_precision_recall_by_hand():
    r = ag.pairwise_precision_recall(["A", "A", "B", "B", "A"], ["A", "B", None, "B", None])
    assert (r["asked"], r["decided"], r["agreed"]) == (5, 3, 2)
    assert r["precision"] == pytest.approx(2 / 3) and r["recall"] == pytest.approx(3 / 5)
    none = ag.pairwise_precision_recall(["A"], [None])
    assert math.isnan(none["precision"]) and none["recall"] == 0.0


def test_bad_inputs_raise_with_names():
    with pytest.raises(ValueError, match="differ in length"):
        ag.cohen_kappa([0, 1], [0])
    with pytest.raises(ValueError, match="empty"):
        ag.exact_agreement([], [])
    with pytest.raises(ValueError, match="weights='cubic'"):
        ag.cohen_kappa(A, B, weights="cubic")
    with pytest.raises(ValueError, match=r"b\[0\] = 'x'"):
        ag.cohen_kappa([0], ["x"])
    with pytest.raises(ValueError, match="drop ties"):
        ag.pairwise_precision_recall(["tie"], ["A"])
