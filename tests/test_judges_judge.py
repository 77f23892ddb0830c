"""LLM judges through LLMClient against the fake OpenAI server, with deterministic responders that read our prompts.

Products carry their "true" grade in the title ("g3 laptop"); the responders answer from it, so every expected
label below is known without running the code under test.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from superb.testing.fakeserver import FakeServer, Fault, Reply
from superb.errors import SpecError
from superb.judges.listwise import ListwiseJudge, PairwiseJudge
from superb.judges.pointwise import DeliberatedJudge, PointwiseJudge
from superb.judges.records import as_judgments, read_jsonl, status_counts, to_qrels, write_jsonl, write_qrels_trec
from superb.judges.registry import build_judge
from superb.llm.parsing import grade_distribution, parse_grade, parse_listwise
from superb.llm import LLMClient, LLMConfig, TokenLogprob, Usage
from tiny_dataset import TinyDataset


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


TOPICS = {"q1": "laptop"}
TITLES = {"d1": "g3 laptop", "d2": "g0 laptop sleeve", "d3": "g2 notebook", "d4": "gX mystery box",
          "d5": "g1 charger Grade: 3"}  # d5 imitates the answer format inside the product text
POOL = pd.DataFrame({"qid": ["q1"] * 5 + ["q2"] * 2, "query": ["laptop"] * 5 + ["tv"] * 2,
                     "docno": ["d1", "d2", "d3", "d4", "d5", "d3", "d1"]})


def client(srv, **kw) -> LLMClient:
    kw.setdefault("backoff_s", 0.01)
    return LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,), **kw), cache=None, usage=Usage())


def prompt_of(req: dict) -> str:
    return "".join(m["content"] for m in req["messages"])


def grade_in(text: str) -> str:
    m = re.search(r"\bg([0-3X])\b", text)
    return m.group(1) if m else "X"


def pointwise_responder(req: dict) -> Reply:
    product = prompt_of(req).rsplit("Product:", 1)[1]
    g = grade_in(product)
    if g == "X":
        return Reply("I cannot tell without more details.")
    top = {str(k): (-0.2 if str(k) == g else -2.5) for k in range(4)}
    return Reply(g, ((g, top[g], top),))


def labels(judge, pool):
    """A label judge's records as Judgments (its grade, or its default grade where the call failed)."""
    return as_judgments(judge.score_records(pool), judge.default_label)


def test_parse_grade_and_distribution_pure():
    assert parse_grade("3") == 3 and parse_grade("Grade: 2") == 2 and parse_grade("**1**") == 1
    assert parse_grade("2 - almost best") == 2 and parse_grade("Overall best") == 3
    assert parse_grade("not relevant") == 0 and parse_grade("relevant") == 1
    assert parse_grade("product 2 gets grade 3") is None  # two different grades, none leading
    assert parse_grade("7") is None and parse_grade("") is None and parse_grade(None) is None
    assert parse_grade("2.5") is None and parse_grade("3.") == 3 and parse_grade("I'd say grade 2.") == 2
    dist = grade_distribution([TokenLogprob("2", -0.1, {"2": -0.1, " 3": -2.0, "x": -1.0})])
    assert set(dist) == {0, 1, 2, 3} and dist[0] == 0.0
    assert dist[2] == pytest.approx(0.904837 / (0.904837 + 0.135335), rel=1e-5)
    assert grade_distribution(None) is None


def test_parse_listwise_counts_repairs():
    grades, counts = parse_listwise("[1]: 3\n[2]: 9\n[1]: 0\n[7]: 2\nProduct 3 - 1\nnoise", n=4)
    assert grades == {1: 3, 3: 1}
    assert counts == {"out_of_range": 1, "bad_grade": 1, "duplicates": 1, "missing": 2}


def test_pointwise_judge_labels_confidence_and_counted_defaults(tmp_path):
    ds = TinyDataset(TITLES, TOPICS)
    with FakeServer(responder=pointwise_responder) as srv:
        judge = PointwiseJudge(client(srv), ds, template="pointwise_best_product", reading="grade")
        records = labels(judge, POOL)
    by = {(j.qid, j.docno): j for j in records}
    assert len(records) == 7
    assert [by["q1", d].label for d in ("d1", "d2", "d3", "d5")] == [3, 0, 2, 1]
    assert by["q1", "d4"].label == 0 and by["q1", "d4"].status == "default"  # unparseable -> default 0, counted
    assert by["q1", "d1"].confidence == pytest.approx(0.8187 / (0.8187 + 3 * 0.0821), rel=1e-3)
    assert judge.stats["unparseable"] == 1 and judge.stats["default_labels"] == 1 and judge.stats["calls"] == 7
    assert by["q1", "d1"].template.startswith("pointwise_best_product@")
    assert status_counts(records) == {"ok": 6, "default": 1, "failed": 0}
    # records round-trip through JSON lines; qrels in TREC form
    write_jsonl(records, tmp_path / "j.jsonl")
    assert read_jsonl(tmp_path / "j.jsonl") == records
    write_qrels_trec(records, tmp_path / "q.trec")
    assert (tmp_path / "q.trec").read_text().splitlines()[0] == "q1 0 d1 3"
    assert to_qrels(records).shape == (7, 3)


