"""Effect sizes and what a table can detect: the mean paired difference with its 95% interval, and the minimum
detectable difference (MDE) at 80% power.

Interval (``interval``):

- ``"t"``: the paired t interval, mean(d) +- t(0.975, n-1) * sd(d) / sqrt(n), sd with n - 1 degrees of freedom.
- ``"bootstrap"``: the percentile interval of the mean of d over ``n_resamples`` query resamples (queries drawn
  with replacement, seeded: reproducible).

d = x - y per query (the row's system minus the system it is tested against). When d is 0 on every query the
interval is [0, 0].

MDE: the smallest true mean difference that a two-sided paired t-test at level ``alpha`` detects with probability
``power`` (default 0.8), given n queries and the standard deviation of the paired differences: the exact power of
the t-test from the noncentral t distribution (df = n - 1, noncentrality delta * sqrt(n) / sd), solved for delta.
The normal approximation (z(1 - alpha/2) + z(power)) * sd / sqrt(n) is up to 3% smaller for n >= 40 (at alpha down
to 0.05/18).
"""

from __future__ import annotations

import numpy as np

from superb.eval.stats import CHUNK_CELLS

INTERVALS = ("t", "bootstrap")
LEVEL = 0.95
POWER = 0.8


def paired_interval(d, interval: str = "t", *, n_resamples: int = 10_000, seed: int = 0,
                    level: float = LEVEL) -> tuple[float, float]:
    """(low, high) of the ``level`` interval of the mean of the paired differences ``d``."""
    if interval not in INTERVALS:
        raise ValueError(f"unknown interval {interval!r}; choose one of {list(INTERVALS)}")
    d = np.asarray(d, dtype=float)
    if d.ndim != 1 or d.size < 2:
        raise ValueError(f"an interval needs at least 2 paired differences, found {d.size}")
    mean = float(d.mean())
    if not d.any():
        return 0.0, 0.0
    if interval == "t":
        from scipy.stats import t

        half = float(t.ppf(0.5 + level / 2, d.size - 1)) * float(d.std(ddof=1)) / np.sqrt(d.size)
        return mean - half, mean + half

    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    rows = max(1, CHUNK_CELLS // d.size)
    for start in range(0, n_resamples, rows):
        k = min(rows, n_resamples - start)
        means[start:start + k] = d[rng.integers(0, d.size, size=(k, d.size))].mean(axis=1)
    low, high = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2])
    return float(low), float(high)


def t_power(delta: float, sd: float, n: int, alpha: float) -> float:
    """Power of the two-sided paired t-test at level ``alpha`` when the true mean difference is ``delta``."""
    from scipy.stats import nct, t

    if sd <= 0 or n < 2:
        return float("nan")
    df = n - 1
    crit = float(t.ppf(1 - alpha / 2, df))
    nc = delta * np.sqrt(n) / sd
    upper, lower = float(nct.sf(crit, df, nc)), float(nct.cdf(-crit, df, nc))
    return upper + (lower if np.isfinite(lower) else 0.0)  # the far tail underflows (NaN) where it is ~0


def mde(sd: float, n: int, alpha: float, power: float = POWER) -> float:
    """Minimum detectable mean difference (see the module doc); NaN when sd is 0 or NaN, or n < 2."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    if not np.isfinite(sd) or sd <= 0 or n < 2:
        return float("nan")
    guess = (norm.ppf(1 - alpha / 2) + norm.ppf(power)) * sd / np.sqrt(n)
    high = 2 * guess
    while t_power(high, sd, n, alpha) < power:
        high *= 2
    return float(brentq(lambda x: t_power(x, sd, n, alpha) - power, 0.0, high, xtol=1e-10))


def mde_normal(sd: float, n: int, alpha: float, power: float = POWER) -> float:
    """The normal approximation of :func:`mde`: (z(1 - alpha/2) + z(power)) * sd / sqrt(n)."""
    from scipy.stats import norm

    if not np.isfinite(sd) or sd <= 0 or n < 1:
        return float("nan")
    return float((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * sd / np.sqrt(n))


def strictest_alpha(alpha: float, correction: str, m: int) -> float:
    """The level of a family's strictest step: alpha / m under Holm or Bonferroni (m >= 1), alpha itself without a
    correction."""
    return alpha if correction == "none" else alpha / max(int(m), 1)


def power_summary(table, alpha: float, correction: str = "holm"):
    """Per view and measure of a significance table: n, the queries without a relevant document, the tested
    comparisons (identical ones left out), the SD of their paired differences (median, min, max), and the MDE at
    80% power from the median SD, at ``alpha`` and at the correction's strictest step alpha / m (m: the largest
    family at that view and measure, else the table's largest; alpha itself without a correction)."""
    import pandas as pd

    tested = table[table["baseline"].notna() & table["p"].notna()]
    in_family = table[table["family"].fillna("") != ""]
    overall = int(in_family["family_size"].max()) if len(in_family) else 1
    rows = []
    for (view, measure), group in table.groupby(["view", "measure"], sort=False):
        rows_tested = tested[(tested["view"] == view) & (tested["measure"] == measure)]
        fam = in_family[(in_family["view"] == view) & (in_family["measure"] == measure)]
        m = max(int(fam["family_size"].max()) if len(fam) else overall, 1)
        strict = strictest_alpha(alpha, correction, m)
        n = int(group["n_queries"].max())
        sd = rows_tested["sd_diff"]
        median = float(sd.median()) if len(sd) else float("nan")
        rows.append({"view": view, "measure": measure, "n_queries": n,
                     "n_no_relevant": int(group["n_no_relevant"].max()),
                     "n_comparisons": len(rows_tested), "sd_median": median,
                     "sd_min": float(sd.min()) if len(sd) else float("nan"),
                     "sd_max": float(sd.max()) if len(sd) else float("nan"),
                     "alpha": alpha, "mde": mde(median, n, alpha), "mde_normal": mde_normal(median, n, alpha),
                     "m": m, "alpha_strictest": strict, "mde_strictest": mde(median, n, strict)})
    return pd.DataFrame(rows)
