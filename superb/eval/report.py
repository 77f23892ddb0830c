"""Markdown for the significance table of :func:`superb.eval.evaluate.significance`, in the style of SUPERB's Table 4:
mean per system and measure (columns grouped by view), each system indented under its baseline, markers only where
the difference survives the multiple-comparison correction; then one section per head-to-head family; a footnote
that names the test, the correction and the real family size of every measure. Also ``superb compare``'s side by
side of two results folders.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

BETTER, WORSE = "\u2020", "\u2021"  # dagger, double dagger
FOOTNOTE_KEYS = ("test", "correction", "alpha", "n_queries", "n_resamples", "rel", "views", "dataset", "notes")
_TEST_NAMES = {"t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test (queries with equal values dropped)",
               "randomization": "paired randomization (sign-flip) test"}
_CORRECTION_NAMES = {"holm": "Holm-Bonferroni correction", "bonferroni": "Bonferroni correction",
                     "none": "no correction for multiple comparisons"}
_VIEW_NOTES = {"full": "full: unjudged documents count as non-relevant",
               "condensed": "condensed: unjudged documents removed from each run before scoring (condensed lists)",
               "filled": "filled: human labels where they exist, an LLM judge's labels (llm_qrels.trec, its "
                         "fingerprint in llm_qrels.json) for unjudged products in each system's top ranks"}


def _name(measure) -> str:
    return measure if isinstance(measure, str) else repr(measure)


def _head_to_head(table: pd.DataFrame) -> pd.Series:
    return table["family"].fillna("").str.startswith("head-to-head:")


def _columns(table: pd.DataFrame, measures: Sequence) -> list[tuple[str, str, str]]:
    """(view, measure, header) per table column: grouped by view; the view is named only when there are several."""
    views = list(pd.unique(table["view"]))
    return [(v, m, m if len(views) == 1 else f"{m} [{v}]") for v in views for m in measures]


def _groups(table: pd.DataFrame, order: Sequence[str]) -> list[tuple[str, int]]:
    """Systems in display order, each under its baseline (depth-first), with their nesting depth."""
    base = dict(table[["system", "baseline"]].drop_duplicates("system").itertuples(index=False))
    children: dict[str | None, list[str]] = {}
    for system in order:
        parent = base.get(system)
        children.setdefault(parent if parent in order else None, []).append(system)
    out, seen = [], set()

    def visit(system: str, depth: int) -> None:
        if system in seen:
            return
        seen.add(system)
        out.append((system, depth))
        for child in children.get(system, []):
            visit(child, depth + 1)

    for root in children.get(None, []):
        visit(root, 0)
    for system in order:  # baseline cycles: never lose a row
        visit(system, 0)
    return out


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "\u2013"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        return f"{value:.4f}" if abs(value) < 100 else f"{value:,.1f}"
    return str(value).replace("|", "\\|")


def _column_cells(values: pd.Series) -> list[str]:
    """One format per extra column: integers with separators, small floats to 4 decimals, large ones to 1."""
    numeric = pd.to_numeric(values, errors="coerce")
    if values.dtype == bool or numeric.isna().sum() > values.isna().sum():
        return [_cell(v) for v in values]
    finite = numeric.dropna()
    if (finite == np.round(finite)).all():
        return ["\u2013" if np.isnan(v) else f"{int(v):,}" for v in numeric]
    fmt = "{:,.1f}" if finite.abs().max() >= 100 else "{:.4f}"
    return ["\u2013" if np.isnan(v) else fmt.format(v) for v in numeric]


def _markdown(header: list[str], rows: list[list[str]], align: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _mark(row) -> str:
    return {"better": BETTER, "worse": WORSE}.get(row["verdict"], "")


def family_sizes(table: pd.DataFrame) -> dict[str, str]:
    """Per family (the system tested against): its size m, and the measures (and views) where m differs, e.g.
    ``{"BM25": "8 (7 on P(rel=2)@20, nDCG@20; 1 on P(rel=2)@5)"}``; m counts only systems that differ from it (NaN
    p excluded)."""
    out = {}
    views = table["view"].nunique()
    tested = table[table["family"].fillna("") != ""]
    for against, group in tested.groupby("baseline", sort=False):
        sizes = group.groupby(["view", "measure"], sort=False)["family_size"].max()
        common = Counter(sizes.tolist()).most_common(1)[0][0]
        other: dict[int, list[str]] = {}
        for (view, measure), m in sizes.items():
            if m != common:
                other.setdefault(int(m), []).append(measure if views == 1 else f"{measure} [{view}]")
        exceptions = "; ".join(f"{m} on {', '.join(names)}" for m, names in sorted(other.items()))
        text = f"{common} ({exceptions})" if exceptions else f"{common}"
        out[str(against)] = text
    return out


def _footnote(info: Mapping, sizes: Mapping[str, str], *, what: str) -> str:
    test = _TEST_NAMES[info["test"]]
    if info["test"] == "randomization":
        test += f", {info.get('n_resamples', 10_000):,} resamples"
    text = (f"{BETTER} significantly better, {WORSE} significantly worse than {what}: two-sided {test}, "
            f"{_CORRECTION_NAMES[info['correction']]}")
    if info["correction"] != "none":
        text += " over the systems tested against the same system, separately for each measure (and view)"
    text += (f"; \u03b1 = {info['alpha']:g}; n = {info['n_queries']} queries with labels (queries a system did not "
             f"answer count as 0). Unmarked values are not significant after correction; rows without a baseline are "
             f"not tested, and a system identical to the one it is tested against on a measure has no test and does "
             f"not count in the family size.")
    if info.get("rel") is not None:
        text += f" Binary measures (P, R, AP, ...) count labels \u2265 {info['rel']} as relevant; nDCG uses the labels."
    views = list(info.get("views") or [])
    if views and views != ["full"]:
        text += " Views: " + "; ".join(_VIEW_NOTES.get(v, v) for v in views) + "."
    if info.get("dataset"):
        text += f" Dataset: {info['dataset']}."
    if sizes:
        text += " Family sizes (tests corrected together): " + "; ".join(f"{b}: {k}" for b, k in sizes.items()) + "."
    notes = info.get("notes") or []
    return "\n".join([text, *([notes] if isinstance(notes, str) else notes)])


def _info(info: Mapping | None, table: pd.DataFrame) -> dict:
    info = dict(info or {})
    unknown = sorted(set(info) - set(FOOTNOTE_KEYS))
    if unknown:
        raise ValueError(f"footnote_info has unknown key(s) {unknown}; allowed: {list(FOOTNOTE_KEYS)}")
    info.setdefault("n_queries", int(table["n_queries"].max()) if len(table) else 0)
    info.setdefault("views", list(pd.unique(table["view"])))
    lacking = [k for k in ("test", "correction", "alpha") if k not in info]
    if lacking:
        raise ValueError(f"footnote_info lacks {lacking}; pass them")
    return info


def format_markdown(table: pd.DataFrame, measures: Sequence, order: Sequence[str], footnote_info: Mapping, *,
                    extra: pd.DataFrame | None = None) -> str:
    """Markdown: one row per system (indented under its baseline), one column per view and measure (4 decimals) with
    markers from the *corrected* decisions, then ``extra`` columns (a DataFrame with a ``system`` column or index:
    Judged@10, LLM requests, repairs...), the footnote, then one section per head-to-head family.

    ``footnote_info``: test, correction, alpha (required); n_resamples, rel, views, dataset, notes (optional)."""
    info = _info(footnote_info, table)
    names = [_name(m) for m in measures]
    unknown = [m for m in names if m not in set(table["measure"])]
    if unknown:
        raise ValueError(f"measures {unknown} are not in the table; it has {sorted(set(table['measure']))}")
    order = list(order)
    main = table[~_head_to_head(table)]
    cells = main.set_index(["system", "view", "measure"])
    columns = _columns(table, names)
    extra_cells: dict[str, tuple] = {}
    if extra is not None:
        extra = extra.set_index("system") if "system" in extra.columns else extra.copy()
        extra.index = extra.index.astype(str)
        stray = sorted(set(extra.index) - set(order))
        if stray or extra.index.duplicated().any():
            raise ValueError(f"extra must hold at most one row per system of the table; found {list(extra.index)}")
        aligned = extra.reindex(order)
        extra_cells = dict(zip(order, zip(*[_column_cells(aligned[c]) for c in aligned.columns])))
    header = ["System", *[h for _, _, h in columns], *([str(c) for c in extra.columns] if extra is not None else [])]
    rows = []
    for system, depth in _groups(main, order):
        row = [("\u2003" * (depth - 1) + "\u21b3 " if depth else "") + _cell(system)]
        for view, measure, _ in columns:
            key = (system, view, measure)
            row.append("\u2013" if key not in cells.index else f"{cells.loc[key, 'mean']:.4f}{_mark(cells.loc[key])}")
        rows.append(row + list(extra_cells.get(system, ())))
    body = _markdown(header, rows, [":---"] + ["---:"] * (len(header) - 1))
    text = body + "\n\n" + _footnote(info, family_sizes(main), what="the row's baseline (the system it is listed "
                                                                      "under)") + "\n"
    h2h = table[_head_to_head(table)]
    if len(h2h):
        text += "\n" + format_head_to_head(h2h, names, info)
    return text


def format_head_to_head(table: pd.DataFrame, measures: Sequence[str], info: Mapping) -> str:
    """The head-to-head families: one row per (system, compared system), cells "mean (delta vs it)" with markers."""
    columns = _columns(table, measures)
    cells = table.set_index(["system", "baseline", "view", "measure"])
    rows = []
    for (system, against), _ in table.groupby(["system", "baseline"], sort=False):
        row = [f"{_cell(system)} vs {_cell(against)}"]
        for view, measure, _ in columns:
            key = (system, against, view, measure)
            if key not in cells.index:
                row.append("\u2013")
                continue
            r = cells.loc[key]
            row.append(f"{r['mean']:.4f} ({r['delta']:+.4f}){_mark(r)}")
        rows.append(row)
    header = ["Head-to-head", *[h for _, _, h in columns]]
    body = _markdown(header, rows, [":---"] + ["---:"] * len(columns))
    note = _footnote(info, family_sizes(table), what="the system it is compared with (the mean of the row's system, "
                                                       "its difference in brackets)")
    return f"## Head-to-head comparisons\n\n{body}\n\n{note}\n"


def main_rows(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (system, view, measure): the head-to-head rows left out; a table written before views had none
    (its rows are the "full" view)."""
    table = table if "view" in table.columns else table.assign(view="full")
    if "family" in table.columns:
        table = table[~_head_to_head(table)]
    return table


