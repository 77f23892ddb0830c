"""A judge of one's own beside superb's (docs/extending.md, "A judge of your own"): the three-grade prompt of
my_methods.py's reranker asked as a judge. A spec names it `type = "experiments/plugins/my_judges.py:ThreeGradeJudge"`."""

from pathlib import Path
from typing import Annotated

from superb.extend import ExpectedGrade, Judge, LabelQuestion, load_template, template_name

PROMPT = str(Path(__file__).with_name("three_grade.j2"))


class ThreeGradeJudge(Judge):
    """Grades each pair 0, 1 or 2 (one label request); its score, the expected grade, is calibrated into 0..3."""

    kind = "three_grade_judge"
    output = "score"  # calibrated on dev pairs; "label" would report the judge's own grade as it is

    def __init__(self, llm, dataset, *, template: Annotated[str, template_name] = PROMPT, **kw):
        super().__init__(llm, dataset, **kw)  # the base's options: fields, text_tokens
        self.question = LabelQuestion(load_template(template), ExpectedGrade(labels=(0, 1, 2)), tag=self.tag)

    def template_ids(self):
        return {"grade": self.question.template.id}

    async def judge_pair(self, qid, query, docno):
        answer = await self.complete(self.question.request(query, self.text_of(docno), tag=self.tag))
        return self.scored(qid, docno, answer, self.question.reader, self.question.template.id)
