"""Runs a spec: every pipeline a PyTerrier ``>>`` composition (superb.pipelines.systems), run once each in spec order.

A pipeline with ``input = "X"`` is ``X >> its rerankers``, and X's own pipeline is computed once (a shared prefix),
so a table of several rerankers over one first stage pays for that first stage once. LLM calls go through the shared
response cache, so an interrupted experiment, run again, repeats no completed call. Evaluation and the results
folder are superb.run.results' (pt.Experiment underneath).
"""

from __future__ import annotations

import logging
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from superb.errors import DataError, SpecError
from superb.llm import describe
from superb.llm.connect import check_table, open_for_spec
from superb.llm.ship import response_log
from superb.run.preflight import needed, run_preflight
from superb.run.spec import PipelineSpec, QueriesSpec, Spec
from superb.run.stage_report import report
from superb.terminal import status

log = logging.getLogger(__name__)


@dataclass
class PipelineResult:
    name: str
    run: pd.DataFrame
    seconds: float
    stats: dict[str, int] = field(default_factory=dict)  # reranker counters: repairs, fallbacks, failures...
    usage: dict[str, Any] = field(default_factory=dict)  # LLM calls, tokens, cache hits for this pipeline
    calls_depend_on_answers: bool = False  # its calls depend on the answers: a dry run's count is an estimate
    given_run: dict[str, Any] | None = None  # a first stage that is a given run: its file's path, format, sha256
    max_calls: int | None = None  # the most LLM requests its own stages can make on these queries (None: unknown)
    not_run: bool = False  # a dry run skipped it: no LLM stage reads its output (superb.run.preflight.needed)


@dataclass
class ExperimentResult:
    spec: Spec
    topics: pd.DataFrame
    qrels: pd.DataFrame
    pipelines: dict[str, PipelineResult]
    dataset_provenance: dict[str, Any]
    llm_info: dict[str, Any] | None
    timings: dict[str, float]
    responses: Any = None  # superb.llm.ship.ResponseLog: the cached answers this run used (shipped with results)
    sharding: dict[str, Any] | None = None  # a shard's or a merge's record (superb/run/shards.py, superb/run/merge.py)
    query_checks: dict[str, Any] = field(default_factory=dict)  # selected queries without labels (unjudged_queries)


def check_topics(topics: pd.DataFrame) -> pd.DataFrame:
    """Queries with empty text cannot be retrieved for: refuse them with the qids, rather than score them 0."""
    empty = topics[topics["query"].fillna("").str.strip() == ""]
    if len(empty):
        raise DataError(f"{len(empty)} selected queries have empty text (qids: {', '.join(empty['qid'][:5])}); "
                        "fix the topics file or exclude them with [queries].subset")
    return topics


def check_evaluable(spec: Spec, topics: pd.DataFrame, qrels: pd.DataFrame, *, sharded: bool = False,
                    fix: str = "") -> None:
    """Before any system runs: evaluation needs a selected query with labels, and a paired significance test (any
    pipeline with a baseline or a compare) two of them; else a DataError now, not a crash after the LLM calls.
    ``fix``: the way out to name (default: a spec's)."""
    judged = sorted(set(topics["qid"]) & set(qrels["qid"]))
    tested = any(b is not None for b in spec.baselines.values()) or any(spec.comparisons.values())
    need = 2 if tested else 1
    if len(judged) >= need:
        return
    why = "a paired significance test (a baseline or compare) needs at least 2" if tested else "nothing to evaluate"
    fix = fix or ("use fewer shards, so that each holds at least 2 labelled queries" if sharded else
                  "select more queries in [queries]" + (", or set baseline = false on every pipeline" if tested else ""))
    raise DataError(f"{len(judged)} of the {len(topics)} selected queries have relevance labels "
                    f"({', '.join(judged) or 'none'}): {why}; {fix}")


def check_levels(spec: Spec, dataset, qrels: pd.DataFrame) -> None:
    """Before any system runs: a binary measure whose relevance level no label of the data set reaches (``P(rel=9)@5``
    on a 0..3 scale, or [evaluation] rel = 9) would score 0 for every system; a SpecError names it and the labels."""
    found = {int(x) for x in qrels["label"]} if len(qrels) else set()
    found |= {int(x) for x in getattr(dataset, "labels", ())}
    if not found:
        return
    low, top = min(found), max(found)
    ev = spec.evaluation
    rel = ev.rel if ev.rel is not None else int(getattr(dataset, "rel_threshold", 1) or 1)
    scale = f"the labels of data set {dataset.name!r} run {low}..{top}"
    if rel > top:
        where = "evaluation.rel" if ev.rel is not None else "dataset.rel_threshold"
        raise SpecError(where, f"the relevance threshold {rel} is above every label ({scale}): every system would "
                               f"score 0 on every binary measure; use a threshold between 1 and {top}")
    for i, (name, measure) in enumerate(zip(ev.measures, ev.measures_at(rel))):
        level = measure.params.get("rel")
        if level is not None and level > top:
            raise SpecError(f"evaluation.measures[{i}]", f"{name!r} counts labels >= {level} as relevant, but "
                                                          f"{scale}: every system would score 0. Use a level "
                                                          f"between 1 and {top}, e.g. {measure.NAME}(rel={top})"
                                                          + (f"@{measure.params['cutoff']}"
                                                             if measure.params.get("cutoff") else ""))


