"""Evaluation through ``pt.Experiment``: per-query values, and each family of tests with superb's NaN-aware correction.

VIEWS. A view is (name, qrels, judged_only); every measure is computed under each view of a run:

- ``full``: the qrels as given; unjudged documents count as non-relevant (the TREC rule).
- ``condensed``: the same qrels, unjudged documents removed from each run before scoring (Sakai's condensed lists):
  ir_measures' ``judged_only`` parameter, trec_eval's ``-J``.
- A third view is another :class:`View`, e.g. "filled": human labels where they exist and LLM labels elsewhere
  (a second qrels set), judged_only False.

COMPARISONS AND FAMILIES (superb.eval.families). Each row tested against another system is confirmatory (a declared
``[[hypotheses]]`` test, corrected within its declared family across measures and views), exploratory (hypotheses
declared, not this one: effect, interval and raw p, no correction) or, when a spec declares no hypotheses, corrected
within its default family per view and measure (the systems sharing a baseline; one pipeline's ``compare`` list).
The p-values come from ``pt.Experiment(..., baseline=0, test=PairedTest(...))``, one call per view and system tested
against (p is symmetric, so grouping does not change it), and are corrected by :func:`superb.eval.stats.correct`: a
system identical to the one it is tested against has NaN p, is not counted in the family size m, and is never
rejected. (pt.Experiment cannot return per-query values together with a baseline, so the per-query values, from
which the effects and intervals are computed, come from one ``perquery=True`` call per view.)

Queries: the selected topics that have labels in the view's qrels (``filter_by_qrels``); a query a run does not
answer scores 0 on every measure (ir_measures' default), it is not dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from dataclasses import dataclass

import numpy as np
import pandas as pd

from superb.errors import DataError, SpecError
from superb.eval.effects import mde, paired_interval, strictest_alpha
from superb.eval.families import Family, Hypothesis
from superb.eval.families import plan
from superb.eval.stats import PairedTest, correct
from superb.trec.runs import strictly_decreasing

VIEW_KINDS = {"full": False, "condensed": True}  # view name -> judged_only
TABLE_COLUMNS = ["system", "view", "measure", "n_queries", "n_no_relevant", "mean", "kind", "baseline", "baseline_mean",
                 "delta", "ci_low", "ci_high", "sd_diff", "mde", "mde_family", "p", "role", "family", "p_corrected", "reject",
                 "family_size", "verdict"]


@dataclass(frozen=True)
class View:
    """How the labels are read: ``qrels`` (qid, docno, label) and whether unjudged documents are removed."""

    name: str
    qrels: pd.DataFrame
    judged_only: bool = False

    def measures(self, measures: Sequence) -> list:
        """The measures as this view computes them (``judged_only=True`` under a condensed view)."""
        if not self.judged_only:
            return list(measures)
        import ir_measures

        out = []
        for m in measures:
            vm = m(judged_only=True) if "judged_only" in m.SUPPORTED_PARAMS else None
            if vm is None or not any(p.supports(vm) for p in ir_measures.providers.registry.values()):
                raise SpecError("evaluation.views", f"{m!r} cannot be computed on condensed lists (no ir_measures "
                                                    f"provider has judged_only for it); use views = [\"full\"] or "
                                                    "drop it")
            out.append(vm)
        return out


def make_views(names: Sequence[str], qrels: pd.DataFrame, path: str = "evaluation.views") -> list[View]:
    """Views by name ("full", "condensed") over one qrels set."""
    unknown = [n for n in names if n not in VIEW_KINDS]
    if unknown:
        raise SpecError(path, f"unknown view(s) {unknown}; known: {sorted(VIEW_KINDS)}")
    return [View(name, qrels, VIEW_KINDS[name]) for name in names]


def per_query(runs: Mapping[str, pd.DataFrame], topics: pd.DataFrame, view: View, measures: Sequence
              ) -> pd.DataFrame:
    """system, view, qid, measure, value of every run under ``view`` (one ``pt.Experiment(perquery=True)`` call);
    ``measure`` is the measure's own name (``repr``), whatever the view."""
    import pyterrier as pt

    view_measures = view.measures(measures)
    names = {repr(vm): repr(m) for vm, m in zip(view_measures, measures)}
    frame = pt.Experiment(_frames(runs), _topics(topics), _qrels(view.qrels), view_measures, names=list(runs),
                          perquery=True, filter_by_qrels=True, validate="ignore", verbose=False)
    frame = frame.rename(columns={"name": "system"})
    frame["measure"] = frame["measure"].map(names)
    frame = frame.dropna(subset=["value"])  # topics without labels: not evaluated
    frame.insert(1, "view", view.name)
    # systems and measures in the caller's order: pt.Experiment sorts systems by name, and its per-query rows do not
    # keep the measures' order from run to run
    order = {"system": {name: i for i, name in enumerate(runs)}, "measure": {repr(m): i for i, m in enumerate(measures)}}
    frame = frame.sort_values(["system", "qid", "measure"], key=lambda c: c.map(order[c.name]) if c.name in order else c,
                              kind="mergesort")
    return frame[["system", "view", "qid", "measure", "value"]].reset_index(drop=True)


