"""LLM rerankers and controls as PyTerrier transformers (installed as ``superb.transformers``).

Everything is imported lazily: ``import superb.transformers`` loads no model client and no PyTerrier.

- ``build_reranker(options, *, context, path)`` and ``BuildContext(dataset, llm, seed)``: from a spec table.
- ``Reranker``, ``Candidates``: the base class to subclass (see ``superb.transformers.base``).
- ``ProductText``: product fields rendered for prompts within a token budget.
- ``PointwiseReranker``, ``DeliberatedReranker``, ``ListwiseReranker``, ``SlidingWindowReranker``, ``Shuffle``,
  ``RandomReranker``; ``parse_permutation`` (listwise output parsing, pure).
- ``PairwiseProbReranker``, ``SetwiseReranker`` (label probabilities, for small models) and ``Fuse`` (weighted
  min-max fusion of the stages' score columns).
"""

from importlib import import_module

_EXPORTS = {
    "build_reranker": "registry",
    "BuildContext": "registry",
    "RERANKERS": "registry",
    "Reranker": "base",
    "Candidates": "base",
    "ProductText": "superb.llm.text",
    "PointwiseReranker": "pointwise",
    "DeliberatedReranker": "deliberated",
    "ListwiseReranker": "listwise",
    "SlidingWindowReranker": "sliding",
    "Shuffle": "controls",
    "RandomReranker": "controls",
    "parse_permutation": "superb.llm.parsing",
    "PairwiseProbReranker": "pairwise_prob",
    "SetwiseReranker": "setwise",
    "Fuse": "fuse",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        module = _EXPORTS[name]  # a module of this package, or a full dotted path (helpers that live in superb.llm)
        value = getattr(import_module(module if "." in module else f"superb.transformers.{module}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'superb.transformers' has no attribute {name!r}")


def __dir__():
    return __all__
