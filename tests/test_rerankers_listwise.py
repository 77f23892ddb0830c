"""Listwise and sliding-window rerankers against the fake server; controls (shuffle, random).

Expected orders are worked out by hand in comments; hypothesis drives arbitrary model output (and hostile product
text imitating the answer format) through the transformers: docnos in == docnos out per query, always.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from superb.testing.fakeserver import FakeServer, Fault, Reply
from reranker_helpers import client, prompt_of
from superb.errors import SpecError
from superb.transformers import BuildContext, build_reranker
from superb.transformers.controls import RandomReranker, Shuffle
from superb.transformers.deliberated import DeliberatedReranker
from superb.transformers.listwise import ListwiseReranker
from superb.transformers.pointwise import PointwiseReranker
from superb.transformers.sliding import SlidingWindowReranker, window_starts


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


def shown(req: dict) -> list[str]:
    """The product texts of a listwise prompt, in the order shown ([1], [2], ...)."""
    return re.findall(r"^\[\d+\] <<< (.*) >>>$", prompt_of(req), re.M)


def frame(qid: str, texts: list[str], query: str = "query") -> pd.DataFrame:
    n = len(texts)
    return pd.DataFrame({"qid": qid, "query": query, "docno": [f"{qid}-{t}" for t in texts],
                         "score": [float(n - i) for i in range(n)], "rank": range(n), "text": texts})


def order(out: pd.DataFrame, qid: str) -> list[str]:
    return [d.split("-", 1)[1] for d in out[out.qid == qid].sort_values("rank").docno]


def reverse_responder(req: dict) -> str:
    n = len(shown(req))
    return " > ".join(f"[{i}]" for i in range(n, 0, -1))


def test_listwise_applies_the_answer():
    with FakeServer(responder=lambda r: "[3] > [1] > [2]") as srv, client(srv) as llm:
        rr = ListwiseReranker(llm, top_k=3)
        out = rr(frame("q", ["a", "b", "c", "d"]))
        assert shown(srv.received[0]) == ["a", "b", "c"]
    # [3]=c, [1]=a, [2]=b; d below the top_k stays last
    assert order(out, "q") == ["c", "a", "b", "d"]
    assert rr.stats["calls"] == 1 and rr.stats["repaired_answers"] == 0


def test_listwise_repairs_are_counted():
    with FakeServer(responder=lambda r: "[2] > [2] > [7] and that is all") as srv, client(srv) as llm:
        rr = ListwiseReranker(llm, top_k=5)
        out = rr(frame("q", ["a", "b", "c", "d"]))
    # b first; a, c, d missing -> appended in prior order
    assert order(out, "q") == ["b", "a", "c", "d"]
    assert rr.stats["repair_duplicate"] == 1 and rr.stats["repair_unknown_id"] == 1
    assert rr.stats["repair_missing"] == 3 and rr.stats["repaired_answers"] == 1


def test_listwise_failed_call_keeps_prior_order():
    with FakeServer(responder=reverse_responder, faults=[Fault.error(500)]) as srv, \
            client(srv, max_retries=0) as llm:
        rr = ListwiseReranker(llm)
        out = rr(frame("q", ["a", "b", "c"]))
    assert order(out, "q") == ["a", "b", "c"]
    assert rr.stats["fallback_failed_call"] == 1 and rr.stats["failures"] == 1


def test_sliding_window_by_hand():
    # 5 candidates a..e, window 3, step 2: windows start at 2 then 0 (ceil((5-3)/2)+1 = 2 calls).
    # reverse [2,5) c d e -> a b e d c; reverse [0,3) a b e -> e b a d c
    with FakeServer(responder=reverse_responder) as srv, client(srv) as llm:
        rr = SlidingWindowReranker(llm, window=3, step=2, top_k=5)
        out = rr(frame("q", ["a", "b", "c", "d", "e"]))
        assert [shown(r) for r in srv.received] == [["c", "d", "e"], ["a", "b", "e"]]
    assert order(out, "q") == ["e", "b", "a", "d", "c"]


@pytest.mark.parametrize("k, window, step, passes, calls", [
    (100, 20, 10, 1, 9), (25, 20, 10, 1, 2), (20, 20, 10, 1, 1), (7, 20, 10, 1, 1), (21, 20, 10, 1, 2),
    (50, 20, 5, 1, 7), (100, 20, 10, 2, 18),
])
def test_sliding_window_call_counts(k, window, step, passes, calls):
    texts = [f"p{i}" for i in range(k)]
    with FakeServer(responder=reverse_responder) as srv, client(srv, concurrency=8) as llm:
        rr = SlidingWindowReranker(llm, window=window, step=step, passes=passes, top_k=k)
        out = rr(pd.concat([frame("q1", texts), frame("q2", texts)]))
        # q1 and q2 show the same window prompts: a window asked while its twin is in flight is coalesced, not sent
        assert srv.requests + llm.usage.total().coalesced == 2 * calls
        assert llm.usage.total().coalesced >= 1
    assert rr.stats["calls"] == 2 * calls
    assert sorted(order(out, "q1")) == sorted(texts)
    assert len(window_starts(k, window, step)) == calls // passes


def test_sliding_window_starts():
    assert window_starts(100, 20, 10) == [80, 70, 60, 50, 40, 30, 20, 10, 0]
    assert window_starts(25, 20, 10) == [5, 0]
    assert window_starts(0, 20, 10) == []


def test_sliding_from_spec_checks():
    with FakeServer() as srv, client(srv) as llm:
        ctx = BuildContext(dataset=None, llm=llm)
        with pytest.raises(SpecError, match=r"r\.step.*<= window"):
            build_reranker({"type": "sliding", "window": 10, "step": 11}, context=ctx, path="r")
        with pytest.raises(SpecError, match=r"r\.stride.*allowed keys.*passes"):
            build_reranker({"type": "sliding", "stride": 3}, context=ctx, path="r")


# ---- arbitrary and hostile model output ------------------------------------------------------------------------
HOSTILE = ["[2] > [1] > [3]", "line one\n[1] fake product\nRanking: [1]", "Ranking: [9] > [1]", "Grade: 3\nProduct: [1]", "yes yes yes", "[0]", "x" * 300]


@pytest.fixture(scope="module")
def scripted():
    holder = {"reply": ""}
    srv = FakeServer(responder=lambda r: Reply(holder["reply"])).start()
    llm = client(srv, max_retries=0)
    yield holder, llm
    llm.close()
    srv.stop()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reply=st.one_of(st.text(max_size=200), st.sampled_from(HOSTILE),
                       st.lists(st.integers(-2, 12), max_size=15).map(lambda ids: " > ".join(f"[{i}]" for i in ids))),
       texts=st.lists(st.sampled_from(HOSTILE + ["plain product"]), min_size=1, max_size=8),
       kind=st.sampled_from(["listwise", "sliding", "pointwise", "deliberated"]))
def test_arbitrary_output_never_drops_or_invents(scripted, reply, texts, kind):
    holder, llm = scripted
    holder["reply"] = reply
    inp = pd.concat([frame("q1", [f"{t} #{i}" for i, t in enumerate(texts)]), frame("q2", ["only one"])])
    rr = {"listwise": lambda: ListwiseReranker(llm, top_k=5),
          "sliding": lambda: SlidingWindowReranker(llm, window=3, step=2, top_k=7),
          "pointwise": lambda: PointwiseReranker(llm, top_k=4),
          "deliberated": lambda: DeliberatedReranker(llm, top_k=4)}[kind]()
    out = rr(inp)
    for qid, g in inp.groupby("qid"):
        got = out[out.qid == qid]
        assert sorted(got.docno) == sorted(g.docno)
        assert sorted(got["rank"]) == list(range(len(g)))


# ---- controls -----------------------------------------------------------------------------------------------------
def test_shuffle_is_seeded_per_query_and_keeps_the_tail():
    inp = pd.concat([frame("q1", list("abcdefgh")), frame("q2", list("stuvwxyz"))])
    a = Shuffle(seed=1, top_k=5)(inp)
    b = Shuffle(seed=1, top_k=5)(inp[inp.qid == "q1"])  # same qid, fewer queries: same permutation
    c = Shuffle(seed=2, top_k=5)(inp)
    assert order(a, "q1") == order(b, "q1")
    assert order(a, "q1")[5:] == list("fgh") and sorted(order(a, "q1")[:5]) == list("abcde")
    assert order(a, "q1") != order(c, "q1") or order(a, "q2") != order(c, "q2")
    # scores are rewritten so that what follows sees the shuffled order as its input order
    g = a[a.qid == "q1"].sort_values("rank")
    assert g["score"].is_monotonic_decreasing and list(g["rank"]) == list(range(8))


def test_shuffle_then_listwise_sees_the_shuffled_order():
    inp = frame("q", list("abcd"))
    perm = order(Shuffle(seed=5)(inp), "q")
    with FakeServer(responder=lambda r: "[1] > [2] > [3] > [4]") as srv, client(srv) as llm:
        out = (Shuffle(seed=5) >> ListwiseReranker(llm, top_k=4))(inp)
        assert shown(srv.received[0]) == perm
    assert order(out, "q") == perm


def test_random_reranker_seeded_and_complete():
    inp = frame("q", [f"p{i}" for i in range(30)])
    one, two = RandomReranker(seed=3, top_k=20)(inp), RandomReranker(seed=3, top_k=20)(inp)
    other = RandomReranker(seed=4, top_k=20)(inp)
    assert order(one, "q") == order(two, "q") != order(other, "q")
    assert order(one, "q")[20:] == [f"p{i}" for i in range(20, 30)]
    assert sorted(order(one, "q")) == sorted(f"p{i}" for i in range(30))
    built = build_reranker({"type": "random", "top_k": 20}, context=BuildContext(seed=3), path="r")
    assert order(built(inp.drop(columns=["text"])), "q") == order(one, "q")
