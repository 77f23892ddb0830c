"""Comparison tables in the style of SUPERB's Table 4: mean per system and measure, each system tested against its
own baseline, markers only where the difference survives the multiple-comparison correction.

The correction family is: the systems compared with the same baseline, separately per measure (e.g. every
"BM25 >> X" against BM25 on nDCG@10). Systems without a baseline (first stages) are reported but not tested.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from superb.eval.stats import CORRECTIONS, TESTS, correct, paired_pvalue

PERQUERY_COLUMNS = ("system", "qid", "measure", "value")
TABLE_COLUMNS = ["system", "measure", "n_queries", "mean", "baseline", "baseline_mean", "delta", "p",
                 "p_corrected", "reject", "family_size", "verdict"]
BETTER, WORSE = "\u2020", "\u2021"  # dagger, double dagger
FOOTNOTE_KEYS = ("test", "correction", "alpha", "n_queries", "n_resamples", "rel", "condensed", "dataset", "notes")
_TEST_NAMES = {"t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test (queries with equal values dropped)",
               "randomization": "paired randomization (sign-flip) test"}
_CORRECTION_NAMES = {"holm": "Holm-Bonferroni correction", "bonferroni": "Bonferroni correction",
                     "none": "no correction for multiple comparisons"}


def _name(measure) -> str:
    return measure if isinstance(measure, str) else repr(measure)


def _check_perquery(perquery: pd.DataFrame) -> pd.DataFrame:
    from superb.eval.evaluate import _require

    _require(perquery, PERQUERY_COLUMNS, "perquery (stack superb.eval.evaluate.per_query results with a 'system' column)")
    frame = perquery[list(PERQUERY_COLUMNS)].copy()
    frame["system"] = frame["system"].astype(str)
    frame["qid"] = frame["qid"].astype(str)
    frame["measure"] = frame["measure"].map(_name)
    frame["value"] = pd.to_numeric(frame["value"], errors="coerce").astype(float)
    if frame["value"].isna().any():
        raise ValueError(f"perquery column 'value' has {int(frame['value'].isna().sum())} missing/non-numeric values")
    dup = frame.duplicated(["system", "qid", "measure"])
    if dup.any():
        row = frame[dup].iloc[0]
        raise ValueError(f"perquery holds (system, qid, measure) = ({row.system!r}, {row.qid!r}, {row.measure!r}) "
                         f"more than once ({int(dup.sum())} duplicates)")
    return frame


def _check_baselines(systems: list[str], baselines: Mapping[str, str | None], present: set[str]) -> None:
    stray = sorted(set(baselines) - set(systems))
    if stray:
        raise ValueError(f"baselines names system(s) {stray} that have no per-query values; systems: {systems}")
    for system in systems:
        if system not in baselines:
            raise ValueError(f"baselines has no entry for system {system!r}; give its baseline name, or None for a "
                             f"first stage (known systems: {sorted(present)})")
        base = baselines[system]
        if base is None:
            continue
        if base == system:
            raise ValueError(f"system {system!r} is its own baseline; use None for a first stage")
        if base not in present:
            raise ValueError(f"baseline {base!r} of system {system!r} has no per-query values; "
                             f"systems present: {sorted(present)}")


def compare(perquery: pd.DataFrame, baselines: Mapping[str, str | None], *, test: str = "t",
            correction: str = "holm", alpha: float = 0.05, order: Sequence[str] | None = None,
            n_resamples: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """One row per (system, measure) with mean, baseline, delta, p, p_corrected, reject, family_size, verdict.

    ``perquery``: DataFrame[system, qid, measure, value] (every system on the same queries). ``baselines``: system ->
    the system it is tested against, or None (first stage: no test). ``order``: systems in display order (default:
    order of appearance). Two-sided tests; ``verdict`` is "better"/"worse" (rejected, by the sign of delta), "n.s.",
    "untested" (identical per-query values: p is NaN) or "" (no baseline). ``family_size`` is the number of
    p-values corrected together (same baseline, same measure).
    """
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; choose one of {list(TESTS)}")
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; choose one of {list(CORRECTIONS)}")
    frame = _check_perquery(perquery)
    present = list(pd.unique(frame["system"]))
    order = present if order is None else [str(s) for s in order]
    absent = [s for s in order if s not in present]
    unordered = [s for s in present if s not in order]
    if absent or unordered or len(set(order)) != len(order):
        raise ValueError(f"order must list each system of perquery exactly once: not in perquery {absent}, "
                         f"missing from order {unordered}, given {order}")
    _check_baselines(order, baselines, set(present))
    measures = list(pd.unique(frame["measure"]))
    wide = {m: g.pivot(index="qid", columns="system", values="value") for m, g in frame.groupby("measure", sort=False)}

    rows = []
    for measure in measures:
        table = wide[measure]
        for system in order:
            col = table[system].dropna()
            base = baselines[system]
            row = {"system": system, "measure": measure, "n_queries": int(col.size), "mean": float(col.mean()),
                   "baseline": base, "baseline_mean": np.nan, "delta": np.nan, "p": np.nan}
            if base is not None:
                other = table[base].dropna()
                if set(col.index) != set(other.index):
                    diff = sorted(set(col.index) ^ set(other.index))
                    raise ValueError(f"{measure}: {system!r} and its baseline {base!r} are not on the same queries "
                                     f"({len(diff)} differ, e.g. {diff[:5]}); evaluate both on one topic set")
                other = other.loc[col.index]
                row.update(baseline_mean=float(other.mean()), delta=float(col.mean() - other.mean()),
                           p=paired_pvalue(col.to_numpy(), other.to_numpy(), test, n_resamples=n_resamples,
                                           seed=seed))
            rows.append(row)
    out = pd.DataFrame(rows)
    out["p_corrected"], out["reject"], out["family_size"] = np.nan, False, 0
    tested = out[out["baseline"].notna()]
    for _, family in tested.groupby(["baseline", "measure"], sort=False):
        adj, rej = correct(family["p"].to_numpy(), correction, alpha)
        out.loc[family.index, "p_corrected"] = adj
        out.loc[family.index, "reject"] = rej
        out.loc[family.index, "family_size"] = int(family["p"].notna().sum())
    out["verdict"] = [_verdict(r) for r in out.itertuples()]
    out = out[TABLE_COLUMNS]
    out.attrs.update({"test": test, "correction": correction, "alpha": alpha, "order": list(order),
                      "n_queries": int(out["n_queries"].max()) if len(out) else 0, "n_resamples": n_resamples})
    return out


def _verdict(row) -> str:
    if row.baseline is None or (isinstance(row.baseline, float) and np.isnan(row.baseline)):
        return ""
    if np.isnan(row.p):
        return "untested"
    if row.reject:
        return "better" if row.delta > 0 else "worse"
    return "n.s."


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


def _footnote(info: Mapping) -> str:
    test = _TEST_NAMES[info["test"]]
    if info["test"] == "randomization":
        test += f", {info.get('n_resamples', 10_000):,} resamples"
    text = (f"{BETTER} significantly better, {WORSE} significantly worse than the row's baseline (the system it is "
            f"listed under): two-sided {test}, {_CORRECTION_NAMES[info['correction']]}")
    if info["correction"] != "none":
        text += " over the systems compared with the same baseline, separately for each measure"
    text += (f"; \u03b1 = {info['alpha']:g}; n = {info['n_queries']} queries (queries a system did not answer count "
             f"as 0). Unmarked values are not significant after correction; rows without a baseline are not tested, "
             f"and a system identical to its baseline on a measure has no test.")
    if info.get("rel") is not None:
        text += f" Binary measures (P, R, AP, ...) count labels \u2265 {info['rel']} as relevant; nDCG uses the labels."
    if info.get("condensed"):
        text += " Unjudged documents were removed from every run before scoring (condensed lists)."
    if info.get("dataset"):
        text += f" Dataset: {info['dataset']}."
    if info.get("family_sizes"):
        text += " Family sizes: " + ", ".join(f"{b} {k}" for b, k in info["family_sizes"].items()) + "."
    notes = info.get("notes") or []
    if isinstance(notes, str):
        notes = [notes]
    return "\n".join([text, *notes])


def format_markdown(table: pd.DataFrame, measures: Sequence, order: Sequence[str] | None = None,
                    footnote_info: Mapping | None = None, *, extra: pd.DataFrame | None = None) -> str:
    """Markdown table: one row per system (indented under its baseline), one column per measure (4 decimals) with
    markers from the *corrected* decisions, then ``extra`` columns (a DataFrame with a ``system`` column or index,
    e.g. Judged@10, LLM calls, tokens, repairs), then the footnote.

    ``footnote_info`` keys (default: what ``compare`` recorded in ``table.attrs``): test, correction, alpha,
    n_queries, n_resamples; optional rel (binary threshold), condensed (bool), dataset, notes (extra lines).
    """
    info = {k: v for k, v in table.attrs.items() if k in FOOTNOTE_KEYS}
    unknown = sorted(set(footnote_info or {}) - set(FOOTNOTE_KEYS))
    if unknown:
        raise ValueError(f"footnote_info has unknown key(s) {unknown}; allowed: {list(FOOTNOTE_KEYS)}")
    info.update(footnote_info or {})
    lacking = [k for k in ("test", "correction", "alpha", "n_queries") if k not in info]
    if lacking:
        raise ValueError(f"footnote_info lacks {lacking} (and the table carries no such attrs); pass them")
    order = list(table.attrs.get("order", pd.unique(table["system"]))) if order is None else list(order)
    names = [_name(m) for m in measures]
    known = set(table["measure"])
    unknown_m = [m for m in names if m not in known]
    if unknown_m:
        raise ValueError(f"measures {unknown_m} are not in the table; it has {sorted(known)}")
    cells = table.set_index(["system", "measure"])
    extra_cells: dict[str, list[str]] = {}
    if extra is not None:
        extra = extra.set_index("system") if "system" in extra.columns else extra.copy()
        extra.index = extra.index.astype(str)
        if extra.index.duplicated().any():
            raise ValueError(f"extra has several rows for system(s) {sorted(set(extra.index[extra.index.duplicated()]))}")
        unknown_s = sorted(set(extra.index) - set(order))
        if unknown_s:
            raise ValueError(f"extra has rows for systems not in the table: {unknown_s}")
        aligned = extra.reindex(order)
        extra_cells = {s: cells for s, cells in zip(order, zip(*[_column_cells(aligned[c]) for c in aligned.columns]))}
    header = ["System", *names, *([str(c) for c in extra.columns] if extra is not None else [])]
    rows = []
    for system, depth in _groups(table, order):
        row = [("\u2003" * (depth - 1) + "\u21b3 " if depth else "") + _cell(system)]
        for m in names:
            if (system, m) not in cells.index:
                row.append("\u2013")
                continue
            r = cells.loc[(system, m)]
            mark = {"better": BETTER, "worse": WORSE}.get(r["verdict"], "")
            row.append(f"{r['mean']:.4f}{mark}")
        row += list(extra_cells.get(system, ()))
        rows.append(row)
    tested = table[table["baseline"].notna() & table["measure"].isin(names)]
    info["family_sizes"] = {b: int(g["family_size"].max()) for b, g in tested.groupby("baseline", sort=False)}
    body = _markdown(header, rows, [":---"] + ["---:"] * (len(header) - 1))
    return body + "\n\n" + _footnote(info) + "\n"


def write_csv(table: pd.DataFrame, path) -> Path:
    """Write the comparison table (means, raw and corrected p, reject flags, family sizes) as CSV; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    return path


