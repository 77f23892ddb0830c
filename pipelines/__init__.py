"""Pipelines (installed as ``superb.pipelines``): the first stages, and the systems a spec's ``[[pipelines]]`` builds.

``first_stage(dataset, engine=..., model=...)`` gives a ``pt.Transformer`` mapping (qid, query) to
(qid, query, docno, score, rank) over a cached index of the data set: Terrier (Java) or PISA (no Java), BM25 or RM3.
``superb.pipelines.systems.build_systems`` turns every ``[[pipelines]]`` entry of a spec into one system: its first
stage, or another system's run, ``>>`` its rerankers (superb.transformers). Importing this package is cheap: PyTerrier
and PISA load when a stage is built.
"""

from __future__ import annotations

from typing import Any, Mapping

from superb.pipelines.options import (
    BM25_DEFAULTS,
    DEPTH_DEFAULT,
    ENGINES,
    FIRST_STAGE_KEYS,
    MODELS,
    RM3_DEFAULTS,
    FirstStageOptions,
    options_from_spec,
    validate_options,
)
from superb.pipelines.query_text import sanitise_query

__all__ = [
    "BM25_DEFAULTS", "DEPTH_DEFAULT", "ENGINES", "FIRST_STAGE_KEYS", "MODELS", "RM3_DEFAULTS",
    "FirstStageOptions", "first_stage", "from_spec", "sanitise_query",
]


def _dataset_fields(dataset: Any) -> tuple[str, ...]:
    """Fields that may be indexed: "text" plus the data set's declared fields."""
    return tuple(dict.fromkeys(["text", *getattr(dataset, "fields", ())]))


def _stage(dataset: Any, options: FirstStageOptions):
    from superb.pipelines.stage import FirstStage

    return FirstStage(dataset, options)


def first_stage(
    dataset: Any,
    *,
    engine: str = "terrier",
    model: str = "bm25",
    depth: int = DEPTH_DEFAULT,
    fields: list[str] | None = None,
    bm25: Mapping[str, float] | None = None,
    rm3: Mapping[str, float] | None = None,
    path: str = "first_stage",
):
    """A first-stage retriever over ``dataset`` (anything with name, fields, docs_iter(), provenance()).

    engine: "terrier" | "pisa"; model: "bm25" | "rm3"; depth: results per query (at most);
    fields: document fields to index (None: the "text" field); bm25: {"k1", "b"} (default 1.2, 0.75 on both
    engines); rm3: {"fb_docs", "fb_terms", "fb_lambda"} (default 3, 10, 0.6). Bad options raise SpecError
    naming ``path.key``. Nothing is built or started until the first non-empty input (or ``.prepare()``).
    """
    options = validate_options(
        engine=engine, model=model, depth=depth, fields=fields, bm25=bm25, rm3=rm3,
        available_fields=_dataset_fields(dataset), path=path,
    )
    return _stage(dataset, options)


def from_spec(options: Mapping[str, Any], dataset: Any, path: str = "first_stage"):
    """Build a first stage from a spec table: a retrieval {engine, model, depth, fields, k1, b, fb_docs, fb_terms,
    fb_lambda}, or a given run {run, depth, format} (superb.pipelines.run_stage)."""
    if "run" in options:
        from superb.pipelines.run_stage import RunStage
        from superb.trec.run_files import run_options

        return RunStage(dataset, run_options(options, path), path=path)
    return _stage(dataset, options_from_spec(options, available_fields=_dataset_fields(dataset), path=path))
