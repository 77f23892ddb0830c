"""The public extension API: everything superb's own rerankers use, for a method of your own (docs/extending.md).

A reranker is a :class:`Reranker` subclass (a ``pt.Transformer``) with ``async def score(self, cands)``; it declares
its spec options in its constructor (``Annotated[T, parser]``: :data:`PositiveInt`, :func:`OneOf`, ...), asks the
LLM through ``await self.complete(request)`` (the response cache, usage and fallback counting, dry runs and shipped
answers come with it), builds its requests with :class:`LabelQuestion` or :class:`ChatRequest` on a template of its
own (:func:`load_template`: a ``.j2`` file, whose name and fingerprint name the requests), and reads the answers with
the readers every built-in reranker and judge uses (:mod:`superb.llm.answers`). A spec names it by ``"file.py:Class"``
or ``"module:Class"``, or an installed package registers a short name in the entry-point group ``superb.rerankers``.
Any other ``pt.Transformer`` is a stage too, checked by :class:`TransformerStage`: a class, or a function that
declares it returns one (``-> pt.Transformer``) or carries :func:`stage_factory`. superb calls nothing else a spec
names.

A judge is a :class:`Judge` subclass with ``async def judge_pair(self, qid, query, docno)`` (or ``ajudge_query`` for a
query's pairs at once) returning the :class:`Scored` record that ``self.scored(...)`` reads from an answer; it declares
``output`` ("score": calibrated into labels on dev pairs; "label": its own grade, reported as it is) and its spec
options in its constructor, asks through ``await self.complete(request)``, and a judge spec names it by
``"file.py:Class"``, ``"module:Class"`` or a short name in the entry-point group ``superb.judges``.
"""

from superb.errors import SpecError  # noqa: F401
from superb.judges.base import Judge, Scored  # noqa: F401
from superb.judges.registry import ENTRY_POINT_GROUP as JUDGE_ENTRY_POINT_GROUP  # noqa: F401
from superb.llm.answers import (  # noqa: F401
    LETTERS, Choice, ExpectedGrade, Reading, UmbrelaGrade, WrittenGrade, YesProbability, first_identifier_probabilities,
    permutation, read_choice,
)
from superb.llm.prompts import load_template, template_name  # noqa: F401
from superb.llm.question import LabelQuestion  # noqa: F401
from superb.llm.types import ChatRequest, Completion  # noqa: F401
from superb.options import Flag, NonNegativeInt, OneOf, PositiveInt, TopK, UnitFloat  # noqa: F401
from superb.transformers.base import Candidates, Reranker, Text, scores_from_order  # noqa: F401
from superb.transformers.plugins import ENTRY_POINT_GROUP, stage_factory  # noqa: F401
from superb.transformers.transformer_stage import TransformerStage  # noqa: F401

__all__ = ["Candidates", "ChatRequest", "Choice", "Completion", "ENTRY_POINT_GROUP", "ExpectedGrade", "Flag",
           "JUDGE_ENTRY_POINT_GROUP", "Judge", "LETTERS", "LabelQuestion", "NonNegativeInt", "OneOf", "PositiveInt",
           "Reading", "Reranker", "Scored", "SpecError", "Text", "TopK", "TransformerStage", "UmbrelaGrade",
           "UnitFloat", "WrittenGrade", "YesProbability", "first_identifier_probabilities", "load_template",
           "permutation", "read_choice", "scores_from_order", "stage_factory", "template_name"]
