"""Bootstrap 95% intervals that resample QUERIES: for kappa (unweighted, linear, quadratic), exact agreement, Fleiss'
kappa and Kendall's tau between system orderings.

Pairs of one query are not independent (one rater, one query intent, one product pool), so the unit of resampling is
the query: a resample draws as many queries as there are, with replacement, and keeps every pair of each drawn query
(a query drawn twice counts twice). ``QueryBootstrap(n_resamples=1000, seed=0, level=0.95)`` draws the resamples
ONCE per call as a (resamples x queries) matrix of multiplicities from ``numpy.random.default_rng(seed)``, over the
queries sorted by qid, so the same data and seed give the same intervals. The interval is the percentile interval
(2.5th and 97.5th percentiles of the resampled statistic); resamples where a statistic is undefined (NaN, e.g. a
kappa with no chance disagreement) are left out and counted in ``undefined``.

Statistics are computed from per-query sufficient statistics (confusion counts; Fleiss' per-item agreement and label
counts; per-query measure values), so 1,000 resamples cost a matrix product, not 1,000 re-computations.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from superb.judges.agreement import LABELS, disagreement_weights, label_positions

KAPPAS = {"kappa": "none", "kappa_linear": "linear", "kappa_quadratic": "quadratic"}


class QueryBootstrap:
    def __init__(self, n_resamples: int = 1000, seed: int = 0, level: float = 0.95):
        if int(n_resamples) < 1:
            raise ValueError(f"QueryBootstrap: n_resamples must be >= 1, got {n_resamples!r}")
        if not 0.0 < float(level) < 1.0:
            raise ValueError(f"QueryBootstrap: level must be in (0, 1), got {level!r}")
        self.n_resamples, self.seed, self.level = int(n_resamples), int(seed), float(level)

    def __repr__(self) -> str:
        return f"QueryBootstrap(n_resamples={self.n_resamples}, seed={self.seed}, level={self.level})"

    def weights(self, n_queries: int) -> np.ndarray:
        """(n_resamples, n_queries) multiplicities: how often each query is drawn in each resample."""
        if n_queries < 1:
            raise ValueError("the bootstrap needs at least one query")
        rng = np.random.default_rng(self.seed)
        return rng.multinomial(n_queries, np.full(n_queries, 1.0 / n_queries), size=self.n_resamples)

    def interval(self, values: np.ndarray) -> tuple[float, float, int]:
        """(low, high, undefined): the percentile interval of the defined resampled values."""
        values = np.asarray(values, dtype=float)
        ok = values[np.isfinite(values)]
        if ok.size == 0:
            return float("nan"), float("nan"), int(values.size)
        tail = 100.0 * (1.0 - self.level) / 2.0
        low, high = np.percentile(ok, [tail, 100.0 - tail])
        return float(low), float(high), int(values.size - ok.size)


def _groups(qids: Sequence) -> tuple[np.ndarray, int]:
    """Index of each item's query among the sorted distinct qids, and the number of queries."""
    keys, index = np.unique(np.asarray([str(q) for q in qids]), return_inverse=True)
    return index, len(keys)


def _kappa_rows(tables: np.ndarray, weights: str) -> np.ndarray:
    """Weighted kappa of each (k x k) count table in a stack (n, k, k); NaN where undefined."""
    k = tables.shape[-1]
    w = disagreement_weights(k, weights)
    total = tables.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = tables / total[:, None, None]
        expected = observed.sum(axis=2)[:, :, None] * observed.sum(axis=1)[:, None, :]
        chance = (w * expected).sum(axis=(1, 2))
        return np.where(chance > 0, 1.0 - (w * observed).sum(axis=(1, 2)) / chance, np.nan)