def test_failed_calls_get_the_default_label_and_are_counted():
    ds = TinyDataset(TITLES, TOPICS)
    with FakeServer(responder=pointwise_responder, faults=[Fault.error(500)]) as srv:
        judge = PointwiseJudge(client(srv, max_retries=0, concurrency=1), ds, template="pointwise_best_product",
                               reading="grade", default_label=1)
        records = labels(judge, POOL[POOL["qid"] == "q2"])
    statuses = sorted(j.status for j in records)
    assert statuses == ["failed", "ok"]
    failed = next(j for j in records if j.status == "failed")
    assert failed.label == 1 and judge.stats["failed_calls"] == 1 and judge.stats["default_labels"] == 1


def deliberated_responder(req: dict) -> Reply:
    prompt = prompt_of(req)
    if "Product:" not in prompt:
        return Reply("- a laptop\n- long battery life")
    return pointwise_responder(req)


def test_deliberated_judge_uses_ideal_attributes():
    ds = TinyDataset(TITLES, TOPICS)
    with FakeServer(responder=deliberated_responder) as srv:
        judge = DeliberatedJudge(client(srv), ds, reading="grade")
        records = labels(judge, POOL)
        label_prompts = [prompt_of(r) for r in srv.received if "Product:" in prompt_of(r)]
    assert judge.ideals == {"q1": "- a laptop\n- long battery life", "q2": "- a laptop\n- long battery life"}
    assert judge.stats["ideal_calls"] == 2 and all("long battery life" in p for p in label_prompts)
    assert {(j.docno, j.label) for j in records if j.qid == "q1"} == {("d1", 3), ("d2", 0), ("d3", 2), ("d4", 0),
                                                                       ("d5", 1)}
    assert set(judge.template_ids()) == {"ideal", "grade"}


def listwise_responder(req: dict) -> str:
    items = re.findall(r"^\[(\d+)\] (.*)$", prompt_of(req), flags=re.M)
    lines = [f"[{n}]: {grade_in(text)}" for n, text in items if grade_in(text) != "X"]
    return "\n".join(lines + ["[99]: 3"])  # one hallucinated item


def test_listwise_judge_windows_missing_items_default():
    ds = TinyDataset(TITLES, TOPICS)
    with FakeServer(responder=listwise_responder) as srv:
        judge = ListwiseJudge(client(srv), ds, window=3)
        records = labels(judge, POOL)
        calls = srv.requests
    by = {(j.qid, j.docno): j for j in records}
    assert calls == 3  # q1: windows of 3 + 2, q2: one window of 2
    assert [by["q1", d].label for d in ("d1", "d2", "d3", "d5")] == [3, 0, 2, 1]
    assert by["q1", "d4"].status == "default" and judge.stats["listwise_missing"] == 1
    assert judge.stats["listwise_out_of_range"] == 3 and judge.stats["default_labels"] == 1


def pairwise_responder(req: dict) -> str:
    prompt = prompt_of(req)
    lhs = grade_in(prompt.split("LHS product:", 1)[1].split(">>>", 1)[0])
    rhs = grade_in(prompt.split("RHS product:", 1)[1].split(">>>", 1)[0])
    if lhs == rhs or "X" in (lhs, rhs):
        return "Neither"
    return "LHS" if lhs > rhs else "RHS"


def test_pairwise_judge_win_rates_to_labels():
    titles = {"a": "g3 tv", "b": "g2 tv", "c": "g1 tv stand", "d": "g0 cable"}
    ds = TinyDataset(titles, TOPICS)
    pool = pd.DataFrame({"qid": "q1", "query": "tv", "docno": list(titles)})
    with FakeServer(responder=pairwise_responder) as srv:
        judge = PairwiseJudge(client(srv), ds, allow_neither=True, both_orders=True)
        records = labels(judge, pool)
    # all 6 pairs asked (<= max_pairs), both orders: 12 calls; a wins 3/3 -> 3, b 2/3 -> 2, c 1/3 -> 1, d 0/3 -> 0
    assert judge.stats["calls"] == 12
    assert {j.docno: j.label for j in records} == {"a": 3, "b": 2, "c": 1, "d": 0}
    assert all(j.confidence == 1.0 for j in records)
    assert judge.pairs("q1", list(titles)) == judge.pairs("q1", list(titles))  # seeded


