"""Every registered reranker class says what it is in its own docstring (issue 24: 9 of 12 had none)."""

import pytest

from superb.transformers.registry import RERANKERS, reranker_class

# written for issue 24: each names its spec type, its LLM calls (or that it makes none) and its score column
DOCUMENTED_HERE = {"pointwise": "pointwise_score", "deliberated": "deliberated_score", "listwise": "listwise_score",
                   "sliding": "sliding_score", "shuffle": "no score column", "random": "random_score",
                   "pairwise_prob": "pairwise_prob_score", "setwise": "setwise_score", "fuse": "fuse_score"}


def _class(type_name: str) -> type:
    return reranker_class(type_name)


@pytest.mark.parametrize("type_name", sorted(RERANKERS))
def test_every_registered_class_has_its_own_docstring(type_name):
    doc = _class(type_name).__dict__.get("__doc__") or ""
    assert len(doc.split()) >= 10, f"{RERANKERS[type_name].path} has no class docstring of its own"


@pytest.mark.parametrize("type_name", sorted(DOCUMENTED_HERE))
def test_the_new_docstrings_name_type_calls_and_score_column(type_name):
    doc = " ".join(_class(type_name).__doc__.split())
    assert f"type ``{type_name}``" in doc
    assert DOCUMENTED_HERE[type_name] in doc
    assert "call" in doc  # how many LLM calls per query, or "No LLM call" / "no LLM call"
    assert "Option" in doc
