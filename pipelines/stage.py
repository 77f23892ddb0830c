"""The first-stage transformer: (qid, query) -> (qid, query, docno, score, rank), engine-independent.

It owns what both engines share: input validation, query sanitising (:func:`sanitise_query`), empty queries
(counted, no results), the depth cut-off, keeping the original query text, and the tie rule
(:mod:`superb.trec.runs`): documents ordered and ranked by score descending then docno descending, as
trec_eval orders them, so what a top-k reranker sees is fixed (scores stay the engine's; run files separate tied
scores in rank order). Among documents tied exactly at the depth cut-off, the engine's own choice of which ones it
returned stands. The engine (:mod:`superb.pipelines.terrier` or :mod:`superb.pipelines.pisa`) only maps
clean queries to (qid, docno, score). The index is opened or built on the first non-empty input, or explicitly with :meth:`FirstStage.prepare`.
"""

from __future__ import annotations

from typing import Any, Protocol

import pandas as pd
import pyterrier as pt

from superb.pipelines.index_cache import CachedIndex
from superb.pipelines.options import FirstStageOptions
from superb.pipelines.pisa import PisaEngine
from superb.pipelines.query_text import sanitise_query
from superb.pipelines.terrier import TerrierEngine
from superb.trec.runs import trec_order

_RESULT_COLUMNS = ("docno", "score", "rank")


class Engine(Protocol):
    """What a first-stage engine provides (see terrier.py and pisa.py)."""

    stats: dict

    def prepare(self) -> CachedIndex: ...

    def retrieve(self, queries: pd.DataFrame) -> pd.DataFrame: ...

    def expansions(self, queries: pd.DataFrame) -> dict[str, dict[str, float]]: ...


def make_engine(dataset: Any, options: FirstStageOptions) -> Engine:
    if options.engine == "terrier":
        return TerrierEngine(dataset, options)

    return PisaEngine(dataset, options)


class FirstStage(pt.Transformer):
    """BM25 or RM3 retrieval over a cached index of one data set.

    ``stats`` counts, over all calls: ``queries`` seen, ``empty_queries`` (no terms left after sanitising; they get
    no results; their qids are in ``empty_qids``), ``no_results`` (queries with terms that matched nothing), plus the
    engine's own counters.
    """

    def __init__(self, dataset: Any, options: FirstStageOptions, engine: Engine | None = None):
        self.dataset = dataset
        self.options = options
        self.engine = engine if engine is not None else make_engine(dataset, options)
        self.index: CachedIndex | None = None
        self._stats = {"queries": 0, "empty_queries": 0, "empty_qids": [], "no_results": 0}

    @property
    def stats(self) -> dict:
        return {**self._stats, **self.engine.stats}

    def prepare(self) -> CachedIndex:
        """Open the cached index (building it if absent) and start the engine; idempotent."""
        if self.index is None:
            self.index = self.engine.prepare()
        return self.index

    def __repr__(self) -> str:
        o = self.options
        extra = f", fb_docs={o.fb_docs}, fb_terms={o.fb_terms}, fb_lambda={o.fb_lambda}" if o.model == "rm3" else ""
        return (f"FirstStage({self.dataset.name!r}, engine={o.engine!r}, model={o.model!r}, depth={o.depth}, "
                f"fields={list(o.fields)}, k1={o.k1}, b={o.b}{extra})")

    def _queries(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.query_frame(inp, extra_columns=["query"])
        queries = inp
        repeated = queries["qid"][queries["qid"].duplicated()]
        if len(repeated):
            raise ValueError(
                f"{self!r} takes one row per query, found {int(queries['qid'].duplicated(keep=False).sum())} rows "
                f"sharing qids such as {repeated.iloc[0]!r}; pass a topics frame (qid, query), not a results frame"
            )
        return queries.reset_index(drop=True)

    def _clean(self, queries: pd.DataFrame) -> pd.DataFrame:
        """(qid, query) with sanitised text, empty ones removed and counted."""
        clean = pd.DataFrame({"qid": queries["qid"].astype(str), "query": queries["query"].map(sanitise_query)})
        empty = clean["query"] == ""
        self._stats["queries"] += len(clean)
        self._stats["empty_queries"] += int(empty.sum())
        self._stats["empty_qids"].extend(clean.loc[empty, "qid"].tolist())
        return clean[~empty].reset_index(drop=True)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        queries = self._queries(inp)
        columns = list(queries.columns) + list(_RESULT_COLUMNS)
        if len(queries) == 0:
            return pd.DataFrame(columns=columns)
        clean = self._clean(queries)
        if len(clean) == 0:
            return pd.DataFrame(columns=columns)
        self.prepare()
        found = self.engine.retrieve(clean)[["qid", "docno", "score"]]
        self._stats["no_results"] += int((~clean["qid"].isin(found["qid"])).sum())
        order = pd.DataFrame({"qid": queries["qid"].astype(str), "_order": range(len(queries))})
        found = found.assign(qid=found["qid"].astype(str), score=found["score"].astype("float64"))
        found = found.merge(order, on="qid").sort_values("_order", kind="mergesort")
        found = trec_order(found)  # ties broken once, here, as trec_eval breaks them; ranks follow this order
        found = found.groupby("_order", sort=False).head(self.options.depth)
        result = queries.assign(_order=range(len(queries))).merge(found.drop(columns=["qid"]), on="_order")
        result = result.drop(columns=["_order"]).reset_index(drop=True)
        result = pt.model.add_ranks(result)  # ties ranked in row order (method="first"): trec_order's
        return result[columns]

    def expanded_queries(self, inp: pd.DataFrame) -> pd.DataFrame:
        """For model="rm3": (qid, query, expansion) where expansion maps index terms to weights (for inspection)."""
        if self.options.model != "rm3":
            raise ValueError(f"{self!r}: expanded_queries() needs model='rm3', found model={self.options.model!r}")
        queries = self._queries(inp)
        if len(queries) == 0:
            return pd.DataFrame(columns=["qid", "query", "expansion"])
        clean = pd.DataFrame({"qid": queries["qid"].astype(str), "query": queries["query"].map(sanitise_query)})
        clean = clean[clean["query"] != ""]
        self.prepare()
        expansions = self.engine.expansions(clean) if len(clean) else {}
        return pd.DataFrame({
            "qid": queries["qid"],
            "query": queries["query"],
            "expansion": [expansions.get(str(q), {}) for q in queries["qid"]],
        })
