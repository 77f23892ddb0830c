"""Cut points chosen on dev scores (exhaustive weighted-kappa search), fixed cuts, normalisers and ensembles."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from superb.judges.agreement import cohen_kappa
from superb.judges.studies.calibration import (Ensemble, FixedCuts, KappaCutSearch, MinMaxNormaliser, RankNormaliser)


def test_fixed_cuts_label_by_number_of_cuts_at_or_below_the_score():
    cuts = FixedCuts((0.5, 1.5, 2.5))
    assert cuts.apply([0.0, 0.49, 0.5, 1.49, 1.5, 2.5, 3.0]).tolist() == [0, 0, 1, 1, 2, 3, 3]
    assert FixedCuts((0.3, 0.3, 0.7)).apply([0.1, 0.3, 0.5, 0.9]).tolist() == [0, 2, 2, 3]  # label 1 never given
    with pytest.raises(ValueError, match="non-decreasing"):
        FixedCuts((1.0, 0.5, 2.0))
    with pytest.raises(ValueError, match="NaN or infinite"):
        cuts.apply([0.1, float("nan")])


def test_search_recovers_known_cut_points_on_a_synthetic_set():
    rng = np.random.default_rng(0)
    scores = rng.uniform(0.0, 3.0, 150)
    true = (0.7, 1.1, 2.4)
    human = FixedCuts(true).apply(scores)
    search = KappaCutSearch(max_candidates=1000).fit(scores, human)
    assert search.dev_kappa == pytest.approx(1.0)
    srt = np.sort(scores)
    for chosen, t in zip(search.cuts, true):  # each cut lies in the gap of dev scores around the true cut
        assert srt[srt < t].max() < chosen <= srt[srt >= t].min()
    assert (search.apply(scores) == human).all()
    # fresh pairs from the same generator: the dev-chosen cuts label them almost perfectly
    fresh = rng.uniform(0.0, 3.0, 400)
    assert cohen_kappa(FixedCuts(true).apply(fresh), search.apply(fresh), weights="linear") > 0.97


def test_search_is_exhaustive_over_its_candidate_grid():
    """Against a brute force over the same grid with the agreement module's kappa (an independent computation)."""
    rng = np.random.default_rng(3)
    scores = np.round(rng.uniform(0, 1, 18), 2)
    human = np.clip(np.round(scores * 3 + rng.normal(0, 0.8, 18)), 0, 3).astype(int)
    for weights in ("linear", "none", "quadratic"):
        search = KappaCutSearch(weights=weights, max_candidates=1000).fit(scores, human)
        grid = search.candidates(scores)
        best = max(cohen_kappa(human, FixedCuts(c).apply(scores), weights=weights)
                   for c in itertools.combinations_with_replacement(grid, 3))
        assert search.dev_kappa == pytest.approx(best)
        assert cohen_kappa(human, search.apply(scores), weights=weights) == pytest.approx(best)
        assert search.n_choices == len(list(itertools.combinations_with_replacement(range(len(grid)), 3)))


def test_search_may_leave_labels_unused_and_coarsens_large_grids():
    scores = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    human = np.array([0, 0, 0, 3, 3, 3])
    search = KappaCutSearch().fit(scores, human)
    assert search.cuts == pytest.approx((0.5, 0.5, 0.5)) and search.dev_kappa == pytest.approx(1.0)
    big = np.linspace(0, 1, 1001)
    search = KappaCutSearch(max_candidates=50).fit(big, (big > 0.5).astype(int) * 3)
    assert search.n_candidates == 52  # 50 midpoints + one cut below and one above every score


def test_search_errors_name_the_problem():
    with pytest.raises(ValueError, match="not fitted"):
        KappaCutSearch().apply([0.1])
    with pytest.raises(ValueError, match=r"human labels \[7\] are not in the label set"):
        KappaCutSearch().fit([0.1, 0.2], [0, 7])
    with pytest.raises(ValueError, match="every dev pair carries the human label 2"):
        KappaCutSearch().fit([0.1, 0.2, 0.3], [2, 2, 2])
    with pytest.raises(ValueError, match="differ in length"):
        KappaCutSearch().fit([0.1, 0.2], [0])


def test_normalisers_are_fitted_on_dev_and_applied_to_new_scores():
    rank = RankNormaliser().fit([0.1, 0.2, 0.2, 0.4])
    # (#below + half #equal) / 4
    assert rank.apply([0.0, 0.1, 0.2, 0.3, 0.5]).tolist() == [0.0, 0.125, 0.5, 0.75, 1.0]
    mm = MinMaxNormaliser().fit([1.0, 3.0])
    assert mm.apply([0.0, 2.0, 3.5]).tolist() == [0.0, 0.5, 1.0]
    assert MinMaxNormaliser().fit([2.0, 2.0]).apply([1.0, 5.0]).tolist() == [0.5, 0.5]


def test_ensemble_means_rank_normalised_member_scores():
    dev = {"a": [0.1, 0.5, 0.9, 0.3], "b": [3.0, 0.0, 2.0, 1.0]}
    ens = Ensemble(["a", "b"]).fit(dev)
    # a: 0.5 sits above 2 of 4 dev scores -> 0.5 + half of its own tie 0.125 = 0.625; b: 2.0 -> 0.5 + 0.125 = 0.625
    assert ens.apply({"a": [0.5], "b": [2.0]}).tolist() == [0.625]
    assert ens.apply({"a": [0.0], "b": [9.0]}).tolist() == [0.5]  # 0 and 1
    mm = Ensemble(["a", "b"], normaliser="minmax").fit(dev)
    assert mm.apply({"a": [0.9], "b": [1.5]}).tolist() == [pytest.approx((1.0 + 0.5) / 2)]
    with pytest.raises(ValueError, match="at least two different members"):
        Ensemble(["a"])
    with pytest.raises(ValueError, match=r"no score column for \['b'\]"):
        Ensemble(["a", "b"]).fit({"a": [0.1]})
