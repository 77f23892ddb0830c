"""From judge scores to labels: cut points chosen on dev pairs, applied unchanged to test pairs; score ensembles.

A scoring judge (superb.judges.scoring) gives each pair a number (an expected grade in [0, 3], or P(yes) in [0, 1]).
A calibration is an object with ``fit(scores, human)`` on the DEV pairs and ``apply(scores)`` on any pairs (the TEST
pairs): k-1 non-decreasing cut points c_1 <= ... <= c_{k-1} over the label set l_0 < ... < l_{k-1}, and

    label(s) = l_j   where j = number of cut points <= s

(a score equal to a cut point goes up). Equal cut points mean a label that is never given.

``KappaCutSearch`` (the default): the cut points that maximise Cohen's weighted kappa (linear weights by default)
between the labels they give and the human labels of the dev pairs. The search is EXHAUSTIVE over a candidate grid:

1. candidates: the midpoints between consecutive distinct dev scores, plus one cut below every score and one above
   every score (so any label may end up unused). With ``reachable=True`` only strictly increasing midpoints are
   chosen, so every label keeps a score interval that holds at least one dev score (the reported alternative when
   the unconstrained optimum collapses a grade). With more than ``max_candidates`` midpoints, the midpoints at
   ``max_candidates`` evenly spaced positions of the sorted distinct scores are kept (documented coarsening).
2. every non-decreasing choice of k-1 candidates is scored (4 labels, 200 midpoints + 2: 1,394,204 choices), from
   cumulative per-label counts: kappa telescopes into one precomputed number per cut (see ``_kappas``), vectorised.
3. the best kappa wins; ties go to the first choice in lexicographic order of the candidate positions (the lowest
   cut points). The chosen cuts, the dev kappa and the grid size are kept on the object (``cuts``, ``dev_kappa``,
   ``n_candidates``, ``n_choices``, ``n_dev``).

``FixedCuts``: given cut points, fit is a no-op (e.g. (0.5, 1.5, 2.5) rounds an expected grade).

Ensembles: ``Ensemble`` averages several judges' scores after normalising each judge's scores with a normaliser
fitted on the DEV scores of that judge: ``RankNormaliser`` (default; a score's mid-rank percentile among the judge's
dev scores, so scales as different as P(yes) and an expected grade become comparable and a test score is mapped
without looking at other test pairs) or ``MinMaxNormaliser`` (dev min -> 0, dev max -> 1, clipped). The ensemble
score is then calibrated like any judge's score.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from superb.judges.agreement import LABELS, WEIGHTS, disagreement_weights, cohen_kappa

CHUNK = 50_000  # cut-point choices scored per vectorised step


def _as_scores(scores, what: str) -> np.ndarray:
    x = np.asarray(scores, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        bad = int(np.sum(~np.isfinite(x)))
        raise ValueError(f"{what}: {bad} scores are NaN or infinite; drop the unscored pairs first (they are "
                         "counted in the report)")
    return x


class _Cuts:
    """Shared apply(): labels from cut points."""

    labels: tuple[int, ...]
    cuts: tuple[float, ...] | None = None

    def apply(self, scores) -> np.ndarray:
        if self.cuts is None:
            raise ValueError(f"{type(self).__name__} is not fitted: call fit(dev_scores, dev_labels) first")
        x = _as_scores(scores, "scores")
        positions = np.searchsorted(np.asarray(self.cuts, dtype=float), x, side="right")
        return np.asarray(self.labels)[positions]

    def describe(self) -> str:
        return "none" if self.cuts is None else ", ".join(_fmt_cut(c) for c in self.cuts)


def _fmt_cut(c: float) -> str:
    return "-inf" if c == -np.inf else "+inf" if c == np.inf else f"{c:.4g}"


class FixedCuts(_Cuts):
    def __init__(self, cuts: Sequence[float], labels: Sequence[int] = LABELS):
        self.labels = tuple(int(x) for x in labels)
        if len(cuts) != len(self.labels) - 1 or any(b < a for a, b in zip(cuts, cuts[1:])):
            raise ValueError(f"FixedCuts: need {len(self.labels) - 1} non-decreasing cut points for labels "
                             f"{list(self.labels)}, got {list(cuts)}")
        self.cuts = tuple(float(c) for c in cuts)

    def __repr__(self) -> str:
        return f"FixedCuts({self.describe()})"

    def fit(self, scores, human) -> "FixedCuts":
        return self


class WrittenLabels(FixedCuts):
    """A judge's WRITTEN grade taken as its label (UMBRELA's own reading): cut points halfway between the grades, so
    grade g maps to g; nothing is fitted. ``fit`` only records the dev pairs' count and linear kappa, for the
    record (``n_dev``, ``dev_kappa``) that a fitted calibration has."""

    weights = "none: the written grade"

    def __init__(self, labels: Sequence[int] = LABELS):
        labels = tuple(int(x) for x in labels)
        super().__init__([(a + b) / 2 for a, b in zip(labels, labels[1:])], labels)
        self.n_dev, self.dev_kappa = 0, float("nan")

    def __repr__(self) -> str:
        return "WrittenLabels()"

    def fit(self, scores, human) -> "WrittenLabels":
        self.n_dev = len(scores)
        if self.n_dev:
            self.dev_kappa = cohen_kappa(list(human), self.apply(scores).tolist(), self.labels, "linear")
        return self

    def describe(self) -> str:
        return "written grade"


class KappaCutSearch(_Cuts):
    """Cut points maximising weighted kappa on the dev pairs (see the module docstring for the search)."""

    def __init__(self, weights: str = "linear", labels: Sequence[int] = LABELS, max_candidates: int = 200,
                 reachable: bool = False):
        if weights not in WEIGHTS:
            raise ValueError(f"KappaCutSearch: weights={weights!r}; use one of {list(WEIGHTS)}")
        if int(max_candidates) < 1:
            raise ValueError(f"KappaCutSearch: max_candidates must be >= 1, got {max_candidates!r}")
        self.weights = weights
        self.labels = tuple(int(x) for x in labels)
        self.max_candidates = int(max_candidates)
        self.reachable = bool(reachable)
        self.cuts = None
        self.dev_kappa = float("nan")
        self.n_dev = self.n_candidates = self.n_choices = 0

    def __repr__(self) -> str:
        return (f"KappaCutSearch(weights={self.weights!r}, reachable={self.reachable}, cuts=({self.describe()}), "
                f"dev_kappa={self.dev_kappa:.3f})")

    def candidates(self, scores: np.ndarray) -> np.ndarray:
        values = np.unique(scores)
        mids = (values[:-1] + values[1:]) / 2.0
        if len(mids) > self.max_candidates:
            mids = mids[np.unique(np.round(np.linspace(0, len(mids) - 1, self.max_candidates)).astype(int))]
        return np.concatenate(([-np.inf], mids, [np.inf]))

    def fit(self, scores, human) -> "KappaCutSearch":
        x = _as_scores(scores, "dev scores")
        h = np.asarray(human)
        if len(x) != len(h):
            raise ValueError(f"dev scores and human labels differ in length ({len(x)} vs {len(h)})")
        if len(x) == 0:
            raise ValueError("no dev pairs to fit cut points on")
        index = {lab: i for i, lab in enumerate(self.labels)}
        unknown = sorted({int(v) for v in h if int(v) not in index})
        if unknown:
            raise ValueError(f"human labels {unknown} are not in the label set {list(self.labels)}")
        hpos = np.array([index[int(v)] for v in h])
        if len(set(hpos.tolist())) < 2:
            raise ValueError(f"every dev pair carries the human label {int(h[0])}: kappa cannot rank cut points; "
                             "calibrate on pairs with at least two different human labels")
        k = len(self.labels)
        cand = self.candidates(x)
        # below[c, l] = dev pairs with score < cand[c] and human label l
        onehot = np.eye(k)[hpos]
        order = np.argsort(x, kind="stable")
        cum = np.vstack([np.zeros(k), np.cumsum(onehot[order], axis=0)])
        below = cum[np.searchsorted(x[order], cand, side="left")]
        total = onehot.sum(axis=0)
        w = disagreement_weights(k, self.weights)
        best, best_choice, n_choices = -np.inf, None, 0
        if self.reachable:  # strictly increasing midpoints: every label keeps a score interval holding a dev score
            if len(cand) - 2 < k - 1:
                raise ValueError(f"reachable cut points need {k - 1} distinct midpoints, the dev scores give "
                                 f"{len(cand) - 2} ({len(np.unique(x))} distinct scores)")
            choices = itertools.combinations(range(1, len(cand) - 1), k - 1)
        else:
            choices = itertools.combinations_with_replacement(range(len(cand)), k - 1)
        while True:
            chunk = np.fromiter(itertools.chain.from_iterable(itertools.islice(choices, CHUNK)), dtype=np.int64)
            if chunk.size == 0:
                break
            chunk = chunk.reshape(-1, k - 1)
            n_choices += len(chunk)
            kappas = np.round(_kappas(below, total, chunk, w), 12)  # equal up to float noise = a tie
            i = int(np.nanargmax(np.where(np.isnan(kappas), -np.inf, kappas)))
            if kappas[i] > best:  # strictly better: earlier choices win ties
                best, best_choice = float(kappas[i]), chunk[i]
        if best_choice is None or not np.isfinite(best):
            raise ValueError("no cut points give a defined kappa on the dev pairs (all dev pairs carry one human "
                             "label?); calibrate on pairs with at least two human labels")
        self.cuts = tuple(float(cand[c]) for c in best_choice)
        self.dev_kappa, self.n_dev = best, len(x)
        self.n_candidates, self.n_choices = len(cand), n_choices
        return self


def _kappas(below: np.ndarray, total: np.ndarray, choices: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted kappa of each cut choice (rows of ``choices``: candidate positions of cuts 1..k-1).

    With C_0 = 0, C_i = below[cut i] (per human label, pairs under cut i), C_k = total, the predicted-label x human
    table is T_p = C_{p+1} - C_p, so the observed disagreement sum_p w_p . T_p telescopes into
    w_{k-1} . total + sum_i (w_{i-1} - w_i) . C_i, a sum of one precomputed number per cut; the chance disagreement
    (human marginal fixed, predicted marginal n_p = |C_{p+1}| - |C_p|) telescopes the same way with
    v_p = sum_j w_pj total_j / N. So a choice costs k-1 look-ups, not a k x k table."""
    k, n = len(total), float(total.sum())
    v = w @ total / n
    below_n = below.sum(axis=1)
    observed = np.full(len(choices), float(total @ w[k - 1]))
    chance = np.full(len(choices), n * v[k - 1])
    for i in range(1, k):
        observed += (below @ (w[i - 1] - w[i]))[choices[:, i - 1]]
        chance += (below_n * (v[i - 1] - v[i]))[choices[:, i - 1]]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(chance > 1e-12 * n, 1.0 - observed / chance, np.nan)


