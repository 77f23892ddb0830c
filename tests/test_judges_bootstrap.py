"""Query-bootstrap intervals: point values equal the plain statistics, intervals contain them, shrink with more
queries, and are reproducible by seed; Kendall's tau intervals for system orderings (also through label_study)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from superb.judges.agreement import agreement_summary, fleiss_kappa
from superb.judges.bootstrap import (QueryBootstrap, agreement_intervals, fleiss_intervals, kendall_tau_b,
                                     tau_intervals)
from superb.judges.studies.label import ranking_agreement

STATS = ("agreement", "kappa", "kappa_linear", "kappa_quadratic")


def labelled(n_queries: int, per_query: int = 10, seed: int = 0):
    """Two labellers of the same pairs: b copies a 60% of the time, else guesses; a query effect shifts a."""
    rng = np.random.default_rng(seed)
    qids = np.repeat([f"q{i}" for i in range(n_queries)], per_query)
    shift = np.repeat(rng.integers(0, 2, n_queries), per_query)
    a = np.clip(rng.integers(0, 4, len(qids)) + shift, 0, 3)
    b = np.where(rng.random(len(qids)) < 0.6, a, rng.integers(0, 4, len(qids)))
    return qids, a, b


def test_point_values_equal_the_plain_statistics_and_lie_inside_their_intervals():
    qids, a, b = labelled(60)
    got = agreement_intervals(qids, a, b)
    plain = agreement_summary(a, b)
    assert got["n"] == 600 and got["queries"] == 60
    for s in STATS:
        assert got[s] == pytest.approx(plain[s])
        assert got[f"{s}_low"] < got[s] < got[f"{s}_high"]
    c = np.where(np.random.default_rng(9).random(len(a)) < 0.5, a, b)
    fleiss = fleiss_intervals(qids, np.stack([a, b, c], axis=1))
    assert fleiss["kappa"] == pytest.approx(fleiss_kappa(np.stack([a, b, c], axis=1)))
    assert fleiss["kappa_low"] < fleiss["kappa"] < fleiss["kappa_high"]
    assert fleiss["agreement"] == pytest.approx(np.mean((a == b) & (b == c)))


def test_intervals_shrink_with_more_queries_and_are_seeded():
    small = agreement_intervals(*labelled(20, seed=1))
    large = agreement_intervals(*labelled(320, seed=1))
    for s in STATS:  # 16x the queries: about a quarter of the width
        assert (large[f"{s}_high"] - large[f"{s}_low"]) < 0.5 * (small[f"{s}_high"] - small[f"{s}_low"])
    args = labelled(30, seed=2)
    same = agreement_intervals(*args, bootstrap=QueryBootstrap(seed=7))
    assert same == agreement_intervals(*args, bootstrap=QueryBootstrap(seed=7))
    assert same["kappa_low"] != agreement_intervals(*args, bootstrap=QueryBootstrap(seed=8))["kappa_low"]


def test_resampling_unit_is_the_query():
    """Queries whose pairs all agree or all disagree: resampling queries gives a much wider interval than the
    ~binomial spread of resampling pairs would."""
    qids = np.repeat([f"q{i}" for i in range(20)], 50)
    a = np.zeros(1000, dtype=int)
    b = np.where(np.repeat(np.arange(20) % 2, 50) == 0, 0, 3)  # 10 queries agree fully, 10 disagree fully
    got = agreement_intervals(qids, a, b)
    assert got["agreement"] == 0.5
    assert got["agreement_high"] - got["agreement_low"] > 0.3  # pairs as units would give about 0.06


def test_kendall_tau_b_matches_scipy_with_ties():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 4, (6, 7)).astype(float)
    y = x + rng.integers(0, 3, (6, 7))
    want = [kendalltau(x[i], y[i])[0] for i in range(6)]
    assert kendall_tau_b(x, y) == pytest.approx(want)


def perquery(n_queries: int, noise: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Five systems with true means 0.1 .. 0.5, evaluated twice (e.g. human vs LLM labels) with per-query noise."""
    rng = np.random.default_rng(seed)
    rows_a, rows_b = [], []
    for s, mean in enumerate([0.1, 0.2, 0.3, 0.4, 0.5]):
        for q in range(n_queries):
            rows_a.append((f"S{s}", f"q{q}", "nDCG@10", mean + rng.normal(0, noise)))
            rows_b.append((f"S{s}", f"q{q}", "nDCG@10", mean + rng.normal(0, noise)))
    cols = ["system", "qid", "measure", "value"]
    return pd.DataFrame(rows_a, columns=cols), pd.DataFrame(rows_b, columns=cols)


