"""A first stage that is a given run: another tool's output, or the data set's own baseline run.

``first_stage = { run = "FILE", depth = 100 }`` (``format = "trec" | "rank_llm"``, by default from the suffix:
.json is rank_llm's candidates file) or ``run = "dataset:bm25"`` (a run the data set provides: TREC DL's BM25 top 100).
The stage returns, for each query it is given, the run's documents in the order they are evaluated in (score
descending, then docno descending: :mod:`superb.trec.runs`' rule, which is trec_eval's) cut at ``depth``, with the file's
scores; so a run that nothing reranks scores exactly what trec_eval gives the file, and a reranker sees the same top k
as every other tool that reads the file.

Checks (superb.trec.run_files reads the file strictly: a malformed line or a repeated document is a DataError naming
file:line, when the spec is read), and, when the stage is built (before any LLM call):
- documents of the run that the data set does not have are counted (``run_docnos_not_in_dataset``) and warned about;
  a pipeline that reranks such a run (its stages need the documents' text) is refused (:func:`check_reranked`);
- queries of the run that the data set does not have are counted (``run_queries_not_in_topics``) and warned about;
- a selected query that the run lacks gets no results: warned, named and counted by the experiment
  (``queries_without_results``), as for any first stage.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd
import pyterrier as pt

from superb.errors import DataError
from superb.trec.run_files import DATASET_PREFIX, RunFile, RunOptions, read_run_file
from superb.transformers.registry import stage_facts

log = logging.getLogger(__name__)


def resolve(options: RunOptions, dataset: Any, path: str) -> Path:
    """The file of ``options.run``: the data set's run for ``dataset:NAME``, else the path as given."""
    if options.run.startswith(DATASET_PREFIX):
        return Path(dataset.run_file(options.run[len(DATASET_PREFIX):], path=f"{path}.run"))
    return Path(options.run).expanduser()


class RunStage(pt.Transformer):
    """The documents a run file gives each query (see the module docstring). ``stats``: queries, their rows, and the
    counts of the checks."""

    def __init__(self, dataset: Any, options: RunOptions, path: str = "first_stage"):
        self.dataset = dataset
        self.options = options
        self.file: RunFile = read_run_file(resolve(options, dataset, path), options.format)
        rows = self.file.rows
        known = dataset.docs_store()
        unknown = sorted(set(rows["docno"]) - set(known))
        topics = set(dataset.topics()["qid"])
        strangers = [q for q in self.file.qids if q not in topics]
        self.unknown_docnos = unknown
        self._stats = {"queries": 0, "run_docnos_not_in_dataset": len(unknown),
                       "run_queries_not_in_topics": len(strangers), "run_rank_disagreements":
                       self.file.rank_disagreements}
        if unknown:
            log.warning("%s: %d documents of run %s are not in data set %r (e.g. %s): they are evaluated, but no "
                        "reranker can read them", path, len(unknown), self.file.path, dataset.name, unknown[:3])
        if strangers:
            log.warning("%s: %d queries of run %s are not queries of data set %r (e.g. %s): ignored", path,
                        len(strangers), self.file.path, dataset.name, strangers[:3])
        if self.file.rank_disagreements:
            log.warning("%s: in %d queries of run %s the rank column disagrees with the scores; the order used is the "
                        "scores' (trec_eval ignores the rank column too)", path, self.file.rank_disagreements,
                        self.file.path)
        self.path = path

    @property
    def stats(self) -> dict:
        return dict(self._stats)

    def provenance(self) -> dict:
        return {"run": self.options.run, "depth": self.options.depth, **self.file.record()}

    def __repr__(self) -> str:
        return f"RunStage({self.options.run!r}, depth={self.options.depth})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.query_frame(inp, extra_columns=["query"])
        columns = list(inp.columns) + ["docno", "score", "rank"]
        if len(inp) == 0:
            return pd.DataFrame(columns=columns)
        queries = inp.assign(qid=inp["qid"].astype(str), _order=range(len(inp)))
        self._stats["queries"] += len(queries)
        rows = self.file.rows[self.file.rows["rank"] <= self.options.depth]
        result = queries.merge(rows, on="qid").sort_values(["_order", "rank"], kind="mergesort")
        result = result.drop(columns=["_order"]).reset_index(drop=True)
        result["rank"] = result["rank"].astype(int)
        return result[columns]


def check_reranked(stage: RunStage, reranker_types: list[str], pipeline: str, path: str) -> None:
    """A pipeline that reranks ``stage`` with a stage that reads document text needs every document of the run in
    the data set: else a DataError now, before any LLM call."""
    readers = [t for t in reranker_types if stage_facts(t).needs_documents]  # declared by each type (StageFacts)
    if stage.unknown_docnos and readers:
        raise DataError(f"{path}: pipeline {pipeline!r} reranks run {stage.file.path} with {readers[0]!r}, but "
                        f"{len(stage.unknown_docnos)} of its documents are not in data set {stage.dataset.name!r} "
                        f"(e.g. {stage.unknown_docnos[:3]}), so their text cannot be shown. Rerank a run over the "
                        "data set's documents, or only evaluate this run (a pipeline without rerank stages)")
