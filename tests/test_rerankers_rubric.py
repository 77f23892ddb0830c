"""Rubric set selection: rubric/selection/score parsing (superb.llm.rubric_parsing; good, malformed, hostile), the
reward formula by hand, RubricReranker and RubricReward against the fake OpenAI server, docnos preserved under any
model output."""

from __future__ import annotations

import asyncio
import json
import re

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from superb.testing.fakeserver import FakeServer, Fault
from reranker_helpers import assert_docnos_preserved, run_of_sizes, small_model_on_chorus
from superb.errors import SpecError
from superb.llm.client import LLMClient
from superb.llm.config import LLMConfig
from superb.llm.types import Completion
from superb.transformers.registry import BuildContext, build_reranker
from superb.llm.rubric_parsing import (
    DEFAULT_RUBRICS, Rubric, json_values, parse_rubric_scores, parse_rubrics, parse_selection,
)
from superb.transformers.rubric import RubricReranker, RubricReward, rubric_reward


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


# ---- rubric parsing -------------------------------------------------------------------------------------------

GOOD = json.dumps([
    {"name": "covers bottles", "level": "set", "weight": 5, "description": "Water bottles, not lids."},
    {"name": "no duplicates", "level": "set", "weight": 3, "description": "Different bottles."},
    {"name": "known brands", "level": "item", "weight": 2, "description": "Reputable makers."},
])


def test_parse_rubrics_good_json():
    rubrics, counts = parse_rubrics(GOOD)
    assert rubrics == [Rubric("covers bottles", "Water bottles, not lids.", 5, "set"),
                       Rubric("no duplicates", "Different bottles.", 3, "set"),
                       Rubric("known brands", "Reputable makers.", 2, "item")]
    assert sum(counts.values()) == 0


def test_parse_rubrics_in_prose_fences_and_wrapper_object():
    text = "Sure! Here are the rubrics:\n```json\n{\"rubrics\": " + GOOD + "}\n```\nHope this helps [1]."
    rubrics, counts = parse_rubrics(text)
    assert [r.name for r in rubrics] == ["covers bottles", "no duplicates", "known brands"]
    assert sum(counts.values()) == 0


def test_parse_rubrics_repairs_are_counted():
    text = json.dumps([
        {"name": "a", "weight": 9, "level": "set"},  # clamped to 5
        {"name": "b", "weight": "important", "level": "item"},  # no number -> default 3
        {"name": "c", "importance": "4/5", "level": "product"},  # "4" -> 4, level product -> item
        {"name": "A", "weight": 1, "level": "set"},  # duplicate name (case-insensitive)
        {"foo": "bar"},  # nothing usable
        "plain string rubric",  # weight defaulted, level defaulted, name from text
        42,
    ])
    rubrics, counts = parse_rubrics(text)
    assert [(r.name, r.weight, r.level) for r in rubrics] == [
        ("a", 5, "set"), ("b", 3, "item"), ("c", 4, "item"), ("plain string rubric", 3, "set")]
    assert counts == {"weight_clamped": 1, "weight_defaulted": 2, "level_defaulted": 2, "rubrics_duplicate": 1,
                      "rubric_dropped": 2}


@pytest.mark.parametrize("text", ["", "no json here", "[1, 2, 3]", '{"rubrics": "none"}', "[{unclosed", "null",
                                  '[{"name": ""}]'])
def test_parse_rubrics_malformed_falls_back_to_meta_rubrics(text):
    rubrics, counts = parse_rubrics(text)
    assert rubrics == list(DEFAULT_RUBRICS) and counts["rubrics_defaulted"] == 1


