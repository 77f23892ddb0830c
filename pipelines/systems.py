"""The systems of a spec as PyTerrier pipelines: each one a ``>>`` composition of a first stage and its rerankers.

``BM25 >> pointwise`` in a spec (``input = "BM25"``, ``rerank = [...]``) becomes ``bm25 >> PointwiseReranker(...)``,
where ``bm25`` is the SAME transformer object as the ``BM25`` system, wrapped in :class:`Memo`: the first pipeline
that runs it retrieves, every later one reads the stored frame. So the BM25 run that eight rerankers read is
retrieved once, and each system stays a plain ``pt.Transformer`` that a Python user can also call or hand to
``pt.Experiment`` directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyterrier as pt

from superb.errors import SpecError
from superb.pipelines import from_spec
from superb.pipelines.pipeline_spec import PipelineSpec
from superb.transformers import BuildContext, build_reranker


class Memo(pt.Transformer):
    """Runs ``inner`` once per distinct input (its qid and query columns) and returns a copy of the stored output on
    later calls: a shared pipeline prefix computed once. An empty input goes straight to ``inner`` (how
    ``pt.Experiment`` inspects a pipeline)."""

    def __init__(self, inner: pt.Transformer, name: str = ""):
        self.inner = inner
        self.name = name
        self.runs = 0  # how often ``inner`` actually ran
        self._done: dict[int, pd.DataFrame] = {}

    def __repr__(self) -> str:
        return f"Memo({self.name or self.inner!r})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        if len(inp) == 0:
            return self.inner.transform(inp)
        columns = [c for c in ("qid", "query") if c in inp.columns]
        key = int(pd.util.hash_pandas_object(inp[columns], index=False).sum()) ^ len(inp)
        if key not in self._done:
            self._done[key] = self.inner.transform(inp)
            self.runs += 1
        return self._done[key].copy()


@dataclass
class System:
    """One spec pipeline: its name, the ``>>`` pipeline that computes it, and its OWN components (a first stage, or
    the rerankers it adds to its input), whose counters are its stats."""

    name: str
    pipeline: pt.Transformer
    components: list[Any] = field(default_factory=list)

    def calls_depend_on_answers(self) -> bool:
        """Whether one of its own rerankers picks its next LLM question from the answers (see Reranker)."""
        return any(getattr(c, "calls_depend_on_answers", False) for c in self.components)

    def max_calls(self, run: pd.DataFrame) -> int | None:
        """The most LLM requests this system's own stages can make for the queries of ``run`` (its output: a stage
        keeps every document, so a query's list length is its input's): each stage's ``max_calls`` of its top_k,
        whatever the answers; 0 without LLM stages, None when an LLM stage does not say."""
        lengths = run.groupby("qid", sort=False).size().tolist() if len(run) else []
        total = 0
        for component in self.components:
            if not getattr(component, "calls_llm", False):
                continue
            bound = getattr(component, "max_calls", None)
            if bound is None:
                return None
            top_k = getattr(component, "top_k", None)
            for n in lengths:
                most = bound(n if top_k is None else min(top_k, n))
                if most is None:
                    return None
                total += most
        return total

    def stats(self) -> dict[str, int]:
        """The numeric counters of this system's own components, summed (lists such as qids stay with them)."""
        out: dict[str, int] = {}
        for component in self.components:
            for key, value in dict(getattr(component, "stats", {}) or {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    out[str(key)] = out.get(str(key), 0) + int(value)
        return out


def build_systems(pipelines: tuple[PipelineSpec, ...], dataset: Any, *, llm: Any = None, seed: int = 0,
                  progress: bool = True) -> dict[str, System]:
    """The spec's pipelines as :class:`System` objects, in spec order. Nothing runs yet."""

    systems: dict[str, System] = {}
    for p in pipelines:
        if p.first_stage is not None:
            options = dict(p.first_stage)
            expand = options.pop("expand", None)  # first_stage.expand: the query rewritten by an LLM first
            stage = from_spec(options, dataset, path=f"{p.path}.first_stage")
            if expand is None:
                systems[p.name] = System(p.name, Memo(stage, p.name), [stage])
                continue
            expansion = _expansion(expand, p, dataset, llm, seed, progress)
            from superb.transformers.expansion import RestoreQuery

            systems[p.name] = System(p.name, Memo(expansion >> stage >> RestoreQuery(), p.name), [expansion, stage])
            continue
        _check_run_input(p, systems, pipelines)
        rerankers = _rerankers(p, dataset, llm, seed, progress)
        pipeline = systems[p.input].pipeline
        for reranker in rerankers:
            pipeline = pipeline >> reranker
        systems[p.name] = System(p.name, Memo(pipeline, p.name), rerankers)
    return systems


def _check_run_input(p: PipelineSpec, systems: dict[str, System], pipelines: tuple[PipelineSpec, ...]) -> None:
    """A pipeline whose input chain starts at a given run (run_stage.RunStage) and that reads document text must find
    every document of that run in the data set: checked before any system runs."""
    from superb.pipelines.run_stage import RunStage, check_reranked

    by_name = {q.name: q for q in pipelines}
    q = p
    while q.input is not None:
        q = by_name[q.input]
    stage = systems[q.name].components[0] if systems[q.name].components else None
    if isinstance(stage, RunStage):
        check_reranked(stage, [str(r.get("type")) for r in p.rerank], p.name, p.path)


def _expansion(options: Any, p: PipelineSpec, dataset: Any, llm: Any, seed: int, progress: bool):
    """``first_stage.expand = {...}``: an ``expand`` stage (superb.transformers.expansion) before the retrieval; the
    system's output has the original query back (RestoreQuery), so its rerankers read what the shopper typed."""

    path = f"{p.path}.first_stage.expand"
    if not isinstance(options, dict):
        raise SpecError(path, f"expected a table of expansion options, e.g. {{ repeat = 1 }}, got {options!r}")
    if options.get("type", "expand") != "expand":
        raise SpecError(f"{path}.type", f"only \"expand\" rewrites a first stage's query, got {options['type']!r}")
    expansion = build_reranker({**options, "type": "expand"}, context=BuildContext(dataset=dataset, llm=llm, seed=seed),
                               path=path)
    expansion.progress_label, expansion.progress = p.name, progress
    return expansion


def _rerankers(p: PipelineSpec, dataset: Any, llm: Any, seed: int, progress: bool) -> list:
    context = BuildContext(dataset=dataset, llm=llm, seed=seed)
    out = []
    for j, options in enumerate(p.rerank):
        reranker = build_reranker(dict(options), context=context, path=f"{p.path}.rerank[{j}]")
        if hasattr(reranker, "progress_label"):  # the progress bar shows the pipeline, not the key path
            reranker.progress_label = p.name if len(p.rerank) == 1 else f"{p.name} [{options['type']}]"
            reranker.progress = progress
        out.append(reranker)
    return out
