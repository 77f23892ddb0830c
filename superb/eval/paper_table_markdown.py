"""table.md of a paper's table (superb.eval.paper_table), and the grid and caption table.tex shares.

Both tables (table.md, and table.tex of superb.eval.paper_table_latex) show the same grid: a row per system (the rows run here first, in the folders' order, then the quoted
ones under a line of their own), a column per collection and measure (the header gives the collection's n), then
the average when it was asked for. A cell is the folder's own mean at 4 decimals with the mark its own table gives
(a dagger: significantly better, a double dagger: worse than the row's baseline; c confirmatory, e exploratory;
(=) identical to the baseline on every query); a dash where a system has no value. The best value of each column is
bold. The caption (the footnote of table.md) states each collection's test, correction, alpha and n, the baseline
the marks are against, and what the average and the quoted rows are. ``link`` makes every number of table.md a link
to its row of table.csv (for READMEs whose numbers are bound to their files: scripts/readme_numbers.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pandas as pd

from superb.eval.paper_table import AVERAGE
from superb.eval.stats import CORRECTION_NAMES, TEST_NAMES
from superb.eval.table_markdown import BETTER, CONFIRMED, EXPLORED, SAME, WORSE
from superb.folder.verify import Mismatch, note

DASH = "\u2013"
MD_SYMBOLS = {BETTER: BETTER, WORSE: WORSE, CONFIRMED: CONFIRMED, EXPLORED: EXPLORED, "=": SAME, "alpha": "\u03b1",
              "ge": "\u2265"}


@dataclass
class Grid:
    """The table's layout: columns (collection, measure), rows (kind, system, model key), cells and bold cells."""

    columns: list[tuple[str, str]]
    rows: list[tuple[str, str, str]]
    cells: dict[tuple, pd.Series]  # (row, column) -> the frame's row
    best: dict[tuple[str, str], float]  # column -> its best mean at 4 decimals

    def models(self, row: tuple[str, str, str], frame: pd.DataFrame) -> str:
        kind, system, model = row
        if kind == "quoted":
            return model
        found = frame[(frame["kind"] == kind) & (frame["system"] == system)]["model"].fillna("").astype(str)
        return "; ".join(m for m in dict.fromkeys(found) if m)


def grid(frame: pd.DataFrame) -> Grid:
    collections = [c["name"] for c in frame.attrs["collections"]]
    measures = list(frame.attrs["measures"])
    columns = [(c, m) for c in collections for m in measures]
    if frame.attrs.get("average"):
        columns += [(AVERAGE, m) for m in measures]
    rows: list[tuple[str, str, str]] = []
    cells = {}
    for kind in ("run", "quoted"):
        for r in frame[frame["kind"] == kind].to_dict("records"):
            row = (kind, str(r["system"]), str(r["model"]) if kind == "quoted" else "")
            if row not in rows:
                rows.append(row)
            cells[(row, (r["collection"], r["measure"]))] = r
    best = {}
    for column in columns:
        values = [round(float(cells[(row, column)]["mean"]), 4) for row in rows if (row, column) in cells]
        if values:
            best[column] = max(values)
    return Grid(columns, rows, cells, best)


def cell_text(g: Grid, row: tuple, column: tuple) -> tuple[str, list[str], bool]:
    """(the number, its marks in MD_SYMBOLS' keys, bold) of a cell; ("", [], False) for a system without a value
    there."""
    r = g.cells.get((row, column))
    if r is None:
        return "", [], False
    mark = str(r.get("mark") or "") if pd.notna(r.get("mark")) else ""
    return f"{float(r['mean']):.4f}", list(mark.replace(SAME.strip(), "=").strip()), round(float(r["mean"]), 4) == \
        g.best.get(column)


