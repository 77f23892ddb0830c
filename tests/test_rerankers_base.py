"""Reranker base behaviour: empty frame, columns, top_k split, docnos preserved, strict spec options."""

import re
from collections import Counter

import pandas as pd
import pytest

from superb.errors import SpecError, StageError
from superb.transformers.base import Candidates, Reranker, scores_from_order, spec_options
from superb.options import REQUIRED, Opt, read_options
from superb.transformers.fuse import parse_weights
from superb.transformers.registry import BuildContext, build_reranker, reranker_class
from superb.llm.text import ProductText, truncate


class ReverseByLength(Reranker):
    """Scores = text length: a deterministic stand-in that needs no LLM."""

    type_name = "reverse"

    def __init__(self, **kw):
        super().__init__(None, **kw)
        self.seen: list[Candidates] = []

    async def score(self, cands):
        self.seen.append(cands)
        return [float(len(t)) for t in cands.texts]


def frame(rows):
    return pd.DataFrame(rows, columns=["qid", "query", "docno", "score", "rank", "text"])


@pytest.fixture
def two_queries():
    return frame([
        ("q1", "phone", "a", 9.0, 0, "x"),
        ("q1", "phone", "b", 8.0, 1, "xxx"),
        ("q1", "phone", "c", 7.0, 2, "xx"),
        ("q1", "phone", "d", 6.0, 3, "xxxxxxx"),
        ("q2", "case", "e", 5.0, 0, "yy"),
        ("q2", "case", "f", 4.0, 1, "yyyy"),
    ])


def test_empty_frame_makes_no_call_and_has_columns():
    r = ReverseByLength(top_k=2)
    out = r(frame([]))
    assert len(out) == 0
    assert {"qid", "docno", "score", "rank", "reverse_score", "first_stage_score"} <= set(out.columns)
    assert "llm_score" not in out.columns
    assert r.seen == [] and r.stats["queries"] == 0


def test_missing_column_is_named():
    r = ReverseByLength()
    with pytest.raises(Exception, match="query"):
        r(pd.DataFrame({"qid": ["q"], "docno": ["d"], "score": [1.0]}))


def test_top_k_split_keeps_tail_in_prior_order(two_queries):
    r = ReverseByLength(top_k=3)
    out = r(two_queries)
    q1 = out[out.qid == "q1"].sort_values("rank")
    # head a(1) b(3) c(2) reranked by length -> b, c, a; d stays below although it is the longest
    assert list(q1.docno) == ["b", "c", "a", "d"]
    assert list(q1["rank"]) == [0, 1, 2, 3]
    assert q1["score"].is_monotonic_decreasing
    assert pd.isna(q1[q1.docno == "d"]["reverse_score"]).all()
    q2 = out[out.qid == "q2"].sort_values("rank")
    assert list(q2.docno) == ["f", "e"]
    assert [len(c) for c in r.seen] == [3, 2]
    assert r.stats["queries"] == 2 and r.stats["reranked"] == 5
    assert r.stats["kept_input_order"] == 0 and r.stats["moved_candidates"] == 3 + 2  # b c a, and f e


def test_how_far_a_stage_moved_its_input_is_counted():
    """kept_input_order: queries whose reranked head comes out in its input order (a listwise model that writes the
    identity permutation back); moved_candidates: candidates not at their input position."""
    r = ReverseByLength(top_k=None)
    r(frame([("q1", "phone", "a", 9.0, 0, "xxx"), ("q1", "phone", "b", 8.0, 1, "xx"), ("q1", "phone", "c", 7.0, 2, "x"),
             ("q2", "case", "e", 5.0, 0, "y"), ("q2", "case", "f", 4.0, 1, "yy"), ("q2", "case", "g", 3.0, 2, "yyy"),
             ("q3", "lamp", "h", 2.0, 0, "zz"), ("q3", "lamp", "i", 1.0, 1, "zz")]))
    # q1 keeps a b c (longest first already); q2 becomes g f e (f stays second); q3 ties keep the input order
    assert r.stats["kept_input_order"] == 2 and r.stats["moved_candidates"] == 2


