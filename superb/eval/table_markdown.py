"""Markdown for the significance table of :func:`superb.eval.evaluate.significance`, in the style of SUPERB's Table 4:
mean per system and measure (columns grouped by view), each system indented under its baseline, significance marks
only on confirmatory (or, without declared hypotheses, corrected) comparisons that survive the correction, a mark
of their own on exploratory and identical ones; a footnote naming the test, the correction, the families and n;
then the confirmatory hypotheses, every comparison's effect with its 95% interval and raw p, and what the table can
detect (MDE). Also ``superb compare``'s side by side of two results folders.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from superb.eval.effects import mde, power_summary, strictest_alpha
from superb.eval.stats import CORRECTION_NAMES, TEST_NAMES

BETTER, WORSE = "\u2020", "\u2021"  # dagger, double dagger
CONFIRMED, EXPLORED, SAME = "\u1d9c", "\u1d49", " (=)"  # superscript c, superscript e
# verdicts of a row whose two systems agree on every query (no test; "untested" in tables written before "identical")
SAME_VERDICTS = ("identical", "by construction", "untested")
FOOTNOTE_KEYS = ("test", "correction", "alpha", "n_queries", "n_resamples", "rel", "views", "dataset", "notes",
                 "interval", "no_relevant", "n_no_relevant", "n_no_relevant_by_measure", "hypotheses")
_VIEW_NOTES = {"full": "full: unjudged documents count as non-relevant",
               "condensed": "condensed: unjudged documents removed from each run before scoring (condensed lists)",
               "filled": "filled: human labels where they exist, an LLM judge's labels (llm_qrels.trec, its "
                         "fingerprint in llm_qrels.json) for unjudged products in each system's top ranks"}


def _name(measure) -> str:
    return measure if isinstance(measure, str) else repr(measure)


def _head_to_head(table: pd.DataFrame) -> pd.Series:
    """Rows that are not a system's own row (head-to-head and declared pairs); tables written before ``kind``
    name them by their family."""
    if "kind" in table.columns:
        return ~table["kind"].fillna("").isin(["", "baseline"])
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


def significance_mark(row) -> str:
    """A cell's mark: (=) identical to the system it is tested against, c confirmatory, e exploratory, then the
    dagger of a significant confirmatory or corrected comparison."""
    verdict = row["verdict"]
    if verdict in SAME_VERDICTS:
        return SAME
    mark = {"confirmatory": CONFIRMED, "exploratory": EXPLORED}.get(row.get("role"), "")  # no role column: none
    return mark + {"better": BETTER, "worse": WORSE}.get(verdict, "")


def family_sizes(table: pd.DataFrame) -> dict[str, str]:
    """Per family: its size m, and the measures (and views) where m differs, e.g. ``{"baseline:BM25": "8 (7 on
    nDCG@20)"}``; a declared family (one across measures and views) has one m. m counts only tests with a p-value
    (identical systems excluded)."""
    out = {}
    views = table["view"].nunique()
    tested = table[table["family"].fillna("") != ""]
    for family, group in tested.groupby("family", sort=False):
        if str(family).startswith("confirmatory:"):
            out[str(family)] = f"{int(group['family_size'].max())}"
            continue
        sizes = group.groupby(["view", "measure"], sort=False)["family_size"].max()
        common = Counter(sizes.tolist()).most_common(1)[0][0]
        other: dict[int, list[str]] = {}
        for (view, measure), m in sizes.items():
            if m != common:
                other.setdefault(int(m), []).append(measure if views == 1 else f"{measure} [{view}]")
        exceptions = "; ".join(f"{m} on {', '.join(names)}" for m, names in sorted(other.items()))
        out[str(family)] = f"{common} ({exceptions})" if exceptions else f"{common}"
    return out


def _footnote(info: Mapping, sizes: Mapping[str, str], *, what: str) -> str:
    test = TEST_NAMES[info["test"]]
    if info["test"] == "randomization":
        test += f", {info.get('n_resamples', 10_000):,} resamples"
    declared = bool(info.get("hypotheses"))
    correction = CORRECTION_NAMES[info["correction"]]
    if declared:
        text = (f"{CONFIRMED} confirmatory: a comparison declared in the spec's [[hypotheses]] before the test queries "
                f"were read; {BETTER} significantly better, {WORSE} significantly worse than {what}: two-sided {test}, "
                f"{correction} over each declared family's tests only (every system, measure and view in it). "
                f"{EXPLORED} exploratory: every other comparison; its effect, 95% interval and raw p are under "
                f"Comparisons, with no correction and no significance mark (a raw p below \u03b1 there is not a "
                f"finding). ")
    else:
        text = (f"{BETTER} significantly better, {WORSE} significantly worse than {what}: two-sided {test}, "
                f"{correction}")
        if info["correction"] != "none":
            text += (" over each default family, separately for each measure and view: the systems tested against "
                     "the same baseline, and the comparisons of one pipeline's compare list (the spec declares no "
                     "[[hypotheses]], so no comparison is confirmatory)")
        text += ". "
    text += (f"(=) identical to the system it is tested against on every query (some by construction: a top-k "
             f"reranker's P@k is its input's): no test, counted in no family. \u03b1 = {info['alpha']:g}; "
             f"{_n_sentence(info)} Unmarked values are not significant after correction; rows without a baseline "
             f"are not tested.")
    if info.get("interval"):
        text += (" Effects: mean paired difference with its 95% " + ("paired t interval" if info["interval"] == "t"
                 else f"query-bootstrap percentile interval ({info.get('n_resamples', 10_000):,} resamples, seeded)")
                 + ".")
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


def _n_sentence(info: Mapping) -> str:
    n = info["n_queries"]
    text = f"n = {n} queries with labels (queries a system did not answer count as 0)"
    empty = {k: v for k, v in (info.get("n_no_relevant") or {}).items()}
    if not empty:
        return text + "."
    counts = sorted(set(empty.values()))
    if counts == [0]:
        return f"{text}; every one has a relevant document{_by_measure(info, 0)}."
    where = (f"{counts[0]}" if len(counts) == 1 else
             ", ".join(f"{v} ({k})" for k, v in empty.items()))
    if info.get("no_relevant", "keep") == "drop":
        return (f"{text}; the queries without a relevant document ({where}) are dropped (no_relevant = \"drop\"), so "
                f"n counts the rest.")
    low = n - max(counts)
    return (f"{text}, {where} of them without a relevant document (no positive label: every system scores 0 on "
            f"them): kept, as trec_eval keeps a labelled topic (without them n = {low}"
            + ("" if len(counts) == 1 else " or more") + ")" + _by_measure(info, max(counts)) + ".")


def _by_measure(info: Mapping, count: int) -> str:
    """The measures whose own relevance level leaves a different number of queries without a relevant document."""
    other = {m: k for m, k in (info.get("n_no_relevant_by_measure") or {}).items() if k != count}
    if not other:
        return ""
    return "; at a measure's own relevance level: " + ", ".join(f"{k} for {m}" for m, k in other.items())


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
            row.append("\u2013" if key not in cells.index else f"{cells.loc[key, 'mean']:.4f}{significance_mark(cells.loc[key])}")
        rows.append(row + list(extra_cells.get(system, ())))
    body = _markdown(header, rows, [":---"] + ["---:"] * (len(header) - 1))
    text = body + "\n\n" + _footnote(info, family_sizes(table), what="the row's baseline (the system it is listed "
                                                                       "under)") + "\n"
    confirmatory = format_confirmatory(table, info)
    if confirmatory:
        text += "\n" + confirmatory
    comparisons = format_comparisons(table, names)
    if comparisons:
        text += "\n" + comparisons
    if "sd_diff" in table.columns and table["p"].notna().any():
        text += "\n" + format_power(table, info)
    return text


def _effect(r) -> str:
    """A comparison's cell: "= identical", or "+0.0167 [-0.0061, +0.0395] p 0.1500" (then the corrected p and its
    mark for a confirmatory or corrected one)."""
    if r["verdict"] in SAME_VERDICTS:
        return "= by construction" if r["verdict"] == "by construction" else "= identical"
    text = f"{r['delta']:+.4f} [{r['ci_low']:+.4f}, {r['ci_high']:+.4f}] p {r['p']:.4f}"
    role = r.get("role", "")
    if role == "exploratory":
        return text + " " + EXPLORED
    if isinstance(r.get("family"), str) and r["family"]:
        text += f" \u2192 {r['p_corrected']:.4f}"
    return text + (" " + CONFIRMED if role == "confirmatory" else "") + {"better": BETTER, "worse": WORSE}.get(
        r["verdict"], "")


def format_comparisons(table: pd.DataFrame, measures: Sequence[str]) -> str:
    """Every tested comparison, one table per view: a row per (system, the system it is tested against), per measure
    the mean paired difference, its 95% interval and raw p (and the corrected p of a confirmatory or corrected one).
    Empty when nothing is tested."""
    tested = table[table["baseline"].notna()]
    if tested.empty or "ci_low" not in tested.columns:
        return ""
    out = ["## Comparisons", "",
           "Difference of the row's system minus the system it is tested against (mean over the queries), its 95% "
           "interval, raw p (\u2192 corrected p in a family). " + f"{CONFIRMED} confirmatory, {EXPLORED} exploratory "
           "(raw p only: not a significance claim), = identical on every query (no test).", ""]
    for view in pd.unique(tested["view"]):
        rows_v = tested[tested["view"] == view]
        cells = rows_v.set_index(["system", "baseline", "measure"])
        rows = []
        for (system, against), group in rows_v.groupby(["system", "baseline"], sort=False):
            kind = group["kind"].iloc[0] if "kind" in group.columns else ""
            row = [f"{_cell(system)} vs {_cell(against)}", _cell(kind or "")]
            for measure in measures:
                key = (system, against, measure)
                row.append("\u2013" if key not in cells.index else _effect(cells.loc[key]))
            rows.append(row)
        out += [f"### {view}", "", _markdown(["Comparison", "kind", *measures], rows,
                                             [":---", ":---"] + ["---:"] * len(measures)), ""]
    return "\n".join(out)


def format_confirmatory(table: pd.DataFrame, info: Mapping) -> str:
    """The declared hypotheses: one row per confirmatory test, with the means, the effect and its interval, the raw
    and corrected p, the family size m, the MDE at the family's strictest step, the verdict; then each hypothesis's
    evidence. Empty when the spec declares none."""
    if "role" not in table.columns:
        return ""
    rows_c = table[table["role"] == "confirmatory"]
    if rows_c.empty:
        return ""

    alpha = float(info["alpha"])
    rows = []
    for r in rows_c.to_dict("records"):
        strict = strictest_alpha(alpha, info["correction"], r["family_size"])
        same = r["verdict"] in SAME_VERDICTS
        rows.append([f"{_cell(r['system'])} vs {_cell(r['baseline'])}", _cell(str(r["family"]).split(":", 1)[-1]),
                     _cell(r["view"]), _cell(r["measure"]), f"{r['mean']:.4f}", f"{r['baseline_mean']:.4f}",
                     "=" if same else f"{r['delta']:+.4f} [{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]",
                     "\u2013" if same else f"{r['p']:.4f}", "\u2013" if same else f"{r['p_corrected']:.4f}",
                     f"{int(r['family_size'])}", "\u2013" if same else f"{mde(r['sd_diff'], r['n_queries'], strict):.4f}",
                     f"{r['verdict']}{significance_mark(r)}"])
    header = ["Hypothesis", "family", "view", "measure", "mean", "against", "\u0394 [95% CI]", "p", "p corrected",
              "m", "MDE at \u03b1/m", "verdict"]
    out = ["## Confirmatory hypotheses", "",
           f"Declared in the spec before the test queries were read; {CORRECTION_NAMES[info['correction']]} over "
           f"each family's tests. MDE: the smallest true difference this test detects with 80% power at the "
           f"family's strictest step (\u03b1/m; noncentral t, from the row's SD of paired differences).", "",
           _markdown(header, rows, [":---"] * 4 + ["---:"] * 7 + [":---"]), ""]
    for h in info.get("hypotheses") or []:
        if isinstance(h, Mapping) and h.get("evidence"):
            out.append(f"- {h['system']} vs {h['against']} ({h.get('family', 'confirmatory')}): {h['evidence']}")
    return "\n".join(out) + "\n"


def format_power(table: pd.DataFrame, info: Mapping) -> str:
    """The MDE block: per view and measure, n, the SD of the paired differences of the tested comparisons and the
    smallest difference detectable with 80% power at \u03b1 and at the correction's strictest step."""

    power = power_summary(table, float(info["alpha"]), info["correction"])
    rows = [[_cell(r.view), _cell(r.measure), f"{r.n_queries} ({r.n_no_relevant})", f"{r.n_comparisons}",
             "\u2013" if np.isnan(r.sd_median) else f"{r.sd_median:.4f} ({r.sd_min:.4f}\u2013{r.sd_max:.4f})",
             "\u2013" if np.isnan(r.mde) else f"{r.mde:.4f}", f"{r.m}",
             "\u2013" if np.isnan(r.mde_strictest) else f"{r.mde_strictest:.4f}"]
            for r in power.itertuples()]
    header = ["view", "measure", "n (no relevant)", "tested", "SD of paired differences: median (range)",
              "MDE at \u03b1", "m", "MDE at \u03b1/m"]
    return "\n".join([
        "## What this table can detect", "",
        f"Minimum detectable difference (MDE): the smallest true mean difference a two-sided paired t-test detects "
        f"with 80% power, from n and the median SD of the tested comparisons' paired differences, at \u03b1 = "
        f"{info['alpha']:g} and at the correction's strictest step \u03b1/m (m: the largest family there); exact "
        f"power of the t-test (noncentral t). A non-significant difference smaller than the MDE means this table "
        f"cannot tell, not that there is no effect. Per comparison: columns sd_diff and mde of table.csv; this "
        f"block is power.csv.", "",
        _markdown(header, rows, [":---", ":---"] + ["---:"] * 6), ""])


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
