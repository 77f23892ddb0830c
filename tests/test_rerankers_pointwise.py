"""Pointwise and deliberated rerankers through LLMClient against the fake server; expected orders worked by hand."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from superb.testing.fakeserver import FakeServer, Fault, Reply
from reranker_helpers import client, lp, prompt_of
from superb.errors import SpecError
from superb.transformers import BuildContext, build_reranker
from superb.transformers.deliberated import DeliberatedReranker
from superb.transformers.pointwise import PointwiseReranker


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


def product_of(req: dict) -> str:
    return re.search(r"^Product: <<< (.*) >>>$", prompt_of(req), re.M).group(1)


def frame(qid: str, query: str, texts: list[str]) -> pd.DataFrame:
    n = len(texts)
    return pd.DataFrame({"qid": qid, "query": query, "docno": [f"{qid}-d{i}" for i in range(n)],
                         "score": [float(n - i) for i in range(n)], "rank": range(n), "text": texts})


def order(out: pd.DataFrame, qid: str) -> list[str]:
    return list(out[out.qid == qid].sort_values("rank").docno)


GRADES = {
    "steel bottle": {"3": 0.7, "2": 0.2, "0": 0.1},  # E = 2.5
    "bottle brush": {"1": 0.8, "0": 0.2},  # E = 0.8
    "plastic bottle": {"2": 0.5, "3": 0.5},  # E = 2.5 (ties with steel bottle)
    "usb cable": {"0": 0.9, "1": 0.1},  # E = 0.1
}


def test_best_variant_expected_grade_and_first_stage_ties():
    with FakeServer(responder=lambda r: lp(GRADES[product_of(r)])) as srv, client(srv) as llm:
        rr = PointwiseReranker(llm, variant="best", top_k=10)
        out = rr(frame("q1", "water bottle", ["usb cable", "plastic bottle", "bottle brush", "steel bottle"]))
        sent = srv.received
    # plastic (d1) and steel (d3) both 2.5/3: the first stage breaks the tie (d1 first); brush 0.8, cable 0.1
    assert order(out, "q1") == ["q1-d1", "q1-d3", "q1-d2", "q1-d0"]
    own = dict(zip(out.docno, out.pointwise_score))
    assert own["q1-d3"] == pytest.approx(2.5 / 3) and own["q1-d2"] == pytest.approx(0.8 / 3)
    assert rr.stats["calls"] == 4 and rr.stats["failures"] == 0
    # shared text first, product last; logprobs requested; a tiny generation budget
    p = prompt_of(sent[0])
    assert p.index("water bottle") < p.index("Product:") and p.rstrip().endswith("Grade:")
    assert sent[0]["logprobs"] is True and sent[0]["max_tokens"] <= 3


def test_yesno_variant_uses_p_yes_with_product_template():
    p_yes = {"steel bottle": 0.9, "bottle brush": 0.3, "usb cable": 0.05}

    def responder(r):
        y = p_yes[product_of(r)]
        return lp({"yes": y * 0.8, "no": (1 - y) * 0.8, "The": 0.2})  # renormalised over yes/no: P(yes) = y

    with FakeServer(responder=responder) as srv, client(srv) as llm:
        rr = PointwiseReranker(llm, variant="yesno", template="pointwise_yesno_product")
        out = rr(frame("q", "water bottle", ["bottle brush", "usb cable", "steel bottle"]))
        assert "accessory" in prompt_of(srv.received[0])
    assert order(out, "q") == ["q-d2", "q-d0", "q-d1"]
    assert dict(zip(out.docno, out.pointwise_score))["q-d0"] == pytest.approx(0.3)


def test_umbrela_rubric_as_a_best_variant_reads_the_expected_grade():
    grades = {"title of q-d1": {"3": 0.7, "2": 0.2, "0": 0.1}, "title of q-d0": {"1": 0.6, "0": 0.4}}
    with FakeServer(responder=lambda r: lp(grades[product_of(r)])) as srv, client(srv) as llm:
        ctx = BuildContext(dataset=FakeDataset(), llm=llm, seed=0)
        rr = build_reranker({"type": "pointwise", "variant": "best", "template": "judge_umbrela"}, context=ctx,
                            path="pipelines[1].rerank[0]")
        out = rr(frame("q", "water bottle", ["bottle brush", "steel bottle"]))
        assert "integer scale of 0 to 3" in prompt_of(srv.received[0])
    assert order(out, "q") == ["q-d1", "q-d0"]
    assert dict(zip(out.docno, out.pointwise_score))["q-d1"] == pytest.approx((3 * 0.7 + 2 * 0.2) / 3)
    with pytest.raises(SpecError, match="judge_umbrela"):  # its labels are grades, not yes/no
        build_reranker({"type": "pointwise", "variant": "yesno", "template": "judge_umbrela"}, context=ctx,
                       path="pipelines[1].rerank[0]")


def test_text_fallbacks_and_failed_calls_are_counted():
    replies = {"a": Reply("2"), "b": Reply("Grade 3, clearly"), "c": Reply("I am not sure"), "d": Reply("2")}
    with FakeServer(responder=lambda r: replies[product_of(r)],
                    faults=[None, None, None, Fault.error(500)]) as srv, client(srv, max_retries=0) as llm:
        rr = PointwiseReranker(llm, variant="best", top_k=10)
        # four products: the 4th request fails (the first three arrive first: top_k=10 but one query, concurrent;
        # the fault hits whichever arrives 4th, so use distinct texts -- identical prompts in flight at once would
        # be coalesced into one request -- and check counts, not which one failed)
        out = rr(frame("q", "x", ["a", "b", "c", "d"]))
    assert sorted(out.docno) == ["q-d0", "q-d1", "q-d2", "q-d3"]
    assert rr.stats["failures"] == 1 and rr.stats["fallback_failed_call"] == 1
    assert rr.stats["fallback_parsed_label"] + rr.stats["fallback_unparsed"] == 3
    assert rr.stats["fallback_unparsed"] in (0, 1)


def test_text_fallback_order():
    replies = {"a": Reply("1"), "b": Reply("Grade: 3"), "c": Reply("no idea")}
    with FakeServer(responder=lambda r: replies[product_of(r)]) as srv, client(srv) as llm:
        rr = PointwiseReranker(llm, variant="best")
        out = rr(frame("q", "x", ["c", "a", "b"]))
    assert order(out, "q") == ["q-d2", "q-d1", "q-d0"]  # 3 > 1 > unparsed (0)
    assert rr.stats["fallback_parsed_label"] == 2 and rr.stats["fallback_unparsed"] == 1


def test_fusion_by_hand():
    # yes/no P(yes): d0 0.2, d1 0.6, d2 1.0; first-stage scores 3, 2, 1 -> min-max 1, 0.5, 0
    # alpha 0.5: d0 0.5*0.2 + 0.5*1 = 0.6; d1 0.3 + 0.25 = 0.55; d2 0.5 + 0 = 0.5 -> order d0, d1, d2; the
    # stage's column keeps the raw P(yes), the blend only orders
    p_yes = {"a": 0.2, "b": 0.6, "c": 1.0}

    def responder(r):
        y = p_yes[product_of(r)]
        return lp({"yes": y, "no": 1 - y} if y < 1 else {"yes": 1.0})

    with FakeServer(responder=responder) as srv, client(srv) as llm:
        fused = PointwiseReranker(llm, variant="yesno", alpha=0.5)(frame("q", "x", ["a", "b", "c"]))
        pure = PointwiseReranker(llm, variant="yesno", alpha=1.0)(frame("q", "x", ["a", "b", "c"]))
    assert dict(zip(fused.docno, fused.pointwise_score)) == pytest.approx({"q-d0": 0.2, "q-d1": 0.6, "q-d2": 1.0})
    assert order(fused, "q") == ["q-d0", "q-d1", "q-d2"]
    assert order(pure, "q") == ["q-d2", "q-d1", "q-d0"]


class FakeDataset:
    fields = ("title", "description")

    def doc(self, docno):
        return {"title": f"title of {docno}", "description": "long " * 50}


def test_from_spec_strict_and_builds():
    with FakeServer(responder=lambda r: lp({"yes": 0.5, "no": 0.5})) as srv, client(srv) as llm:
        ctx = BuildContext(dataset=FakeDataset(), llm=llm, seed=0)
        rr = build_reranker({"type": "pointwise", "variant": "yesno", "top_k": 2, "fields": ["title"],
                             "alpha": 0.3}, context=ctx, path="pipelines[1].rerank[0]")
        assert isinstance(rr, PointwiseReranker) and rr.top_k == 2 and rr.alpha == 0.3
        inp = frame("q", "x", ["", "", ""]).drop(columns=["text"])
        out = rr(inp)
        assert product_of(srv.received[0]).startswith("title of q-d")
        assert srv.requests == 2 and sorted(out.docno) == ["q-d0", "q-d1", "q-d2"]
        with pytest.raises(SpecError) as err:  # the old name of the same blend, refused with the new one
            build_reranker({"type": "pointwise", "fusion": 0.5}, context=ctx, path="pipelines[1].rerank[0]")
        assert str(err.value).startswith("pipelines[1].rerank[0].fusion: renamed to 'alpha' (the weight of the "
                                         "stage's own score") and str(err.value).endswith("write alpha = 0.5")
        with pytest.raises(SpecError, match=r"rerank\[0\]\.alpha: expected a number between 0 and 1"):
            build_reranker({"type": "pointwise", "alpha": 2}, context=ctx, path="rerank[0]")
        with pytest.raises(SpecError, match=r"rerank\[0\]\.max_tokens: renamed to 'text_tokens' \(the product-text"):
            build_reranker({"type": "pointwise", "max_tokens": 32}, context=ctx, path="rerank[0]")
        with pytest.raises(SpecError, match="does not answer variant"):
            build_reranker({"type": "pointwise", "variant": "yesno", "template": "pointwise_best"}, context=ctx,
                           path="r")
        with pytest.raises(SpecError, match=r"r\.fields"):
            build_reranker({"type": "pointwise", "fields": ["colour"]}, context=ctx, path="r")


# ---- deliberated ---------------------------------------------------------------------------------------------------
LABELS = {
    "A": {"2": 0.6, "3": 0.4},  # grade 2, confidence 0.6 -> 2.3
    "B": {"2": 0.9, "1": 0.1},  # 2.45
    "C": {"3": 0.5, "2": 0.5},  # a tie goes to the lower grade: 2 + 0.25 = 2.25
    "D": {"3": 0.55, "0": 0.45},  # 3.275
}


def deliberated_responder(r):
    p = prompt_of(r)
    if "Product:" not in p:  # the attribute call
        query = re.search(r"^Query: (.*)$", p, re.M).group(1)
        return Reply(f"- ideal for {query}\n- durable")
    return lp(LABELS[product_of(r)])


def test_deliberated_attributes_once_per_query_and_confidence_ties():
    with FakeServer(responder=deliberated_responder) as srv, client(srv) as llm:
        rr = DeliberatedReranker(llm, top_k=10)
        inp = pd.concat([frame("q1", "tent", ["A", "B", "C", "D"]), frame("q2", "tent", ["C", "A"]),
                         frame("q3", "stove", ["B"])])
        out = rr(inp)
        prompts = [prompt_of(r) for r in srv.received]
    attribute_calls = [p for p in prompts if "Product:" not in p]
    assert len(attribute_calls) == 2  # "tent" (shared by q1 and q2) and "stove"
    assert order(out, "q1") == ["q1-d3", "q1-d1", "q1-d0", "q1-d2"]  # D, B, A, C
    assert order(out, "q2") == ["q2-d1", "q2-d0"]  # A (2.3) before C (2.25)
    label_prompt = next(p for p in prompts if "Product: <<< D >>>" in p)
    # instructions, query, attributes, then the product
    assert label_prompt.index("Query: tent") < label_prompt.index("- ideal for tent") < label_prompt.index("Product: <<< D >>>")
    assert rr.attributes == {"tent": "- ideal for tent\n- durable", "stove": "- ideal for stove\n- durable"}
    assert rr.stats["calls"] == 2 + 7


def test_deliberated_stated_confidence_and_failed_attributes():
    def responder(r):
        p = prompt_of(r)
        if "Product:" not in p:
            return Reply("")  # empty attributes: a counted fallback
        return Reply({"A": "Grade: 2, Confidence: 90%", "B": "Grade: 2, Confidence: 40%", "C": "Grade: 3"}[
            product_of(r)])

    with FakeServer(responder=responder) as srv, client(srv) as llm:
        rr = DeliberatedReranker(llm, confidence="stated")
        out = rr(frame("q", "tent", ["B", "C", "A"]))
        assert "(no attributes available)" in prompt_of(srv.received[-1])
    # C: 3 + 0 = 3.0; A: 2 + 0.45; B: 2 + 0.2
    assert order(out, "q") == ["q-d1", "q-d2", "q-d0"]
    assert rr.stats["fallback_attributes_failed"] == 1 and rr.stats["confidence_missing"] == 1


# ---- deliberated: the redesigned label prompts (question = "yesno" | "checklist") ------------------------------------

def test_deliberated_yesno_label_scores_p_yes_against_the_attributes():
    p_yes = {"steel bottle": 0.8, "bottle brush": 0.3, "usb cable": 0.05}

    def responder(r):
        p = prompt_of(r)
        if "Product:" not in p:
            return Reply("- holds water\n- leak-proof")
        y = p_yes[product_of(r)]
        return lp({"yes": y * 0.9, "no": (1 - y) * 0.9, "Yes": 0.0001, "The": 0.0999})

    with FakeServer(responder=responder) as srv, client(srv) as llm:
        rr = DeliberatedReranker(llm, question="yesno", top_k=10)
        out = rr(frame("q", "water bottle", ["usb cable", "bottle brush", "steel bottle"]))
        label_prompt = prompt_of(srv.received[-1])
    assert order(out, "q") == ["q-d2", "q-d1", "q-d0"]
    # P(yes) renormalised over yes/no ("Yes" counts as yes): steel (0.72 + 0.0001) / (0.9 + 0.0001)
    assert dict(zip(out.docno, out.deliberated_score))["q-d2"] == pytest.approx(0.7201 / 0.9001)
    assert "AND has the ideal attributes" in label_prompt and label_prompt.rstrip().endswith("Answer:")
    assert label_prompt.index("- leak-proof") < label_prompt.index("Product: <<<")
    assert rr.stats["calls"] == 4 and rr.stats["fallback_parsed_label"] == 0


def test_deliberated_checklist_label_scores_the_expected_grade_with_fallbacks():
    answers = {"A": lp({"3": 0.5, "2": 0.5}), "B": lp({"1": 0.9, "0": 0.1}), "C": Reply("Grade: 2"),
               "D": Reply("unsure")}

    def responder(r):
        if "Product:" not in prompt_of(r):
            return Reply("- lightweight\n- waterproof")
        return answers[product_of(r)]

    with FakeServer(responder=responder) as srv, client(srv) as llm:
        rr = DeliberatedReranker(llm, question="checklist", top_k=10)
        out = rr(frame("q", "tent", ["D", "C", "B", "A"]))
        assert "Checklist:\n- lightweight" in prompt_of(srv.received[-1])
    scores = dict(zip(out.docno, out.deliberated_score))
    # A: E = 2.5 -> 0.833; C: parsed 2 -> 0.667; B: E = 0.9 -> 0.3; D: unparsed -> 0
    assert scores == pytest.approx({"q-d3": 2.5 / 3, "q-d1": 2 / 3, "q-d2": 0.3, "q-d0": 0.0})
    assert rr.stats["fallback_parsed_label"] == 1 and rr.stats["fallback_unparsed"] == 1


def test_deliberated_label_options_are_checked():
    with FakeServer() as srv, client(srv) as llm:
        ctx = BuildContext(dataset=FakeDataset(), llm=llm)
        rr = build_reranker({"type": "deliberated", "question": "checklist", "fields": ["title"]}, context=ctx,
                            path="r")
        assert rr.question == "checklist" and rr.label_template.name == "deliberated_checklist"
        with pytest.raises(SpecError, match=r"r\.question.*grade"):
            build_reranker({"type": "deliberated", "question": "rubric"}, context=ctx, path="r")
        with pytest.raises(SpecError, match=r"stated.*only applies to question \"grade\""):
            build_reranker({"type": "deliberated", "question": "yesno", "confidence": "stated"}, context=ctx, path="r")
        with pytest.raises(SpecError, match=r"r\.label: renamed to 'question' \(the question of the second step"):
            build_reranker({"type": "deliberated", "label": "yesno"}, context=ctx, path="r")
