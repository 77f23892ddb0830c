"""The "check twice" pairwise study on a tiny WANDS-format fixture, through LLMClient and the fake server.

The responder answers differently per field shown, so each row of the table has a known, hand-computed value:
title (and all): always right; class: always "LHS" (pure position bias), or "Neither" when allowed;
category: always wrong; description: unparseable.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from superb.testing.fakeserver import FakeServer
from superb.data import load_dataset
from superb.judges.studies.pairwise import PAIR_COLUMNS, format_table, pairwise_study, sample_pairs
from superb.llm import LLMClient, LLMConfig, Usage


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


PRODUCTS = [  # product_id, name (grade marker), class, category, description
    ("p1", "g2 grey sofa", "Sofas", "Furniture / Living Room / Sofas", "a soft sofa"),
    ("p2", "g1 sofa cover", "Slipcovers", "Decor / Slipcovers", "a cover"),
    ("p3", "g0 table lamp", "Lamps", "Lighting / Lamps", "a lamp"),
    ("p4", "g2 leather couch", "Sofas", "Furniture / Living Room / Sofas", "a couch"),
    ("p5", "g0 rug", "Rugs", "Decor / Rugs", "a rug"),
]
LABELS = [("0", "p1", "Exact"), ("0", "p2", "Partial"), ("0", "p3", "Irrelevant"), ("0", "p4", "Exact"),
          ("1", "p5", "Irrelevant"), ("1", "p3", "Irrelevant"),  # q1: one grade only -> never eligible
          ("2", "p1", "Partial"), ("2", "p5", "Irrelevant")]


def write_wands(folder) -> None:
    folder.mkdir()
    rows = ["product_id\tproduct_name\tproduct_class\tcategory hierarchy\tproduct_description\tproduct_features\t"
            "rating_count\taverage_rating\treview_count"]
    rows += [f"{p}\t{n}\t{c}\t{h}\t{d}\tcolor:grey|size:large\t1\t4.5\t1" for p, n, c, h, d in PRODUCTS]
    (folder / "product.csv").write_text("\n".join(rows) + "\n")
    (folder / "query.csv").write_text("query_id\tquery\tquery_class\n0\tsofa\tSofas\n1\tlamp\tLamps\n2\tcouch\tSofas\n")
    lines = ["id\tquery_id\tproduct_id\tlabel"] + [f"{i}\t{q}\t{p}\t{l}" for i, (q, p, l) in enumerate(LABELS)]
    (folder / "label.csv").write_text("\n".join(lines) + "\n")


@pytest.fixture
def wands(tmp_path):
    write_wands(tmp_path / "wands")
    return load_dataset({"name": "wands", "path": str(tmp_path / "wands")})


def grade(block: str) -> int:
    return int(block.split("Title: g", 1)[1][0])


def responder(req: dict) -> str:
    prompt = "".join(m["content"] for m in req["messages"])
    lhs = prompt.split("LHS product:", 1)[1].split(">>>", 1)[0]
    rhs = prompt.split("RHS product:", 1)[1].split(">>>", 1)[0]
    neither = "or Neither" in prompt
    if "Title:" in lhs:
        return "LHS" if grade(lhs) > grade(rhs) else "RHS"
    if "Class:" in lhs:
        return "Neither" if neither else "LHS"
    if "Category:" in lhs:
        return "RHS" if "Sofas" in lhs and "Sofas" not in rhs else "LHS" if "Sofas" in rhs else "RHS"
    return "hmm, hard to say"


# hand-made pairs of query 0 (sofa): human preference A, B, A, A, B
PAIRS = pd.DataFrame(
    [(0, "0", "sofa", "p1", "p2", 2, 1, "A"), (1, "0", "sofa", "p3", "p1", 0, 2, "B"),
     (2, "0", "sofa", "p2", "p3", 1, 0, "A"), (3, "0", "sofa", "p4", "p3", 2, 0, "A"),
     (4, "0", "sofa", "p3", "p2", 0, 1, "B")], columns=PAIR_COLUMNS)


def test_check_twice_table_equals_hand_computed(wands):
    with FakeServer(responder=responder) as srv:
        llm = LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,)), cache=None, usage=Usage())
        table, decisions = pairwise_study(wands, llm, PAIRS)
        calls, coalesced = srv.requests, llm.usage.total().coalesced
    # field sets x choices x pairs x orders; pairs 2 and 4 are one pair swapped (and some field sets render two
    # products alike), so some prompts repeat: one asked while its twin is in flight is coalesced, not sent
    assert calls + coalesced == 5 * 2 * 5 * 2 and coalesced > 0
    t = table.set_index(["fields", "choice", "orders"])

    def row(*key):
        r = t.loc[key]
        return r["decided"], r["agreed"], r["precision"], r["recall"]

    for fields in ("name", "all"):  # the title decides: always right, both orders agree
        for choice in ("forced", "allow neither"):
            for orders in ("one", "both"):
                assert row(fields, choice, orders) == (5, 5, 1.0, 1.0)
    # class: forced -> always LHS = A; humans prefer A on 3 of 5 pairs
    assert row("class", "forced", "one") == (5, 3, pytest.approx(3 / 5), 1.0)
    d, a, p, r = row("class", "forced", "both")  # swapped order says LHS = B: the orders never agree
    assert (d, a, r) == (0, 0, 0.0) and math.isnan(p)
    assert row("class", "allow neither", "one")[0] == 0 and row("class", "allow neither", "both")[0] == 0
    # category: the responder prefers the side WITHOUT "Sofas" (RHS when neither/both have it). One order:
    # p1|p2 -> RHS = B (human A); p3|p1 -> LHS = A (human B); p2|p3 -> RHS = B (human A); p4|p3 -> RHS = B (human A);
    # p3|p2 -> RHS = B (human B, right): 5 decided, 1 agreed.
    assert row("category", "forced", "one") == (5, 1, pytest.approx(1 / 5), 1.0)
    # both orders: p1/p2 swapped (p2 LHS, p1 RHS Sofas) -> LHS = p2 = B: agrees (B) -> decided, wrong.
    # p3/p1 swapped (p1 LHS Sofas) -> RHS = p3 = A: agrees, wrong. p2/p3 swapped (p3 LHS) -> RHS = p2 = A:
    # disagrees (B vs A). p4/p3 swapped (p3 LHS, p4 RHS Sofas) -> LHS = p3 = B: agrees, wrong.
    # p3/p2 swapped (p2 LHS) -> RHS = p3 = A: disagrees. -> 3 decided, 0 agreed.
    assert row("category", "forced", "both") == (3, 0, 0.0, pytest.approx(3 / 5))
    # description: unparseable answers in every order -> no decisions, all counted
    assert row("description", "forced", "one")[0] == 0
    assert t.loc[("description", "forced", "one"), "unparseable"] == 10
    assert len(decisions) == 5 * 2 * 5 and set(decisions["fields"]) == {"name", "class", "category",
                                                                          "description", "all"}
    md = format_table(table)
    assert "| class | forced | one | 5 | 5 | 60.00% | 100.00% | 0 |" in md


def test_sample_pairs_is_seeded_and_valid(wands):
    qrels, topics = wands.qrels(), wands.topics()
    a = sample_pairs(qrels, topics, n_pairs=8, seed=3)
    b = sample_pairs(qrels, topics, n_pairs=8, seed=3)
    pd.testing.assert_frame_equal(a, b)
    # query 0 has 4 products (grades 2,1,0,2): 5 differently graded pairs; query 2 has 1; query 1 none
    assert len(a) == 6 and a.attrs["pairs_short"] == 2 and a.attrs["eligible_queries"] == 2
    assert set(a["qid"]) == {"0", "2"}
    assert (a["label_a"] != a["label_b"]).all()
    assert ((a["label_a"] > a["label_b"]) == (a["human"] == "A")).all()
    assert len({(q, frozenset((x, y))) for q, x, y in zip(a["qid"], a["docno_a"], a["docno_b"])}) == len(a)
    with pytest.raises(ValueError, match="n_pairs"):
        sample_pairs(qrels, topics, n_pairs=0)
    with pytest.raises(ValueError, match="different grades"):
        sample_pairs(qrels, topics, queries=["1"])


def test_study_rejects_unknown_field_sets(wands):
    with pytest.raises(ValueError, match="unknown or no fields"):
        pairwise_study(wands, llm=None, pairs=PAIRS, field_sets={"x": ("colour",)})
    with pytest.raises(ValueError, match="lack columns"):
        pairwise_study(wands, llm=None, pairs=PAIRS.drop(columns=["human"]))
