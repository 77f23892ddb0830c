"""One export round of a spec: run it as far as the response cache allows and collect every request it still needs.

This is the one entry point from batch files into the experiment runner: ``run_experiment(spec, llm=client)`` with a
``CollectingClient`` (superb/llm/batch.py). A query whose next answer is missing stops there (pending) and is not
reranked by later stages, so the round holds exactly the requests that can be formed now. An export runs the
systems only: it evaluates nothing and writes no results folder (``superb run`` does, once nothing is left).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from superb import paths
from superb.errors import SpecError, SuperbError
from superb.llm.batch import BatchPart, CollectingClient, CountingSink, PendingStore, RoundTotals
from superb.llm.cache import ResponseCache
from superb.llm.config import LLMConfig


@dataclass
class Round:
    """What one pass over a spec found: the requests still needed, and the queries left pending per pipeline."""

    totals: RoundTotals
    pending: dict[str, list[str]] = field(default_factory=dict)  # pipeline name -> its queries still pending
    parts: list[BatchPart] = field(default_factory=list)  # the files written (several when split)

    @property
    def done(self) -> bool:
        return self.totals.requests == 0

    def lines(self) -> list[str]:
        t = self.totals
        if self.done:
            return ["nothing left: every LLM answer the spec needs is cached; `superb run SPEC` makes 0 calls"]
        out = [f"{t.requests} requests needed now (about {t.prompt_tokens:,} prompt tokens, at most "
               f"{t.max_completion_tokens:,} completion tokens)"]
        out += [f"  template {name or '(none)'}: {n}" for name, n in t.templates.items()]
        out += [f"  pipeline {name!r}: {len(q)} queries pending" for name, q in self.pending.items() if q]
        out.append("after importing their answers, export again: methods with several rounds (sliding windows, "
                   "sorts) need the answers of this round to form the next")
        return out


def pending_qids(run: Any) -> list[str]:
    """The queries of a pipeline's run still waiting for an answer: its own stage's, or any stage's before it (the
    ``pending`` column travels with the frame, so a query pending in a shared prefix is pending in every pipeline
    that reads that prefix, and no later stage builds a request on it)."""
    if "pending" not in run.columns:
        return []
    return sorted(set(run.loc[run["pending"].fillna(False).astype(bool), "qid"].astype(str)))


def llm_config(spec: Any) -> LLMConfig:
    if not spec.uses_llm:
        raise SuperbError(f"spec {spec.name!r} has no LLM stage: there is nothing to batch (`superb run` it)")
    config = LLMConfig.from_spec(spec.llm or {}, path="llm")
    if config.cache in ("off", "refresh"):
        raise SpecError("llm.cache", f"is {config.cache!r}; batch files need the response cache (answers are "
                                     "imported into it and the next round reads them): use \"normal\"")
    return config


def cache_path(config: LLMConfig) -> Path:
    return Path(config.cache_path) if config.cache_path else paths.llm_cache_path()


def run_round(spec: Any, out: Path | None = None, *, max_lines: int | None = None, max_bytes: int | None = None,
              progress: bool = False) -> Round:
    """One pass; with ``out``, the requests are recorded as pending and written there (sorted by key; split into
    ``out``-1, -2, ... when ``max_lines``/``max_bytes`` are given), else only counted (status, dry runs)."""
    from superb.run.experiment import run_experiment

    config = llm_config(spec)
    path = cache_path(config)
    with ExitStack() as stack:
        cache = stack.enter_context(ResponseCache(
            path, "read-only" if config.cache == "read-only" and path.exists() else "normal"))
        # only an export records pending requests (in the cache's file); status and dry runs write nothing
        sink = stack.enter_context(PendingStore(path)).new_round() if out is not None else CountingSink()
        client = CollectingClient(config, cache=cache, sink=sink)
        try:
            result = run_experiment(spec, llm=client, progress=progress)
            client.drain()
        finally:
            client.close()
        found = Round(totals=sink.totals(), pending={name: pending_qids(pr.run)
                                                    for name, pr in result.pipelines.items()})
        if out is not None:
            if found.done:
                sink.discard()
            else:
                found.parts = sink.write_parts(out, max_lines=max_lines, max_bytes=max_bytes)
    return found
