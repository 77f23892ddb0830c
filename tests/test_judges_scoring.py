"""Scoring judges (label probabilities -> a score per pair) on the fake server, their requests pinned to the
rerankers' (one cached answer serves both), and scoring from the cache alone (no call made).

Products carry a marker in their title ("p3" etc.); the responders answer with probabilities worked out by hand."""

from __future__ import annotations

import dataclasses
import math
import re

import pandas as pd
import pytest

from superb.testing.fakeserver import FakeServer, Fault, Reply
from superb.errors import SpecError
from superb.judges.from_cache import cache_only_client, score_from_cache
from superb.judges.pointwise import DeliberatedJudge, PointwiseJudge
from superb.judges.registry import PRESETS, build_judge
from superb.llm.answers import ExpectedGrade, YesProbability
from superb.llm import LLMClient, LLMConfig, Usage, ideal
from superb.llm.cache import ResponseCache
from superb.llm.cache_rows import cache_key
from superb.llm.prompts import load_template
from superb.llm.text import ProductText
from superb.llm.types import ChatRequest
from superb.transformers.deliberated import DeliberatedReranker
from superb.transformers.pointwise import PointwiseReranker
from tiny_dataset import TinyDataset


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


# grade distributions (probabilities of the label tokens, plus a non-label token that must be ignored)
GRADE_DIST = {"pA": {"0": 0.1, "1": 0.2, "2": 0.3, "3": 0.2, "The": 0.2},  # renormalised: E = 1.75
              "pB": {"3": 0.9, "2": 0.1}}  # E = 2.9
YES_DIST = {"pA": {"yes": 0.6, "Yes": 0.1, "no": 0.2, "Maybe": 0.1},  # P(yes) = 0.7 / 0.9
            "pB": {"no": 0.5, " No": 0.25, "yes": 0.25}}  # P(yes) = 0.25
TOPICS = {"q1": "steel bottle", "q2": "tent"}
TITLES = {"d1": "pA steel bottle", "d2": "pB bottle brush", "d3": "pC plain text", "d4": "pD nonsense",
          "d5": "pE failing"}
POOL = pd.DataFrame({"qid": ["q1"] * 5, "query": ["steel bottle"] * 5, "docno": ["d1", "d2", "d3", "d4", "d5"]})


def client(srv, cache: ResponseCache | None = None, **kw) -> LLMClient:
    kw.setdefault("backoff_s", 0.01)
    return LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,), **kw), cache=cache, usage=Usage())


def prompt_of(req: dict) -> str:
    return "".join(m["content"] for m in req["messages"])


def marker(req: dict) -> str:
    return re.search(r"Product: <<< (p\w)", prompt_of(req)).group(1)


def one_token(dist: dict[str, float]) -> Reply:
    best = max(dist, key=dist.get)
    top = {t: math.log(p) for t, p in dist.items()}
    return Reply(best, ((best, top[best], top),))


def responder(req: dict) -> Reply | str:
    yes_no = "yes or no" in prompt_of(req)
    m = marker(req)
    if m in ("pA", "pB"):
        return one_token((YES_DIST if yes_no else GRADE_DIST)[m])
    if m == "pC":
        return "no" if yes_no else "2"  # no logprobs: the token is parsed (a counted fallback)
    return "I cannot say."  # pD (pE fails before it gets here)


def test_expected_grade_and_p_yes_from_label_probabilities_with_counted_fallbacks():
    ds = TinyDataset(TITLES, TOPICS)
    with FakeServer(responder=responder, faults=[None] * 4 + [Fault.error(500)] * 20) as srv:
        with client(srv, max_retries=0) as llm:
            grade = PointwiseJudge(llm, ds, template="pointwise_best_product", reading=ExpectedGrade())
            got = {r.docno: r for r in grade.score_records(POOL.iloc[:4])}
            # the 5th call (d5) fails: the server answers 500 from then on, the client does not retry
            failed = grade.score_records(POOL.iloc[4:])
    assert got["d1"].score == pytest.approx((0 * 0.1 + 1 * 0.2 + 2 * 0.3 + 3 * 0.2) / 0.8)  # 1.75
    assert got["d2"].score == pytest.approx(2.9)
    assert (got["d1"].status, got["d2"].status) == ("ok", "ok")
    assert (got["d3"].score, got["d3"].status) == (2.0, "parsed")
    assert (got["d4"].score, got["d4"].status) == (None, "unparseable")
    assert (failed[0].score, failed[0].status) == (None, "failed")
    assert grade.stats["fallback_parsed"] == 1 and grade.stats["unparseable"] == 1
    assert grade.stats["failed_calls"] == 1 and grade.stats["calls"] == 5

    with FakeServer(responder=responder) as srv, client(srv) as llm:
        yes = build_judge("yesno_product", llm=llm, dataset=ds)
        frame = yes.score(POOL.iloc[:4]).set_index("docno")
    assert isinstance(yes.reading, YesProbability) and yes.template.name == "pointwise_yesno_product"
    assert frame.loc["d1", "score"] == pytest.approx(0.7 / 0.9)  # "yes" and "Yes" add up
    assert frame.loc["d2", "score"] == pytest.approx(0.25)  # "no" and " No" add up
    assert frame.loc["d3", "score"] == 0.0 and frame.loc["d3", "status"] == "parsed"
    assert math.isnan(frame.loc["d4", "score"]) and frame.loc["d4", "status"] == "unparseable"


