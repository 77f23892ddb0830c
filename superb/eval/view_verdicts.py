"""Whether a conclusion changes between a table's views (full, condensed, filled): each tested comparison's verdict
per view, and the sentence table.md and views.md write about it, naming the views shown but not tested and their
comparisons with a raw p below alpha where the tested views find no difference."""

from __future__ import annotations

import pandas as pd


def verdict_changes(table: pd.DataFrame) -> pd.DataFrame:
    """Per tested (family, system, baseline, measure): its verdict under each view (columns named by view) and
    ``changed``: the CONCLUSION differs between views (significantly better / worse / no significant difference,
    "n.s." and "identical" being the same conclusion). Exploratory rows (no family) are not tested."""
    tested = table[table["family"].fillna("") != ""]
    keys = ["family", "system", *(["baseline"] if "baseline" in table.columns else []), "measure"]
    if tested.empty:
        return pd.DataFrame(columns=[*keys, "changed"])
    wide = tested.pivot_table(index=keys, columns="view", values="verdict", aggfunc="first", sort=False)
    views = list(pd.unique(tested["view"]))
    wide = wide[views].reset_index()
    conclusions = wide[views].apply(lambda col: col.map(lambda v: v if v in ("better", "worse") else "no difference"))
    wide["changed"] = conclusions.nunique(axis=1) > 1
    return wide


def views_sentence(table: pd.DataFrame, alpha: float = 0.05) -> str:
    """Whether a conclusion (a significance verdict) changes between the table's views, as markdown: one sentence,
    then each changed verdict. Only views in which comparisons are tested (in a family) can change a verdict; a view
    the table shows without testing it (the LLM-filled view beside declared hypotheses: its rows are exploratory) is
    named as untested, with each comparison whose raw p is below ``alpha`` there while the tested views find no
    difference. Empty when the table has one view."""
    views = list(pd.unique(table["view"]))
    if len(views) < 2:
        return ""
    changes = verdict_changes(table)
    tested_views = [v for v in views if v in changes.columns]
    untested = [v for v in views if v not in tested_views]
    tested = len(changes)
    names = _names(tested_views or views)
    changed = changes[changes["changed"]]
    if tested == 0:
        return f"No system is tested against another, so no verdict can change between the views {_names(views)}.\n"
    if changed.empty:
        text = (f"No conclusion changes between the views {names}: "
                + ("the one tested comparison" if tested == 1 else f"each of the {tested} tested comparisons")
                + " (system against its baseline or head to head, per measure; confirmatory or corrected) has the "
                "same verdict under every one of them.\n")
        return text + _untested(table, untested, tested_views, changes, alpha)
    lines = [f"{len(changed)} of the {tested} tested comparisons change their conclusion between the views {names}:"]
    for r in changed.itertuples(index=False):
        against = getattr(r, "baseline", None) or str(r.family).split(":", 1)[-1]
        verdicts = ", ".join(f"{getattr(r, v) if isinstance(getattr(r, v), str) and getattr(r, v) else '-'} ({v})"
                             for v in tested_views)
        lines.append(f"- {r.system} vs {against}, {r.measure}: {verdicts}")
    return "\n".join(lines) + "\n" + _untested(table, untested, tested_views, changes, alpha)


def _against(row) -> str:
    """What a tested comparison's system is tested against: its baseline, or the family's head-to-head partner."""
    return getattr(row, "baseline", None) or str(row.family).split(":", 1)[-1]


def _names(views: list[str]) -> str:
    return views[0] if len(views) == 1 else ", ".join(views[:-1]) + f" and {views[-1]}"


def _untested(table: pd.DataFrame, untested: list[str], tested_views: list[str], changes: pd.DataFrame,
              alpha: float) -> str:
    """The views shown but not tested, and the comparisons whose raw p there is below alpha while every tested view
    finds no difference."""
    if not untested or not tested_views:
        return ""
    lines = [f"Not tested: the view{'s' if len(untested) > 1 else ''} {_names(untested)} (its comparisons are "
             "exploratory: raw p only, no correction, no verdict); so no statement above covers "
             f"{'them' if len(untested) > 1 else 'it'}."]
    quiet = changes.copy()
    quiet["quiet"] = quiet[tested_views].apply(lambda col: ~col.isin(["better", "worse"])).all(axis=1)
    # a pair as the tested views declare it, whichever direction the untested view's table stores it in (a head to
    # head pair may be A vs B there and B vs A here): its delta is turned to the declared direction
    declared = {(frozenset((r.system, _against(r))), r.measure): (r.system, _against(r))
                for r in quiet[quiet["quiet"]].itertuples(index=False)}
    for view in untested:
        rows = table[(table["view"] == view) & table["p"].notna() & (table["p"] < alpha)]
        for r in rows.itertuples(index=False):
            pair = declared.get((frozenset((r.system, r.baseline)), r.measure))
            if pair is None:
                continue
            delta = r.delta if pair == (r.system, r.baseline) else -r.delta
            lines.append(f"- {pair[0]} vs {pair[1]}, {r.measure}: {delta:+.4f}, raw p {r.p:.2g} in {view} "
                         f"(exploratory), no significant difference in {_names(tested_views)}")
    return "\n".join(lines) + "\n"