def caption(frame: pd.DataFrame, symbols: Mapping[str, str], escape: Callable[[str], str] = str) -> str:
    """The sentences under (or above) the table: n per collection, the marks and each collection's test,
    correction and alpha, bold, the average, the quoted rows."""
    collections = frame.attrs["collections"]
    measures = ", ".join(escape(m) for m in frame.attrs["measures"])
    ns = "; ".join(f"{escape(c['name'])}: n = {c['n_queries']} queries" for c in collections)
    text = f"{measures} per collection ({ns}). Each cell is its results folder's own mean and mark, nothing re-tested"
    text += f" across collections: {symbols[BETTER]} significantly better, {symbols[WORSE]} significantly worse than "
    text += "the row's baseline in that collection"
    groups: dict[str, list[str]] = {}
    for c in collections:
        against = ", ".join(escape(b) for b in c["baselines"]) or "none (no row is tested)"
        family = ("over each declared family of hypotheses" if c["declared"] else
                  "over the systems tested against the same baseline, per measure")
        correction = CORRECTION_NAMES[c["correction"]] + ("" if c["correction"] == "none" else f" {family}")
        what = (f"against {against}, two-sided {TEST_NAMES[c['test']]}, {correction}, "
                f"{symbols['alpha']} = {c['alpha']:g}")
        groups.setdefault(what, []).append(escape(c["name"]))
    text += " (" + "; ".join(f"{', '.join(names)}: {what}" for what, names in groups.items()) + ")."
    marks = "".join(str(m) for m in frame["mark"].fillna(""))
    if any(c["declared"] for c in collections):
        text += (f" {symbols[CONFIRMED]} confirmatory: declared in the folder's spec before its queries were read; "
                 f"{symbols[EXPLORED]} exploratory: not corrected, no significance claim.")
    if "=" in marks:
        text += f" {symbols['='].strip()} identical to the baseline on every query (no test)."
    text += " Unmarked: not significant, or not tested."
    if any("rel=" in m for m in frame.attrs["measures"]):
        text += " P(rel=k) and AP(rel=k) count labels " + symbols["ge"] + " k as relevant."
    text += " Bold: the best value of each column."
    if frame.attrs.get("average"):
        text += " Average: the mean of the collections' means (only for a row with every collection), not tested."
    if (frame["kind"] == "quoted").any():
        text += (" Quoted rows: other systems' published numbers, each with the model it used, copied from their "
                 "sources (not run here, never tested).")
    return text


def format_markdown(frame: pd.DataFrame, *, title: str = "", link: str | None = None) -> str:
    """table.md: the grid (see the module docstring), the caption, and the quoted rows' sources. With ``link``
    (table.csv's path as the reader of the markdown reaches it) every number links to its row of table.csv."""
    g = grid(frame)
    n = {c["name"]: c["n_queries"] for c in frame.attrs["collections"]}
    header = ["System", "Model"] + [f"{c} {m}" + (f" (n = {_n(n[c], link, g, c)})" if c in n else "")
                                    for c, m in g.columns]
    lines = ["| " + " | ".join(header) + " |", "|:---|:---|" + "---:|" * len(g.columns)]
    quoted_started = False
    for row in g.rows:
        if row[0] == "quoted" and not quoted_started:
            quoted_started = True
            lines.append("| *quoted from their sources, not run here* |" + " |" * (len(g.columns) + 1))
        out = [_md(row[1]), _md(g.models(row, frame)) or DASH]
        for column in g.columns:
            number, marks, bold = cell_text(g, row, column)
            mark = "".join(MD_SYMBOLS.get(m, m) for m in marks)
            if not number:
                out.append(DASH)
                continue
            if link:
                number = f"[{number}](<{_target(link, row, column)}>)"
            out.append((f"**{number}**" if bold else number) + mark)
        lines.append("| " + " | ".join(out) + " |")
    unverified = note([Mismatch.from_dict(m) for m in frame.attrs.get("unverified") or []])
    text = ((f"# {title}\n\n" if title else "") + (f"{unverified}\n\n" if unverified else "") + "\n".join(lines)
            + "\n\n" + caption(frame, MD_SYMBOLS) + "\n")
    quoted = frame[(frame["kind"] == "quoted") & (frame["collection"] != AVERAGE)]
    sources = list(dict.fromkeys(quoted["source"].astype(str)))
    if sources:
        text += "\nSources of the quoted rows: " + "; ".join(sources) + ".\n"
    return text


def _n(n: int, link: str | None, g: Grid, collection: str) -> str:
    """A collection's n, linked to the n_queries of its first row run here when numbers link to table.csv."""
    if not link:
        return str(n)
    row, column = next((r, c) for (r, c) in g.cells if r[0] == "run" and c[0] == collection)
    return f"[{n}](<{_target(link, row, column).replace('&col=mean', '&col=n_queries')}>)"


def _md(text: str) -> str:
    return str(text).replace("|", "\\|")


def _target(link: str, row: tuple, column: tuple) -> str:
    """``link#system=...&collection=...&measure=...&col=mean``, ``>`` escaped (scripts/readme_numbers.py's form)."""
    kind, system, model = row
    pairs = [("system", system)] + ([("model", model)] if kind == "quoted" else []) + [
        ("collection", column[0]), ("measure", column[1]), ("col", "mean")]
    fragment = "&".join(f"{k}={v.replace('&', '%26')}" for k, v in pairs)
    return re.sub(r"([<>\\])", r"\\\1", f"{link}#{fragment}")
