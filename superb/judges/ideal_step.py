"""The first step the two deliberated judges share: the ideal product's attributes, asked once per query.

``DeliberatedJudge`` (labels) and ``DeliberatedScoringJudge`` (scores) both put superb.llm.ideal's request first, the
deliberated reranker's exactly (one cached answer serves all three); this mixin holds its options and request once.
"""

from __future__ import annotations

from typing import Any

from superb.llm import ideal
from superb.llm.prompts import load_template
from superb.llm.prompts import TemplateRef
from superb.llm.types import ChatRequest
from superb.options import PositiveInt


class IdealFirst:
    """Mixin before a judge class: ``template`` (the grading prompt, default ``deliberated_label``),
    ``ideal_template`` and ``ideal_max_tokens`` (the attribute request's prompt and generation length)."""

    def __init__(self, llm: Any, dataset: Any, *, template: TemplateRef = "deliberated_label",
                 ideal_template: TemplateRef = ideal.TEMPLATE, ideal_max_tokens: PositiveInt = ideal.MAX_TOKENS,
                 **kw: Any):
        super().__init__(llm, dataset, template=template, **kw)
        self.ideal_template = load_template(ideal_template)
        self.ideal_max_tokens = int(ideal_max_tokens)
        self.ideals: dict[str, str] = {}  # qid -> the attribute text its products were graded against

    def template_ids(self) -> dict[str, str]:
        return {"ideal": self.ideal_template.id, "grade": self.template.id}

    def ideal_request(self, query: str) -> ChatRequest:
        return ideal.attributes_request(query, template=self.ideal_template, max_tokens=self.ideal_max_tokens,
                                        tag=self.tag)