# --- normalisers and ensembles ----------------------------------------------------------------------------------------
class RankNormaliser:
    """Mid-rank percentile among the dev scores: (#dev < s + 0.5 * #dev == s) / #dev, in [0, 1]."""

    name = "rank"

    def fit(self, scores) -> "RankNormaliser":
        self.sorted_ = np.sort(_as_scores(scores, "dev scores"))
        if len(self.sorted_) == 0:
            raise ValueError("RankNormaliser: no dev scores to fit on")
        return self

    def apply(self, scores) -> np.ndarray:
        x = _as_scores(scores, "scores")
        lo = np.searchsorted(self.sorted_, x, side="left")
        hi = np.searchsorted(self.sorted_, x, side="right")
        return (lo + 0.5 * (hi - lo)) / len(self.sorted_)


class MinMaxNormaliser:
    """(s - dev min) / (dev max - dev min), clipped to [0, 1]; 0.5 everywhere when the dev scores are constant."""

    name = "minmax"

    def fit(self, scores) -> "MinMaxNormaliser":
        x = _as_scores(scores, "dev scores")
        if len(x) == 0:
            raise ValueError("MinMaxNormaliser: no dev scores to fit on")
        self.low_, self.high_ = float(x.min()), float(x.max())
        return self

    def apply(self, scores) -> np.ndarray:
        x = _as_scores(scores, "scores")
        if self.high_ <= self.low_:
            return np.full(len(x), 0.5)
        return np.clip((x - self.low_) / (self.high_ - self.low_), 0.0, 1.0)


