"""System orderings under human and LLM qrels, as UMBRELA measures them: `[label_study] depth = D` of a judge spec.

Every system (a results folder's runs, plus any run files named in [label_study] systems) is evaluated under the
HUMAN qrels, all of them (TREC's rule: a document they do not label is non-relevant), and under each judge's LLM
labels of the POOLED TOP D of every system (the pool superb.judges.pool adds; UMBRELA's "LLM qrels"):

- ``llm``: the LLM labels alone, one per pooled pair, judged or not: what a collection judged by the LLM gives;
- ``same pairs``: the LLM labels of the pooled pairs that have a human label, and no others, so both label sets
  cover the same judged pairs and a difference comes from the labels alone, not from the human pool's holes;
- ``filled``: the human labels, and the LLM label of every pooled pair the humans did not judge (UMBRELA's
  "fill the holes").

Per measure with a cut-off <= D (a deeper one would meet unlabelled ranks): Kendall's tau-b, tau_ap (Yilmaz et al.,
the human ordering as reference) and Spearman's rho between the orderings by mean, each with a 95% interval from
resampling queries (superb.judges.bootstrap.ordering_intervals); and the pairs of systems (every pair tested under each
label set, one correction family per label set and measure, superb.judges.pair_agreement): of the pairs the human
labels separate significantly, how many the LLM labels order alike, confirm, or reverse.

A judge's label for a pool pair is its calibrated label (superb.judges.studies.calibration_run: test queries by the
dev-fitted cut points, dev queries' human-judged pairs by cross-validated ones, their unjudged pairs by the dev-fitted
ones), or its written grade. A pair it could not score has no LLM label (counted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from superb.judges.bootstrap import QueryBootstrap
from superb.judges.pair_agreement import markdown_cells, markdown_header
from superb.judges.studies.label import label_study
from superb.judges.studies.label import all_verdicts

VIEWS = ("llm", "same pairs", "filled")
COLUMNS = ["judge", "labels", "measure", "n_systems", "n_queries", "tau", "tau_low", "tau_high", "tau_ap",
           "tau_ap_low", "tau_ap_high", "rho", "rho_low", "rho_high", "discordant_pairs", "system_pairs",
           "significant_human", "same_order", "confirmed", "reversed", "significant_judge", "only_judge",
           "order_human", "order_judge", "tested_verdicts", "flipped_verdicts"]


def llm_views(human: pd.DataFrame, labels: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The three LLM label sets of the module docstring from a judge's labels (qid, docno, label) of the pool."""
    human = human[["qid", "docno", "label"]].astype({"qid": str, "docno": str})
    llm = labels[["qid", "docno", "label"]].astype({"qid": str, "docno": str, "label": int})
    keys = human[["qid", "docno"]]
    flagged = llm.merge(keys.assign(_judged=True), on=["qid", "docno"], how="left")
    judged = flagged["_judged"].notna().to_numpy()
    same = llm[judged].reset_index(drop=True)
    filled = pd.concat([human, llm[~judged]], ignore_index=True)
    return {"llm": llm.reset_index(drop=True), "same pairs": same, "filled": filled}