def side_by_side(table_a: pd.DataFrame, table_b: pd.DataFrame, names: Sequence[str] = ("a", "b"), *,
                 measures: Sequence | None = None) -> pd.DataFrame:
    """Means of two tables (e.g. two experiments) per (system, view, measure) and their difference (b - a).

    Rows present in only one table keep NaN on the other side (and as difference), so nothing is dropped.
    ``measures`` (names or measure objects) keeps only those measures; a name in neither table is an error.
    """
    names = list(names)
    if len(names) != 2 or names[0] == names[1]:
        raise ValueError(f"names must be two different labels, found {names}")
    for label, t in zip(names, (table_a, table_b)):
        if not {"system", "measure", "mean"} <= set(t.columns):
            raise ValueError(f"table {label!r} needs columns system, measure, mean; found {list(t.columns)}")
    keys = ["system", "view", "measure"]
    a = main_rows(table_a)[keys + ["mean"]].rename(columns={"mean": f"mean_{names[0]}"})
    b = main_rows(table_b)[keys + ["mean"]].rename(columns={"mean": f"mean_{names[1]}"})
    if measures:
        wanted = [_name(m) for m in measures]
        known = set(a["measure"]) | set(b["measure"])
        unknown = [m for m in wanted if m not in known]
        if unknown:
            raise ValueError(f"measures {unknown} are in neither table; they have {sorted(known)}")
        a, b = a[a["measure"].isin(wanted)], b[b["measure"].isin(wanted)]
    out = a.merge(b, on=keys, how="outer", sort=False)
    out["difference"] = out[f"mean_{names[1]}"] - out[f"mean_{names[0]}"]
    return out