NORMALISERS = {"rank": RankNormaliser, "minmax": MinMaxNormaliser}


class Ensemble:
    """The mean of several judges' normalised scores (normalisers fitted on each judge's dev scores).

    ``fit(dev)`` and ``apply(frame)`` take a frame with one score column per member (rows = pairs); pairs must be
    scored by every member (drop the others first; the report counts them)."""

    def __init__(self, members: Sequence[str], normaliser: str = "rank"):
        if len(members) < 2 or len(set(members)) != len(members):
            raise ValueError(f"an ensemble needs at least two different members, got {list(members)}")
        if normaliser not in NORMALISERS:
            raise ValueError(f"unknown normaliser {normaliser!r}; choose one of {sorted(NORMALISERS)}")
        self.members, self.normaliser = tuple(members), normaliser
        self.fitted_: dict[str, object] = {}

    def __repr__(self) -> str:
        return f"Ensemble({'+'.join(self.members)}, normaliser={self.normaliser!r})"

    @property
    def name(self) -> str:
        return f"mean({', '.join(self.members)}; {self.normaliser})"

    def _columns(self, frame: pd.DataFrame) -> None:
        missing = [m for m in self.members if m not in frame.columns]
        if missing:
            raise ValueError(f"{self!r}: no score column for {missing}; found {list(frame.columns)}")

    def fit(self, dev: pd.DataFrame | Mapping[str, Sequence[float]]) -> "Ensemble":
        dev = pd.DataFrame(dev)
        self._columns(dev)
        self.fitted_ = {m: NORMALISERS[self.normaliser]().fit(dev[m]) for m in self.members}
        return self

    def apply(self, frame: pd.DataFrame | Mapping[str, Sequence[float]]) -> np.ndarray:
        if not self.fitted_:
            raise ValueError(f"{self!r} is not fitted: call fit(dev) first")
        frame = pd.DataFrame(frame)
        self._columns(frame)
        return np.mean([self.fitted_[m].apply(frame[m]) for m in self.members], axis=0)