def test_parse_rubrics_hostile_output_is_bounded():
    many = [{"name": f"r{i}", "weight": 2, "level": "set", "description": "x" * 300} for i in range(50)]
    rubrics, counts = parse_rubrics("Rubrics: " + json.dumps(many))
    assert len(rubrics) == 8 and counts["rubrics_truncated"] == 42
    assert all(len(r.description) == 240 for r in rubrics)
    # deep nesting (RecursionError inside json) and endless brackets: no crash, counted fallback
    rubrics, counts = parse_rubrics("[" * 5000 + json.dumps(many))
    assert rubrics == list(DEFAULT_RUBRICS) and counts["rubrics_defaulted"] == 1
    rubrics, _ = parse_rubrics(json.dumps([{"name": "line\nbreak\tand  spaces " + "n" * 100, "weight": 5}]))
    assert rubrics[0].name == ("line break and spaces " + "n" * 100)[:60]


def test_parse_rubrics_keeps_the_complete_objects_of_a_cut_off_list():
    cut = "```json\n" + GOOD[:-40]  # max_tokens ran out inside the third object
    rubrics, counts = parse_rubrics(cut)
    assert [r.name for r in rubrics] == ["covers bottles", "no duplicates"] and counts["rubrics_repaired"] == 1


def test_json_values_skips_broken_prefixes():
    assert list(json_values('x [1, {"a": 2}] y {"b": [3]} [oops')) == [[1, {"a": 2}], {"b": [3]}]


# ---- selection and score parsing --------------------------------------------------------------------------------

@pytest.mark.parametrize("text, k, m, chosen, counts", [
    ("[3, 1, 2]", 5, 10, [2, 0, 1], {}),
    ('Selected: ["4", 2]', 5, 10, [3, 1], {}),
    ('{"selected": [2, 5]}', 5, 10, [1, 4], {}),
    ("[3] > [1] > [2]", 5, 10, [2, 0, 1], {}),
    ("3, 1, 99, 3, 0", 5, 10, [2, 0], {"selection_repaired": 1, "selection_invalid": 2, "selection_duplicate": 1}),
    ("[5, 4, 3, 2, 1]", 5, 2, [4, 3], {"selection_truncated": 3}),
    ("I cannot choose.", 5, 10, [], {"selection_empty": 1}),
    ("", 5, 10, [], {"selection_empty": 1}),
    ("[7]", 5, 10, [], {"selection_invalid": 1, "selection_empty": 1}),
])
def test_parse_selection(text, k, m, chosen, counts):
    got, c = parse_selection(text, k, m)
    assert got == chosen and dict(c) == counts


R3 = [Rubric("coverage", "c", 5), Rubric("conciseness", "c", 3), Rubric("brand", "c", 2, "item")]


@pytest.mark.parametrize("text, scores, counts", [
    ('{"1": 8, "2": 4, "3": 10}', [8.0, 4.0, 10.0], {}),
    ('{"coverage": 7, "Brand": "6/10"}', [7.0, None, 6.0], {"score_missing": 1}),
    ("[8, 4.5, 10]", [8.0, 4.5, 10.0], {}),
    ('{"1": 15, "2": -3, "3": {"score": 9}}', [10.0, 0.0, 9.0], {"score_clamped": 2}),
    ("1: 8\n2. 4\n[3] = 9", [8.0, 4.0, 9.0], {"scores_repaired": 1}),
    ("no scores at all", [None, None, None], {"score_missing": 3}),
])
def test_parse_rubric_scores(text, scores, counts):
    got, c = parse_rubric_scores(text, R3)
    assert got == scores and {k: v for k, v in c.items() if v} == counts


def test_rubric_reward_by_hand():
    # (5*0.8 + 3*0.4 + 2*1.0) / (5+3+2) = (4 + 1.2 + 2) / 10
    assert rubric_reward([5, 3, 2], [8, 4, 10]) == pytest.approx(0.72)
    assert rubric_reward([1], [10]) == 1.0 and rubric_reward([4, 1], [0, 0]) == 0.0
    with pytest.raises(ValueError, match="one score per weight"):
        rubric_reward([1, 2], [5])
    with pytest.raises(ValueError, match="0..10"):
        rubric_reward([1], [11])


# ---- against the fake OpenAI server ----------------------------------------------------------------------------

