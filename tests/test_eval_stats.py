"""Paired tests against scipy and hand enumeration; corrections against statsmodels (with NaNs and ties)."""

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from superb.eval.stats import correct, paired_pvalue, randomization_pvalue


@pytest.fixture(autouse=True)
def no_gc_in_statsmodels(monkeypatch):
    """statsmodels' Holm calls gc.collect() on every call (seconds on a busy heap); it changes no result."""
    monkeypatch.setattr("gc.collect", lambda *args: 0)


def reference(p: np.ndarray, method: str, alpha: float):
    """statsmodels on the non-NaN subset, NaNs put back (never rejected)."""
    corrected, reject = np.full(p.shape, np.nan), np.zeros(p.shape, dtype=bool)
    keep = ~np.isnan(p)
    if keep.any():
        rej, adj, _, _ = multipletests(p[keep], alpha=alpha, method=method)
        corrected[keep], reject[keep] = adj, rej
    return corrected, reject


@pytest.mark.parametrize("method", ["holm", "bonferroni"])
def test_corrections_equal_statsmodels_on_random_vectors_with_nans_and_ties(method):
    rng = np.random.default_rng(7)
    for trial in range(300):
        m = int(rng.integers(1, 25))
        p = rng.beta(0.4, 1.0, size=m)  # many small p-values, so decisions vary
        if trial % 3 == 0:
            p = np.round(p, 2)  # ties
        if trial % 2 == 0:
            p[rng.random(m) < 0.3] = np.nan
        alpha = float(rng.choice([0.01, 0.05, 0.1]))
        got_p, got_r = correct(p, method, alpha)
        ref_p, ref_r = reference(p, method, alpha)
        np.testing.assert_allclose(got_p, ref_p, rtol=1e-12, equal_nan=True)
        np.testing.assert_array_equal(got_r, ref_r)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.just(float("nan")), st.sampled_from([0.01, 0.02, 0.05])),
                min_size=1, max_size=30),
       st.sampled_from(["holm", "bonferroni"]))
