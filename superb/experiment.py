"""Runs a spec: first stages, rerankers on their inputs, evaluation, significance, and the results folder.

Each pipeline is run once; a pipeline with ``input = "X"`` reranks X's run rather than retrieving again, so a table of
several rerankers over one first stage pays for that first stage once. LLM calls go through the shared response cache,
so an interrupted experiment, run again, repeats no completed call.
"""

from __future__ import annotations

import logging
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from superb.errors import DataError, SpecError
from superb.spec import PipelineSpec, QueriesSpec, Spec

log = logging.getLogger(__name__)


@dataclass
class PipelineResult:
    name: str
    run: pd.DataFrame
    seconds: float
    stats: dict[str, int] = field(default_factory=dict)  # reranker counters: repairs, fallbacks, failures...
    usage: dict[str, Any] = field(default_factory=dict)  # LLM calls, tokens, cache hits for this pipeline


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


def check_topics(topics: pd.DataFrame) -> pd.DataFrame:
    """Queries with empty text cannot be retrieved for: refuse them with the qids, rather than score them 0."""
    empty = topics[topics["query"].fillna("").str.strip() == ""]
    if len(empty):
        raise DataError(f"{len(empty)} selected queries have empty text (qids: {', '.join(empty['qid'][:5])}); "
                        "fix the topics file or exclude them with [queries].subset")
    return topics


def select_topics(dataset, queries: QueriesSpec) -> pd.DataFrame:
    """The spec's [queries] of a data set (qid, query): THE query selection of `superb run` and `superb judge`."""
    from superb.data.splits import select_queries

    q = queries
    topics = select_queries(dataset.topics(), split=q.split, sample=q.sample, seed=q.seed, subset=q.subset)
    return topics.reset_index(drop=True)


def run_experiment(spec: Spec, *, dry_run: bool = False, progress: bool = True, llm: Any = None) -> ExperimentResult:
    """Run every pipeline of ``spec``. ``llm``: a client to use instead of opening the spec's [llm] (e.g. the
    collecting client of a batch export, superb/batch/); the caller closes it."""
    from superb.data import load_dataset

    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    dataset = load_dataset(spec.dataset, path="dataset")
    topics = check_topics(select_topics(dataset, spec.queries))
    qrels = dataset.qrels()
    qrels = qrels[qrels["qid"].isin(set(topics["qid"]))].reset_index(drop=True)
    timings["load_data_s"] = time.perf_counter() - t0

    results: dict[str, PipelineResult] = {}
    llm_info = responses = None
    with ExitStack() as stack:
        if not spec.uses_llm:
            llm = None
        elif llm is not None:
            from superb.llm import describe

            llm_info = describe(llm)
        else:
            from superb.llm.connect import open_for_spec

            llm, llm_info = open_for_spec(spec.llm, stack, dry_run=dry_run)
        for p in spec.pipelines:
            results[p.name] = _run_pipeline(p, spec, dataset, topics, results, llm)
            log.info("pipeline %s: %d rows in %.1f s", p.name, len(results[p.name].run), results[p.name].seconds)
        if llm is not None and llm_info is not None:
            llm_info["usage_total"] = _usage_dict(llm)
        if llm is not None and not dry_run:
            from superb.llm.ship import response_log

            responses = response_log(llm)
    timings["total_s"] = time.perf_counter() - t0
    return ExperimentResult(spec=spec, topics=topics, qrels=qrels, pipelines=results,
                            dataset_provenance=dataset.provenance(), llm_info=llm_info, timings=timings,
                            responses=responses)


def _run_pipeline(p: PipelineSpec, spec: Spec, dataset, topics: pd.DataFrame,
                  done: dict[str, PipelineResult], llm) -> PipelineResult:
    t0 = time.perf_counter()
    before = _usage_dict(llm) if llm is not None else None
    stats: dict[str, int] = {}
    if p.first_stage is not None:
        from superb.pipelines import from_spec

        retriever = from_spec(p.first_stage, dataset, path=f"{p.path}.first_stage")
        run = retriever(topics)
        stats.update(_counters(getattr(retriever, "stats", {})))
    else:
        run = done[p.input].run
    if p.rerank:
        from superb.transformers import BuildContext, build_reranker

        context = BuildContext(dataset=dataset, llm=llm, seed=spec.seed)
        for j, options in enumerate(p.rerank):
            reranker = build_reranker(dict(options), context=context, path=f"{p.path}.rerank[{j}]")
            run = reranker(run)
            for key, value in _counters(getattr(reranker, "stats", {})).items():
                stats[key] = stats.get(key, 0) + value
    usage = _usage_delta(before, _usage_dict(llm)) if llm is not None else {}
    return PipelineResult(name=p.name, run=_check_run(run, p), seconds=time.perf_counter() - t0, stats=stats,
                          usage=usage)


def _counters(stats) -> dict[str, int]:
    """The numeric counters of a component's stats (lists such as the qids concerned stay with the component)."""
    return {str(k): int(v) for k, v in dict(stats).items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _check_run(run: pd.DataFrame, p: PipelineSpec) -> pd.DataFrame:
    missing = {"qid", "docno", "score"} - set(run.columns)
    if missing:
        raise SpecError(p.path, f"pipeline {p.name!r} produced a frame without columns {sorted(missing)} "
                                f"(it has {sorted(run.columns)})")
    return run


def _usage_dict(llm) -> dict[str, Any]:
    usage = getattr(llm, "usage", None)
    if usage is None:
        return {}
    return dict(usage.totals())


def _usage_delta(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    before = before or {}
    return {k: v - before.get(k, 0) for k, v in after.items() if isinstance(v, (int, float))}