BEST = {"p3": 0, "p1": 1, "p5": 2}  # the fake model's choice (text -> place), whatever the candidate order


def rubric_responder(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    if "You write evaluation rubrics" in prompt:
        return "```json\n" + GOOD + "\n```"
    if "You select the best products" in prompt:
        ids = {text: pid for pid, text in re.findall(r"\[(\d+)\] <<< (.*?) >>>", prompt)}
        return json.dumps([int(ids[t]) for t in sorted(BEST, key=BEST.get) if t in ids])
    if "You grade a selected set" in prompt:
        n = len(re.findall(r"\[\d+\] <<<", prompt))
        return json.dumps({"1": min(10, 3 * n), "2": 5, "3": "7"})
    return "?"


def frame(n: int, qids=("q1",)) -> pd.DataFrame:
    rows = [(q, "water bottle", f"{q}-d{i}", float(100 - i), i, f"p{i}") for q in qids for i in range(n)]
    return pd.DataFrame(rows, columns=["qid", "query", "docno", "score", "rank", "text"])


def client(srv: FakeServer, **kw) -> LLMClient:
    return LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,), cache="off", **kw), cache=None)


def test_selected_set_first_in_model_order_rest_in_prior_order():
    with FakeServer(responder=rubric_responder) as srv, client(srv) as llm:
        rr = RubricReranker(llm, top_k=6, m=10)
        out = rr(frame(8, qids=("q1", "q2")))
        # two calls per query; q1 and q2 show the same query and products, so a call asked while its twin is in
        # flight is coalesced (one request, one shared answer), not sent again
        assert srv.requests + llm.usage.total().coalesced == 4 and srv.requests >= 2
    for qid in ("q1", "q2"):
        got = list(out[out.qid == qid].sort_values("rank")["docno"])
        assert got == [f"{qid}-d{i}" for i in (3, 1, 5, 0, 2, 4, 6, 7)]
        rubrics, selected = rr.selections[qid]
        assert [r.weight for r in rubrics] == [5, 3, 2] and selected == [f"{qid}-d{i}" for i in (3, 1, 5)]
    assert rr.stats["calls"] == 4 and rr.stats["selected"] == 6 and rr.stats["rubrics_defaulted"] == 0


def test_failed_rubric_call_uses_meta_rubrics_and_still_selects():
    with FakeServer(responder=rubric_responder, faults=[Fault.error(500)]) as srv, \
            client(srv, max_retries=0) as llm:
        rr = RubricReranker(llm, top_k=6, m=2)
        out = rr(frame(6))
        select_prompt = srv.received[1]["messages"][-1]["content"]
    assert rr.stats["failures"] == 1 and rr.stats["fallback_rubric_call"] == 1
    assert "spec_completeness (weight 1, item-level)" in select_prompt  # the meta-rubrics were shown instead
    # the model named p3, p1, p5; m=2 keeps the first two (counted)
    assert list(out.sort_values("rank")["docno"]) == [f"q1-d{i}" for i in (3, 1, 0, 2, 4, 5)]
    assert rr.stats["selection_truncated"] == 1


def test_both_calls_failing_keeps_prior_order():
    with FakeServer(responder=rubric_responder, faults=[Fault.error(500)] * 2) as srv, \
            client(srv, max_retries=0, concurrency=1) as llm:
        rr = RubricReranker(llm, top_k=4, m=2)
        out = rr(frame(5))
    assert rr.stats["fallback_rubric_call"] == 1 and rr.stats["fallback_select_call"] == 1
    assert rr.stats["failures"] == 2
    assert list(out.sort_values("rank")["docno"]) == [f"q1-d{i}" for i in range(5)]
    assert rr.selections["q1"] == (list(DEFAULT_RUBRICS), [])