def test_corrections_property_against_statsmodels(pvalues, method):
    p = np.array(pvalues, dtype=float)
    got_p, got_r = correct(p, method, 0.05)
    ref_p, ref_r = reference(p, method, 0.05)
    np.testing.assert_allclose(got_p, ref_p, rtol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(got_r, ref_r)
    tested = ~np.isnan(p)
    assert (got_p[tested] >= p[tested] - 1e-15).all() and (got_p[tested] <= 1).all()
    assert not got_r[~tested].any()


def test_nan_excluded_from_family_size():
    # two real tests: Holm multiplies the smaller by 2 (not 3), Bonferroni both by 2
    p = np.array([0.02, np.nan, 0.04])
    holm, reject = correct(p, "holm", 0.05)
    np.testing.assert_allclose(holm, [0.04, np.nan, 0.04])
    assert reject.tolist() == [True, False, True]
    bonf, reject = correct(p, "bonferroni", 0.05)
    np.testing.assert_allclose(bonf, [0.04, np.nan, 0.08])
    assert reject.tolist() == [True, False, False]
    none, reject = correct(p, "none", 0.05)
    np.testing.assert_allclose(none, p)
    assert reject.tolist() == [True, False, True]
    allnan, reject = correct([np.nan, np.nan], "holm")
    assert np.isnan(allnan).all() and not reject.any()


def test_correct_rejects_bad_input():
    with pytest.raises(ValueError, match="holm"):
        correct([0.1], "fdr")
    with pytest.raises(ValueError, match="alpha"):
        correct([0.1], "holm", alpha=1.5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        correct([0.1, 1.2], "holm")


X = np.array([0.61, 0.42, 0.80, 0.33, 0.57, 0.70, 0.25, 0.49])
Y = np.array([0.55, 0.40, 0.62, 0.35, 0.50, 0.52, 0.25, 0.41])


def test_paired_t_equals_scipy_and_the_formula():
    d = X - Y
    t = d.mean() / (d.std(ddof=1) / np.sqrt(d.size))
    by_hand = 2 * sps.t.sf(abs(t), d.size - 1)
    assert paired_pvalue(X, Y, "t") == pytest.approx(by_hand, rel=1e-10)
    assert paired_pvalue(X, Y, "t") == pytest.approx(sps.ttest_rel(X, Y).pvalue, rel=1e-12)
    assert paired_pvalue(X, Y, "t", alternative="greater") == pytest.approx(by_hand / 2, rel=1e-10)


def test_wilcoxon_drops_zero_differences_and_is_exact_when_small():
    # five positive differences of distinct sizes: W- = 0, exact two-sided p = 2 / 2**5
    x, y = np.array([1.1, 2.2, 3.3, 4.4, 5.5, 7.0]), np.array([1.0, 2.0, 3.0, 4.0, 5.0, 7.0])
    assert paired_pvalue(x, y, "wilcoxon") == pytest.approx(2 / 32)
    assert paired_pvalue(X, Y, "wilcoxon") == pytest.approx(sps.wilcoxon(X, Y, zero_method="wilcox").pvalue)


def test_randomization_enumerates_tiny_case_by_hand():
    # d = (0.1, 0.2, 0.4): the 8 sign flips give sums +-0.7, +-0.5, +-0.3, +-0.1; observed 0.7
    x, y = np.array([0.3, 0.5, 0.9]), np.array([0.2, 0.3, 0.5])
    assert paired_pvalue(x, y, "randomization") == pytest.approx(2 / 8)
    assert paired_pvalue(x, y, "randomization", alternative="greater") == pytest.approx(1 / 8)
    assert paired_pvalue(x, y, "randomization", alternative="less") == pytest.approx(8 / 8)


def test_randomization_monte_carlo_close_to_full_enumeration():
    rng = np.random.default_rng(3)
    d = np.round(rng.normal(0.05, 0.2, size=14), 3)  # 2**14 = 16384 patterns > 10000 resamples: Monte Carlo
    patterns = np.array(list(itertools.product((1, -1), repeat=d.size)))
    exact = np.mean(np.abs(patterns @ d) >= abs(d.sum()) - 1e-9)
    got = randomization_pvalue(d, n_resamples=10_000, seed=0)
    assert got == pytest.approx(exact, abs=0.015)
    assert got == randomization_pvalue(d, n_resamples=10_000, seed=0)  # seeded
    assert 1 / 10_001 <= got <= 1


def test_randomization_close_to_t_on_large_normal_sample():
    rng = np.random.default_rng(11)
    y = rng.normal(0.5, 0.2, size=400)
    x = y + rng.normal(0.02, 0.2, size=400)
    t_p = paired_pvalue(x, y, "t")
    r_p = paired_pvalue(x, y, "randomization", n_resamples=20_000, seed=1)
    assert 0.005 < t_p < 0.5  # a non-trivial p-value
    assert r_p == pytest.approx(t_p, abs=0.02)


def test_randomization_p_never_zero():
    x, y = np.linspace(1, 2, 40), np.zeros(40)
    assert paired_pvalue(x, y, "randomization", n_resamples=500) == pytest.approx(1 / 501)


@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomization"])
def test_identical_systems_give_nan_and_are_never_rejected(test):
    p = paired_pvalue(X, X.copy(), test)
    assert np.isnan(p)
    corrected, reject = correct([p, 0.001], "holm", 0.05)
    assert np.isnan(corrected[0]) and not reject[0]
    assert corrected[1] == pytest.approx(0.001) and reject[1]  # family of one real test


def test_paired_input_validation():
    with pytest.raises(ValueError, match="same queries"):
        paired_pvalue([1, 2, 3], [1, 2], "t")
    with pytest.raises(ValueError, match="at least 2"):
        paired_pvalue([1], [2], "t")
    with pytest.raises(ValueError, match="finite"):
        paired_pvalue([1, np.nan], [2, 3], "t")
    with pytest.raises(ValueError, match="randomization"):
        paired_pvalue([1, 2], [2, 3], "sign")
    with pytest.raises(ValueError, match="alternative"):
        paired_pvalue([1, 2], [2, 3], "t", alternative="bigger")


def test_paired_test_is_a_pt_experiment_test_callable_carrying_n_resamples():
    from superb.eval.stats import PairedTest

    rng = np.random.default_rng(3)
    x, y = rng.normal(0.5, 0.1, 40), rng.normal(0.47, 0.1, 40)
    stat, p = PairedTest("randomization", n_resamples=200, seed=1)(x, y)
    assert stat is None and p == randomization_pvalue(x - y, n_resamples=200, seed=1)
    assert round(p * 201) == pytest.approx(p * 201)  # granularity 1/(n_resamples + 1): 200 resamples, not 10,000
    assert PairedTest("t")(x, y)[1] == pytest.approx(sps.ttest_rel(x, y).pvalue)
    assert np.isnan(PairedTest("wilcoxon")(x, x)[1])
    with pytest.raises(ValueError, match="unknown test"):
        PairedTest("z")
    with pytest.raises(ValueError, match="n_resamples"):
        PairedTest("randomization", n_resamples=0)


def test_correct_experiment_adds_nan_aware_holm_columns_to_a_pt_experiment_result():
    from superb.eval.stats import correct_experiment

    result = pd.DataFrame({"name": ["base", "a", "b", "same"], "nDCG@10": [0.5, 0.6, 0.55, 0.5],
                           "nDCG@10 p-value": [None, 0.01, 0.02, np.nan]})
    out = correct_experiment(result, "holm", 0.05)
    assert list(out.columns) == ["name", "nDCG@10", "nDCG@10 p-value", "nDCG@10 reject",
                                 "nDCG@10 p-value corrected"]
    rej, adj, _, _ = multipletests([0.01, 0.02], alpha=0.05, method="holm")  # m = 2: the NaN rows do not count
    np.testing.assert_allclose(out["nDCG@10 p-value corrected"].iloc[1:3], adj)
    assert out["nDCG@10 reject"].tolist() == [False, *rej, False]
    with pytest.raises(ValueError, match="baseline"):
        correct_experiment(result[["name", "nDCG@10"]])


@pytest.mark.parametrize("correction", [None, "holm"])
def test_correct_experiment_works_whether_or_not_pt_experiment_already_corrected(correction):
    """pt.Experiment(correction="holm") already adds "<m> reject" and "<m> p-value corrected": correct_experiment
    replaces them in place (same columns, same order) instead of failing to insert them a second time."""
    import pyterrier as pt
    from ir_measures import P

    from superb.eval.stats import correct_experiment

    qids = [str(q) for q in range(1, 9)]
    qrels = pd.DataFrame([(q, d, 1) for q in qids for d in ("a", "b")], columns=["qid", "docno", "label"])
    topics = pd.DataFrame({"qid": qids, "query": ["q"] * len(qids)})

    def system(order_by_qid):
        rows = [(q, d, float(10 - r)) for q in qids for r, d in enumerate(order_by_qid(q))]
        return pt.Transformer.from_df(pd.DataFrame(rows, columns=["qid", "docno", "score"]))

    base = system(lambda q: ["x", "y", "a", "b"])
    better = system(lambda q: ["a", "x", "b", "y"] if int(q) % 4 else ["x", "a", "y", "b"])
    same = system(lambda q: ["x", "y", "a", "b"])
    kwargs = {"correction": correction} if correction else {}
    result = pt.Experiment([base, better, same], topics, qrels, [P @ 2], names=["base", "better", "same"],
                           baseline=0, **kwargs)
    out = correct_experiment(result, "holm", 0.05)
    columns = ["name", "P@2", "P@2 +", "P@2 -", "P@2 p-value", "P@2 reject", "P@2 p-value corrected"]
    assert list(out.columns) == columns
    p = out["P@2 p-value"].to_numpy(dtype=float)
    assert np.isnan(p[0]) and np.isnan(p[2]) and p[1] < 0.05  # baseline and the identical system: no test
    # m = 1 (only "better" is tested): its corrected p is its own p, and only it is rejected
    assert out["P@2 p-value corrected"].iloc[1] == pytest.approx(p[1])
    assert out["P@2 reject"].tolist() == [False, True, False]
    assert np.isnan(out["P@2 p-value corrected"].iloc[2])
