"""Do the labels change the conclusions? The same runs evaluated under two sets of qrels (e.g. human labels and an
LLM judge's labels): how far the ordering of systems agrees (Kendall's tau per measure) and which significance
verdicts against a baseline flip.

The two label sets are two views of the runs (superb.eval.evaluate.View), evaluated by the same code as `superb run`
tables (pt.Experiment, NaN-aware correction). Both use ONE topic set: by default the queries judged in both qrels,
so that a difference comes from the labels and not from the queries. Documents a qrels set does not label count as
non-relevant (the usual TREC rule), or are removed before scoring with ``condensed=True``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from superb.eval.evaluate import View, per_query, significance
from superb.eval.families import families
from superb.eval.measures import parse_measure
from superb.eval.stats import PairedTest
from superb.judges.bootstrap import TIE_DIGITS, ordering_intervals, tau_intervals
from superb.judges.pair_agreement import pair_agreement


@dataclass
class LabelStudy:
    perquery: pd.DataFrame  # labels, system, qid, measure, value
    tables: dict[str, pd.DataFrame]  # labels name -> superb.eval.evaluate.significance table of that view
    tau: pd.DataFrame  # measure, n_systems, tau, p, discordant_pairs, order_<a>, order_<b>, + pair agreement
    pairs: pd.DataFrame  # every pair of systems with its verdict under both (superb.judges.pair_agreement)
    flips: pd.DataFrame  # system, baseline, measure, verdict_<a>, verdict_<b>, p_corrected_<a>, p_corrected_<b>
    names: tuple[str, str]
    queries: list[str]


def common_queries(qrels_a: pd.DataFrame, qrels_b: pd.DataFrame) -> list[str]:
    both = set(qrels_a["qid"].astype(str)) & set(qrels_b["qid"].astype(str))
    if not both:
        raise ValueError("the two qrels share no query: nothing to compare (check that both use the same qids)")
    return sorted(both)


def ranking_agreement(perquery_a: pd.DataFrame, perquery_b: pd.DataFrame, names: Sequence[str] = ("a", "b"),
                      bootstrap=None, more: bool = False) -> pd.DataFrame:
    """Kendall's tau-b between the system orderings (by mean per measure) under two evaluations of the same systems.
    NaN (and p NaN) when fewer than two systems or all means tie. ``discordant_pairs`` counts system pairs ordered
    the other way round (ties on one side only are not counted as discordant). With ``bootstrap`` (a
    superb.judges.bootstrap.QueryBootstrap) the columns tau_low / tau_high hold its interval from resampling queries
    (the two evaluations must then cover the same queries); with ``more`` also tau_ap (``perquery_a`` the reference)
    and Spearman's rho with theirs (superb.judges.bootstrap.ordering_intervals)."""
    from scipy.stats import kendalltau

    a_name, b_name = names
    # means equal up to the order their values were summed in are ties (as in superb.judges.bootstrap.kendall_tau_b)
    mean_a = perquery_a.groupby(["measure", "system"], sort=False)["value"].mean().round(TIE_DIGITS)
    mean_b = perquery_b.groupby(["measure", "system"], sort=False)["value"].mean().round(TIE_DIGITS)
    rows = []
    for measure in pd.unique(perquery_a["measure"]):
        sa = mean_a.loc[measure]
        if measure not in mean_b.index.get_level_values(0):
            raise ValueError(f"measure {measure!r} is missing from the second evaluation")
        sb = mean_b.loc[measure].reindex(sa.index)
        if sb.isna().any():
            raise ValueError(f"{measure}: systems {list(sb.index[sb.isna()])} are missing from the second evaluation")
        if len(sa) >= 2 and sa.nunique() > 1 and sb.nunique() > 1:
            tau, p = kendalltau(sa.to_numpy(), sb.to_numpy())
        else:
            tau, p = np.nan, np.nan
        x, y = sa.to_numpy(), sb.to_numpy()
        discordant = sum(1 for i in range(len(x)) for j in range(i + 1, len(x))
                         if (x[i] - x[j]) * (y[i] - y[j]) < 0)
        rows.append({"measure": measure, "n_systems": len(sa), "tau": float(tau), "p": float(p),
                     "discordant_pairs": discordant,
                     f"order_{a_name}": " > ".join(sa.sort_values(ascending=False, kind="stable").index),
                     f"order_{b_name}": " > ".join(sb.sort_values(ascending=False, kind="stable").index)})
    out = pd.DataFrame(rows)
    if bootstrap is not None and len(out):
        bounds = tau_intervals(perquery_a, perquery_b, bootstrap)[["measure", "tau_low", "tau_high"]]
        out = out.merge(bounds, on="measure", how="left")
        out.insert(out.columns.get_loc("tau") + 1, "tau_low", out.pop("tau_low"))
        out.insert(out.columns.get_loc("tau_low") + 1, "tau_high", out.pop("tau_high"))
        if more:
            extra = ordering_intervals(perquery_a, perquery_b, bootstrap)
            cols = [f"{c}{s}" for c in ("tau_ap", "rho") for s in ("", "_low", "_high")]
            out = out.merge(extra[["measure", *cols]], on="measure", how="left")
            for i, c in enumerate(cols):
                out.insert(out.columns.get_loc("tau_high") + 1 + i, c, out.pop(c))
    return out