def unjudged_queries(topics: pd.DataFrame, qrels: pd.DataFrame, queries: QueriesSpec) -> tuple[pd.DataFrame, dict]:
    """The selected queries a run sends to its systems, and what it did with those that have no relevance label
    (no qrels row at all: no measure can score them). ``queries.unjudged == "skip"`` (the default): left out, so no
    reranker pays for them; "run": run like the others (their run lines are written), not evaluated. Either way
    warned and counted (``selected_queries_without_qrels`` in provenance.json's dataset checks, and the dry run)."""
    missing = topics.loc[~topics["qid"].isin(set(qrels["qid"])), "qid"].tolist()
    checks = {"selected_queries_without_qrels": len(missing), "unjudged_queries": queries.unjudged}
    if not missing:
        return topics, checks
    shown = ", ".join(missing[:5]) + (f", ... ({len(missing) - 5} more)" if len(missing) > 5 else "")
    what = ("not run ([queries] unjudged = \"skip\", the default; \"run\" runs them unevaluated)"
            if queries.unjudged == "skip" else "run, but not evaluated ([queries] unjudged = \"run\")")
    log.warning("%d of the %d selected queries have no relevance labels (qids %s): %s", len(missing), len(topics),
                shown, what)
    if queries.unjudged == "run":
        return topics, checks
    return topics[~topics["qid"].isin(set(missing))].reset_index(drop=True), checks


def select_topics(dataset, queries: QueriesSpec) -> pd.DataFrame:
    """The spec's [queries] of a data set (qid, query): THE query selection of `superb run` and `superb judge`."""
    from superb.data.splits import select_queries

    q = queries
    topics = select_queries(dataset.topics(), split=q.split, sample=q.sample, seed=q.seed, subset=q.subset)
    return topics.reset_index(drop=True)


def run_experiment(spec: Spec, *, dry_run: bool = False, progress: bool = True, llm: Any = None,
                   shard: Any = None, preflight: bool = True) -> ExperimentResult:
    """Build every system of ``spec`` as a ``>>`` pipeline (superb.pipelines.systems), then run them in spec order, each
    shared prefix once; ``progress=False`` turns the rerankers' progress bars off. ``dry_run``: the LLM is a
    DryRunClient that counts the calls the response cache cannot serve (see superb.llm.connect.open_for_spec).
    ``llm``: a client to use instead of opening the spec's [llm] (e.g. the collecting client of a batch export,
    superb/batch/); the caller closes it. ``shard``: a superb.run.shards.Shard: run only its part of the selected
    queries (`superb run --shard i/n`; `superb merge` joins the parts). ``preflight``: before the first LLM call of
    a spec that makes some, every system runs on one query with placeholder answers (superb.run.preflight), so that a
    stage's bug costs no call; not for a dry run (free already) nor with a given ``llm``."""
    from superb.data import load_dataset

    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    if spec.llm is not None and not spec.uses_llm:  # checked although no pipeline calls it: a typo is still a typo
        check_table(spec.llm)
    dataset = load_dataset(spec.dataset, path="dataset")
    qrels = all_qrels = dataset.qrels()
    check_levels(spec, dataset, all_qrels)
    chosen = check_topics(select_topics(dataset, spec.queries))
    check_evaluable(spec, chosen, all_qrels)  # the whole selection, before its unjudged queries are skipped
    selection, query_checks = unjudged_queries(chosen, all_qrels, spec.queries)
    topics = selection
    if shard is not None:
        topics = shard.select(selection, spec.name)
    qrels = qrels[qrels["qid"].isin(set(topics["qid"]))].reset_index(drop=True)
    if shard is not None:  # skipping unjudged queries keeps every labelled one: only a shard can hold too few
        check_evaluable(spec, topics, qrels, sharded=True)
    timings["load_data_s"] = time.perf_counter() - t0

    llm_info = responses = None
    with ExitStack() as stack:
        if not spec.uses_llm:
            llm = None
        elif llm is not None:
            llm_info = describe(llm)
        else:
            llm, llm_info = open_for_spec(spec.llm, stack, dry_run=dry_run)
            if preflight and not dry_run:
                timings["preflight_s"] = run_preflight(spec, dataset, topics, llm, run_systems)
        if dry_run:  # a dry run writes no answer and no embedding (superb.transformers.embedding_cache)
            from superb.transformers.embedding_cache import read_only

            stack.enter_context(read_only())
        results = run_systems(spec.pipelines, dataset, topics, llm=llm, seed=spec.seed, progress=progress,
                              dry=dry_run)
        if llm is not None and llm_info is not None:
            llm_info["usage_total"] = _usage_dict(llm)
        if llm is not None:  # under dry_run: the cached answers the run found (`superb responses save`)
            responses = response_log(llm)
    timings["total_s"] = time.perf_counter() - t0
    sharding = None
    if shard is not None:
        sharding = shard.record(spec, selection, topics, results, qrels=all_qrels)
        spec = shard.table_spec(spec, len(topics), len(selection))
    dataset_provenance = dataset.provenance()
    dataset_provenance["checks"] = {**dataset_provenance.get("checks", {}), **query_checks}
    return ExperimentResult(spec=spec, topics=topics, qrels=qrels, pipelines=results,
                            dataset_provenance=dataset_provenance, llm_info=llm_info, timings=timings,
                            responses=responses, sharding=sharding, query_checks=query_checks)


