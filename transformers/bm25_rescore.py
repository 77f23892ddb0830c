"""``bm25`` (no LLM): the top_k of each query rescored by Terrier BM25 with the frame's CURRENT query text.

A first stage retrieves; this stage only re-scores the products it is given, over the same cached Terrier index
(``pt.terrier.Retriever`` in its re-ranking mode: the input's docnos, nothing else). Its use is a rewritten query
(``bm25 >> expand >> BM25Rescore(...) >> reset``): BM25's own top 100 ordered by the expanded query, so no product
outside what BM25 retrieved enters the ranking. The score goes to ``bm25_score`` (the base keeps
``first_stage_score``), so ``fuse`` can mix the original and the expanded BM25 scores.

A product that matches no term of the query gets score 0 (counted: ``unmatched``). The query is sanitised first
(superb.pipelines.sanitise_query), as the first stage does. Options: ``top_k`` (100), ``fields`` (the indexed fields,
as in ``first_stage``), ``k1``, ``b`` (Terrier's defaults 1.2, 0.75).
"""

from __future__ import annotations

from typing import Annotated, Any

import pandas as pd

from superb.options import FieldNames, TopK
from superb.pipelines import first_stage
from superb.pipelines.query_text import sanitise_query
from superb.transformers.base import Candidates, Reranker


def _as_given(value: Any, path: str) -> Any:
    return value  # k1 and b: checked by the first stage this one builds (pipelines.options), naming the same path


AsGiven = Annotated[float, _as_given]


class BM25Rescore(Reranker):
    """Rescore the top_k by Terrier BM25 with the current ``query`` (see the module docstring)."""

    type_name = "bm25"
    calls_llm = needs_text = False
    needs_documents = True  # scores each document from the data set's index

    def __init__(self, dataset: Any, *, top_k: TopK = 100, fields: FieldNames = None, k1: AsGiven = 1.2,
                 b: AsGiven = 0.75, tag: str = ""):
        super().__init__(None, top_k=top_k, tag=tag)
        # the first stage validates the options and owns the cached index this stage reads
        self._stage = first_stage(dataset, engine="terrier", model="bm25", fields=list(fields) if fields else None,
                                  bm25={"k1": k1, "b": b}, path=tag or "bm25")
        self._scores: dict[tuple[str, str], float] = {}

    def __repr__(self) -> str:
        o = self._stage.options
        return f"BM25Rescore(top_k={self.top_k}, fields={list(o.fields)}, k1={o.k1}, b={o.b})"

    def bm25_scores(self, inp: pd.DataFrame) -> dict[tuple[str, str], float]:
        """(qid, docno) -> BM25 score under the row's query, for the top_k rows of each query."""
        ranked = inp.sort_values(["qid", "rank"] if "rank" in inp.columns else ["qid"], kind="stable")
        head = ranked.groupby("qid", sort=False).head(self.top_k) if self.top_k else ranked
        frame = pd.DataFrame({"qid": head["qid"].astype(str), "query": head["query"].map(sanitise_query),
                              "docno": head["docno"].astype(str)})
        frame = frame[frame["query"] != ""]
        if len(frame) == 0:
            return {}
        self._stage.prepare()
        found = self._stage.engine.rescore(frame)  # the first stage's Terrier BM25, in re-ranking mode
        return {(str(q), str(d)): float(s) for q, d, s in zip(found["qid"], found["docno"], found["score"])}

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        if len(inp):
            self._scores = self.bm25_scores(inp)
        return super().transform(inp)

    async def score(self, cands: Candidates) -> list[float]:
        scores = [self._scores.get((cands.qid, d)) for d in cands.docnos]
        self.stats["unmatched"] += sum(s is None for s in scores)
        return [0.0 if s is None else s for s in scores]
