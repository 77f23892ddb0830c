"""Paired significance tests over per-query values, and multiple-comparison corrections.

Tests (``x`` and ``y`` are per-query values of two systems on the same queries, in the same order):

- ``"t"``: paired t-test (``scipy.stats.ttest_rel``).
- ``"wilcoxon"``: Wilcoxon signed-rank (``scipy.stats.wilcoxon``) with ``zero_method="wilcox"``: queries on which
  both systems score the same are dropped before ranking (the textbook test, as in R's ``wilcox.test`` and most IR
  toolkits); the exact distribution is used for small samples without ties, the normal approximation otherwise.
  With ``"pratt"`` the result would change with the number of tied queries, which in IR are many (e.g. P@5 = 0).
- ``"randomization"``: paired randomization (sign-flip) test on the mean difference. Each query's difference keeps
  or flips its sign with probability 1/2; p = (count + 1) / (n_resamples + 1), where count is the number of resampled
  mean differences at least as extreme as the observed one (seeded, reproducible). When all 2**n sign patterns are
  no more than ``n_resamples`` the test enumerates them and returns the exact p (share of patterns at least as
  extreme, the observed one included).

If the two systems agree on every query (all differences zero) there is no evidence either way: the p-value is NaN,
which every correction treats as "not tested" (never a rejection).

:class:`PairedTest` is a test as ``pt.Experiment``'s ``test`` callable (``test(x, y)[1]`` is the p-value), so the
spec's test, ``n_resamples`` and seed reach pt.Experiment unchanged.

Corrections (``correct``): Holm's step-down and Bonferroni, same values and decisions as
``statsmodels.stats.multitest.multipletests`` on the non-NaN p-values; NaN p-values stay NaN, are not counted in the
family size m, and are never rejected. ``pt.Experiment(correction="holm")`` hands the NaN of an identical system to
statsmodels, which counts it in m and, when every other p of the family is rejected, marks it significant too;
:func:`correct_experiment` applies ``correct`` to a pt.Experiment result instead (same columns as pt.Experiment's).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

# name -> how a table's footnote names it (superb.eval.table_markdown)
TEST_NAMES = {"t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test (queries with equal values dropped)",
              "randomization": "paired randomization (sign-flip) test"}
CORRECTION_NAMES = {"holm": "Holm-Bonferroni correction", "bonferroni": "Bonferroni correction",
                    "none": "no correction for multiple comparisons"}
TESTS = tuple(TEST_NAMES)  # ("t", "wilcoxon", "randomization")
CORRECTIONS = tuple(CORRECTION_NAMES)  # ("holm", "bonferroni", "none")
ALTERNATIVES = ("two-sided", "greater", "less")
CHUNK_CELLS = 2_000_000  # sign-flip matrix cells per chunk (16 MB of float64)


def _paired(x, y) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"x and y must be 1-D sequences of per-query values, found shapes {x.shape} and {y.shape}")
    if x.shape != y.shape:
        raise ValueError(f"paired test needs the same queries in both systems: x has {x.size} values, y has {y.size}")
    if x.size < 2:
        raise ValueError(f"a paired test needs at least 2 queries, found {x.size}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x and y must be finite numbers (no NaN or inf); per-query values of missing queries are 0")
    return x, y


def paired_pvalue(x, y, test: str = "t", *, n_resamples: int = 10_000, seed: int = 0,
                  alternative: str = "two-sided") -> float:
    """p-value of a paired test of x against y (``alternative="greater"``: x's mean is greater). NaN if x == y."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; choose one of {list(TESTS)}")
    if alternative not in ALTERNATIVES:
        raise ValueError(f"unknown alternative {alternative!r}; choose one of {list(ALTERNATIVES)}")
    x, y = _paired(x, y)
    d = x - y
    if not d.any():
        return float("nan")
    if test == "t":
        from scipy.stats import ttest_rel

        return float(ttest_rel(x, y, alternative=alternative).pvalue)
    if test == "wilcoxon":
        from scipy.stats import wilcoxon

        return float(wilcoxon(x, y, zero_method="wilcox", alternative=alternative).pvalue)
    return randomization_pvalue(d, n_resamples=n_resamples, seed=seed, alternative=alternative)


def _extreme(means: np.ndarray, observed: float, alternative: str) -> int:
    # a relative tolerance so that flips giving the observed mean up to rounding count as "as extreme"
    tol = 1e-9 * max(1.0, abs(observed))
    if alternative == "two-sided":
        return int((np.abs(means) >= abs(observed) - tol).sum())
    if alternative == "greater":
        return int((means >= observed - tol).sum())
    return int((means <= observed + tol).sum())


def randomization_pvalue(d, *, n_resamples: int = 10_000, seed: int = 0, alternative: str = "two-sided") -> float:
    """Sign-flip randomization test on the mean of the paired differences ``d`` (see the module doc)."""
    d = np.asarray(d, dtype=float)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, found {n_resamples!r}")
    if alternative not in ALTERNATIVES:
        raise ValueError(f"unknown alternative {alternative!r}; choose one of {list(ALTERNATIVES)}")
    n = d.size
    observed = float(d.mean())
    if n < 63 and 2 ** n <= n_resamples:  # exact: every sign pattern once
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        return _extreme(signs @ d / n, observed, alternative) / signs.shape[0]
    rng = np.random.default_rng(seed)
    count, done = 0, 0
    rows = max(1, CHUNK_CELLS // n)
    while done < n_resamples:
        k = min(rows, n_resamples - done)
        signs = rng.integers(0, 2, size=(k, n), dtype=np.int8) * 2 - 1
        count += _extreme(signs @ d / n, observed, alternative)
        done += k
    return (count + 1) / (n_resamples + 1)


def correct(pvalues, method: str = "holm", alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Corrected p-values and reject flags for one family of tests.

    ``method``: ``"holm"`` (step-down Holm-Bonferroni), ``"bonferroni"`` or ``"none"``. NaN p-values (untested
    comparisons) are left out of the family: m counts only the non-NaN ones; they stay NaN and are never rejected.
    Corrected values are capped at 1 and, for Holm, monotone in the raw p-values (as statsmodels computes them).
    """
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}; choose one of {list(CORRECTIONS)}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be a number strictly between 0 and 1, found {alpha!r}")
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"pvalues must be a 1-D sequence, found shape {p.shape}")
    tested = ~np.isnan(p)
    if ((p[tested] < 0) | (p[tested] > 1)).any():
        raise ValueError(f"p-values must lie in [0, 1] (or be NaN for untested), found {p[tested & ((p < 0) | (p > 1))]}")
    corrected = np.full(p.shape, np.nan)
    reject = np.zeros(p.shape, dtype=bool)
    sub = p[tested]
    m = sub.size
    if m == 0:
        return corrected, reject
    if method == "none":
        adj, rej = sub.copy(), sub <= alpha
    elif method == "bonferroni":
        adj, rej = np.minimum(sub * m, 1.0), sub <= alpha / m
    else:
        order = np.argsort(sub, kind="stable")
        ps = sub[order]
        factors = np.arange(m, 0, -1, dtype=float)  # m, m-1, ..., 1
        # step-down: reject the smallest p-values until the first one above alpha / (m - i)
        above = np.nonzero(ps > alpha / factors)[0]
        first_kept = above[0] if above.size else m
        rej_sorted = np.arange(m) < first_kept
        adj_sorted = np.minimum(np.maximum.accumulate(ps * factors), 1.0)
        adj, rej = np.empty(m), np.empty(m, dtype=bool)
        adj[order], rej[order] = adj_sorted, rej_sorted
    corrected[tested] = adj
    reject[tested] = rej
    return corrected, reject


@dataclass(frozen=True)
class PairedTest:
    """A two-sided paired test as ``pt.Experiment``'s ``test`` callable: ``test(x, y) -> (None, p)``, ``x`` the
    system's per-query values, ``y`` the baseline's (pt.Experiment's order). p is NaN when x == y on every query."""

    name: str = "t"
    n_resamples: int = 10_000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.name not in TESTS:
            raise ValueError(f"unknown test {self.name!r}; choose one of {list(TESTS)}")
        if isinstance(self.n_resamples, bool) or not isinstance(self.n_resamples, int) or self.n_resamples < 1:
            raise ValueError(f"n_resamples must be a positive integer, found {self.n_resamples!r}")

    def __call__(self, x, y) -> tuple[None, float]:
        return None, paired_pvalue(x, y, self.name, n_resamples=self.n_resamples, seed=self.seed)


def correct_experiment(result: pd.DataFrame, method: str = "holm", alpha: float = 0.05) -> pd.DataFrame:
    """A ``pt.Experiment(..., baseline=...)`` result with, after each "<measure> p-value" column, "<measure> reject"
    and "<measure> p-value corrected": :func:`correct` over the rows of that column (one family per measure; the
    baseline row and identical systems have NaN p and are neither counted nor rejected).

    Works whether or not pt.Experiment was given ``correction=``: the two columns pt.Experiment then adds (its
    correction counts identical systems, whose p is NaN) are replaced in place by this one's, so the columns keep
    pt.Experiment's order either way."""
    columns = [c for c in result.columns if str(c).endswith(" p-value")]
    if not columns:
        raise ValueError("the pt.Experiment result has no '<measure> p-value' columns: run it with baseline=<index>")
    out = result.copy()
    for col in columns:
        p = pd.to_numeric(out[col], errors="coerce").to_numpy(dtype=float)
        corrected, reject = correct(p, method, alpha)
        reject_col, corrected_col = col.replace(" p-value", " reject"), col + " corrected"
        if reject_col in out.columns and corrected_col in out.columns:  # pt.Experiment(correction=...) already did
            out[reject_col] = reject
            out[corrected_col] = corrected
            continue
        out = out.drop(columns=[c for c in (reject_col, corrected_col) if c in out.columns])
        at = out.columns.get_loc(col)
        out.insert(at + 1, reject_col, reject)
        out.insert(at + 2, corrected_col, corrected)
    return out