def run_systems(pipelines: tuple[PipelineSpec, ...], dataset, topics: pd.DataFrame, *, llm=None, seed: int = 0,
                progress: bool = True, dry: bool = False) -> dict[str, PipelineResult]:
    """THE way superb runs systems (`superb run`, and the label study's first stages): build them all, then run each
    on ``topics``, recording its time, its components' counters and its share of the LLM usage; what its stages did
    not score is printed (superb.run.stage_report). ``dry``: a dry run or a preflight, which skips the work no LLM
    stage reads (superb.run.preflight.needed; a skipped system has an empty run, ``not_run``)."""
    from superb.pipelines.systems import build_systems

    systems = build_systems(pipelines, dataset, llm=llm, seed=seed, progress=progress)
    specs = {p.name: p for p in pipelines}
    plan = needed(pipelines, systems) if dry else {}
    first_stages = {p.name for p in pipelines if p.first_stage is not None}
    results: dict[str, PipelineResult] = {}
    for name, system in systems.items():
        t0 = time.perf_counter()
        before = _usage_dict(llm)
        part = plan.get(name)
        if part == 0:  # a dry run: no LLM stage reads it
            results[name] = PipelineResult(name=name, run=pd.DataFrame(columns=["qid", "docno", "score", "rank"]),
                                           seconds=0.0, max_calls=0, not_run=True)
            continue
        if name in first_stages and progress:  # a first stage has no bar of its own: a line before and after
            with status(f"first stage {name}: {len(topics)} queries"):
                run = _checked_run(system.pipeline(topics), name, specs[name].path)
        elif part is None:
            run = _checked_run(system.pipeline(topics), name, specs[name].path)
        else:  # a dry run: its input, then its stages up to the last one an LLM stage or a plug-in is
            run = systems[specs[name].input].pipeline(topics)
            for component in system.components[:part]:
                run = component.transform(run)
            run = _checked_run(run, name, specs[name].path)
        stats = system.stats()
        if name in first_stages:
            stats.update(queries_without_results(name, topics, run))
        given = next((c.provenance() for c in system.components if hasattr(c, "provenance")), None)
        results[name] = PipelineResult(name=name, run=run, seconds=time.perf_counter() - t0, stats=stats,
                                       usage=_usage_delta(before, _usage_dict(llm)),
                                       calls_depend_on_answers=system.calls_depend_on_answers(), given_run=given,
                                       max_calls=system.max_calls(run))
        report(name, stats)
        log.info("pipeline %s: %d rows in %.1f s", name, len(run), results[name].seconds)
    return results


def queries_without_results(name: str, topics: pd.DataFrame, run: pd.DataFrame) -> dict[str, int]:
    """A first stage that retrieves nothing for a query (its terms match no product) leaves it to score 0 on every
    measure, and nothing for its rerankers: warned, and counted (usage.csv ``stat:queries_without_results``, a column
    only when some query has none)."""
    missing = sorted(set(topics["qid"]) - set(run["qid"]))
    if not missing:
        return {}
    texts = topics.set_index("qid")["query"]
    shown = ", ".join(f"{q} ({texts.get(q, '')!r})" for q in missing[:5]) + \
        (f", ... ({len(missing) - 5} more)" if len(missing) > 5 else "")
    log.warning("pipeline %r retrieved nothing for %d of the %d queries: %s; they score 0 on every measure "
                "(check the query text, or the fields indexed)", name, len(missing), len(topics), shown)
    return {"queries_without_results": len(missing)}


def _checked_run(run: pd.DataFrame, name: str, path: str) -> pd.DataFrame:
    """The run with the columns evaluation needs; a run without ranks is ranked by trec_eval's rule."""
    import pyterrier as pt

    from superb.trec.runs import trec_order

    missing = {"qid", "docno", "score"} - set(run.columns)
    if missing:
        raise SpecError(path, f"pipeline {name!r} produced a frame without columns {sorted(missing)} "
                              f"(it has {sorted(run.columns)})")
    return run if "rank" in run.columns else pt.model.add_ranks(trec_order(run))


def _usage_dict(llm) -> dict[str, Any]:
    usage = getattr(llm, "usage", None)
    if usage is None:
        return {}
    return dict(usage.totals())


def _usage_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    return {k: v - before.get(k, 0) for k, v in after.items() if isinstance(v, (int, float))}