def pair_pvalues(runs: Mapping[str, pd.DataFrame], topics: pd.DataFrame, view: View, measures: Sequence,
                 against: str, systems: Sequence[str], test: PairedTest) -> pd.DataFrame:
    """system, measure, p of each of ``systems`` against ``against`` under ``view``: one pt.Experiment call
    (``baseline=0``, ``test``), p NaN where the two agree on every query."""
    import pyterrier as pt

    names = [against, *systems]
    view_measures = view.measures(measures)
    result = pt.Experiment(_frames({n: runs[n] for n in names}), _topics(topics), _qrels(view.qrels), view_measures,
                           names=names, baseline=0, test=test, filter_by_qrels=True, validate="ignore",
                           verbose=False)
    rows = []
    for vm, m in zip(view_measures, measures):
        for system, p in zip(result["name"].iloc[1:], result[f"{vm!r} p-value"].iloc[1:]):
            rows.append({"system": system, "measure": repr(m), "p": np.nan if p is None else float(p)})
    return pd.DataFrame(rows, columns=["system", "measure", "p"])


def no_relevant_queries(qrels: pd.DataFrame, topics: pd.DataFrame, rel: int = 1) -> list[str]:
    """The selected queries that have labels but none >= ``rel`` (default 1: no positive label, so every measure of
    every system is 0 on them)."""
    selected = set(topics["qid"].astype(str))
    labelled = qrels[qrels["qid"].astype(str).isin(selected)]
    relevant = set(labelled.loc[pd.to_numeric(labelled["label"]) >= rel, "qid"].astype(str))
    return sorted(set(labelled["qid"].astype(str)) - relevant)


def measure_level(measure: Any) -> int:
    """The label a measure counts as relevant from: its ``rel`` parameter (P(rel=2)@5: 2), else 1 (nDCG gains from
    any positive label)."""
    return int((getattr(measure, "params", None) or {}).get("rel") or 1)


def no_relevant_counts(views: Sequence[View], topics: pd.DataFrame, measures: Sequence) -> dict[tuple, int]:
    """(view, measure name) -> the selected queries without a document at the measure's own relevance level
    (:func:`measure_level`) in the view's labels."""
    return {(v.name, repr(m)): len(no_relevant_queries(v.qrels, topics, measure_level(m)))
            for v in views for m in measures}


