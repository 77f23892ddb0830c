"""Two methods of a user's own, run beside superb's rerankers with no edit to superb (docs/extending.md).

- ``ThreeGrade``: an LLM reranker, pointwise on a 3-grade scale with a prompt of its own (three_grade.j2 beside this
  file); score = the expected grade / 2 from the label-token probabilities.
- ``title_length``: a factory that returns a PyTerrier transformer superb did not write (``pt.apply.doc_score``):
  shorter documents first, a no-LLM control.
"""

import asyncio
from pathlib import Path
from typing import Annotated

import pyterrier as pt

from superb.extend import ExpectedGrade, LabelQuestion, Reranker, load_template, template_name

PROMPT = str(Path(__file__).with_name("three_grade.j2"))


class ThreeGrade(Reranker):
    """Grades each of the top_k documents 0, 1 or 2 (one label request each); score = expected grade / 2."""

    type_name = "three_grade"  # its score column is three_grade_score; its requests carry the template's id

    def __init__(self, llm, *, template: Annotated[str, template_name] = PROMPT, **kw):
        super().__init__(llm, **kw)  # the base's options: top_k, fields, text_tokens, guard
        reader = ExpectedGrade(labels=(0, 1, 2), scale=2.0)
        self.question = LabelQuestion(load_template(template), reader, tag=self.tag)

    def max_calls(self, n: int) -> int:
        return n  # one request per document: the dry run's ceiling

    async def score(self, cands):
        asks = (self.complete(self.question.request(cands.query, text, tag=self.tag)) for text in cands.texts)
        return [self.read_score(self.question.reader, answer) for answer in await asyncio.gather(*asks)]


def title_length() -> pt.Transformer:
    """Shorter document text first: PyTerrier's own doc_score transformer over the text superb gives it."""
    return pt.apply.doc_score(lambda row: -float(len(row["text"])))