def orderings_study(runs: Mapping[str, pd.DataFrame], baselines: Mapping[str, str | None], human: pd.DataFrame,
                    judges: Mapping[str, pd.DataFrame], measures: Sequence, *, depth: int, queries: Sequence[str],
                    test: str = "t", correction: str = "holm", alpha: float = 0.05, n_resamples: int = 10_000,
                    bootstrap: QueryBootstrap | None = None, seed: int = 0
                    ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[str], dict]:
    """(table of COLUMNS, every verdict against a baseline, every pair of systems, markdown sections, per-query
    values by (judge, view): (under the human qrels, under the view)): each judge's labels (judge -> qid, docno,
    label of the pool) in each view against the human qrels."""
    measures = [m for m in measures if (m.params.get("cutoff") or depth + 1) <= depth]
    rows, verdicts, pairs, sections, perquery = [], [], [], [], {}
    for judge, labels in judges.items():
        for view, qrels in llm_views(human, labels).items():
            study = label_study(runs, human, qrels, measures, baselines, names=("human", "judge"),
                                queries=list(queries), condensed=False, test=test, correction=correction,
                                alpha=alpha, seed=seed, n_resamples=n_resamples,
                                bootstrap=bootstrap or QueryBootstrap(seed=seed), orderings=True)
            every = all_verdicts(study)
            pq = study.perquery
            perquery[judge, view] = tuple(pq[pq["labels"] == side].drop(columns="labels") for side in ("human", "judge"))
            for r in study.tau.to_dict("records"):
                tested = every[every["measure"] == r["measure"]]
                rows.append({"judge": judge, "labels": view, **r, "n_queries": len(study.queries),
                             "tested_verdicts": len(tested), "flipped_verdicts": int(tested["flipped"].sum())})
            verdicts.append(every.assign(judge=judge, labels=view))
            pairs.append(study.pairs.assign(judge=judge, labels=view))
            sections.append(_section(judge, view, study, every, len(qrels)))
    table = pd.DataFrame(rows)
    table = table[[c for c in COLUMNS if c in table.columns]]
    return (table, pd.concat(verdicts, ignore_index=True), pd.concat(pairs, ignore_index=True), sections, perquery)


def _ci(r, name: str) -> str:
    value = getattr(r, name)
    if pd.isna(value):
        return "n/a (ties)"
    return f"{value:.3f} [{getattr(r, name + '_low'):.2f}, {getattr(r, name + '_high'):.2f}]"


def _section(judge: str, view: str, study, every: pd.DataFrame, n_labels: int) -> str:
    lines = [f"## {judge}: human vs {view}", "", f"{n_labels:,} LLM labels in this view; {len(study.queries)} "
             "queries.", "", f"| measure | Kendall's tau | tau_ap | Spearman's rho | discordant pairs | "
             f"{markdown_header('judge')} | order (human) | order (judge) |", "|---|---:|---:|---:|---:|---:|---|---|"]
    for r in study.tau.itertuples(index=False):
        lines.append(f"| {r.measure} | {_ci(r, 'tau')} | {_ci(r, 'tau_ap')} | {_ci(r, 'rho')} | "
                     f"{r.discordant_pairs} | {markdown_cells(r)} | {r.order_human} | {r.order_judge} |")
    flips = every[every["flipped"]]
    lines += ["", f"Verdicts against the baseline: {len(every)} tested, {len(flips)} flipped."]
    lines += [f"- {r.system} vs {r.baseline}, {r.measure}: {r.verdict_human} (human) -> {r.verdict_judge} "
              f"({view})" for r in flips.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def write_orderings(out: Path, table: pd.DataFrame, verdicts: pd.DataFrame, pairs: pd.DataFrame,
                    sections: list[str], *, title: str, systems: Sequence[str], source: str, depth: int,
                    counts: Mapping[str, Mapping[str, int]], settings: str) -> None:
    """label_study.md / .csv, label_study_verdicts.csv, label_study_pairs.csv."""
    covered = "; ".join(f"{j}: {c['labelled']:,} of {c['pooled']:,} pooled pairs labelled ({c['unjudged']:,} of them "
                        f"without a human label)" for j, c in counts.items())
    intro = (f"# {title}: system orderings under human and LLM qrels\n\n{len(systems)} systems ({source}): "
             f"{', '.join(systems)}. LLM labels on the pooled top {depth} of every system ({covered}). Views: llm = "
             "the LLM labels alone; same pairs = the LLM labels of the human-judged pooled pairs only; filled = the "
             f"human qrels with the LLM labels of the unjudged pooled pairs. Measures with a cut-off <= {depth}, "
             f"human qrels in full. {settings} Intervals: 95%, resampling queries. tau_ap takes the human ordering as "
             "the reference. Significant pairs: every pair of systems tested under each label set; of those the "
             "human labels separate, how many the LLM labels order alike, confirm or reverse.\n\n")
    (out / "label_study.md").write_text(intro + "\n".join(sections), encoding="utf-8")
    table.to_csv(out / "label_study.csv", index=False)
    verdicts.to_csv(out / "label_study_verdicts.csv", index=False)
    pairs.to_csv(out / "label_study_pairs.csv", index=False)
