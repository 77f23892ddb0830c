"""LLM rerankers and controls as PyTerrier transformers (installed as ``superb.transformers``).

Everything is imported lazily: ``import superb.transformers`` loads no model client and no PyTerrier.

- ``build_reranker(options, *, context, path)`` and ``BuildContext(dataset, llm, seed)``: from a spec table.
- ``Reranker``, ``Candidates``: the base class to subclass (see ``superb.transformers.base``).
- ``ProductText``: product fields rendered for prompts within a token budget.
- ``PointwiseReranker``, ``DeliberatedReranker``, ``ListwiseReranker``, ``SlidingWindowReranker``, ``Shuffle``,
  ``RandomReranker``; ``parse_permutation`` (listwise output parsing, pure).
- ``PairwiseProbReranker``, ``SetwiseReranker`` (label probabilities, for small models) and ``Fuse`` (weighted
  min-max fusion of the stages' score columns).
- Every other registered type by its class name (``PairwiseReranker``, ``RubricReranker``, ``BiEncoderReranker``,
  ``QueryExpansion``, ``RestoreQuery``, ``BM25Rescore``, ...): the exports are derived from ``RERANKERS``.
"""

from importlib import import_module

from superb.transformers.registry import RERANKERS  # cheap: names and dotted paths, no reranker module is imported

# every registered type's class, by its class name (derived from the registry, so a new type cannot be forgotten)
_EXPORTS = {path.partition(":")[2]: path.partition(":")[0] for path in RERANKERS.values()}
_EXPORTS.update({
    "build_reranker": "registry",
    "BuildContext": "registry",
    "RERANKERS": "registry",
    "Reranker": "base",
    "Candidates": "base",
    "TransformerStage": "transformer_stage",
    "stage_facts": "registry",
    "ProductText": "superb.llm.text",
    "parse_permutation": "superb.llm.parsing",
})

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        module = _EXPORTS[name]  # a full dotted path, or a module of this package
        value = getattr(import_module(module if "." in module else f"superb.transformers.{module}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'superb.transformers' has no attribute {name!r}")


def __dir__():
    return __all__
