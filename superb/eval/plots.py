"""Figures: effectiveness against LLM cost per reranker, and per-query gains of one system over its baseline.

matplotlib is imported inside the functions (Agg backend, no display needed).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

COST_COLUMNS = ("system", "ndcg10", "calls_per_query", "prompt_tokens_per_query")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; found {list(frame.columns)}")


def _save(fig, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


def cost_plot(points: pd.DataFrame, path, *, measure_label: str = "nDCG@10") -> Path:
    """Two panels: ``ndcg10`` against LLM calls per query and against prompt tokens per query, one numbered point
    per system and a key of the numbers beside the panels (names written next to points overlap once a table has
    more than a handful of systems; first stages sit at zero cost, and superb.run.results passes each system's cost with
    its inputs, so a fusion sits at the cost of the stages it fuses). Writes a PNG to ``path`` and returns it."""
    _require(points, COST_COLUMNS, "points")
    if points.empty:
        raise ValueError("points is empty: nothing to plot")
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    plt = _pyplot()
    names = points["system"].astype(str).tolist()
    y = pd.to_numeric(points["ndcg10"], errors="coerce").to_numpy(dtype=float)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    try:
        for ax, column, label in ((axes[0], "calls_per_query", "LLM requests per query (system + inputs)"),
                                  (axes[1], "prompt_tokens_per_query", "prompt tokens per query (system + inputs)")):
            x = pd.to_numeric(points[column], errors="coerce").to_numpy(dtype=float)
            ax.scatter(x, y, s=30, zorder=3)
            for i, offset in enumerate(_label_offsets(x, y)):
                ax.annotate(str(i + 1), (x[i], y[i]), textcoords="offset points", xytext=offset, fontsize=8)
            ax.set_xlabel(label)
            ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
            ax.margins(x=0.08, y=0.08)
            ax.grid(True, alpha=0.3)
        axes[0].set_ylabel(measure_label)
        key = "\n".join(f"{i + 1:>2}  {name}  ({v:.4f})" for i, (name, v) in enumerate(zip(names, y)))
        fig.text(0.92, 0.5, key, fontsize=8, family="monospace", va="center", ha="left")
        fig.suptitle(f"{measure_label} against LLM cost")
        return _save(fig, path)
    finally:
        plt.close(fig)


def _label_offsets(x: np.ndarray, y: np.ndarray) -> list[tuple[int, int]]:
    """Text offsets (points) for the numbers of the points ``x, y``: right and above, unless an earlier point sits
    within 3% of both axes' ranges, then the next free corner (right-below, left-above, left-below)."""
    corners = [(4, 3), (4, -10), (-12, 3), (-12, -10)]
    finite = np.isfinite(x) & np.isfinite(y)
    span_x = np.ptp(x[finite]) if finite.any() and np.ptp(x[finite]) > 0 else 1.0
    span_y = np.ptp(y[finite]) if finite.any() and np.ptp(y[finite]) > 0 else 1.0
    offsets: list[tuple[int, int]] = []
    for i in range(len(x)):
        near = [offsets[j] for j in range(i) if abs(x[j] - x[i]) <= 0.03 * span_x and abs(y[j] - y[i]) <= 0.03 * span_y]
        free = [c for c in corners if c not in near]
        offsets.append(free[0] if free else corners[len(near) % len(corners)])
    return offsets


def gain_plot(perquery: pd.DataFrame, system: str, baseline: str, measure, path) -> Path:
    """Sorted per-query differences ``system - baseline`` on ``measure`` as bars (wins above zero, losses below).

    ``perquery``: DataFrame[system, qid, measure, value]. Writes a PNG to ``path`` and returns it.
    """
    _require(perquery, ("system", "qid", "measure", "value"), "perquery")
    name = measure if isinstance(measure, str) else repr(measure)
    rows = perquery[perquery["measure"].map(lambda m: m if isinstance(m, str) else repr(m)) == name]
    series = {}
    for label in (system, baseline):
        values = rows[rows["system"] == label].set_index(rows[rows["system"] == label]["qid"].astype(str))["value"]
        if values.empty:
            raise ValueError(f"no per-query values of {name} for system {label!r}; systems present: "
                             f"{sorted(perquery['system'].astype(str).unique())}")
        series[label] = values
    if set(series[system].index) != set(series[baseline].index):
        raise ValueError(f"{system!r} and {baseline!r} are not on the same queries for {name}")
    diff = (series[system] - series[baseline].loc[series[system].index]).sort_values(ascending=False)
    d = diff.to_numpy(dtype=float)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, min(16.0, 0.06 * d.size + 4)), 4))
    try:
        colours = np.where(d > 0, "tab:green", np.where(d < 0, "tab:red", "tab:gray"))
        ax.bar(np.arange(d.size), d, width=1.0, color=colours)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xlim(-0.5, d.size - 0.5)
        ax.set_xlabel("queries, sorted by difference")
        ax.set_ylabel(f"\u0394 {name}")
        wins, losses = int((d > 0).sum()), int((d < 0).sum())
        ax.set_title(f"{system} vs {baseline}: {wins} better, {losses} worse, {d.size - wins - losses} tied "
                     f"(mean \u0394 {d.mean():+.4f})")
        return _save(fig, path)
    finally:
        plt.close(fig)