def format_side_by_side(frame: pd.DataFrame, names: Sequence[str] = ("a", "b")) -> str:
    """Markdown for :func:`side_by_side`: a row per system, per measure "a \u2192 b (\u00b1diff)"."""
    a, b = (f"mean_{n}" for n in names)
    frame = frame if "view" in frame.columns else frame.assign(view="full")
    columns = _columns(frame, list(pd.unique(frame["measure"])))
    cells = frame.set_index(["system", "view", "measure"])
    rows = []
    for system in pd.unique(frame["system"]):
        row = [_cell(system)]
        for view, measure, _ in columns:
            if (system, view, measure) not in cells.index:
                row.append("\u2013")
                continue
            r = cells.loc[(system, view, measure)]
            diff = "" if np.isnan(r["difference"]) else f" ({r['difference']:+.4f})"
            row.append(f"{_cell(r[a])} \u2192 {_cell(r[b])}{diff}")
        rows.append(row)
    header = ["System", *[h for _, _, h in columns]]
    return _markdown(header, rows, [":---"] + ["---:"] * len(columns)) + f"\n\n{names[0]} \u2192 {names[1]} " \
        f"(difference {names[1]} - {names[0]})\n"


def verdict_changes(table: pd.DataFrame) -> pd.DataFrame:
    """Per tested (family, system, measure): its verdict under each view (columns named by view) and ``changed``:
    the CONCLUSION differs between views (significantly better / worse / no significant difference, "n.s." and
    "untested" being the same conclusion)."""
    tested = table[table["family"].fillna("") != ""]
    if tested.empty:
        return pd.DataFrame(columns=["family", "system", "measure", "changed"])
    wide = tested.pivot_table(index=["family", "system", "measure"], columns="view", values="verdict",
                              aggfunc="first", sort=False)
    views = list(pd.unique(tested["view"]))
    wide = wide[views].reset_index()
    conclusions = wide[views].apply(lambda col: col.map(lambda v: v if v in ("better", "worse") else "no difference"))
    wide["changed"] = conclusions.nunique(axis=1) > 1
    return wide


def views_sentence(table: pd.DataFrame) -> str:
    """Whether a conclusion (a significance verdict) changes between the table's views, as markdown: one sentence,
    then each changed verdict. Empty when the table has one view."""
    views = list(pd.unique(table["view"]))
    if len(views) < 2:
        return ""
    changes = verdict_changes(table)
    tested = len(changes)
    names = ", ".join(views[:-1]) + f" and {views[-1]}"
    changed = changes[changes["changed"]]
    if tested == 0:
        return f"No system is tested against another, so no verdict can change between the views {names}.\n"
    if changed.empty:
        return (f"No conclusion changes between the views {names}: each of the {tested} tested comparisons "
                "(system against its baseline or head to head, per measure) has the same verdict under every view.\n")
    lines = [f"{len(changed)} of the {tested} tested comparisons change their conclusion between the views {names}:"]
    for r in changed.itertuples(index=False):
        against = str(r.family).split(":", 1)[-1]
        verdicts = ", ".join(f"{getattr(r, v) if isinstance(getattr(r, v), str) and getattr(r, v) else '-'} ({v})"
                             for v in views)
        lines.append(f"- {r.system} vs {against}, {r.measure}: {verdicts}")
    return "\n".join(lines) + "\n"