def agreement_intervals(qids: Sequence, a: Sequence, b: Sequence, labels: Sequence[int] = LABELS,
                        bootstrap: QueryBootstrap | None = None) -> dict:
    """n, queries, and agreement / kappa / kappa_linear / kappa_quadratic with ``_low`` and ``_high`` bounds
    (bootstrap over the queries in ``qids``, one qid per item). The point values equal
    superb.judges.agreement.agreement_summary on the same items."""
    bootstrap = bootstrap or QueryBootstrap()
    if not (len(qids) == len(a) == len(b)):
        raise ValueError(f"qids, a and b differ in length ({len(qids)}, {len(a)}, {len(b)})")
    if len(a) == 0:
        raise ValueError("no items to compare")
    k = len(labels)
    group, n_q = _groups(qids)
    pa, pb = label_positions(list(a), labels, "a"), label_positions(list(b), labels, "b")
    per_query = np.zeros((n_q, k * k))
    np.add.at(per_query, (group, pa * k + pb), 1)
    full = per_query.sum(axis=0).reshape(1, k, k)
    resampled = (bootstrap.weights(n_q) @ per_query).reshape(-1, k, k)
    out: dict = {"n": int(len(a)), "queries": n_q}
    stats = {"agreement": lambda t: np.trace(t, axis1=1, axis2=2) / t.sum(axis=(1, 2))}
    stats.update({name: (lambda t, w=w: _kappa_rows(t, w)) for name, w in KAPPAS.items()})
    for name, fn in stats.items():
        low, high, undefined = bootstrap.interval(fn(resampled))
        out.update({name: float(fn(full)[0]), f"{name}_low": low, f"{name}_high": high})
        if undefined:
            out[f"{name}_undefined"] = undefined
    return out


