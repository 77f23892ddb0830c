"""The free preflight of `superb run`, and what a dry run or a preflight needs to run.

Before its first paid call, a plain `superb run` runs every system on its first query (:data:`QUERIES`) with the dry
run's client (superb.llm.dryrun: cached answers where the cache has them, placeholder answers elsewhere; nothing is
sent, nothing written to the cache), on stages built for it alone (a stage that keeps state from a placeholder answer
cannot carry it into the paid run). A bug in any stage, a plug-in's above all, then stops the run before any LLM
call: a bug in the last pipeline costs nothing. It prints one line with its time; `--no-preflight` skips it.

Both the preflight and the dry run skip the work whose output no LLM stage reads (:func:`needed`): a system or the
tail of a system after its last LLM stage, when no later system reads it, unless it is a plug-in (code from outside
superb, which the preflight is there to try). A dry run of a candidates spec with a bi-encoder row no longer encodes
every passage to throw the vectors away.
"""

from __future__ import annotations

import logging
import sys
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping

import pandas as pd

from superb.errors import SpecError, SuperbError
from superb.llm.config import LLMConfig
from superb.llm.dryrun import DryRunClient
from superb.pipelines.pipeline_spec import PipelineSpec

QUERIES = 1  # queries the preflight runs


def tried(component: Any) -> bool:
    """Whether a dry run or a preflight runs ``component`` for its own sake: it calls the LLM, or it is a plug-in."""
    return bool(getattr(component, "calls_llm", False)) or getattr(component, "plugin", None) is not None


def needed(pipelines: tuple[PipelineSpec, ...], systems: Mapping[str, Any]) -> dict[str, int | None]:
    """Per system, how many of its own components a dry run or a preflight runs: None all of them (a later system
    that is run reads its output), 0 none (skipped), k the first k (up to its last LLM or plug-in stage)."""
    readers: dict[str, list[str]] = {}
    for p in pipelines:
        if p.input is not None:
            readers.setdefault(p.input, []).append(p.name)
    plan: dict[str, int | None] = {}
    for p in reversed(pipelines):
        components = list(getattr(systems[p.name], "components", []))
        if any(plan.get(reader) != 0 for reader in readers.get(p.name, [])):
            plan[p.name] = None
            continue
        last = max((i + 1 for i, c in enumerate(components) if tried(c)), default=0)
        plan[p.name] = None if last and (p.first_stage is not None or last == len(components)) else last
    return {p.name: plan[p.name] for p in pipelines}


def run_preflight(spec: Any, dataset: Any, topics: pd.DataFrame, llm: Any, run_systems: Callable[..., Any]) -> float:
    """Every system of ``spec`` on the first :data:`QUERIES` of ``topics`` with placeholder answers (module
    docstring), run by ``run_systems`` (superb.run.experiment's); the seconds it took. A fault is raised as it is,
    after a line saying that no call was made (a spec error, found when a stage is built, says so itself)."""
    t0 = time.perf_counter()
    first = topics.head(QUERIES)
    config = LLMConfig.from_spec(spec.llm or {})
    try:
        with DryRunClient(config, cache=getattr(llm, "cache", None)) as placeholder, _quiet():
            run_systems(spec.pipelines, dataset, first, llm=placeholder, seed=spec.seed, progress=False, dry=True)
    except SpecError:
        raise
    except SuperbError:
        print(f"superb: the preflight (every stage on query {first['qid'].iloc[0]!r}, placeholder answers) stopped "
              "the run before any LLM call was made", file=sys.stderr)
        raise
    seconds = time.perf_counter() - t0
    print(f"preflight passed in {seconds:.1f} s: every LLM stage, what it reads and every plug-in ran on "
          f"{len(first)} query with placeholder answers, no LLM call made (--no-preflight skips it)", file=sys.stderr)
    return seconds


@contextmanager
def _quiet() -> Iterator[None]:
    """Warnings off while the preflight runs: the run itself gives them, about its real answers."""
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)
