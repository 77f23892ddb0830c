"""UMBRELA's own method as a judge (issue 49, item 3): its zero-shot prompt as castorini/umbrela ships it, its written
final score read as UMBRELA reads it, and superb's reading of the same answer by the label probabilities at the
written grade. Pure functions and the request a judge builds; no model."""

from __future__ import annotations

from pathlib import Path

import pytest

from superb.judges.base import DEFAULT, OK
from superb.judges.pointwise import PointwiseJudge
from superb.judges.registry import build_judge
from superb.llm.answers import UNPARSED, WRITTEN, ExpectedGrade, UmbrelaGrade
from superb.llm.parsing import parse_umbrela
from superb.llm.prompts import load_template
from superb.llm.types import ChatRequest, Completion, TokenLogprob

# UMBRELA's prompt as castorini/umbrela @ 16cba3eb ships it (src/umbrela/prompts/qrel_zeroshot_bing.txt), with its
# {query} and {passage} placeholders; the package template must render exactly this text.
UPSTREAM = (
    "Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following "
    "meanings:\n0 = represent that the passage has nothing to do with the query, \n1 = represents that the passage "
    "seems related to the query but does not answer it, \n2 = represents that the passage has some answer for the "
    "query, but the answer may be a bit unclear, or hidden amongst extraneous information and \n3 = represents that "
    "the passage is dedicated to the query and contains the exact answer.\n\nImportant Instruction: Assign category 1 "
    "if the passage is somewhat related to the topic but not completely, category 2 if passage presents something "
    "very important related to the entire topic but also has some extra information and category 3 if the passage "
    "only and entirely refers to the topic. If none of the above satisfies give it category 0.\n\nQuery: {query}\n"
    "Passage: {passage}\n\nSplit this problem into steps:\nConsider the underlying intent of the search.\nMeasure "
    "how well the content matches a likely intent of the query (M).\nMeasure how trustworthy the passage is (T).\n"
    "Consider the aspects above and the relative importance of each, and decide on a final score (O). Final score "
    "must be an integer value only.\nDo not provide any code in result. Provide each score in the format of: "
    "##final score: score without providing any reasoning.")


def test_the_template_renders_umbrelas_prompt_verbatim_and_carries_its_attribution():
    template = load_template("umbrela_zeroshot_bing")
    assert len(UPSTREAM) == 1341  # the upstream file's length
    q, p = "how long is the life cycle of a flea", "The life cycle of a flea can last 20 days to a year."
    assert template.render(query=q, product=p) == UPSTREAM.format(query=q, passage=p)
    notice = (Path(template.path).parent / "NOTICE.md").read_text(encoding="utf-8")
    assert "castorini/umbrela" in notice and "16cba3ebdfb79477850196695e06eef5ce96f339" in notice
    assert "Apache License 2.0" in notice


@pytest.mark.parametrize("answer, grade, valid", [
    ("##final score: 2", 2, True),                       # the format the prompt asks for
    ("##Final Score: 3", 3, True),                       # lower-cased before matching
    ("##final score: 2: The passage answers it", 2, True),
    ('{"M": 2, "T": 1, "O": 3}', 3, True),               # the first pattern, "o": N, wins over the others
    ("M: 1\nT: 2\nO: 0", 0, True),                       # o: N (third pattern), its LAST match
    ("final score is 1", 1, True),
    ("The relevance category is 2.", 2, True),           # "[a-z]+ is N " needs a space after N: category pattern
    ("I think 3 fits, maybe 1", 1, True),                # no cue: the last digit 0-3 anywhere
    ("score: 7", 0, False),                              # no grade 0-3 anywhere: 0, flagged invalid
    ("", 0, False),
    ("The passage is irrelevant.", 0, False),
])
def test_umbrelas_written_score_is_read_by_umbrelas_rule(answer, grade, valid):
    assert parse_umbrela(answer) == (grade, valid)


