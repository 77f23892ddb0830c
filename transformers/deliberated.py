"""Deliberated pointwise reranking (SUPERB): first the ideal product's attributes, then each product against them.

Per query, ONE call writes the attributes the ideal product for the query would have (template
``deliberated_attributes``); the text is kept in memory per query string and shared by all products of the query
(and the client's response cache keeps it across runs). The request and the normalisation of its text (lines
stripped, empty lines dropped) live in superb.llm.ideal, shared with the deliberated judge, so one cached answer
serves both. Then every product gets one call that grades it 0..3 against those attributes (``deliberated_label``:
instructions, query, attributes, then the product, so the prompt cache reuses everything but the product).

``question`` (formerly ``label``) chooses the second step's question (the attributes step is the same for all):

- ``"grade"`` (default, SUPERB): ``deliberated_label``, a 0..3 grade against the attributes, scored as below.
- ``"yesno"``: ``deliberated_yesno``, "is it ITSELF what was searched for AND does it have the ideal attributes?";
  score = P(yes) renormalised over yes/no (``fallback_parsed_label`` / ``fallback_unparsed`` as for pointwise).
- ``"checklist"``: ``deliberated_checklist``, the attributes shown as a checklist and a 0..3 grade of how many items
  the product meets; score = the expected grade under the label probabilities / 3 (as pointwise "best").

For ``question = "grade"``: score = grade + confidence / 2, so the grade decides and the confidence only orders products
within a grade; ties that remain keep the first-stage order. ``confidence`` (only with ``question = "grade"``):

- ``"logprobs"`` (default): grade = the most probable of "0".."3" at the first generated position offering them,
  confidence = its renormalised probability. Without logprobs: the grade parsed from the text, confidence 0
  (``fallback_parsed_label``).
- ``"stated"``: the model is asked for "Grade: g, Confidence: c%" (``deliberated_label_confidence``) and both are
  parsed from the text; a missing confidence counts ``confidence_missing`` and is taken as 0.

Counted fallbacks: ``fallback_attributes_failed`` (the attribute call failed or was empty: products are graded
against "(no attributes available)"), ``fallback_failed_call`` / ``fallback_unparsed`` (grade 0, confidence 0).
"""

from __future__ import annotations

import asyncio
from typing import Any

from superb.llm import ideal
from superb.llm.types import ChatRequest, Completion
from superb.options import OneOf, PositiveInt
from superb.transformers.base import Candidates, Reranker
from superb.llm.answers import ExpectedGrade, YesProbability, stated_confidence
from superb.llm.prompts import load_template

CONFIDENCE_MODES = ("logprobs", "stated")
GRADES = ExpectedGrade(text="lenient")  # the 0-3 grade: the most probable, or the first grade digit written
CHECKLIST, YES_NO = ExpectedGrade(scale=3.0, text="lenient"), YesProbability()
LABELS = {"grade": "deliberated_label", "yesno": "deliberated_yesno", "checklist": "deliberated_checklist"}