def significance(runs: Mapping[str, pd.DataFrame], topics: pd.DataFrame, views: Sequence[View], measures: Sequence,
                 fams: Sequence[Family], *, test: PairedTest, correction: str = "holm", alpha: float = 0.05,
                 perquery: pd.DataFrame | None = None, hypotheses: Sequence[Hypothesis] = (), interval: str = "t",
                 n_resamples: int = 10_000, seed: int = 0, identical_by_construction: set | frozenset = frozenset(),
                 no_relevant: Mapping[Any, int] | None = None, rel: int = 1) -> pd.DataFrame:
    """The table: per view and measure, one row per system (its mean; its test against its baseline, if any), then
    one row per head-to-head comparison, then declared pairs that are neither (superb.eval.families.plan).

    Every tested row: the mean paired difference ``delta`` with its 95% interval (``interval``: "t" or "bootstrap",
    superb.eval.effects), the SD of the paired differences, the MDE at 80% power at ``alpha``, the raw p from
    pt.Experiment (``test``), and its ``role``: confirmatory (``hypotheses`` declared and naming it), exploratory
    (declared hypotheses, not this one: raw p only) or corrected (no hypotheses: a default family). ``correction``
    runs over each family (``family_size`` tests). ``verdict``: better / worse / n.s. (after correction), exploratory,
    identical (agree on every query: no test) or by construction (``identical_by_construction``: (system, against,
    measure) known equal before any query is read), "" for untested rows. ``n_no_relevant``: the queries on which the
    row's measure is 0 for every system, counted at the measure's own level (:func:`measure_level`: P(rel=2)@5 counts
    the queries without a label >= 2, nDCG those without a positive label): ``no_relevant`` maps (view, measure name)
    or a view to that count (default :func:`no_relevant_counts` of ``views``; ``rel`` is no longer read).
    Columns TABLE_COLUMNS."""

    if perquery is None:
        perquery = pd.concat([per_query(runs, topics, v, measures) for v in views], ignore_index=True)
    for h in hypotheses:  # a spec's HypothesisSpec names measures as written ("P@5"): superb.run.results maps them
        if not isinstance(h, Hypothesis):
            raise TypeError(f"hypotheses must be superb.eval.families.Hypothesis (measures named as the table names "
                            f"them, e.g. 'P(rel=2)@5'), got {type(h).__name__}")
    names = [repr(m) for m in measures]
    planned = plan(list(runs), fams, list(hypotheses), [v.name for v in views], names)
    if no_relevant is None:  # per (view, measure): the queries on which the measure is 0 for every system
        no_relevant = no_relevant_counts(views, topics, measures)
    empty_at = {(v.name, repr(m)): int(no_relevant.get((v.name, repr(m)), no_relevant.get(v.name, 0)))
                for v in views for m in measures}
    wide = {key: g.pivot(index="qid", columns="system", values="value")
            for key, g in perquery.groupby(["view", "measure"], sort=False)}
    pvalues: dict[tuple, float] = {}
    for view in views:
        pairs: dict[str, list[str]] = {}
        for c in planned:
            if c.view == view.name and c.against is not None and c.system not in pairs.setdefault(c.against, []):
                pairs[c.against].append(c.system)
        for against, systems in pairs.items():
            for r in pair_pvalues(runs, topics, view, measures, against, systems, test).itertuples():
                pvalues[(view.name, r.system, against, r.measure)] = r.p
    rows = []
    for c in planned:
        values = wide[(c.view, c.measure)]
        x = values[c.system].dropna()
        row = {"system": c.system, "view": c.view, "measure": c.measure, "n_queries": int(x.size),
               "n_no_relevant": empty_at[(c.view, c.measure)],
               "mean": float(x.mean()), "kind": c.kind,
               "baseline": c.against, "baseline_mean": np.nan, "delta": np.nan, "ci_low": np.nan, "ci_high": np.nan,
               "sd_diff": np.nan, "mde": np.nan, "p": np.nan, "role": c.role, "family": c.family}
        if c.against is not None:
            pair = values[[c.system, c.against]].fillna(0.0)
            d = (pair[c.system] - pair[c.against]).to_numpy(dtype=float)
            low, high = paired_interval(d, interval, n_resamples=n_resamples, seed=seed)
            sd = float(d.std(ddof=1))
            row.update(baseline_mean=float(pair[c.against].mean()), delta=float(d.mean()), ci_low=low, ci_high=high,
                       sd_diff=sd, mde=mde(sd, d.size, alpha), p=pvalues[(c.view, c.system, c.against, c.measure)])
        rows.append(row)
    table = pd.DataFrame(rows)
    table["p_corrected"], table["reject"], table["family_size"] = np.nan, False, 0
    groups: dict[tuple, list[int]] = {}
    for i, c in enumerate(planned):
        if c.family:
            groups.setdefault(c.group, []).append(i)
    for index in groups.values():
        corrected, reject = correct(table.loc[index, "p"].to_numpy(dtype=float), correction, alpha)
        table.loc[index, "p_corrected"] = corrected
        table.loc[index, "reject"] = reject
        table.loc[index, "family_size"] = int(table.loc[index, "p"].notna().sum())
    table.loc[table["p"].isna(), "family_size"] = 0  # identical: counted in no family
    # the MDE at the family's strictest step (alpha / m under Holm or Bonferroni): what a corrected test can detect
    table["mde_family"] = [mde(r.sd_diff, r.n_queries, strictest_alpha(alpha, correction, r.family_size))
                           if r.family_size > 0 and np.isfinite(r.sd_diff) else np.nan
                           for r in table.itertuples()]
    table["verdict"] = [_verdict(r, identical_by_construction) for r in table.itertuples()]
    return table[TABLE_COLUMNS]