def fleiss_intervals(qids: Sequence, ratings, labels: Sequence[int] = LABELS,
                     bootstrap: QueryBootstrap | None = None) -> dict:
    """Fleiss' kappa of an (items x raters) array and the share of unanimous items, each with ``_low``/``_high``
    bounds (bootstrap over queries). The point value equals superb.judges.agreement.fleiss_kappa."""
    bootstrap = bootstrap or QueryBootstrap()
    table = np.asarray(ratings, dtype=object)
    if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] < 2 or table.shape[0] != len(qids):
        raise ValueError(f"ratings must be items x raters (>= 2 raters) with one qid per item; got {table.shape} "
                         f"and {len(qids)} qids")
    n_items, m = table.shape
    pos = label_positions(table.ravel().tolist(), labels, "ratings").reshape(n_items, m)
    counts = np.zeros((n_items, len(labels)))
    for r in range(m):
        np.add.at(counts, (np.arange(n_items), pos[:, r]), 1)
    p_item = ((counts ** 2).sum(axis=1) - m) / (m * (m - 1))
    unanimous = (counts.max(axis=1) == m).astype(float)
    group, n_q = _groups(qids)
    # per query: items, sum of P_i, label counts, unanimous items
    per_query = np.zeros((n_q, 3 + len(labels)))
    np.add.at(per_query[:, 0], group, 1.0)
    np.add.at(per_query[:, 1], group, p_item)
    np.add.at(per_query[:, 2], group, unanimous)
    for j in range(len(labels)):
        np.add.at(per_query[:, 3 + j], group, counts[:, j])

    def stats(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        items = rows[:, 0]
        p_bar = rows[:, 1] / items
        p_label = rows[:, 3:] / (items * m)[:, None]
        p_e = (p_label ** 2).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            kappa = np.where(p_e < 1.0, (p_bar - p_e) / (1.0 - p_e), np.nan)
        return kappa, rows[:, 2] / items

    kappa, agree = stats(per_query.sum(axis=0, keepdims=True))
    b_kappa, b_agree = stats(bootstrap.weights(n_q) @ per_query)
    k_low, k_high, _ = bootstrap.interval(b_kappa)
    a_low, a_high, _ = bootstrap.interval(b_agree)
    return {"n": n_items, "queries": n_q, "kappa": float(kappa[0]), "kappa_low": k_low, "kappa_high": k_high,
            "agreement": float(agree[0]), "agreement_low": a_low, "agreement_high": a_high}


TIE_DIGITS = 12  # means of measures in [0, 1]: a real difference over <= 10^6 queries shows long before this digit


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between the rows of x and y (n, systems): (C - D) / sqrt((n0 - ties_x) (n0 - ties_y));
    NaN where one ordering is all ties. Equals scipy.stats.kendalltau (tau-b) row by row. Values are rounded to
    ``TIE_DIGITS`` first: two systems with the same mean P@5 must tie whatever order their values were summed in."""
    x, y = np.round(np.atleast_2d(x), TIE_DIGITS), np.round(np.atleast_2d(y), TIE_DIGITS)
    i, j = np.triu_indices(x.shape[1], k=1)
    sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    denom = np.sqrt(np.count_nonzero(sx, axis=1) * np.count_nonzero(sy, axis=1).astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (sx * sy).sum(axis=1) / denom, np.nan)


def tau_ap(reference: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Yilmaz, Aslam and Robertson's AP correlation (SIGIR 2008) of ``other`` (the estimated ordering: the LLM
    labels') against ``reference`` (the true one: the human labels'), row by row (n, systems): walking the systems in
    ``other``'s order (best first), tau_ap = 2/(N-1) * sum over positions i = 2..N of C(i)/(i-1) - 1, C(i) the
    systems ``other`` puts above position i that ``reference`` also puts above it. A wrong system near the top of the
    estimated ordering costs more than one near the bottom; asymmetric. ircor's ``tauAP(x, y)`` with ``x`` the true
    scores is ``tau_ap(x, y)`` (tests/test_judges_bootstrap.py). A pair tied in BOTH orderings (a reranker that
    leaves BM25's ranking as it is) counts as ordered alike, so equal orderings give 1 with ties too; otherwise ties
    in ``other`` keep the systems' column order and a tie in ``reference`` alone counts as not above. NaN below 2
    systems."""
    x, y = np.round(np.atleast_2d(reference), TIE_DIGITS), np.round(np.atleast_2d(other), TIE_DIGITS)
    n = x.shape[1]
    if n < 2:
        return np.full(x.shape[0], np.nan)
    order = np.argsort(-y, axis=1, kind="stable")
    xs = np.take_along_axis(x, order, axis=1)  # the true values, systems in the estimated order
    ys = np.take_along_axis(y, order, axis=1)
    total = np.zeros(x.shape[0])
    for i in range(1, n):
        alike = (xs[:, :i] > xs[:, i:i + 1]) | ((xs[:, :i] == xs[:, i:i + 1]) & (ys[:, :i] == ys[:, i:i + 1]))
        total += alike.sum(axis=1) / i
    return 2.0 * total / (n - 1) - 1.0


def spearman_rho(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho between the rows of x and y (n, systems): Pearson's correlation of the ranks (ties get their
    average rank, values rounded to ``TIE_DIGITS``); NaN where one row is all ties."""
    from scipy.stats import rankdata

    rx = rankdata(np.round(np.atleast_2d(x), TIE_DIGITS), axis=1)
    ry = rankdata(np.round(np.atleast_2d(y), TIE_DIGITS), axis=1)
    rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
    denom = np.sqrt((rx ** 2).sum(axis=1) * (ry ** 2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (rx * ry).sum(axis=1) / denom, np.nan)


def ordering_intervals(perquery_a: pd.DataFrame, perquery_b: pd.DataFrame,
                       bootstrap: QueryBootstrap | None = None) -> pd.DataFrame:
    """Per measure: Kendall's tau-b, tau_ap (``perquery_a`` the reference) and Spearman's rho between the system
    orderings under two evaluations, each with a 95% interval from resampling queries (the same resamples for all
    three and both evaluations); the columns of :func:`tau_intervals` plus tau_ap, rho and their bounds."""
    bootstrap = bootstrap or QueryBootstrap()
    rows = []
    for measure, va, vb in _aligned(perquery_a, perquery_b):
        n_q = len(va)
        w = bootstrap.weights(n_q) / n_q
        ma, mb = va.mean(axis=0), vb.mean(axis=0)
        ra, rb = w @ va, w @ vb
        row = {"measure": measure, "queries": n_q}
        for name, f in (("tau", kendall_tau_b), ("tau_ap", tau_ap), ("rho", spearman_rho)):
            low, high, undefined = bootstrap.interval(f(ra, rb))
            row.update({name: float(f(ma, mb)[0]), f"{name}_low": low, f"{name}_high": high,
                        f"{name}_undefined": undefined})
        rows.append(row)
    return pd.DataFrame(rows)


def _aligned(perquery_a: pd.DataFrame, perquery_b: pd.DataFrame):
    """(measure, values under a, values under b) per measure: (queries, systems) arrays, queries sorted."""
    for measure in pd.unique(perquery_a["measure"]):
        va = perquery_a[perquery_a["measure"] == measure].pivot(index="qid", columns="system", values="value")
        vb = perquery_b[perquery_b["measure"] == measure].pivot(index="qid", columns="system", values="value")
        vb = vb.reindex(index=va.index, columns=va.columns)
        if vb.isna().to_numpy().any() or va.isna().to_numpy().any():
            raise ValueError(f"{measure}: the two evaluations must cover the same systems and queries with values")
        yield measure, va.sort_index().to_numpy(), vb.sort_index().to_numpy()


def kappa_difference(qids: Sequence, reference: Sequence, a: Sequence, b: Sequence, labels: Sequence[int] = LABELS,
                     bootstrap: QueryBootstrap | None = None, weights: str = "linear") -> dict:
    """Judge A's kappa against ``reference`` minus judge B's, on the same pairs, with a paired query-bootstrap 95%
    interval (both judges resampled with the same queries) and a two-sided bootstrap p: twice the share of resampled
    differences on the far side of 0 (at least 1/resamples)."""
    bootstrap = bootstrap or QueryBootstrap()
    groups, n_q = _groups(qids)
    k = len(labels)
    ref = label_positions(reference, labels, "reference")
    tables = []
    for judge in (a, b):
        pos = label_positions(judge, labels, "judge")
        per_query = np.zeros((n_q, k, k))
        np.add.at(per_query, (groups, ref, pos), 1.0)
        tables.append(per_query)
    w = bootstrap.weights(n_q)
    flat = [w @ t.reshape(n_q, k * k) for t in tables]
    full = [t.sum(axis=0).reshape(1, k * k) for t in tables]
    ka, kb = (_kappa_rows(f.reshape(-1, k, k), weights) for f in full)
    ra, rb = (_kappa_rows(f.reshape(-1, k, k), weights) for f in flat)
    diff = ra - rb
    low, high, undefined = bootstrap.interval(diff)
    ok = diff[np.isfinite(diff)]
    observed = float(ka[0] - kb[0])
    if ok.size:
        far = (ok <= 0).mean() if observed > 0 else (ok >= 0).mean() if observed < 0 else 1.0
        p = float(min(1.0, max(2.0 * far, 1.0 / ok.size)))
    else:
        p = float("nan")
    return {"n": len(ref), "queries": n_q, "kappa_a": float(ka[0]), "kappa_b": float(kb[0]), "difference": observed,
            "difference_low": low, "difference_high": high, "p": p, "undefined": undefined}


def kappa_samples(qids: Sequence, reference: Sequence, judge: Sequence, weights: str | None,
                  bootstrap: QueryBootstrap, labels: Sequence[int] = LABELS) -> tuple[float, np.ndarray]:
    """(observed, resampled values) of the judge's kappa against ``reference`` (``weights``: "none", "linear",
    "quadratic"; None: exact agreement), resampling queries as every interval here does."""
    k = len(labels)
    group, n_q = _groups(qids)
    pa, pb = label_positions(list(reference), labels, "reference"), label_positions(list(judge), labels, "judge")
    per_query = np.zeros((n_q, k * k))
    np.add.at(per_query, (group, pa * k + pb), 1)
    full = per_query.sum(axis=0).reshape(1, k, k)
    resampled = (bootstrap.weights(n_q) @ per_query).reshape(-1, k, k)
    if weights is None:
        def fn(t):
            return np.trace(t, axis1=1, axis2=2) / t.sum(axis=(1, 2))
    else:
        def fn(t):
            return _kappa_rows(t, weights)
    return float(fn(full)[0]), fn(resampled)


def ordering_samples(perquery_a: pd.DataFrame, perquery_b: pd.DataFrame, measure: str, statistic: str,
                     bootstrap: QueryBootstrap) -> tuple[float, np.ndarray, int]:
    """(observed, resampled values, systems) of tau, tau_ap or rho between the orderings by ``measure`` (per-query
    values system, qid, measure, value under each label set), resampling queries as ordering_intervals does."""
    f = {"tau": kendall_tau_b, "tau_ap": tau_ap, "rho": spearman_rho}[statistic]
    for name, va, vb in _aligned(perquery_a, perquery_b):
        if name == measure:
            w = bootstrap.weights(len(va)) / len(va)
            return float(f(va.mean(axis=0), vb.mean(axis=0))[0]), f(w @ va, w @ vb), va.shape[1]
    raise ValueError(f"no per-query values of {measure!r}")


def tau_intervals(perquery_a: pd.DataFrame, perquery_b: pd.DataFrame,
                  bootstrap: QueryBootstrap | None = None) -> pd.DataFrame:
    """Per measure: Kendall's tau-b between the system orderings (mean over queries) under two evaluations
    (frames system, qid, measure, value over the same systems and queries), with ``tau_low``/``tau_high`` from
    resampling queries (the same resampled query set for both evaluations)."""
    table = ordering_intervals(perquery_a, perquery_b, bootstrap)
    return table[["measure", "tau", "tau_low", "tau_high", "tau_undefined", "queries"]]