def verdict_flips(table_a: pd.DataFrame, table_b: pd.DataFrame, names: Sequence[str] = ("a", "b"),
                  only_flips: bool = True) -> pd.DataFrame:
    """Rows of two significance tables (same systems and measures) whose verdicts differ
    ("better", "worse", "n.s.", "identical"); rows without a baseline are skipped. ``only_flips=False`` keeps all."""
    a_name, b_name = names
    keys = ["system", "measure"]
    merged = table_a[keys + ["baseline", "verdict", "p_corrected", "delta"]].merge(
        table_b[keys + ["verdict", "p_corrected", "delta"]], on=keys, how="outer",
        suffixes=(f"_{a_name}", f"_{b_name}"), indicator=True)
    unmatched = merged[merged["_merge"] != "both"]
    if len(unmatched):
        raise ValueError(f"the two tables differ in (system, measure) rows, e.g. {unmatched[keys].head(3).values.tolist()}")
    merged = merged[merged["baseline"].notna()].drop(columns="_merge")
    if only_flips:
        merged = merged[merged[f"verdict_{a_name}"] != merged[f"verdict_{b_name}"]]
    return merged.reset_index(drop=True)


def label_study(runs: Mapping[str, pd.DataFrame], qrels_a: pd.DataFrame, qrels_b: pd.DataFrame, measures,
                baselines: Mapping[str, str | None], *, names: Sequence[str] = ("human", "judge"),
                queries: Sequence[str] | None = None, condensed: bool = False, test: str = "t",
                correction: str = "holm", alpha: float = 0.05, seed: int = 0, n_resamples: int = 10_000,
                bootstrap=None,
                judge_ranked: Sequence[str] | None = None, orderings: bool = False) -> LabelStudy:
    """Evaluate ``runs`` (system -> run frame) under both qrels on one topic set (default: queries judged in both),
    test each system against ``baselines[system]`` under each, and compare orderings and verdicts (against the
    baselines, and between every pair of systems: superb.judges.pair_agreement); ``test``, ``n_resamples`` (of the
    randomization test) and ``seed`` reach both. ``bootstrap``
    (superb.judges.bootstrap.QueryBootstrap) adds 95% intervals for Kendall's tau (tau_low, tau_high).
    ``judge_ranked``: the systems the judge's own model ranked, for the self-preference counts of the pair agreement.
    ``orderings``: tau_ap and Spearman's rho beside tau (with ``bootstrap``)."""

    if len(names) != 2 or names[0] == names[1]:
        raise ValueError(f"names must be two different labels for the qrels sets, got {list(names)}")
    if not runs:
        raise ValueError("no runs given: a label study compares at least two systems")
    measures = [parse_measure(m) if isinstance(m, str) else m for m in measures]
    topic = sorted(str(q) for q in queries) if queries is not None else common_queries(qrels_a, qrels_b)
    topics = pd.DataFrame({"qid": topic, "query": ""})
    runs = {s: r[r["qid"].astype(str).isin(set(topic))] for s, r in runs.items()}
    views = [View(names[0], qrels_a, condensed), View(names[1], qrels_b, condensed)]
    pq = {v.name: per_query(runs, topics, v, measures) for v in views}
    table = significance(runs, topics, views, measures, families(baselines), test=PairedTest(test, n_resamples, seed),
                         correction=correction, alpha=alpha, perquery=pd.concat(pq.values(), ignore_index=True))
    tables = {n: table[table["view"] == n].drop(columns="view").reset_index(drop=True) for n in names}
    pq_a, pq_b = (pq[n].drop(columns="view") for n in names)
    perquery = pd.concat([pq_a.assign(labels=names[0]), pq_b.assign(labels=names[1])], ignore_index=True)
    summary, pairs = pair_agreement(pq_a, pq_b, names, test=test, correction=correction, alpha=alpha, seed=seed,
                                    n_resamples=n_resamples, judge_ranked=judge_ranked)
    tau = ranking_agreement(pq_a, pq_b, names, bootstrap=bootstrap, more=orderings).merge(summary, on="measure",
                                                                                         how="left")
    return LabelStudy(perquery=perquery[["labels", "system", "qid", "measure", "value"]], tables=tables, tau=tau,
                      pairs=pairs,
                      flips=verdict_flips(tables[names[0]], tables[names[1]], names), names=tuple(names),
                      queries=topic)


def all_verdicts(study) -> pd.DataFrame:
    """Every tested (system, baseline, measure) verdict of a LabelStudy under both label sets, with ``flipped``: the
    conclusion changed (better / worse / no significant difference)."""
    every = verdict_flips(study.tables["human"], study.tables["judge"], ("human", "judge"), only_flips=False)
    every = every[every["verdict_human"].ne("") | every["verdict_judge"].ne("")]
    flipped = every["verdict_human"].map(conclusion) != every["verdict_judge"].map(conclusion)
    return every.assign(flipped=flipped).reset_index(drop=True)


def conclusion(verdict: str) -> str:
    """A verdict as a conclusion: "better", "worse", or no significant difference ("n.s." and "identical" alike)."""
    return verdict if verdict in ("better", "worse") else "no difference"
