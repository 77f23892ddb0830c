"""Evaluation through ``pt.Experiment``: per-query values, and each family of tests with superb's NaN-aware correction.

VIEWS. A view is (name, qrels, judged_only); every measure is computed under each view of a run:

- ``full``: the qrels as given; unjudged documents count as non-relevant (the TREC rule).
- ``condensed``: the same qrels, unjudged documents removed from each run before scoring (Sakai's condensed lists):
  ir_measures' ``judged_only`` parameter, trec_eval's ``-J``.
- A third view is another :class:`View`, e.g. "filled": human labels where they exist and LLM labels elsewhere
  (a second qrels set), judged_only False.

FAMILIES. A :class:`Family` is the systems tested against one system: its baseline family (every system whose
``baseline`` it is) or a head-to-head family (every system that names it in ``compare``). Per view and per measure,
the family's p-values come from ONE ``pt.Experiment(..., baseline=0, test=PairedTest(...))`` call and are corrected
together by :func:`superb.eval.stats.correct`: a system identical to the one it is tested against has NaN p, is not
counted in the family size m, and is never rejected. (pt.Experiment cannot return per-query values together with a
baseline, so the per-query values come from one ``perquery=True`` call per view.)

Queries: the selected topics that have labels in the view's qrels (``filter_by_qrels``); a query a run does not
answer scores 0 on every measure (ir_measures' default), it is not dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from superb.errors import DataError, SpecError
from superb.eval.stats import PairedTest, correct

VIEW_KINDS = {"full": False, "condensed": True}  # view name -> judged_only
TABLE_COLUMNS = ["system", "view", "measure", "n_queries", "mean", "family", "baseline", "baseline_mean", "delta",
                 "p", "p_corrected", "reject", "family_size", "verdict"]


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


@dataclass(frozen=True)
class Family:
    """The systems tested against ``against``: kind "baseline" (their baseline) or "head-to-head" (``compare``)."""

    kind: str
    against: str
    members: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.against}"


def families(baselines: Mapping[str, str | None], comparisons: Mapping[str, Sequence[str]] | None = None
             ) -> list[Family]:
    """Baseline families, then head-to-head families, each in order of first appearance."""
    out: dict[tuple[str, str], list[str]] = {}
    for system, base in baselines.items():
        if base is not None:
            out.setdefault(("baseline", base), []).append(system)
    for system, others in (comparisons or {}).items():
        for other in others:
            out.setdefault(("head-to-head", other), []).append(system)
    return [Family(kind, against, tuple(members)) for (kind, against), members in out.items()]


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


def family_pvalues(runs: Mapping[str, pd.DataFrame], topics: pd.DataFrame, view: View, measures: Sequence,
                   family: Family, test: PairedTest) -> pd.DataFrame:
    """system, measure, p of each member against ``family.against`` under ``view``: one pt.Experiment call."""
    import pyterrier as pt

    names = [family.against, *family.members]
    view_measures = view.measures(measures)
    result = pt.Experiment(_frames({n: runs[n] for n in names}), _topics(topics), _qrels(view.qrels), view_measures,
                           names=names, baseline=0, test=test, filter_by_qrels=True, validate="ignore",
                           verbose=False)
    rows = []
    for vm, m in zip(view_measures, measures):
        for system, p in zip(result["name"].iloc[1:], result[f"{vm!r} p-value"].iloc[1:]):
            rows.append({"system": system, "measure": repr(m), "p": np.nan if p is None else float(p)})
    return pd.DataFrame(rows, columns=["system", "measure", "p"])


def significance(runs: Mapping[str, pd.DataFrame], topics: pd.DataFrame, views: Sequence[View], measures: Sequence,
                 fams: Sequence[Family], *, test: PairedTest, correction: str = "holm", alpha: float = 0.05,
                 perquery: pd.DataFrame | None = None) -> pd.DataFrame:
    """The table: per view and measure, one row per system (mean; its baseline family's test, if any), then one row
    per head-to-head comparison. Columns TABLE_COLUMNS; ``family`` names the family ("baseline:BM25",
    "head-to-head:BM25 >> bi-encoder"), ``family_size`` the number of non-NaN p-values corrected together."""
    if perquery is None:
        perquery = pd.concat([per_query(runs, topics, v, measures) for v in views], ignore_index=True)
    means = perquery.groupby(["view", "measure", "system"])["value"].agg(["mean", "size"])
    of_system = {m: f for f in fams if f.kind == "baseline" for m in f.members}
    rows = []
    for view in views:
        tested = {f.label: family_pvalues(runs, topics, view, measures, f, test).set_index(["system", "measure"])
                  for f in fams}
        for m in measures:
            name = repr(m)
            for system in runs:
                rows.append(_row(system, view.name, name, means, of_system.get(system), tested))
            for f in fams:
                if f.kind == "head-to-head":
                    rows += [_row(s, view.name, name, means, f, tested) for s in f.members]
    table = pd.DataFrame(rows)
    table["p_corrected"], table["reject"], table["family_size"] = np.nan, False, 0
    for _, group in table[table["family"] != ""].groupby(["family", "view", "measure"], sort=False):
        corrected, reject = correct(group["p"].to_numpy(dtype=float), correction, alpha)
        table.loc[group.index, "p_corrected"] = corrected
        table.loc[group.index, "reject"] = reject
        table.loc[group.index, "family_size"] = int(group["p"].notna().sum())
    table["verdict"] = [_verdict(r) for r in table.itertuples()]
    return table[TABLE_COLUMNS]


def _row(system: str, view: str, measure: str, means: pd.DataFrame, family: Family | None,
         tested: dict[str, pd.DataFrame]) -> dict:
    mean, n = means.loc[(view, measure, system)]
    row = {"system": system, "view": view, "measure": measure, "n_queries": int(n), "mean": float(mean),
           "family": "", "baseline": None, "baseline_mean": np.nan, "delta": np.nan, "p": np.nan}
    if family is not None:
        other = float(means.loc[(view, measure, family.against), "mean"])
        row.update(family=family.label, baseline=family.against, baseline_mean=other, delta=float(mean) - other,
                   p=float(tested[family.label].loc[(system, measure), "p"]))
    return row


def _verdict(row) -> str:
    if not row.family:
        return ""
    if np.isnan(row.p):
        return "untested"
    if row.reject:
        return "better" if row.delta > 0 else "worse"
    return "n.s."


def _frames(runs: Mapping[str, pd.DataFrame]) -> list[pd.DataFrame]:
    """The runs as pt.Experiment reads them: strictly decreasing scores in their rank order (superb.pipelines.ties:
    a no-op for superb's runs; for a run with tied scores, its ``rank`` column decides, else trec_eval's rule), so
    that every ir_measures provider (pytrec_eval, Judged...) sees the same ranking."""
    from superb.pipelines.ties import strictly_decreasing

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
