"""Any ``pt.Transformer`` as a rerank stage of a spec (``type = "module:factory"``, a transformer superb did not
write: PyTerrier's ``pt.text.scorer``, ``pt.apply.doc_score``, another plug-in's cross-encoder).

``TransformerStage`` gives the wrapped transformer each query's top ``top_k`` (all by default) in the input's order,
with a ``text`` column of the documents' text (the data set's prompt fields, as superb's rerankers show them) when
the input has none, and checks what comes back before anything later reads it, naming the stage:

- the columns ``qid``, ``docno`` and ``score`` are there;
- every (qid, docno) it returns was in its input, and none twice;
- a document of its input that it leaves out is kept below the ones it scored, in input order, and counted
  (``stats["dropped_by_stage"]``); a score it returns that is NaN, infinite or not a number sorts last and is counted
  as non-finite (``stats["nonfinite_scores"]``), not as dropped; a query none of whose documents got a finite score
  keeps its input order and is counted (``stats["queries_without_scores"]``): no score, not a tie. The experiment
  runner prints these counts and notes them under table.md (superb.run.stage_report).

What it returns is ordered by the project's run-order rule (superb.trec.runs.trec_order: score descending, then docno
descending, as trec_eval reads a run file); the rest of the query (below top_k) follows in its input order. As for
every superb stage, the transformer's own score is kept in ``<type>_score`` (``<stage>_score`` when the spec names the
stage), ``score`` becomes n - position and ``first_stage_score`` is kept, so the run file reads the same order under
any evaluator. An exception the transformer raises, SystemExit and its own KeyboardInterrupt included, becomes a
StageError naming the stage and the plug-in's file:line (superb.faults; no traceback); a Ctrl-C passes on.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pyterrier as pt

from superb.errors import StageError, SuperbError
from superb.faults import fault, is_fault
from superb.trec.runs import trec_order

REQUIRED_COLUMNS = ("qid", "query", "docno", "score")
RETURNED_COLUMNS = ("qid", "docno", "score")
FIRST_STAGE_SCORE = "first_stage_score"


class TransformerStage(pt.Transformer):
    """``inner`` (any pt.Transformer) run over each query's top ``top_k`` and checked (module docstring)."""

    calls_llm = False
    needs_text = True
    writes_score = True

    def __init__(self, inner: pt.Transformer, *, type_name: str, tag: str, top_k: int | None = None,
                 text: Any = None):
        self.inner = inner
        self.type_name = type_name
        self.tag = tag  # the spec's key path, e.g. pipelines[2].rerank[0]
        self.top_k = top_k
        self.text = text  # a ProductText over the data set, or None (the input's own text column, if any)
        self.stage: str | None = None
        self.progress_label: str | None = None
        self.progress = True
        self.stats: Counter = Counter()

    def __repr__(self) -> str:
        return f"TransformerStage({self.inner!r}, top_k={self.top_k})"

    @property
    def score_column(self) -> str:
        return f"{self.stage or self.type_name}_score"

    def _name(self) -> str:
        return f"{self.tag} (type {self.type_name!r}, {self.inner!r})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=list(REQUIRED_COLUMNS), context=self)
        if len(inp) == 0:
            out = inp.copy()
            for column in (self.score_column, FIRST_STAGE_SCORE):
                if column not in out.columns:
                    out[column] = pd.Series(index=out.index, dtype="float64")
            return pt.model.add_ranks(out)
        frame = inp.assign(qid=inp["qid"].astype(str), docno=inp["docno"].astype(str))
        if FIRST_STAGE_SCORE not in frame.columns:
            frame[FIRST_STAGE_SCORE] = frame["score"].astype("float64")
        frame = _prior_order(frame)
        frame["_pos"] = frame.groupby("qid", sort=False).cumcount()
        in_head = frame["_pos"] < (self.top_k if self.top_k is not None else len(frame) + 1)
        head = frame[in_head]
        scored = self._checked(self._run(self._feed(head)), head)
        self.stats["queries"] += frame["qid"].nunique()
        self.stats["reranked"] += len(head)
        head = head.drop(columns=[self.score_column], errors="ignore").merge(scored.assign(_returned=True),
                                                                              on=["qid", "docno"], how="left")
        dropped = head["_returned"].isna().to_numpy()  # left out; a NaN it returned is non-finite, not dropped
        head = head.drop(columns="_returned")
        self.stats["dropped_by_stage"] += int(dropped.sum())
        kept = head[~dropped]
        bad = ~np.isfinite(kept[self.score_column].to_numpy(dtype="float64"))
        self.stats["nonfinite_scores"] += int(bad.sum())
        finite = pd.Series(~bad, index=kept.index).groupby(kept["qid"]).any()
        unscored = int(head["qid"].nunique() - int(finite.sum()))
        if unscored:  # no score at all for a query: its input order is kept, and is no tie (counted)
            self.stats["queries_without_scores"] += unscored
        ordered = trec_order(kept.assign(score=np.where(bad, -np.inf, kept[self.score_column])))
        parts = [ordered.assign(_group=0), head[dropped].assign(_group=1), frame[~in_head].assign(_group=2)]
        out = pd.concat(parts, ignore_index=True)
        out["_q"] = pd.factorize(out["qid"])[0]
        out = out.sort_values(["_q", "_group"], kind="mergesort")  # within a group, the order built above
        moved = out["_pos"].to_numpy() != out.groupby("_q", sort=False).cumcount().to_numpy()
        self.stats["moved_candidates"] += int(moved.sum())
        self.stats["kept_input_order"] += int((~pd.Series(moved).groupby(out["_q"].to_numpy()).any()).sum())
        n = out.groupby("_q", sort=False)["qid"].transform("size").to_numpy()
        out["score"] = (n - out.groupby("_q", sort=False).cumcount().to_numpy()).astype("float64")
        out = out.drop(columns=["_pos", "_group", "_q"]).reset_index(drop=True)
        return pt.model.add_ranks(out)

    def _feed(self, head: pd.DataFrame) -> pd.DataFrame:
        feed = head.drop(columns=["_pos"])
        if self.text is not None and "text" not in feed.columns:
            feed = feed.assign(text=[self.text.get(d, self.stats) for d in feed["docno"]])
        return feed.reset_index(drop=True)

    def _run(self, feed: pd.DataFrame) -> pd.DataFrame:
        try:
            got = self.inner.transform(feed)
        except SuperbError:
            raise
        except BaseException as exc:  # noqa: BLE001 - the wrapped transformer's error, named with its stage and line
            if not is_fault(exc):  # a Ctrl-C, a cancellation
                raise
            plugin = getattr(self, "plugin", None)  # registry.build_reranker: where a plug-in type came from
            raise fault(self._name(), exc, [getattr(plugin, "origin", None), type(self.inner)]) from exc
        if not isinstance(got, pd.DataFrame):
            raise StageError(f"{self._name()} returned {type(got).__name__}, not a DataFrame")
        return got

    def _checked(self, got: pd.DataFrame, head: pd.DataFrame) -> pd.DataFrame:
        missing = [c for c in RETURNED_COLUMNS if c not in got.columns]
        if missing:
            raise StageError(f"{self._name()} returned no {missing} column(s); it returned {list(got.columns)}. A "
                             "stage must return qid, docno and score for the documents it was given")
        got = pd.DataFrame({"qid": got["qid"].astype(str), "docno": got["docno"].astype(str),
                            self.score_column: pd.to_numeric(got["score"], errors="coerce").astype("float64")})
        twice = got[got.duplicated(["qid", "docno"], keep=False)]
        if len(twice):
            first = twice.iloc[0]
            raise StageError(f"{self._name()} returned document {first['docno']!r} of query {first['qid']!r} "
                             f"{int((twice['qid'] == first['qid']).sum())} times ({len(twice)} duplicate rows in "
                             "all); a stage scores each document it is given once")
        known = got.merge(head[["qid", "docno"]], on=["qid", "docno"], how="left", indicator=True)
        foreign = known[known["_merge"] == "left_only"]
        if len(foreign):
            first = foreign.iloc[0]
            raise StageError(f"{self._name()} returned {len(foreign)} document(s) it was not given, e.g. "
                             f"{first['docno']!r} for query {first['qid']!r}; a reranking stage may only reorder "
                             "its input")
        return got


def _prior_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Each query's rows in the input's order (its rank column, else score descending; stable); queries in order of
    first appearance."""
    key = "rank" if "rank" in frame.columns else "score"
    q = pd.factorize(frame["qid"])[0]
    out = frame.assign(_q=q).sort_values(["_q", key], ascending=[True, key == "rank"], kind="mergesort")
    return out.drop(columns="_q").reset_index(drop=True)