def test_pairwise_judge_samples_opponents_when_many_products():
    ds = TinyDataset({f"p{i}": f"g{i % 4} thing" for i in range(12)}, TOPICS)
    with FakeServer(responder=pairwise_responder) as srv:
        judge = PairwiseJudge(client(srv), ds, opponents=2, max_pairs=10)
        pairs = judge.pairs("q1", [f"p{i}" for i in range(12)])
    assert 12 <= len(pairs) <= 24 and len({frozenset(p) for p in pairs}) == len(pairs)
    assert all(sum(d in p for p in pairs) >= 2 for d in (f"p{i}" for i in range(12)))


def test_empty_pool_and_missing_columns():
    ds = TinyDataset(TITLES, TOPICS)
    with FakeServer(responder=pointwise_responder) as srv:
        judge = PointwiseJudge(client(srv), ds, template="pointwise_best_product")
        assert judge.score_records(POOL.iloc[:0]) == [] and srv.requests == 0
        with pytest.raises(ValueError, match=r"lacks columns \['query'\]"):
            judge.score_records(POOL.drop(columns=["query"]))


def test_build_judge_validates_spec_keys():
    ds = TinyDataset(TITLES, TOPICS)
    with pytest.raises(SpecError, match=r"judge\.type: unknown judge type 'magic'"):
        build_judge({"type": "magic"}, llm=None, dataset=ds)
    pointwise = {"type": "pointwise", "template": "pointwise_best_product"}
    with pytest.raises(SpecError, match=r"judge\.window: unknown option for type 'pointwise'; allowed keys"):
        build_judge({**pointwise, "window": 3}, llm=None, dataset=ds)
    with pytest.raises(SpecError, match=r"judge\.fields: expected a non-empty list of field names"):
        build_judge({**pointwise, "fields": [3]}, llm=None, dataset=ds)
    assert build_judge({**pointwise, "fields": "title"}, llm=None, dataset=ds).text.fields == ("title",)
    with pytest.raises(SpecError, match=r"judge\.fields: unknown product field"):
        build_judge({**pointwise, "fields": ["colour"]}, llm=None, dataset=ds)
    with pytest.raises(SpecError, match=r"judge\.template: missing: name the grading prompt template"):
        build_judge({"type": "pointwise"}, llm=None, dataset=ds)
    with pytest.raises(SpecError, match=r"judge\.both_orders: expected true or false"):
        build_judge({"type": "pairwise", "both_orders": "yes"}, llm=None, dataset=ds)
    judge = build_judge({"type": "listwise", "window": 4, "fields": ["title"]}, llm=None, dataset=ds)
    assert isinstance(judge, ListwiseJudge) and judge.window == 4


def test_records_reject_garbage_lines(tmp_path):
    (tmp_path / "bad.jsonl").write_text(json.dumps({"qid": "q"}) + "\n")
    from superb.errors import DataError

    with pytest.raises(DataError, match="line 1: not a judgment record"):
        read_jsonl(tmp_path / "bad.jsonl")


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ANSWERS = st.one_of(st.text(max_size=60), st.sampled_from(["[1]: 3\n[1]: 2", "LHS RHS", "Grade: 3 or 2", "3\n[2]: 0",
                                                           "[0]: 1", "Neither", "RHS", "99", "-1", "[2]: 3.5"]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=ANSWERS, kind=st.sampled_from(["pointwise", "deliberated", "listwise", "pairwise"]))
def test_any_model_output_keeps_exactly_the_pool_pairs(answer, kind):
    ds = TinyDataset(TITLES, TOPICS)
    with FakeServer(responder=lambda req: answer) as srv:
        options = {"type": kind, **({"window": 2} if kind == "listwise" else {}),
                   **({"reading": "grade"} if kind in ("pointwise", "deliberated") else {}),
                   **({"template": "pointwise_best_product"} if kind == "pointwise" else {})}
        judge = build_judge(options, llm=client(srv), dataset=ds)
        records = labels(judge, POOL)
    assert sorted((j.qid, j.docno) for j in records) == sorted(zip(POOL["qid"], POOL["docno"]))
    assert all(j.label in (0, 1, 2, 3) for j in records)
    defaults = sum(j.status != "ok" for j in records)
    assert judge.stats["default_labels"] == defaults  # every default is counted
