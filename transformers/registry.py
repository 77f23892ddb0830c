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

RERANKERS: dict[str, str] = {
    "pointwise": "superb.transformers.pointwise:PointwiseReranker",
    "deliberated": "superb.transformers.deliberated:DeliberatedReranker",
    "listwise": "superb.transformers.listwise:ListwiseReranker",
    "sliding": "superb.transformers.sliding:SlidingWindowReranker",
    "shuffle": "superb.transformers.controls:Shuffle",
    "random": "superb.transformers.controls:RandomReranker",
    # written by the rerankers-2 helper
    "pairwise": "superb.transformers.pairwise:PairwiseReranker",
    "rubric": "superb.transformers.rubric:RubricReranker",
    "biencoder": "superb.transformers.biencoder:BiEncoderReranker",
    # small-model rerankers that read label probabilities (issue 8), and score fusion
    "pairwise_prob": "superb.transformers.pairwise_prob:PairwiseProbReranker",
    "setwise": "superb.transformers.setwise:SetwiseReranker",
    "fuse": "superb.transformers.fuse:Fuse",
    # query rewriting (issue 26): LLM expansion, the query restored, and BM25 rescoring with the rewritten query
    "expand": "superb.transformers.expansion:QueryExpansion",
    "reset": "superb.transformers.expansion:RestoreQuery",
    "bm25": "superb.transformers.bm25_rescore:BM25Rescore",
}


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
    module, _, name = RERANKERS[type_name].partition(":")
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
        if not hasattr(reranker, "score_column") or options["type"] == "fuse":
            raise SpecError(f"{path}.stage", f"a {options['type']} stage keeps no score column of its own to name; "
                                             "remove 'stage'")
        if not isinstance(stage, str) or not stage.isidentifier():
            raise SpecError(f"{path}.stage", f"expected a name such as \"umbrela\" (letters, digits, _), found "
                                             f"{stage!r}: the stage's score column becomes <stage>_score")
        reranker.stage = stage
    return reranker