def side_by_side(table_a: pd.DataFrame, table_b: pd.DataFrame, names: Sequence[str] = ("a", "b"), *,
                 measures: Sequence | None = None) -> pd.DataFrame:
    """Means of two comparison tables (e.g. two experiments) per (system, measure) and their difference (b - a).

    Rows present in only one table keep NaN on the other side (and as difference), so nothing is dropped.
    ``measures`` (names or measure objects) keeps only those measures; a name in neither table is an error.
    """
    names = list(names)
    if len(names) != 2 or names[0] == names[1]:
        raise ValueError(f"names must be two different labels, found {names}")
    for label, t in zip(names, (table_a, table_b)):
        if not {"system", "measure", "mean"} <= set(t.columns):
            raise ValueError(f"table {label!r} needs columns system, measure, mean; found {list(t.columns)}")
    a = table_a[["system", "measure", "mean"]].rename(columns={"mean": f"mean_{names[0]}"})
    b = table_b[["system", "measure", "mean"]].rename(columns={"mean": f"mean_{names[1]}"})
    if measures:
        wanted = [_name(m) for m in measures]
        unknown = [m for m in wanted if m not in set(a["measure"]) | set(b["measure"])]
        if unknown:
            raise ValueError(f"measures {unknown} are in neither table; they have "
                             f"{sorted(set(a['measure']) | set(b['measure']))}")
        a, b = a[a["measure"].isin(wanted)], b[b["measure"].isin(wanted)]
    out = a.merge(b, on=["system", "measure"], how="outer", sort=False)
    out["difference"] = out[f"mean_{names[1]}"] - out[f"mean_{names[0]}"]
    return out


def format_side_by_side(frame: pd.DataFrame, names: Sequence[str] = ("a", "b")) -> str:
    """Markdown for :func:`side_by_side`: a row per system, per measure "a \u2192 b (\u00b1diff)"."""
    a, b = (f"mean_{n}" for n in names)
    measures = list(pd.unique(frame["measure"]))
    cells = frame.set_index(["system", "measure"])
    rows = []
    for system in pd.unique(frame["system"]):
        row = [_cell(system)]
        for m in measures:
            if (system, m) not in cells.index:
                row.append("\u2013")
                continue
            r = cells.loc[(system, m)]
            diff = "" if np.isnan(r["difference"]) else f" ({r['difference']:+.4f})"
            row.append(f"{_cell(r[a])} \u2192 {_cell(r[b])}{diff}")
        rows.append(row)
    header = ["System", *measures]
    return _markdown(header, rows, [":---"] + ["---:"] * len(measures)) + f"\n\n{names[0]} \u2192 {names[1]} " \
        f"(difference {names[1]} - {names[0]})\n"