def test_docnos_preserved_and_prior_order_from_rank(two_queries):
    shuffled = two_queries.sample(frac=1.0, random_state=3)
    r = ReverseByLength(top_k=None)
    out = r(shuffled)
    for qid, g in two_queries.groupby("qid"):
        assert sorted(out[out.qid == qid].docno) == sorted(g.docno)
    # the candidates are handed over in first-stage order whatever the row order of the input
    assert [c.docnos for c in r.seen] == [("a", "b", "c", "d"), ("e", "f")] or \
           [c.docnos for c in r.seen] == [("e", "f"), ("a", "b", "c", "d")]


def test_ties_keep_first_stage_order():
    class Flat(ReverseByLength):
        async def score(self, cands):
            return [1.0] * len(cands)

    inp = frame([("q", "x", d, 10.0 - i, i, "t") for i, d in enumerate("pqrs")])
    out = Flat(top_k=4)(inp).sort_values("rank")
    assert list(out.docno) == list("pqrs")


def test_scores_from_order():
    # order [2, 0, 1]: candidate 2 first -> highest score
    assert scores_from_order([2, 0, 1]) == [2.0, 1.0, 3.0]


# the options every reranker takes, declared once in Reranker's and ProductText's constructors
COMMON_OPTIONS = spec_options(Reranker)


def test_the_common_options_are_read_from_the_constructors():
    assert {k: o.default for k, o in COMMON_OPTIONS.items()} == \
        {"fields": None, "text_tokens": 64, "guard": False, "top_k": 20}


def test_read_options_rejects_unknown_key_with_path_and_allowed():
    with pytest.raises(SpecError) as e:
        read_options({"type": "x", "topk": 3}, "pipelines[1].rerank[0]", COMMON_OPTIONS)
    msg = str(e.value)
    assert "pipelines[1].rerank[0].topk" in msg and "top_k" in msg and "fields" in msg


def test_read_options_checks_values():
    with pytest.raises(SpecError, match=r"rerank\[0\].top_k"):
        read_options({"top_k": 0}, "rerank[0]", COMMON_OPTIONS)
    opts = read_options({"fields": "title", "top_k": 5}, "r", COMMON_OPTIONS)
    assert opts == {"top_k": 5, "fields": ("title",), "text_tokens": 64, "guard": False}
    with pytest.raises(SpecError, match=r"^r\.fields: missing \(required\): a table of"):
        read_options({}, "r", {"fields": Opt(REQUIRED, parse_weights)})


def test_registry_unknown_type_lists_known():
    with pytest.raises(SpecError, match="pointwise"):
        build_reranker({"type": "nope"}, context=BuildContext(), path="p.rerank[0]")
    with pytest.raises(SpecError, match="missing"):
        build_reranker({}, context=BuildContext(), path="p")


class FakeDataset:
    fields = ("title", "description")

    def __init__(self, docs):
        self.docs = docs

    def doc(self, docno):
        return self.docs.get(docno)


def test_product_text_fields_budget_and_counts():
    ds = FakeDataset({"a": {"title": "Red\n\nphone   case", "description": "word " * 100}, "b": {"title": None}})
    stats = Counter()
    one = ProductText(ds, fields=("title",), text_tokens=50)
    assert one.get("a", stats) == "Red phone case"
    assert one.get("b", stats) == "(no text)"
    assert stats["text_missing_field"] == 1 and stats["text_empty"] == 1
    both = ProductText(ds, fields=("title", "description"), text_tokens=12)
    text = both.get("a", stats)
    assert text.startswith("title: Red phone case | description: word")
    assert text.endswith(" ...") and len(text) <= 12 * 4 + 4
    assert stats["text_truncated"] == 1
    with pytest.raises(SpecError, match="price"):
        ProductText(ds, fields=("price",))


