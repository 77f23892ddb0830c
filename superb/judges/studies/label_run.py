"""The [label_study] step of `superb judge SPEC`: "do the labels change the conclusions?" in one command.

The systems (TREC runs of a `superb run` results folder, or first stages run on the selected queries) are evaluated
under the human labels and under each judge variant's labels, on the SAME judged pairs: the pool pairs that both the
humans and the judge label (judge labels mapped through [agreement] label_map). With ``condensed = true`` (default)
documents outside those pairs are removed from the runs before scoring (Sakai's condensed lists): the judge labels
only a pool, and counting everything else as non-relevant would mostly measure how much of a run the pool covers.
With ``condensed = false`` they count as non-relevant (the TREC rule). The topic set is the selected queries with at
least one such pair.

Writes to the results folder:
  label_study.md            per judge variant: system means under both label sets, Kendall's tau per measure, flips
  label_study.csv           judge, measure, n_systems, n_queries, tau, p, discordant_pairs, order_human,
                            order_judge, tested_verdicts, flipped_verdicts
  label_study_verdicts.csv  every tested (system, baseline, measure) verdict under both label sets, flipped or not

A verdict FLIPS when the conclusion changes: significantly better, significantly worse, or no significant difference
("n.s." and "identical", i.e. identical per-query values, are the same conclusion).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from superb.errors import DataError, SpecError
from superb.folder.kinds import open_folder
from superb.folder.layout import SYSTEMS
from superb.folder.run_folder import RunFolder
from superb.folder.verify import as_records, note
from superb.run.experiment import run_systems
from superb.judges.commands.spec_studies import LabelStudySpec
from superb.judges.pair_agreement import markdown_cells, markdown_header
from superb.judges.records import Judgment
from superb.judges.studies.label import all_verdicts, label_study
from superb.run.spec import PipelineSpec


def runs_from_folder(folder: str | Path, select: Sequence[str] | None, dataset_name: str
                     ) -> tuple[dict[str, pd.DataFrame], dict[str, str | None], dict]:
    """Runs and baselines of a `superb run` results folder, read through superb.folder (each file checked against
    its recorded sha256; each system's baseline by the spec's rule: its ``baseline``, else the ``input`` it reranks).
    A baseline that is not selected leaves its system untested (listed in info["untested_without_baseline"])."""
    try:
        opened = open_folder(folder, RunFolder, record_optional=True,
                             what="a folder written by `superb run` (relative paths are resolved against the current "
                                  "directory)")
    except DataError as exc:
        raise SpecError("label_study.runs", str(exc)) from None
    systems = opened.systems()
    source_dataset = (opened.spec_raw.get("dataset") or {}).get("name")
    if source_dataset is not None and source_dataset != dataset_name:
        raise DataError(f"label_study.runs: {folder} holds runs on data set {source_dataset!r}, but this spec "
                        f"judges {dataset_name!r}; use runs of the same data set")
    names = list(select) if select is not None else list(systems)
    unknown = [s for s in names if s not in systems]
    if unknown:
        raise SpecError("label_study.select", f"systems {unknown} are not in {opened.path / SYSTEMS}; it has "
                                              f"{list(systems)}")
    if len(names) < 2:
        raise SpecError("label_study.select", f"a label study orders at least two systems, found {names}")
    declared = opened.baselines
    baselines, untested = {}, []
    for s in names:
        b = declared.get(s)
        if b is not None and b not in names:
            untested.append(f"{s} (baseline {b} not selected)")
            b = None
        baselines[s] = b

    runs = opened.runs(names)
    marked = note(opened.mismatches)
    info = {"source": f"{folder}; {marked}" if marked else str(folder), "untested_without_baseline": untested}
    if opened.mismatches:
        info["unverified"] = as_records(opened.mismatches)
    return runs, baselines, info


def runs_from_first_stages(systems: Sequence[Mapping[str, Any]], dataset: Any, topics: pd.DataFrame
                           ) -> tuple[dict[str, pd.DataFrame], dict[str, str | None], dict]:
    """Run each {name, first_stage, baseline} on the selected queries, as `superb run` runs its pipelines."""

    pipelines = tuple(PipelineSpec(name=s["name"], path=f"label_study.systems[{i}]", first_stage=s["first_stage"],
                                   baseline=s.get("baseline")) for i, s in enumerate(systems))
    done = run_systems(pipelines, dataset, topics[["qid", "query"]].astype({"qid": str}))
    runs = {name: result.run for name, result in done.items()}
    baselines = {p.name: p.baseline for p in pipelines}
    return runs, baselines, {"source": "first stages run on the selected queries", "untested_without_baseline": []}


def common_pairs(human: pd.DataFrame, records: Sequence[Judgment], pool: pd.DataFrame,
                 label_map: Mapping[int, int] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(human qrels, judge qrels) on the pool pairs both label; judge labels mapped through ``label_map``."""
    judge = pd.DataFrame([(j.qid, j.docno, int(j.label)) for j in records], columns=["qid", "docno", "label"])
    if label_map:
        judge["label"] = judge["label"].map(lambda x: label_map.get(x, x))
    keys = pool[["qid", "docno"]].astype(str).drop_duplicates()
    h = human[["qid", "docno", "label"]].astype({"qid": str, "docno": str}).merge(keys, on=["qid", "docno"])
    both = h[["qid", "docno"]].merge(judge[["qid", "docno"]], on=["qid", "docno"])
    return (h.merge(both, on=["qid", "docno"]).reset_index(drop=True),
            judge.merge(both, on=["qid", "docno"]).reset_index(drop=True))