def test_tau_intervals_contain_tau_and_shrink_with_more_queries():
    few = tau_intervals(*perquery(10, 0.5, 0)).iloc[0]
    many = tau_intervals(*perquery(400, 0.5, 0)).iloc[0]
    a, b = perquery(10, 0.5, 0)
    means_a = a.groupby("system")["value"].mean()
    means_b = b.groupby("system")["value"].mean().reindex(means_a.index)
    assert few["tau"] == pytest.approx(kendalltau(means_a, means_b)[0])
    assert few["tau_low"] <= few["tau"] <= few["tau_high"]
    assert many["tau_low"] <= many["tau"] <= many["tau_high"] and many["tau"] == 1.0
    assert many["tau_high"] - many["tau_low"] < few["tau_high"] - few["tau_low"]
    table = ranking_agreement(a, b, ("human", "llm"), bootstrap=QueryBootstrap(200))
    assert list(table.columns[:5]) == ["measure", "n_systems", "tau", "tau_low", "tau_high"]
    assert table.loc[0, "tau"] == pytest.approx(few["tau"])


def test_tau_treats_means_equal_up_to_summation_order_as_ties():
    # S1 and S2 have the same mean P@5 (0.3); summed in different orders the float means differ in the last bit
    v1 = np.array([0.2, 0.4, 0.6, 0.0, 0.2, 0.4])
    v2 = np.array([0.4, 0.2, 0.0, 0.6, 0.4, 0.2])
    x = np.array([[0.3, np.nextafter(0.3, 1.0), 0.1]])  # one float step apart: summation noise, not a difference
    y = np.array([[0.3, 0.3, 0.1]])
    assert x[0, 0] != x[0, 1]
    assert kendall_tau_b(x, y)[0] == pytest.approx(1.0)  # the tie is a tie on both sides
    rows = [(s, f"q{i}", "P@5", float(v)) for s, vals in (("S1", v1), ("S2", v2), ("S3", np.full(6, 0.1)))
            for i, v in enumerate(vals)]
    a = pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])
    b = a.iloc[::-1].reset_index(drop=True)  # the same values summed in the other order
    row = ranking_agreement(a, b).iloc[0]
    assert row["tau"] == pytest.approx(1.0) and row["discordant_pairs"] == 0


def test_tau_ap_is_ircors_with_the_estimated_ordering_walked():
    """ircor (Urbano's reference implementation of Yilmaz et al.'s AP correlation) documents tauAP(x, y) = 0.7491182
    and tau = 0.7777778 for these scores, x the true ones; tau_ap is asymmetric, so the orientation matters."""
    from superb.judges.bootstrap import kendall_tau_b, tau_ap

    x = np.array([0.06, 0.2, 0.27, 0.37, 0.57, 0.63, 0.66, 0.9, 0.91, 0.94])
    y = np.array([0.37, 0.06, 0.2, 0.27, 0.57, 0.66, 0.63, 0.91, 0.9, 0.94])
    assert tau_ap(x, y)[0] == pytest.approx(0.7491182, abs=5e-8)
    assert kendall_tau_b(x[None], y[None])[0] == pytest.approx(0.7777778, abs=5e-8)
    assert tau_ap(y, x)[0] != pytest.approx(0.7491182, abs=1e-3)  # the other orientation is another number
    truth = np.arange(6, 0, -1, dtype=float)  # system 0 best
    assert tau_ap(truth, truth)[0] == 1.0 and tau_ap(truth, -truth)[0] == -1.0
    top_swapped, bottom_swapped = truth.copy(), truth.copy()
    top_swapped[[0, 1]] = top_swapped[[1, 0]]
    bottom_swapped[[4, 5]] = bottom_swapped[[5, 4]]
    assert tau_ap(truth, top_swapped)[0] < tau_ap(truth, bottom_swapped)[0]  # an error at the top costs more
    tied = np.array([3.0, 2.0, 2.0, 1.0])  # two systems equal under both qrels (one leaves the other's ranking)
    assert tau_ap(tied, tied)[0] == 1.0 and kendall_tau_b(tied[None], tied[None])[0] == 1.0
    assert tau_ap(tied, np.array([3.0, 2.5, 2.0, 1.0]))[0] < 1.0  # separating what the truth ties is not alike