def test_truncate_at_word_boundary():
    assert truncate("aaaa bbbb cccc", 3) == ("aaaa bbbb ...", True)  # 12 chars, cut back to the last space
    assert truncate("short", 5) == ("short", False)


def test_every_registered_type_imports_and_has_from_spec():
    from superb.transformers.registry import RERANKERS

    for type_name in RERANKERS:
        cls = reranker_class(type_name, "r")
        assert callable(getattr(cls, "from_spec", None)), type_name


def test_shuffle_from_spec_uses_context_seed_and_rejects_unknown_keys():
    shuffle = build_reranker({"type": "shuffle", "top_k": 20}, context=BuildContext(seed=7), path="r")
    assert (shuffle.seed, shuffle.top_k) == (7, 20)
    with pytest.raises(SpecError, match=r"r\.k.*allowed keys.*seed"):
        build_reranker({"type": "shuffle", "k": 20}, context=BuildContext(), path="r")


# ---- the per-query progress bar ---------------------------------------------------------------------------------

def three_queries():
    return frame([(q, "phone", f"{q}-{i}", 2.0 - i, i, "x" * (i + 1)) for q in ("q1", "q2", "q3") for i in range(2)])


def test_progress_bar_counts_queries_on_stderr(capsys, monkeypatch):
    monkeypatch.delenv("SUPERB_PROGRESS", raising=False)
    out = ReverseByLength(top_k=2, tag="by-length")(three_queries())
    assert len(out) == 6
    err = capsys.readouterr().err
    final = err.rsplit("\r", 1)[-1]  # tqdm redraws the line with \r; the last drawing is the closed bar
    assert final.startswith("by-length: 100%") and "| 3/3 [" in final
    assert re.search(r"\[\d\d:\d\d<\d\d:\d\d, [\d.]+(query/s|s/query)\]", final)  # elapsed<ETA, rate in queries


def test_progress_bar_advances_once_per_completed_query(monkeypatch):
    events = []

    class FakeBar:
        def __init__(self, total):
            events.append(("open", total))

        def update(self, n):
            events.append(("update", n))

        def close(self):
            events.append(("close",))

    class Logged(ReverseByLength):
        async def score(self, cands):
            events.append(("scored", cands.qid))
            return await super().score(cands)

    r = Logged(top_k=2)
    monkeypatch.setattr(r, "progress_bar", FakeBar)
    r(three_queries())
    scored = sorted(e[1] for e in events if e[0] == "scored")
    assert scored == ["q1", "q2", "q3"]
    assert events[0] == ("open", 3) and events[-1] == ("close",)
    middle = [e[0] for e in events[1:-1]]
    assert middle == ["scored", "update"] * 3  # each query advances the bar once, after its scores are in


def test_progress_bar_off_for_one_query_or_superb_progress_0(capsys, monkeypatch):
    monkeypatch.delenv("SUPERB_PROGRESS", raising=False)
    ReverseByLength(top_k=2, tag="by-length")(three_queries().query("qid == 'q1'"))
    assert "by-length" not in capsys.readouterr().err
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    ReverseByLength(top_k=2, tag="by-length")(three_queries())
    assert "by-length" not in capsys.readouterr().err


def test_progress_bar_is_closed_when_a_query_fails(monkeypatch):
    closed = []

    class Broken(ReverseByLength):
        async def score(self, cands):
            raise RuntimeError(f"boom in {cands.qid}")

    r = Broken(top_k=2)
    real = r.progress_bar

    def tracked(total):
        bar = real(total)
        bar.close = lambda close=bar.close: (closed.append(bar.n), close())
        return bar

    monkeypatch.setattr(r, "progress_bar", tracked)
    with pytest.raises(StageError, match=r"ReverseByLength|Broken.*raised RuntimeError: boom in q1"):
        r(three_queries())
    assert closed == [0]  # closed once, and no failed query counted as done
