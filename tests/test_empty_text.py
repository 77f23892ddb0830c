"""A document without text is never sent to the model (issue 50, item 5): a reranker scores the others and keeps it
just below them, a judge gives its pair no score; both count it (``empty_text_skipped``)."""

from __future__ import annotations

import pandas as pd

from superb.judges.base import EMPTY
from superb.judges.pointwise import PointwiseJudge
from superb.transformers.base import Reranker
from tiny_dataset import TinyDataset

TITLES = {"d1": "trail running shoes", "d2": "", "d3": "running socks", "d4": ""}
DS = TinyDataset(TITLES, {"q1": "running shoes"})


class Seen(Reranker):
    """Scores each candidate by its position from the end; records the texts it was asked about."""

    type_name = "seen"

    def __init__(self, **kw):
        super().__init__(None, **kw)
        self.asked: list[str] = []

    async def score(self, cands):
        self.asked += list(cands.texts)
        return [float(i) for i in range(len(cands))]


def _frame(docnos) -> pd.DataFrame:
    return pd.DataFrame({"qid": "q1", "query": "running shoes", "docno": docnos,
                         "score": [float(10 - i) for i in range(len(docnos))], "rank": list(range(len(docnos)))})


def test_a_reranker_never_asks_about_a_document_without_text_and_keeps_it_below_the_scored_ones():
    from superb.llm.text import ProductText

    stage = Seen(text=ProductText(DS, fields=("title",)), top_k=3)
    out = stage(_frame(["d1", "d2", "d3", "d4"]))
    assert stage.asked == ["trail running shoes", "running socks"]  # d2 (and d4, outside the top 3) never sent
    assert out.sort_values("rank")["docno"].tolist() == ["d3", "d1", "d2", "d4"]  # scored, then the empty, then tail
    assert stage.stats["empty_text_skipped"] == 1
    only_empty = Seen(text=ProductText(DS, fields=("title",)), top_k=1)
    out = only_empty(_frame(["d2", "d1"]))
    assert only_empty.asked == [] and out.sort_values("rank")["docno"].tolist() == ["d2", "d1"]


def test_a_judge_gives_a_pair_without_text_no_score_and_sends_nothing():
    class Refuse:
        async def acomplete(self, request):
            raise AssertionError(f"asked {request.messages[-1][1]!r}")

    judge = PointwiseJudge(Refuse(), DS, template="pointwise_best_product", fields=("title",))
    pool = pd.DataFrame({"qid": "q1", "query": "running shoes", "docno": ["d2", "d4"]})
    records = judge.score_records(pool)
    assert [(r.docno, r.status, r.score) for r in records] == [("d2", EMPTY, None), ("d4", EMPTY, None)]
    assert judge.stats["empty_text_skipped"] == 2
