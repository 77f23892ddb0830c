"""The one per-query normalisation used wherever two score scales are blended (:func:`minmax`), and the one blend of
a stage's own score with the first stage (:func:`blend`, option ``alpha``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def minmax(values: Sequence[float], *, constant: float = 0.0) -> np.ndarray:
    """Min-max normalised to 0..1 (float64). A query whose values are all equal, or not finite in range, maps to
    ``constant`` everywhere: no preference (the bi-encoder's blend uses 1.0, the others 0.0; per query it only
    shifts every score alike, so the order is the same either way)."""
    v = np.asarray(values, dtype=np.float64)
    if not len(v):
        return v
    lo, hi = float(v.min()), float(v.max())
    if not hi - lo > 0 or not np.isfinite(hi - lo):
        return np.full_like(v, constant)
    return (v - lo) / (hi - lo)


def blend(own: Sequence[float], first_stage: Sequence[float], alpha: float, *, constant: float = 0.0) -> np.ndarray:
    """The one blend of a stage's own score with the first stage (option ``alpha``, ``Reranker.order_values``):
    ``alpha * own + (1 - alpha) * minmax(first_stage, constant=constant)`` per query, float64; alpha = 1 is ``own``
    itself. A non-finite own score stays as it is (it sorts last), whatever alpha."""
    own = np.asarray(own, dtype=np.float64)
    if alpha >= 1.0:
        return own.copy()
    with np.errstate(invalid="ignore"):  # 0 x -inf; replaced below
        mixed = alpha * own + (1.0 - alpha) * minmax(first_stage, constant=constant)
    return np.where(np.isfinite(own), mixed, own)