def study_systems(ls: LabelStudySpec, dataset: Any, topics: pd.DataFrame
                  ) -> tuple[dict[str, pd.DataFrame], dict[str, str | None], dict]:
    """(runs, baselines, info) of the spec's systems; called before any judge runs, so that a bad [label_study]
    fails before the LLM calls."""
    if ls.runs is None:
        return runs_from_first_stages(ls.systems, dataset, topics)
    runs, baselines, info = runs_from_folder(ls.runs, ls.select, dataset.name)
    if ls.systems:  # more systems beside the folder's (e.g. a data set's other first stages, read from run files)
        clash = [s["name"] for s in ls.systems if s["name"] in runs]
        if clash:
            raise SpecError("label_study.systems", f"{clash} already name systems of {ls.runs}; give them other names")
        unknown = [s["baseline"] for s in ls.systems if s["baseline"] and s["baseline"] not in runs
                   and s["baseline"] not in {x["name"] for x in ls.systems}]
        if unknown:
            raise SpecError("label_study.systems", f"baselines {unknown} are neither systems of {ls.runs} nor of "
                                                   "label_study.systems")
        more, more_baselines, _ = runs_from_first_stages(ls.systems, dataset, topics)
        runs.update(more)
        baselines.update(more_baselines)
        info["source"] += f" and {len(more)} more systems (label_study.systems)"
    return runs, baselines, info