def test_judge_requests_equal_the_rerankers_and_the_cache_fill_requests():
    """A scoring judge asks exactly what the pointwise reranker (and the lead's cache fill) asks for the same
    template, query and product text; only the tag (not in the cache key) differs."""
    ds = TinyDataset(TITLES, TOPICS)
    text = ProductText(ds, fields=("title",), text_tokens=64)
    for preset in ("superb_product", "superb", "yesno_product", "yesno", "umbrela"):
        judge = build_judge(preset, llm=None, dataset=ds)
        template = load_template(PRESETS[preset]["template"])
        fill = ChatRequest.label(template.render(query="steel bottle", product=text.get("d1")), template=template.id,
                                 tag="fill")
        got = judge.request("steel bottle", "d1")
        assert dataclasses.replace(got, tag="fill") == fill
        assert cache_key("m", got) == cache_key("m", fill)
        variant = "yesno" if "yesno" in preset else "best"
        rr = PointwiseReranker(None, variant=variant, template=template.name, text=text)
        assert cache_key("m", rr.request("steel bottle", text.get("d1"))) == cache_key("m", got)
    # deliberated: the same ideal-attributes request, and the same grading request for the same attribute text
    rr = DeliberatedReranker(None, text=text)
    judge = build_judge("deliberated", llm=None, dataset=ds)
    assert cache_key("m", rr.attributes_request("tent")) == cache_key("m", judge.ideal_request("tent"))
    attrs = ideal.normalise("  - waterproof \n\n - light  \n")
    assert attrs == "- waterproof\n- light"
    assert cache_key("m", rr.label_request("tent", attrs, text.get("d2"))) == \
        cache_key("m", judge.request("tent", "d2", attributes=attrs))


def test_deliberated_judge_asks_ideal_once_per_query_text_and_grades_against_it():
    ds = TinyDataset(TITLES, TOPICS)

    def resp(req):
        p = prompt_of(req)
        if "Product:" not in p:
            return Reply("  - stainless steel\n\n  - 1 litre  \n")
        assert "Ideal product attributes:\n- stainless steel\n- 1 litre\n" in p
        return one_token(GRADE_DIST[marker(req)])

    pool = pd.DataFrame({"qid": ["q1", "q1", "q9"], "query": ["steel bottle"] * 3, "docno": ["d1", "d2", "d2"]})
    with FakeServer(responder=resp) as srv, client(srv) as llm:
        judge = DeliberatedJudge(llm, ds)
        frame = judge.score(pool)
        asked = [prompt_of(r) for r in srv.received]
    assert sum("Product:" not in p for p in asked) == 1  # one ideal call for the shared query text
    assert frame["score"].round(3).tolist() == [1.75, 2.9, 2.9]
    assert judge.ideals == {"q1": "- stainless steel\n- 1 litre", "q9": "- stainless steel\n- 1 litre"}


def test_scoring_from_the_cache_alone_makes_no_call_and_counts_misses(tmp_path):
    ds = TinyDataset(TITLES, TOPICS)
    path = tmp_path / "cache.sqlite"
    pool = POOL.iloc[:2].assign(split="dev")
    with FakeServer(responder=responder) as srv:
        cache = ResponseCache(path, "normal")
        with client(srv, cache=cache) as llm:  # a live run fills the cache for one judge
            live = build_judge("superb_product", llm=llm, dataset=ds).score(pool)
        cache.close()
        sent = srv.requests
        scores, info = score_from_cache(["superb_product", "yesno_product"], ds, pool, cache_path=path,
                                        model="fake-model")
        assert srv.requests == sent == 2  # nothing reached the server
    pd.testing.assert_frame_equal(scores["superb_product"][["qid", "docno", "score", "status"]], live)
    assert scores["yesno_product"]["status"].tolist() == ["missing", "missing"]
    assert info["yesno_product"]["stats"]["missing"] == 2
    # read-only: the cache file was not written to
    with ResponseCache(path, "read-only") as ro:
        assert len(ro) == 2
    client_ = cache_only_client(path, "fake-model")
    try:
        assert client_.cache.mode == "read-only"
    finally:
        client_.close()
        client_.cache.close()


def test_build_judge_rejects_unknown_presets_and_keys():
    ds = TinyDataset(TITLES, TOPICS)
    with pytest.raises(SpecError, match=r"judge\.preset: unknown judge preset 'nope'"):
        build_judge("nope", llm=None, dataset=ds)
    with pytest.raises(SpecError, match=r"judge\.window: unknown option for type 'pointwise'; allowed keys"):
        build_judge({"preset": "superb", "window": 3}, llm=None, dataset=ds)
    with pytest.raises(SpecError, match=r"judge\.reading: expected one of \['expected_grade', 'p_yes', 'grade', 'written'\], got 'argmax'"):
        build_judge({"template": "pointwise_best", "reading": "argmax"}, llm=None, dataset=ds)
    with pytest.raises(SpecError, match=r"judge\.template: missing"):
        build_judge({"type": "pointwise"}, llm=None, dataset=ds)