def _completion(tokens: list[tuple[str, dict[str, float]]]) -> Completion:
    positions = tuple(TokenLogprob(tok, top.get(tok, -0.1), top) for tok, top in tokens)
    return Completion(text="".join(t for t, _ in tokens), logprobs=positions)


# what the 1.5B answered on a DL19 pair (rounded): digits are alternatives at the FIRST position already
ANSWER = _completion([
    ("##", {"##": -0.17, "1": -2.53, "2": -4.23, "0": -4.66, "3": -4.8}),
    ("final", {"final": -0.15, "1": -3.16}),
    (" score", {" score": -0.0}),
    (":", {":": -0.0}),
    (" ", {" ": -0.0, "2": -7.92, "1": -8.38, "0": -8.67}),
    ("2", {"2": -0.94, "1": -1.12, "0": -1.65, "3": -2.4}),
])


def test_the_expected_grade_is_read_at_the_written_grade_not_where_a_digit_is_an_alternative():
    import math

    at_cue = ExpectedGrade(cue="final score").read(ANSWER)
    p = {g: math.exp(lp) for g, lp in {"2": -0.94, "1": -1.12, "0": -1.65, "3": -2.4}.items()}
    expected = sum(int(g) * v for g, v in p.items()) / sum(p.values())
    assert at_cue.position == 5 and at_cue.value == pytest.approx(expected)
    first = ExpectedGrade().read(ANSWER)  # the one-token reading would take position 0, where "##" was written
    assert first.position == 0 and first.value != pytest.approx(expected)
    # no probabilities: the grade written after the cue
    no_logprobs = Completion(text="##final score: 3")
    assert ExpectedGrade(cue="final score").read(no_logprobs).value == 3
    assert ExpectedGrade(cue="final score").read(Completion(text="no score here")).source == UNPARSED


def test_the_written_reader_gives_umbrelas_grade_and_flags_what_it_cannot_read():
    assert UmbrelaGrade().read(ANSWER).value == 2 and UmbrelaGrade().read(ANSWER).source == WRITTEN
    assert UmbrelaGrade().read(Completion(text="irrelevant")).source == UNPARSED
    assert UmbrelaGrade().read(Completion.failure("timeout")).value is None


class _Passages:
    name, fields, text_kind, prompt_fields = "p", ("text",), "passage", ("text",)

    def doc(self, docno):
        return {"docno": docno, "text": "The life cycle of a flea can last 20 days to a year."}


def test_both_umbrela_presets_ask_one_identical_request_on_passages():
    calibrated = build_judge("umbrela", llm=None, dataset=_Passages(), name="umbrela")
    written = build_judge("umbrela_written", llm=None, dataset=_Passages(), name="umbrela_written")
    a, b = calibrated.request("flea life cycle", "d1"), written.request("flea life cycle", "d1")
    assert a.messages == b.messages and a.template == b.template and a.max_tokens == b.max_tokens == 8
    assert a == ChatRequest.label(UPSTREAM.format(query="flea life cycle", passage=_Passages().doc("d1")["text"]),
                                  template=load_template("umbrela_zeroshot_bing").id, max_tokens=8, tag=a.tag)
    assert written.written and not calibrated.written
    # the written judge scores UMBRELA's grade; an answer UMBRELA cannot read is its 0, flagged "default"
    assert written.read("q", "d1", ANSWER).score == 2 and written.read("q", "d1", ANSWER).status == OK
    flagged = written.read("q", "d1", Completion(text="I cannot tell"))
    assert (flagged.score, flagged.status) == (0.0, DEFAULT) and written.stats["default_labels"] == 1


def test_product_presets_without_a_passage_form_are_refused_on_passages():
    from superb.errors import SpecError

    with pytest.raises(SpecError, match=r"preset 'superb_product' asks a product prompt; passage presets"):
        build_judge("superb_product", llm=None, dataset=_Passages())
    assert isinstance(build_judge("yesno", llm=None, dataset=_Passages()), PointwiseJudge)
    assert build_judge("yesno", llm=None, dataset=_Passages()).template.name == "pointwise_yesno_passage"
