"""Agreement statistics between graded labellers: humans, LLM judges, and pairwise preference judges.

Everything here is pure numpy/pandas. Labels are graded relevance levels taken from a FIXED label set (default 0..3),
so a level that one labeller never uses still occupies its row and column of the confusion matrix and its share of the
weights: kappa on a subset of queries stays comparable with kappa on the whole set.

Definitions (k = number of labels, positions 0..k-1 in the label set):
- exact agreement: share of items with identical labels.
- Cohen's kappa: (p_o - p_e) / (1 - p_e) with chance agreement p_e from the two marginals. Weighted form:
  1 - sum(w * O) / sum(w * E), disagreement weights w_ij = |i-j|/(k-1) ("linear") or (i-j)^2/(k-1)^2 ("quadratic"),
  O the observed and E the chance-expected joint distribution. Undefined (NaN) when the chance disagreement is zero,
  e.g. both labellers always give the same single label.
- human ceiling: each rater against the consensus of the OTHER raters (leave-one-out: mean of their labels rounded,
  ties down) and rater against rater; never against a combined label that includes the rater.
- Fleiss' kappa for m >= 2 raters per item: (P_bar - P_e) / (1 - P_e), P_i the agreeing rater pairs of item i.
- Pairwise study ("check twice"): on pairs of products of one query whose human grades differ, a judge answers
  A, B or nothing. precision = agreeing decisions / decisions made; recall = decisions made / pairs asked.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

LABELS: tuple[int, ...] = (0, 1, 2, 3)
OTHERS = "others' consensus"  # the human ceiling's reference for one rater: the other raters (others_consensus)
WEIGHTS = ("none", "linear", "quadratic")


def label_positions(values, labels: Sequence[int], what: str) -> np.ndarray:
    """Map labels to their position in the label set; reject anything outside it, naming the value."""
    index = {lab: i for i, lab in enumerate(labels)}
    out = np.empty(len(values), dtype=np.int64)
    for n, v in enumerate(values):
        try:
            key = int(v)
        except (TypeError, ValueError):
            raise ValueError(f"{what}[{n}] = {v!r} is not a label; allowed labels: {list(labels)}") from None
        if key != v or key not in index:
            raise ValueError(f"{what}[{n}] = {v!r} is not in the label set {list(labels)}; map it first or pass labels=")
        out[n] = index[key]
    return out


def _pair(a, b, labels: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"the two label sequences differ in length ({len(a)} vs {len(b)}); align them by (qid, docno)")
    if not a:
        raise ValueError("no items to compare: both label sequences are empty")
    if len(set(labels)) != len(labels) or len(labels) < 2:
        raise ValueError(f"labels must be at least two distinct values, got {list(labels)}")
    return label_positions(a, labels, "a"), label_positions(b, labels, "b")


def confusion_matrix(a, b, labels: Sequence[int] = LABELS) -> pd.DataFrame:
    """Counts of (a label, b label): rows are a's labels, columns b's, both in the fixed order of `labels`."""
    pa, pb = _pair(a, b, labels)
    k = len(labels)
    counts = np.zeros((k, k), dtype=np.int64)
    np.add.at(counts, (pa, pb), 1)
    return pd.DataFrame(counts, index=pd.Index(labels, name="a"), columns=pd.Index(labels, name="b"))


def exact_agreement(a, b, labels: Sequence[int] = LABELS) -> float:
    pa, pb = _pair(a, b, labels)
    return float(np.mean(pa == pb))


def disagreement_weights(k: int, weights: str) -> np.ndarray:
    i, j = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    if weights == "none":
        return (i != j).astype(float)
    if weights == "linear":
        return np.abs(i - j) / (k - 1)
    if weights == "quadratic":
        return (i - j) ** 2 / (k - 1) ** 2
    raise ValueError(f"weights={weights!r} is not supported; use one of {list(WEIGHTS)}")


def kappa_from_confusion(counts: np.ndarray, weights: str = "none") -> float:
    """Cohen's kappa of a square count table (rows rater a, columns rater b)."""
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.shape[0] != counts.shape[1]:
        raise ValueError(f"a confusion matrix must be square, got shape {counts.shape}")
    total = counts.sum()
    if total <= 0:
        raise ValueError("the confusion matrix is empty")
    w = disagreement_weights(counts.shape[0], weights)
    observed = counts / total
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    chance = float((w * expected).sum())
    if chance == 0.0:
        return float("nan")
    return 1.0 - float((w * observed).sum()) / chance