def _verdict(row, constructed) -> str:
    if row.baseline is None or (isinstance(row.baseline, float) and np.isnan(row.baseline)):
        return ""
    if np.isnan(row.p):
        return "by construction" if (row.system, row.baseline, row.measure) in constructed else "identical"
    if not row.family:
        return "exploratory"
    if row.reject:
        return "better" if row.delta > 0 else "worse"
    return "n.s."


def _frames(runs: Mapping[str, pd.DataFrame]) -> list[pd.DataFrame]:
    """The runs as pt.Experiment reads them: strictly decreasing scores in their rank order (superb.trec.runs:
    a no-op for superb's runs; for a run with tied scores, its ``rank`` column decides, else trec_eval's rule), so
    that every ir_measures provider (pytrec_eval, Judged...) sees the same ranking."""

    out = []
    for name, run in runs.items():
        if run.empty:
            raise DataError(f"system {name!r} returned no results for any query: nothing to evaluate (check its "
                            "first stage and the selected queries)")
        missing = [c for c in ("qid", "docno", "score") if c not in run.columns]
        if missing:
            raise DataError(f"the run of system {name!r} lacks column(s) {missing}; found {list(run.columns)}")
        dup = run.duplicated(["qid", "docno"])
        if dup.any():
            first = run[dup].iloc[0]
            raise DataError(f"the run of system {name!r} lists a document twice for a query, e.g. "
                            f"({first['qid']!r}, {first['docno']!r}); a ranking holds each document once")
        run = strictly_decreasing(run[[c for c in ("qid", "docno", "score", "rank") if c in run.columns]]
                                  .astype({"qid": str, "docno": str}))
        # object, not arrow-backed strings: ir_measures iterates the rows, and arrow scalars are slow to iterate
        out.append(run[["qid", "docno", "score"]].astype({"qid": object, "docno": object}))
    return out


def _topics(topics: pd.DataFrame) -> pd.DataFrame:
    frame = pd.DataFrame({"qid": topics["qid"].astype(str)})
    frame["query"] = topics["query"].astype(str) if "query" in topics.columns else ""
    return frame


def _qrels(qrels: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in ("qid", "docno", "label") if c not in qrels.columns]
    if missing:
        raise DataError(f"qrels lack column(s) {missing}; found {list(qrels.columns)}")
    labels = pd.to_numeric(qrels["label"], errors="coerce")
    bad = labels.isna() | (labels != labels.round())
    if bad.any():
        row = qrels[bad].iloc[0]
        raise DataError(f"qrels column 'label' must hold integers; found {row['label']!r} (qid {row['qid']!r}, "
                        f"docno {row['docno']!r}) and {int(bad.sum()) - 1} more")
    frame = pd.DataFrame({"qid": qrels["qid"].astype(str).astype(object),
                          "docno": qrels["docno"].astype(str).astype(object), "label": labels.astype(int)})
    if frame.duplicated(["qid", "docno"]).any():
        first = frame[frame.duplicated(["qid", "docno"])].iloc[0]
        raise DataError(f"qrels label ({first['qid']!r}, {first['docno']!r}) more than once; keep one label per pair")
    return frame