def test_rubric_reward_scores_sets_at_equal_budgets():
    with FakeServer(responder=rubric_responder) as srv, client(srv) as llm:
        reward = RubricReward(llm, max_tokens=60)
        a, b = asyncio.run(reward.compare("water bottle", R3, ["p3", "p1"], ["p0", "p2"]))
        assert srv.requests == 2
        with pytest.raises(ValueError, match="equal budgets"):
            asyncio.run(reward.compare("water bottle", R3, ["p3", "p1"], ["p0"]))
        one = asyncio.run(reward.score("water bottle", R3, ["p3"]))
    # two products: scores 6, 5, 7 -> (5*0.6 + 3*0.5 + 2*0.7) / 10 = 0.59; one product: 3, 5, 7 -> 0.44
    assert a.reward == pytest.approx(0.59) and b.reward == pytest.approx(0.59) and a.scores == (6.0, 5.0, 7.0)
    assert one.reward == pytest.approx(0.44)
    assert reward.stats["calls"] == 3 and reward.stats["score_missing"] == 0


def test_empty_frame_and_spec_options():
    with FakeServer() as srv, client(srv) as llm:
        out = RubricReranker(llm)(frame(0))
        assert len(out) == 0 and srv.requests == 0
    ctx = BuildContext(dataset=None, llm=object())
    with pytest.raises(SpecError, match=r"x\.rerank\[1\]\.budget.*allowed keys"):
        build_reranker({"type": "rubric", "budget": 3}, context=ctx, path="x.rerank[1]")
    with pytest.raises(SpecError, match=r"x\.rerank\[1\]\.m"):
        build_reranker({"type": "rubric", "m": 0}, context=ctx, path="x.rerank[1]")


# ---- docnos in == docnos out, whatever the model says ----------------------------------------------------------

class ScriptedLLM:
    def __init__(self, outputs):
        self.outputs, self.n = outputs, 0

    async def acomplete(self, request):
        out = self.outputs[self.n % len(self.outputs)]
        self.n += 1
        return Completion.failure("scripted") if out is None else Completion(text=out)


OUTPUTS = st.one_of(st.sampled_from([GOOD, "[3, 1, 2]", "[1] > [1] > [99]", "[-1, 0, 2.5]", "{}", "[[[", "",
                                     '{"selected": "all"}', "9999999999999"]),
                    st.text(max_size=40), st.just(None))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outputs=st.lists(OUTPUTS, min_size=1, max_size=8), sizes=st.lists(st.integers(0, 9), min_size=1, max_size=3),
       top_k=st.integers(1, 10), m=st.integers(1, 6))
def test_docnos_preserved_for_any_model_output(outputs, sizes, top_k, m):
    inp = run_of_sizes(sizes)
    rr = RubricReranker(ScriptedLLM(outputs), top_k=top_k, m=m)
    assert_docnos_preserved(inp, rr(inp))
    assert all(len(rr.selections[qid][1]) <= min(m, top_k) for qid in inp["qid"].unique())


# ---- the real embedded 0.5B model (one Chorus query): the whole path works, not that the model is good ---------

@pytest.mark.model
@pytest.mark.slow
def test_rubric_real_small_model_on_chorus(monkeypatch):
    from superb.llm.text import ProductText

    with small_model_on_chorus(monkeypatch, "laptop", depth=10, n_ctx=4096) as (ds, run, llm):
        rr = RubricReranker(llm, text=ProductText(ds, fields=("title",)), top_k=6, m=3, rubric_tokens=200)
        out = rr(run)
        rubrics, selected = rr.selections[run["qid"].iloc[0]]
        text = ProductText(ds, fields=("title",))
        head = [text.get(d) for d in out.sort_values("rank")["docno"]]
        reward = RubricReward(llm, max_tokens=60)
        a, b = asyncio.run(reward.compare("laptop", rubrics, head[:3], list(reversed(head[-3:]))))
    assert sorted(out["docno"]) == sorted(run["docno"])
    assert rr.stats["failures"] == 0 and rr.stats["calls"] == 2
    assert 1 <= len(rubrics) <= 8 and len(selected) <= 3
    assert 0.0 <= a.reward <= 1.0 and 0.0 <= b.reward <= 1.0 and reward.stats["failed_calls"] == 0
