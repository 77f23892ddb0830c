"""Spec ``type`` -> reranker class, and ``build_reranker``.

Each class is named by a dotted path ("module:Class") and imported only when a spec asks for it, so that importing
``superb.transformers`` stays cheap and a reranker with an optional backend fails only when it is used. Every class
exposes ``from_spec(options: dict, context: BuildContext, path: str) -> pt.Transformer``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Mapping

from superb.errors import SpecError

@dataclass(frozen=True)
class RerankerType:
    """One spec ``type``: its class ("module:Class", imported when used), whether it calls the LLM, and whether it
    writes a raw-score column of its own (``<type>_score``, or ``<stage>_score`` when the spec names the stage) that a
    later ``fuse`` can weight. A ``fuse`` writes none of its own; ``shuffle``, ``expand`` and ``reset`` score nothing."""

    path: str
    llm: bool
    scores: bool


RERANKERS: dict[str, RerankerType] = {
    "pointwise": RerankerType("superb.transformers.pointwise:PointwiseReranker", llm=True, scores=True),
    "deliberated": RerankerType("superb.transformers.deliberated:DeliberatedReranker", llm=True, scores=True),
    "listwise": RerankerType("superb.transformers.listwise:ListwiseReranker", llm=True, scores=True),
    "sliding": RerankerType("superb.transformers.sliding:SlidingWindowReranker", llm=True, scores=True),
    "shuffle": RerankerType("superb.transformers.controls:Shuffle", llm=False, scores=False),
    "random": RerankerType("superb.transformers.controls:RandomReranker", llm=False, scores=True),
    "pairwise": RerankerType("superb.transformers.pairwise:PairwiseReranker", llm=True, scores=True),
    "rubric": RerankerType("superb.transformers.rubric:RubricReranker", llm=True, scores=True),
    "biencoder": RerankerType("superb.transformers.biencoder:BiEncoderReranker", llm=False, scores=True),
    # small-model rerankers that read label probabilities (issue 8), and score fusion
    "pairwise_prob": RerankerType("superb.transformers.pairwise_prob:PairwiseProbReranker", llm=True, scores=True),
    "setwise": RerankerType("superb.transformers.setwise:SetwiseReranker", llm=True, scores=True),
    "fuse": RerankerType("superb.transformers.fuse:Fuse", llm=False, scores=False),
    # query rewriting (issue 26): LLM expansion, the query restored, and BM25 rescoring with the rewritten query
    "expand": RerankerType("superb.transformers.expansion:QueryExpansion", llm=True, scores=False),
    "reset": RerankerType("superb.transformers.expansion:RestoreQuery", llm=False, scores=False),
    "bm25": RerankerType("superb.transformers.bm25_rescore:BM25Rescore", llm=False, scores=True),
}


def needs_llm(type_name: Any) -> bool:
    """Whether a stage of this type calls the LLM (an unknown type counts as one; building it fails later)."""
    record = RERANKERS.get(type_name) if isinstance(type_name, str) else None
    return record is None or record.llm


def score_column(options: Mapping[str, Any]) -> str | None:
    """The raw-score column a spec stage table writes (``<stage>_score`` when it names its stage, else
    ``<type>_score``), or None for a type that scores nothing of its own (or an unknown type)."""
    type_name = options.get("type")
    record = RERANKERS.get(type_name) if isinstance(type_name, str) else None
    if record is None or not record.scores:
        return None
    stage = options.get("stage")
    return f"{stage if isinstance(stage, str) and stage else type_name}_score"


def score_columns(options: Mapping[str, Any]) -> list[str]:
    """Every score column a spec stage table writes: its raw-score column (:func:`score_column`), and with a blending
    weight ``alpha`` below 1 also the blend its head is ordered by (``<stage>_blend_score``: base.Reranker)."""
    own = score_column(options)
    if own is None:
        return []
    alpha = options.get("alpha", 1.0)
    blended = not isinstance(alpha, bool) and isinstance(alpha, (int, float)) and alpha < 1.0
    return [own, f"{own[:-len('_score')]}_blend_score"] if blended else [own]


@dataclass
class BuildContext:
    """What a reranker may need from the experiment: the dataset (product text), the LLM client, the run seed."""

    dataset: Any = None
    llm: Any = None
    seed: int = 0


def reranker_class(type_name: str, path: str = "") -> type:
    """The class registered for ``type_name``, imported now."""
    if type_name not in RERANKERS:
        raise SpecError(f"{path}.type" if path else "type",
                        f"unknown reranker type {type_name!r}; known types: {sorted(RERANKERS)}")
    module, _, name = RERANKERS[type_name].path.partition(":")
    return getattr(importlib.import_module(module), name)


def build_reranker(options: Mapping[str, Any], *, context: BuildContext, path: str = "rerank"):
    """Build the reranker a spec table describes, e.g. ``{"type": "pointwise", "top_k": 20}``. Every reranking type
    takes ``stage = "NAME"``: its raw-score column is ``NAME_score`` instead of ``<type>_score``, so two stages of one
    type (e.g. two pointwise prompts) keep both columns for a later ``fuse``."""
    if not isinstance(options, Mapping):
        raise SpecError(path, f"expected a table with a 'type' key, got {type(options).__name__}")
    if "type" not in options:
        raise SpecError(f"{path}.type", f"missing; one of {sorted(RERANKERS)}")
    options = dict(options)
    stage = options.pop("stage", None)
    reranker = reranker_class(options["type"], path).from_spec(options, context, path)
    if stage is not None:
        if not RERANKERS[options["type"]].scores:
            raise SpecError(f"{path}.stage", f"a {options['type']} stage keeps no score column of its own to name; "
                                             "remove 'stage'")
        if not isinstance(stage, str) or not stage.isidentifier():
            raise SpecError(f"{path}.stage", f"expected a name such as \"umbrela\" (letters, digits, _), found "
                                             f"{stage!r}: the stage's score column becomes <stage>_score")
        reranker.stage = stage
    return reranker


class _Unopened:
    """The data set of a spec check: nothing is opened. Its fields are unknown (checked when the stage is built),
    its documents are products (a passage data set's templates are checked when the stage is built)."""

    name = "(not opened)"
    fields = None
    text_kind = "product"
    prompt_fields = ("title",)


_NO_LLM = object()  # the model of a spec check: never called (a stage that calls it at construction is not checked)


def check_stage(options: Any, path: str, *, seed: int = 0) -> None:
    """Check a spec's rerank table when the spec is read, before any data set or model is opened: its type, every
    option's name, type and value, and the cross-option rules (each class's ``from_spec`` with an unopened context).
    A SpecError names the key; what needs the data or the model (product fields, a passage template) is checked when
    the stage is built, still before any LLM call."""
    try:
        build_reranker(options, context=BuildContext(dataset=_Unopened(), llm=_NO_LLM, seed=seed), path=path)
    except SpecError:
        raise
    except Exception:  # noqa: BLE001 - a constructor that needs the opened data or model: checked at build time
        return