def cohen_kappa(a, b, labels: Sequence[int] = LABELS, weights: str = "none") -> float:
    """Cohen's kappa between two labellers of the same items; weights "none" | "linear" | "quadratic"."""
    if weights not in WEIGHTS:
        raise ValueError(f"weights={weights!r} is not supported; use one of {list(WEIGHTS)}")
    return kappa_from_confusion(confusion_matrix(a, b, labels).to_numpy(), weights)


def per_label(truth, pred, labels: Sequence[int] = LABELS) -> pd.DataFrame:
    """Precision and recall of `pred` for each label of `truth`: NaN where a label is never predicted / never true."""
    counts = confusion_matrix(truth, pred, labels).to_numpy()
    hits = np.diag(counts).astype(float)
    support, predicted = counts.sum(axis=1), counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(predicted > 0, hits / np.maximum(predicted, 1), np.nan)
        recall = np.where(support > 0, hits / np.maximum(support, 1), np.nan)
    return pd.DataFrame({"label": list(labels), "support": support, "predicted": predicted,
                         "precision": precision, "recall": recall})


def fleiss_kappa(ratings, labels: Sequence[int] = LABELS) -> float:
    """Fleiss' kappa of an (items x raters) array of labels; every item must have the same number (>= 2) of raters."""
    table = np.asarray(ratings, dtype=object)
    if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] < 2:
        raise ValueError(f"ratings must be an items x raters array with >= 1 item and >= 2 raters, got {table.shape}")
    n_items, m = table.shape
    pos = label_positions(table.ravel().tolist(), labels, "ratings").reshape(n_items, m)
    counts = np.zeros((n_items, len(labels)), dtype=float)
    for r in range(m):
        np.add.at(counts, (np.arange(n_items), pos[:, r]), 1)
    p_item = ((counts ** 2).sum(axis=1) - m) / (m * (m - 1))
    p_bar = p_item.mean()
    p_label = counts.sum(axis=0) / (n_items * m)
    p_e = float((p_label ** 2).sum())
    if p_e == 1.0:
        return float("nan")
    return float((p_bar - p_e) / (1.0 - p_e))


def agreement_summary(truth, pred, labels: Sequence[int] = LABELS, rel_threshold: int | None = None) -> dict:
    """All two-labeller statistics in one flat dict (n, agreement, kappa unweighted/linear/quadratic, and, with a
    threshold, the binary agreement and kappa of relevant = label >= rel_threshold)."""
    counts = confusion_matrix(truth, pred, labels).to_numpy()
    out = {
        "n": int(counts.sum()),
        "agreement": float(np.trace(counts) / counts.sum()),
        "kappa": kappa_from_confusion(counts, "none"),
        "kappa_linear": kappa_from_confusion(counts, "linear"),
        "kappa_quadratic": kappa_from_confusion(counts, "quadratic"),
    }
    if rel_threshold is not None:
        bt = [int(x >= rel_threshold) for x in truth]
        bp = [int(x >= rel_threshold) for x in pred]
        out["binary_agreement"] = exact_agreement(bt, bp, (0, 1))
        out["binary_kappa"] = cohen_kappa(bt, bp, (0, 1))
    return out


