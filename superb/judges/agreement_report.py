"""Agreement reports of judges against human labels: tables (CSV/markdown) and confusion heatmaps (PNG)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from superb.judges.agreement import confusion_matrix, human_ceiling
from superb.judges.records import Judgment

AGREEMENT_COLUMNS = ["a", "b", "n", "agreement", "kappa", "kappa_linear", "kappa_quadratic", "binary_agreement",
                     "binary_kappa", "default_labels"]


def aligned(judgments: Sequence[Judgment], human: pd.DataFrame, column: str = "label",
            label_map: Mapping[int, int] | None = None) -> pd.DataFrame:
    """qid, docno, judge, human, status for the judged pairs that ``human`` (qid, docno, <column>) labels;
    judge labels mapped through ``label_map`` (judge label -> human label) when given."""
    frame = pd.DataFrame([(j.qid, j.docno, j.label, j.status) for j in judgments],
                         columns=["qid", "docno", "judge", "status"])
    if label_map:
        frame["judge"] = frame["judge"].map(lambda x: label_map.get(int(x), int(x)))
    h = human[["qid", "docno", column]].astype({"qid": str, "docno": str}).rename(columns={column: "human"})
    return frame.merge(h, on=["qid", "docno"], how="inner")


def ceiling_rows(ratings: pd.DataFrame, labels: Sequence[int], rel: int | None, pairs: pd.DataFrame | None = None,
                 scope: str = "all rated pairs") -> list[dict]:
    """The human ceiling (superb.judges.agreement.human_ceiling) as agreement rows, on ``pairs`` (qid, docno) or all
    rated pairs; rows name the scope in column b."""
    if pairs is not None:
        ratings = ratings.merge(pairs[["qid", "docno"]].drop_duplicates(), on=["qid", "docno"])
    if ratings.empty:
        return []
    raters = [c for c in ratings.columns if c.startswith("rater_")]
    table = human_ceiling(ratings, raters=raters, labels=labels, rel_threshold=rel)
    rows = []
    for r in table.to_dict("records"):
        a, b = r.pop("a"), r.pop("b")
        rows.append({"a": f"{a} vs {b}", "b": f"humans, {scope}", **r})
    return rows


def agreement_frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows).reindex(columns=AGREEMENT_COLUMNS)


def format_markdown(frame: pd.DataFrame) -> str:
    header = ["judge / raters", "against", "n", "agreement", "kappa", "linear", "quadratic", "binary agr.",
              "binary kappa", "default labels"]
    lines = ["| " + " | ".join(header) + " |", "|---|---|" + "---:|" * (len(header) - 2)]
    for r in frame.itertuples(index=False):
        cells = [str(r.a), str(r.b), str(int(r.n))]
        for v in (r.agreement, r.kappa, r.kappa_linear, r.kappa_quadratic, r.binary_agreement, r.binary_kappa):
            cells.append("" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.3f}")
        d = r.default_labels
        cells.append("" if d is None or (isinstance(d, float) and np.isnan(d)) else str(int(d)))
        lines.append("| " + " | ".join(cells) + " |")
    notes = ("kappa: Cohen's kappa (unweighted; linear and quadratic weights) between the two label columns; for "
             "'all raters vs Fleiss' the kappa is Fleiss' kappa and the agreement the share of unanimous pairs; "
             "'rater vs others' consensus': the rater against the other raters' mean label, rounded, ties down "
             "(the human ceiling never compares a rater with a combined label that includes that rater). "
             "Binary: relevant = label >= the threshold. Default labels: pairs whose judge label is a counted "
             "fallback (unparseable answer or failed call).")
    return "\n".join(lines) + "\n\n" + notes + "\n"


def confusion_heatmap(human, judge, labels: Sequence[int], path: str | Path, title: str,
                      axes: tuple[str, str] = ("human label", "judge label")) -> Path:
    """PNG heatmap of the confusion matrix: rows ``human``, columns ``judge`` (axis names ``axes``), counts shown."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    cm = confusion_matrix(human, judge, labels).to_numpy()
    fig, ax = plt.subplots(figsize=(4.2, 3.6))
    ax.imshow(cm, cmap="Blues")
    ax.set_xticks(range(len(labels)), [str(x) for x in labels])
    ax.set_yticks(range(len(labels)), [str(x) for x in labels])
    ax.set_ylabel(axes[0])
    ax.set_xlabel(axes[1])
    ax.set_title(title, fontsize=9)
    top = cm.max() if cm.size else 0
    for i in range(cm.shape[0]):
        for j in range(cm.shape[1]):
            ax.text(j, i, str(cm[i, j]), ha="center", va="center",
                    color="white" if top and cm[i, j] > top / 2 else "black", fontsize=8)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path