class DeliberatedReranker(Reranker):
    """Grades each of the top_k products against the attributes of the ideal product for the query (type
    ``deliberated``): 1 call per query string for the attributes (shared by its products, cached) plus 1 call per
    product, so top_k + 1 calls per query.

    Score: grade + confidence / 2 for the default 0-3 grade question; P(yes) or the expected checklist grade / 3 for
    the other question types (module docstring). Score column: ``deliberated_score`` (``<stage>_score`` when the
    spec names the stage). Options: the question type of the second step, ``confidence`` ("logprobs" | "stated"),
    ``attribute_tokens`` (generation length of the attributes) and the common options (``top_k``, ``fields``, the
    product-text budget, ``guard``: the base's and ProductText's constructors).
    """

    type_name = "deliberated"

    def __init__(self, llm: Any, *, confidence: OneOf(*CONFIDENCE_MODES) = "logprobs", attribute_tokens: PositiveInt = 160,
                 question: OneOf(*LABELS) = "grade", **kw: Any):
        super().__init__(llm, **kw)
        if confidence not in CONFIDENCE_MODES:
            raise ValueError(f"DeliberatedReranker: confidence must be one of {list(CONFIDENCE_MODES)}, "
                             f"got {confidence!r}")
        if question not in LABELS:
            raise ValueError(f"DeliberatedReranker: question must be one of {list(LABELS)}, got {question!r}")
        if confidence == "stated" and question != "grade":
            raise ValueError(f"DeliberatedReranker: confidence \"stated\" asks for a written grade and confidence; "
                             f"it only applies to question \"grade\", not {question!r}")

        self.confidence = confidence
        self.question = question
        self.attribute_tokens = int(attribute_tokens)
        self.attributes_template = load_template("deliberated_attributes")
        self.label_template = load_template(
            "deliberated_label_confidence" if confidence == "stated" else LABELS[question])
        self.attributes: dict[str, str] = {}  # query text -> generated ideal-product attributes
        self.step = ideal.IdealStep(self.attributes_template, self.attribute_tokens)  # once per query text
        self._fallbacks: set[str] = set()

    def max_calls(self, n: int) -> int:
        return n + 1 if n else 0  # the ideal product's attributes, then one label request per candidate

    def __repr__(self) -> str:
        return (f"DeliberatedReranker(question={self.question!r}, confidence={self.confidence!r}, top_k={self.top_k}, "
                f"text={self.text!r})")

    # ---- step 1: the ideal product ------------------------------------------------------------------------------
    def attributes_request(self, query: str) -> ChatRequest:
        """The shared ideal-attributes request (superb.llm.ideal): the deliberated judge asks the same."""
        return self.step.request(query, self.tag)

    async def ideal_attributes(self, query: str) -> str:
        """The attributes text for ``query``: generated once, then reused (also by concurrent callers)."""
        text, status = await self.step.text(query, self.complete, tag=self.tag)
        if status != "ok" and query not in self._fallbacks:
            self._fallbacks.add(query)
            self.stats["fallback_attributes_failed"] += 1
        self.attributes[query] = text
        return text

    # ---- step 2: each product against them ------------------------------------------------------------------------
    def label_request(self, query: str, attributes: str, product: str) -> ChatRequest:
        prompt = self.label_template.render(query=query, attributes=attributes, product=product)
        if self.confidence == "logprobs":
            return ChatRequest.label(prompt, template=self.label_template.id, tag=self.tag)
        return ChatRequest.chat(None, prompt, template=self.label_template.id, max_tokens=16, tag=self.tag)

    async def score(self, cands: Candidates) -> list[float]:
        attributes = await self.ideal_attributes(cands.query)
        comps = await asyncio.gather(*(self.complete(self.label_request(cands.query, attributes, t))
                                       for t in cands.texts))
        if self.question != "grade":
            return [self.read_probability(c) for c in comps]
        return [label + confidence / 2.0 for label, confidence in map(self.read, comps)]

    def read_probability(self, comp: Completion) -> float:
        """question "yesno": P(yes); question "checklist": expected grade / 3 (both in [0, 1]), with counted fallbacks
        (Reranker.read_score)."""
        return self.read_score(YES_NO if self.question == "yesno" else CHECKLIST, comp)

    def read(self, comp: Completion) -> tuple[int, float]:
        """(grade, confidence) of one completion, with counted fallbacks."""
        if comp.failed:
            self.stats["fallback_failed_call"] += 1
            return 0, 0.0
        if self.confidence == "logprobs":
            most = GRADES.most_probable(comp)
            if most is not None:
                return most
        label = GRADES.from_text(comp.text)
        if label is None:
            self.stats["fallback_unparsed"] += 1
            return 0, 0.0
        if self.confidence == "logprobs":
            self.stats["fallback_parsed_label"] += 1
            return int(label), 0.0
        stated = stated_confidence(comp.text)
        if stated is None:
            self.stats["confidence_missing"] += 1
            return int(label), 0.0
        return int(label), stated
