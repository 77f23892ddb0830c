"""Pairwise judging by probabilities: a precision/recall curve as the decision threshold moves.

For each pair (products a and b of one query whose human grades differ; superb.judges.studies.pairwise.sample_pairs),
the model is asked in BOTH orders with a one-token label request (superb.llm.preference.PairwisePreference, template
``pairwise_ab``), and each order gives P(a preferred):

    p1 = P_A(a, b)            a shown as Product A
    p2 = 1 - P_A(b, a)        b shown as Product A

A RULE (a strategy object) turns (p1, p2) into a side (a or b) and a margin; at threshold t the judge decides the
pairs whose margin is above t, and abstains on the others:

- ``BothOrdersAgree`` (the rule of the study): both orders lean to the same side, and the margin is the smaller of
  |p1 - 0.5| and |p2 - 0.5|: a decision only where both orders agree beyond t. At t = 0 this is the probability
  version of the generated "check both ways" form.
- ``MeanOfOrders`` (PRP's combination, superb.llm.preference.combine): side and margin of mean(p1, p2) - 0.5; a
  constant position bias cancels, but the orders need not agree.

precision(t) = agreeing decisions / decisions; recall(t) = decisions / pairs asked (as in the generated study,
superb.judges.agreement.pairwise_precision_recall). The curve is computed at every threshold where a decision drops
out (every distinct margin), so it is exact, not sampled. A pair an order of which has no answer (a failed call, no
letter among the top logprobs and none generated) is never decided, and counted.

The generated forms (forced choice, allow-neither, each in one order and with the swapped-order check;
superb.judges.studies.pairwise) are points on the same plot.

COST per pair and field set: the probability form 2 one-token label requests; each generated form 2 short generated
answers (both orders; the one-order point reads the first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from superb.llm.runner import run_all
from superb.judges.studies.pairwise import ticking, progress_bar
from superb.llm.preference import PairwisePreference

MARGIN_QUANTILES = (0.25, 0.5, 0.75, 0.9)  # pairwise.md reads the curve at these quantiles of the observed margins
CALLS_PER_PAIR = {"probability": 2, "forced": 2, "allow neither": 2}
CURVE_COLUMNS = ["fields", "rule", "threshold", "asked", "decided", "agreed", "precision", "recall"]


class BothOrdersAgree:
    """Decide only where both orders lean to the same side; margin = the smaller of their distances from 0.5."""

    name = "both orders agree"

    def __repr__(self) -> str:
        return "BothOrdersAgree()"

    def side_margin(self, p1: np.ndarray, p2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s1, s2 = p1 - 0.5, p2 - 0.5
        agree = (s1 * s2) > 0
        margin = np.where(agree, np.minimum(np.abs(s1), np.abs(s2)), -1.0)
        return np.where(s1 > 0, "A", "B"), np.where(np.isnan(margin), -1.0, margin)


class MeanOfOrders:
    """Decide by mean(p1, p2); margin = its distance from 0.5."""

    name = "mean of both orders"

    def __repr__(self) -> str:
        return "MeanOfOrders()"

    def side_margin(self, p1: np.ndarray, p2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m = (p1 + p2) / 2.0 - 0.5
        margin = np.where(m != 0, np.abs(m), -1.0)
        return np.where(m > 0, "A", "B"), np.where(np.isnan(margin), -1.0, margin)


RULES = (BothOrdersAgree(), MeanOfOrders())


def ask_preferences(dataset: Any, llm: Any, pairs: pd.DataFrame, fields: Sequence[str], *,
                    template: Any = "pairwise_ab", max_chars: int = 600, bar: Any = None) -> tuple[pd.DataFrame, dict]:
    """One row per pair: pair, p1, p2 (NaN where that order has no answer), the source of each order's reading,
    and the human side. Returns (frame, the PairwisePreference's stats and template id). ``bar``: a progress bar
    advanced once per pair."""

    pref = PairwisePreference(llm, template, both_orders=True, fields=tuple(fields), max_chars=max_chars,
                              tag="judge:pairwise-probability")
    docs = {d: dataset.doc(d) for d in pd.unique(pairs[["docno_a", "docno_b"]].to_numpy().ravel())}
    coros = [pref.prefer(p.query, docs[p.docno_a], docs[p.docno_b]) for p in pairs.itertuples()]
    answers = run_all(llm, coros if bar is None else [ticking(c, bar) for c in coros])
    rows = []
    for p, a in zip(pairs.itertuples(), answers):
        first, second = a.orders
        rows.append({"pair": p.pair, "qid": p.qid, "docno_a": p.docno_a, "docno_b": p.docno_b, "human": p.human,
                     "p1": np.nan if first.dist is None else first.dist[0],
                     "p2": np.nan if second.dist is None else 1.0 - second.dist[0],
                     "source1": first.source, "source2": second.source, "p": np.nan if a.p is None else a.p})
    return pd.DataFrame(rows), {"template": pref.template.id, "stats": dict(pref.stats)}


def curve(prefs: pd.DataFrame, rule: Any) -> pd.DataFrame:
    """threshold, asked, decided, agreed, precision, recall at t = 0 and at every distinct positive margin (where a
    decision drops out), for ``rule`` on ``prefs`` (columns p1, p2, human)."""
    p1, p2 = prefs["p1"].to_numpy(dtype=float), prefs["p2"].to_numpy(dtype=float)
    side, margin = rule.side_margin(p1, p2)
    correct = side == prefs["human"].to_numpy()
    asked = len(prefs)
    thresholds = np.unique(np.concatenate(([0.0], margin[margin > 0])))
    rows = []
    for t in thresholds:
        decided = margin > t
        n, agreed = int(decided.sum()), int((decided & correct).sum())
        rows.append({"rule": rule.name, "threshold": float(t), "asked": asked, "decided": n, "agreed": agreed,
                     "precision": agreed / n if n else np.nan, "recall": n / asked if asked else np.nan})
    return pd.DataFrame(rows)


def at_thresholds(full: pd.DataFrame, thresholds: Sequence[float] | None = None) -> pd.DataFrame:
    """The curve read at thresholds: the row of the largest computed threshold <= t (decisions are constant between
    computed thresholds). ``thresholds`` None (pairwise.md): per (fields, rule), t = 0 and the quantiles
    MARGIN_QUANTILES of the margins the model produced there (the curve's positive thresholds), so a small model
    whose margins all stay below 0.05 still shows its curve; column ``at`` says which ("0", "q50", ...)."""
    rows = []
    for (fields, rule), g in full.groupby(["fields", "rule"], sort=False):
        g = g.sort_values("threshold")
        if thresholds is None:
            margins = g.loc[g["threshold"] > 0, "threshold"].to_numpy()
            points = [("0", 0.0)] + ([(f"q{round(100 * q)}", float(np.quantile(margins, q)))
                                      for q in MARGIN_QUANTILES] if len(margins) else [])
        else:
            points = [(f"{t:g}", float(t)) for t in thresholds]
        for label, t in points:
            row = g[g["threshold"] <= t + 1e-12].iloc[-1].to_dict()
            rows.append({**row, "threshold": t, "at": label})
    return pd.DataFrame(rows, columns=[*CURVE_COLUMNS, "at"])


def format_tables(table: pd.DataFrame, generated: pd.DataFrame | None) -> str:
    """Markdown: the probability rules at fixed thresholds, then the generated forms' points."""
    lines = ["| fields | rule | margin above | threshold | asked | decided | precision | recall |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in table.itertuples(index=False):
        prec = "n/a" if np.isnan(r.precision) else f"{100 * r.precision:.1f}%"
        at = getattr(r, "at", f"{r.threshold:g}")
        at = "0" if at == "0" else f"{at[1:]}% of the margins" if at.startswith("q") else at
        lines.append(f"| {r.fields} | {r.rule} | {at} | {r.threshold:.4f} | {r.asked} | {r.decided} | {prec} | "
                     f"{100 * r.recall:.1f}% |")
    if generated is not None and len(generated):
        lines += ["", "| fields | generated form | orders | asked | decided | precision | recall | unparseable |",
                  "|---|---|---|---:|---:|---:|---:|---:|"]
        for r in generated.itertuples(index=False):
            prec = "n/a" if np.isnan(r.precision) else f"{100 * r.precision:.1f}%"
            orders = "one" if r.orders == "one" else "both (swapped-order check)"
            lines.append(f"| {r.fields} | {r.choice} | {orders} | {r.asked} | {r.decided} | {prec} | "
                         f"{100 * r.recall:.1f}% | {r.unparseable} |")
    return "\n".join(lines) + "\n"


def pr_plot(full: pd.DataFrame, generated: pd.DataFrame | None, path: str | Path, title: str) -> None:
    """Precision against recall: one line per (fields, rule), the generated forms as marked points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    for (fields, rule), g in full.groupby(["fields", "rule"], sort=False):
        g = g[g["decided"] > 0].sort_values("recall")
        label = rule if full["fields"].nunique() == 1 else f"{rule} ({fields})"
        ax.plot(g["recall"], g["precision"], drawstyle="steps-post", label=f"P(first preferred): {label}")
    markers = {("forced", "one"): "o", ("forced", "both"): "s", ("allow neither", "one"): "^",
               ("allow neither", "both"): "D"}
    if generated is not None:
        for r in generated.itertuples(index=False):
            if r.decided == 0:
                continue
            orders = "" if r.orders == "one" else " + swapped check"
            suffix = "" if generated["fields"].nunique() == 1 else f" ({r.fields})"
            ax.scatter([r.recall], [r.precision], marker=markers.get((r.choice, r.orders), "x"), s=50, zorder=3,
                       label=f"generated: {r.choice}{orders}{suffix}")
    ax.axhline(0.5, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("recall (decisions / pairs asked)")
    ax.set_ylabel("precision (agreeing decisions / decisions)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def probability_study(dataset: Any, llm: Any, pairs: pd.DataFrame,
                      field_sets: Mapping[str, Sequence[str]]) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(per-pair readings, full curves) over every field set and rule, and info (template, stats per field set)."""

    readings, curves, info = [], [], {}
    bar = progress_bar(len(field_sets) * len(pairs))  # the same bar as the generated forms' (issue 23.10)
    try:
        for name, fields in field_sets.items():
            bar.set_description(f"pairwise probability ({name})", refresh=False)
            prefs, meta = ask_preferences(dataset, llm, pairs, fields, bar=bar)
            readings.append(prefs.assign(fields=name))
            for rule in RULES:
                curves.append(curve(prefs, rule).assign(fields=name))
            info[name] = meta
    finally:
        bar.close()
    return (pd.concat(readings, ignore_index=True), pd.concat(curves, ignore_index=True)[CURVE_COLUMNS], info)