def others_consensus(ratings: pd.DataFrame, rater: str, raters: Sequence[str],
                     labels: Sequence[int] = LABELS) -> np.ndarray:
    """The consensus of the raters OTHER than ``rater`` on each item: the mean of their labels rounded to the nearest
    label, a tie (x.5, two others one grade apart) going to the LOWER label; with one other rater, that rater's label.
    Rounding down is a stated convention (the combined label of a data set may use another rule); the human
    ceiling reports it beside every rater pair, which needs no rule."""
    others = [r for r in raters if r != rater]
    if not others:
        raise ValueError(f"no other rater than {rater!r} among {list(raters)}")
    pos = np.column_stack([label_positions(ratings[r].tolist(), labels, r) for r in others])
    mean = pos.mean(axis=1)
    return np.asarray(labels)[np.ceil(mean - 0.5).astype(int)]


def human_ceiling(ratings: pd.DataFrame, raters: Sequence[str] = ("rater_1", "rater_2", "rater_3"),
                  labels: Sequence[int] = LABELS, rel_threshold: int | None = None) -> pd.DataFrame:
    """How much humans agree with each other: one row per rater pair, one per rater against the consensus of the
    OTHER raters (``others_consensus``; b = "others' consensus"), never against a combined label that includes the
    rater; plus a row a="all raters", b="Fleiss" whose `kappa` is Fleiss' kappa and `agreement` the share of items
    on which every rater gave the same label. Columns: a, b, n, agreement, kappa, kappa_linear, kappa_quadratic (and
    the binary ones with ``rel_threshold``)."""
    missing = [c for c in raters if c not in ratings.columns]
    if missing:
        raise ValueError(f"ratings frame lacks columns {missing}; found {list(ratings.columns)}")
    if len(raters) < 2:
        raise ValueError(f"human_ceiling needs at least two rater columns, got {list(raters)}")
    rows = []
    for a, b in itertools.combinations(raters, 2):
        rows.append({"a": a, "b": b, **agreement_summary(ratings[a].tolist(), ratings[b].tolist(), labels,
                                                         rel_threshold)})
    if len(raters) > 2:
        for a in raters:
            consensus = others_consensus(ratings, a, raters, labels).tolist()
            rows.append({"a": a, "b": OTHERS, **agreement_summary(consensus, ratings[a].tolist(), labels,
                                                                  rel_threshold)})
    values = ratings[list(raters)].to_numpy()
    rows.append({"a": "all raters", "b": "Fleiss", "n": len(ratings),
                 "agreement": float(np.mean([len(set(r)) == 1 for r in values.tolist()])),
                 "kappa": fleiss_kappa(values, labels),
                 "kappa_linear": float("nan"), "kappa_quadratic": float("nan")})
    return pd.DataFrame(rows)


def pairwise_precision_recall(human, model) -> dict:
    """Pairwise preference study. `human` holds the better product of each pair ("A" or "B"; pairs with equal grades
    must be left out beforehand), `model` the judge's answer ("A", "B", or None when it abstained).
    Returns asked, decided, agreed, precision (NaN if nothing was decided) and recall."""
    human, model = list(human), list(model)
    if len(human) != len(model):
        raise ValueError(f"human and model decisions differ in length ({len(human)} vs {len(model)})")
    for n, h in enumerate(human):
        if h not in ("A", "B"):
            raise ValueError(f"human[{n}] = {h!r}; the human side must be 'A' or 'B' (drop ties before the study)")
    for n, d in enumerate(model):
        if d not in ("A", "B", None):
            raise ValueError(f"model[{n}] = {d!r}; a decision is 'A', 'B' or None (abstained)")
    asked = len(human)
    decided = sum(d is not None for d in model)
    agreed = sum(d is not None and d == h for h, d in zip(human, model))
    return {"asked": asked, "decided": decided, "agreed": agreed,
            "precision": agreed / decided if decided else float("nan"),
            "recall": decided / asked if asked else float("nan")}