def run_label_study(ls: LabelStudySpec, systems: tuple, *, topics: pd.DataFrame, pool: pd.DataFrame,
                    human: pd.DataFrame, variants: Mapping[str, Sequence[Judgment]], rel: int | None,
                    label_map: Mapping[int, int] | None, out: str | Path, title: str = "") -> dict:
    """Evaluate ``systems`` (from :func:`study_systems`) under the human and each variant's labels; write
    label_study.md/.csv (see the module docstring)."""

    measures = ls.measures_at(rel)
    runs, baselines, info = systems
    rows, verdicts, sections, summary = [], [], [], {}
    for name, records in variants.items():
        h, j = common_pairs(human, records, pool, label_map)
        if h.empty:
            raise DataError(f"label_study: judge {name!r} and the human labels share no pool pair; the pool must "
                            "hold pairs with human labels (pool.source = \"qrels\" or \"ratings\")")
        queries = sorted(set(h["qid"]) & set(topics["qid"].astype(str)))
        _check_coverage(runs, queries, info)
        study = label_study(runs, h, j, measures, baselines, names=("human", "judge"), queries=queries,
                            condensed=ls.condensed, test=ls.test, correction=ls.correction, alpha=ls.alpha,
                            n_resamples=ls.n_resamples)
        every = all_verdicts(study)
        for r in study.tau.to_dict("records"):
            tested = every[every["measure"] == r["measure"]]
            rows.append({"judge": name, **r, "n_queries": len(queries), "tested_verdicts": len(tested),
                         "flipped_verdicts": int(tested["flipped"].sum())})
        verdicts.append(every.assign(judge=name))
        sections.append(_section(name, study, every, len(h)))
        summary[name] = {"pairs": len(h), "queries": len(queries),
                         "flipped_verdicts": int(every["flipped"].sum()), "tested_verdicts": len(every)}
    out = Path(out)
    table = pd.DataFrame(rows)
    cols = ["judge", "measure", "n_systems", "n_queries", "tau", "p", "discordant_pairs", "system_pairs",
            "significant_human", "same_order", "confirmed", "reversed", "significant_judge", "only_judge",
            "order_human", "order_judge", "tested_verdicts", "flipped_verdicts"]
    table[cols].to_csv(out / "label_study.csv", index=False)
    pd.concat(verdicts, ignore_index=True).to_csv(out / "label_study_verdicts.csv", index=False)
    rule = ("condensed lists: documents outside those pairs are removed from the runs before scoring"
            if ls.condensed else "documents outside those pairs count as non-relevant")
    notes = [f"Systems: {', '.join(runs)} ({info['source']}). Each judge is compared with the human labels on the "
             f"pool pairs both label; {rule}. Test: {ls.test}, {ls.correction} correction, alpha {ls.alpha}; "
             f"binary measures count label >= {rel if rel is not None else 1} as relevant. Orders: by mean, ties "
             "in the spec's order."]
    if info["untested_without_baseline"]:
        notes.append(f"Untested: {', '.join(info['untested_without_baseline'])}.")
    if info.get("missing_from_run"):
        notes.append(f"Queries a run does not answer (score 0): {info['missing_from_run']}.")
    (out / "label_study.md").write_text(f"# {title}: do the labels change the conclusions?\n\n" + " ".join(notes)
                                        + "\n\n" + "\n".join(sections), encoding="utf-8")
    return {"systems": list(runs), "baselines": baselines, **info, "variants": summary,
            "measures": [repr(m) for m in measures], "condensed": ls.condensed}


def _check_coverage(runs: Mapping[str, pd.DataFrame], queries: Sequence[str], info: dict) -> None:
    missing = {}
    for system, run in runs.items():
        absent = sorted(set(queries) - set(run["qid"].astype(str)))
        if len(absent) == len(queries):
            raise DataError(f"label_study: the run of {system!r} answers none of the {len(queries)} judged queries "
                            f"(e.g. {list(queries)[:3]}); were the runs made on other queries of the data set?")
        if absent:
            missing[system] = absent
    info["missing_from_run"] = missing


def _section(name: str, study, every: pd.DataFrame, n_pairs: int) -> str:
    means = study.perquery.groupby(["measure", "system", "labels"], sort=False)["value"].mean().unstack("labels")
    lines = [f"## {name} vs human labels", "", f"{n_pairs} judged pairs, {len(study.queries)} queries.", "",
             "| measure | system | human | judge |", "|---|---|---:|---:|"]
    for (measure, system), r in means.iterrows():
        lines.append(f"| {measure} | {system} | {r['human']:.3f} | {r['judge']:.3f} |")
    lines += ["", f"| measure | Kendall's tau | p | discordant pairs | {markdown_header('judge')} | order (human) | "
                  "order (judge) |", "|---|---:|---:|---:|---:|---:|---|---|"]
    for r in study.tau.itertuples(index=False):
        tau = "n/a (ties)" if np.isnan(r.tau) else f"{r.tau:.3f}"
        p = "" if np.isnan(r.p) else f"{r.p:.3f}"
        lines.append(f"| {r.measure} | {tau} | {p} | {r.discordant_pairs} | {markdown_cells(r)} | {r.order_human} | "
                     f"{r.order_judge} |")
    flips = every[every["flipped"]]
    lines += ["", f"Verdicts against the baseline: {len(every)} tested, {len(flips)} flipped (better / worse / no "
                  "significant difference)."]
    for r in flips.itertuples(index=False):
        lines.append(f"- {r.system} vs {r.baseline}, {r.measure}: {r.verdict_human} (human) -> "
                     f"{r.verdict_judge} (judge)")
    return "\n".join(lines) + "\n"
