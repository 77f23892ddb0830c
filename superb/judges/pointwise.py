"""The pointwise judges: one question per (query, document) pair, the deliberated one with the ideal product first.

``PointwiseJudge`` (``type = "pointwise"``) asks superb.llm.question.LabelQuestion on its template, EXACTLY the
pointwise reranker's request for the same template, query and text (``ChatRequest.label``: temperature 0, seed 0,
top logprobs, ``answer_tokens`` answer tokens, 1 by default), so a judge and a reranker asking the same prompt share
one cached answer. The answer is read by its ``reading`` (superb.llm.answers):

- ``expected_grade``: the expected grade sum_g g * P(g) over the grade tokens at the first generated position offering
  one (with ``cue``, at the grade written after it: UMBRELA's "##final score: N"); a score, calibrated;
- ``p_yes``: P(yes) renormalised over yes/no; a score, calibrated;
- ``grade``: the grade the answer writes (strict; P(that grade) kept as its confidence); a label;
- ``written``: the grade an UMBRELA answer writes, read by UMBRELA's rule; a label.

A label reading gives an answer it cannot read ``default_label`` (UMBRELA's own rule gives 0), status "default",
counted. ``DeliberatedJudge`` (``type = "deliberated"``) first asks for the ideal product's attributes, once per
distinct query text (superb.llm.ideal.IdealStep, the deliberated reranker's request exactly), then grades each
product against them (template ``deliberated_label``); a failed or empty attribute answer grades against
``ideal.NO_ATTRIBUTES``, counted ``ideal_failed`` (``ideal_missing`` under a cache-only client).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Annotated, Any

from superb.errors import SpecError
from superb.judges.base import Judge, Scored
from superb.llm import ideal
from superb.llm.answers import ExpectedGrade, UmbrelaGrade, WrittenGrade, YesProbability
from superb.llm.dryrun import DRY_RUN_ERROR
from superb.llm.prompts import TemplateRef, load_template
from superb.llm.question import LabelQuestion
from superb.llm.types import ChatRequest, Completion
from superb.options import NonNegativeInt, PositiveInt, one_of

READINGS = {"expected_grade": ExpectedGrade, "p_yes": YesProbability, "grade": WrittenGrade, "written": UmbrelaGrade}
LABEL_READINGS = ("grade", "written")  # readings whose value is the label itself: reported as written, never fitted
ReadingRef = Annotated[Any, one_of(*READINGS)]  # a reading's name in a spec (READINGS); from Python also the object


def _cue(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(path, f"expected the text the answer writes before its grade, e.g. \"final score\", got "
                              f"{value!r}")
    return value


CueText = Annotated[str | None, _cue]  # expected_grade: read the grade the answer writes after this text


class PointwiseJudge(Judge):
    """One label request per pair on ``template``, read by ``reading`` (module docstring)."""

    kind = "pointwise"

    def __init__(self, llm: Any, dataset: Any, *, template: TemplateRef, reading: ReadingRef = "expected_grade",
                 answer_tokens: PositiveInt = 1, cue: CueText = None, default_label: NonNegativeInt = 0,
                 **kw: Any):
        super().__init__(llm, dataset, **kw)
        self.template = load_template(template)
        if isinstance(reading, str):
            reading = one_of(*READINGS)(reading, "reading")
            self.reading = ExpectedGrade(cue=cue) if reading == "expected_grade" else READINGS[reading]()
        else:
            self.reading = reading
        self.output = "label" if getattr(self.reading, "name", "") in LABEL_READINGS else "score"
        self.default_label = int(default_label)
        if self.output == "label" and self.default_label not in (0, 1, 2, 3):
            raise SpecError("default_label", f"expected a grade of the scale 0..3, got {default_label!r}")
        self.name = kw.get("name") or self.template.name
        self.tag = kw.get("tag") or f"judge:{self.name}"
        self.question = LabelQuestion(self.template, self.reading, max_tokens=int(answer_tokens), tag=self.tag)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, template={self.template.id!r}, reading={self.reading!r})"

    @property
    def written(self) -> bool:
        return self.output == "label"

    def template_ids(self) -> dict[str, str]:
        return {"grade": self.template.id}

    def request(self, query: str, docno: str, **variables: Any) -> ChatRequest:
        """The label request for one pair (the pointwise reranker's request for the same prompt)."""
        return self.question.request(query, self.text_of(docno), tag=self.tag, **variables)

    def read(self, qid: str, docno: str, completion: Completion) -> Scored:
        return self.scored(qid, docno, completion, self.reading, self.template.id,
                           default=self.default_label if self.written else None)

    async def judge_pair(self, qid: str, query: str, docno: str) -> Scored:
        return self.read(qid, docno, await self.complete(self.request(query, docno)))


class DeliberatedJudge(PointwiseJudge):
    """The ideal product's attributes first, then one label request per product against them (module docstring)."""

    kind = "deliberated"
    calls_per_query = 1

    def __init__(self, llm: Any, dataset: Any, *, template: TemplateRef = "deliberated_label",
                 ideal_template: TemplateRef = ideal.TEMPLATE, ideal_max_tokens: PositiveInt = ideal.MAX_TOKENS,
                 **kw: Any):
        super().__init__(llm, dataset, template=template, **kw)
        self.step = ideal.IdealStep(load_template(ideal_template), int(ideal_max_tokens))
        self.ideals: dict[str, str] = {}  # qid -> the attribute text its products were graded against
        self._fallbacks: set[str] = set()  # query texts whose attribute fallback is counted

    @property
    def ideal_template(self) -> Any:
        return self.step.template

    @property
    def ideal_max_tokens(self) -> int:
        return self.step.max_tokens

    def template_ids(self) -> dict[str, str]:
        return {"ideal": self.step.template.id, "grade": self.template.id}

    def ideal_request(self, query: str) -> ChatRequest:
        return self.step.request(query, self.tag)

    async def attributes(self, query: str) -> str:
        """The attribute text of ``query``: one call per distinct query text, shared by concurrent callers."""
        text, status = await self.step.text(query, self.complete, tag=self.tag, missing_error=DRY_RUN_ERROR,
                                            on_ask=self._count_ask)
        if status != "ok" and query not in self._fallbacks:
            self._fallbacks.add(query)
            self.stats["ideal_missing" if status == "missing" else "ideal_failed"] += 1
        return text

    def _count_ask(self) -> None:
        self.stats["ideal_calls"] += 1

    async def ajudge_query(self, qid: str, query: str, docnos: Sequence[str]) -> list[Scored]:
        attributes = self.ideals[qid] = await self.attributes(query)

        async def one(docno: str) -> Scored:
            return self.read(qid, docno, await self.complete(self.request(query, docno, attributes=attributes)))

        return list(await asyncio.gather(*(one(d) for d in docnos)))
