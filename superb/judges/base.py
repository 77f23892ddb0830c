"""THE judge contract: every judge, built-in or plug-in, is a :class:`Judge` (``superb.extend.Judge``).

A judge labels (query, document) pairs of a pool. Per pair it gives a :class:`Scored` record: a ``score`` and how it
was obtained (``status``), the raw answer and the template id. What the score is, the class declares:

- ``output = "score"``: a value to be calibrated (P(yes), an expected grade): cut points fitted on dev pairs turn it
  into a label (superb.judges.studies.calibration);
- ``output = "label"``: the judge's own grade (a written grade, a listwise grade, a pairwise win rate mapped to the
  scale): reported as it is, nothing fitted (superb.judges.studies.calibration.WrittenLabels).

Facts declared on the class, read by superb.judges.registry for built-in and plug-in types alike: ``kind`` (its
``type`` name), ``output``, and :meth:`Judge.max_calls` (the most requests ``pairs`` pairs of ``queries`` queries can
make whatever the answers: ``--dry-run`` prints it beside its count).

To write one: subclass, declare the spec options in the constructor (``Annotated[T, parser]``, as rerankers do), build
requests with superb.llm.question.LabelQuestion (the one way of asking about a document) and read answers with
superb.llm.answers' readers through :meth:`Judge.scored`, which counts every fallback; implement
:meth:`Judge.judge_pair` (one pair) or :meth:`Judge.ajudge_query` (a query's pairs at once). Every call made through
``await self.complete(request)`` gets the response cache, the dry run's count and the shipped answers.

Statuses: "no text" (the document has no text in the judge's fields: nothing is sent; counted ``empty_text_skipped``);
"ok" (read from the label probabilities, or the written grade of a label judge); "parsed" (no usable
probabilities: the written answer was read, counted ``fallback_parsed``); "default" (a label judge could not read the
answer: its default grade, counted ``default_labels``); "unparseable" (no score; ``unparseable``); "failed" (the call
failed; ``failed_calls``); "missing" (a cache-only client had no answer; ``missing``). Pairs without a score are left
out of calibration and agreement, and counted there.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd

from superb.llm.answers import PROBABILITIES, UNPARSED, WRITTEN
from superb.llm.dryrun import DRY_RUN_ERROR
from superb.llm.runner import progress_bar, run_all
from superb.llm.text import NO_TEXT, ProductText
from superb.llm.types import ChatRequest, Completion
from superb.options import FieldNames, PositiveInt

OK, PARSED, UNPARSEABLE, FAILED, MISSING, DEFAULT = "ok", "parsed", "unparseable", "failed", "missing", "default"
EMPTY = "no text"  # the document has no text in the judge's fields: nothing to ask about, never sent (counted)
STATUSES = (OK, PARSED, UNPARSEABLE, FAILED, MISSING, DEFAULT, EMPTY)
SCORE_COLUMNS = ["qid", "docno", "score", "status"]
OUTPUTS = ("score", "label")


@dataclass(frozen=True)
class Scored:
    qid: str
    docno: str
    score: float | None  # None unless status is "ok", "parsed" or "default"
    status: str  # one of STATUSES
    raw: str  # the answer (or the error of a failed call)
    template: str  # template id of the grading prompt
    confidence: float | None = None  # a label judge's P(its label), when the answer carried probabilities


def scores_frame(records: Sequence[Scored]) -> pd.DataFrame:
    """qid, docno, score, status (score NaN where there is none)."""
    rows = [(r.qid, r.docno, float("nan") if r.score is None else r.score, r.status) for r in records]
    return pd.DataFrame(rows, columns=SCORE_COLUMNS)


def query_groups(pool: pd.DataFrame, who: str, stats: Counter) -> list[tuple[str, str, list[str]]]:
    """(qid, query, docnos) per query of ``pool`` (columns qid, query, docno), queries in order of first appearance,
    products in pool order; a repeated (qid, docno) is kept once and counted in ``stats["duplicate_pairs"]``."""
    missing = [c for c in ("qid", "query", "docno") if c not in pool.columns]
    if missing:
        raise ValueError(f"{who}: the pool lacks columns {missing}; found {list(pool.columns)}; expected qid, query, "
                         "docno")
    if pool.empty:
        return []
    pool = pool.astype({"qid": str, "docno": str})
    dup = pool.duplicated(["qid", "docno"])
    stats["duplicate_pairs"] += int(dup.sum())
    pool = pool[~dup]
    return [(qid, str(g["query"].iloc[0]), g["docno"].tolist()) for qid, g in pool.groupby("qid", sort=False)]


class Judge:
    """The base of every judge (module docstring). ``fields`` and ``text_tokens``: the document text shown (default:
    the data set's prompt fields, e.g. a passage's text); ``name``: the variant's name (tags its requests)."""

    kind: ClassVar[str] = "judge"
    output: str = "score"  # "score" (calibrated into labels) or "label" (the judge's own grade)
    calls_per_pair: ClassVar[int] = 1
    calls_per_query: ClassVar[int] = 0
    labels: ClassVar[tuple[int, ...]] = (0, 1, 2, 3)  # the scale a label judge's prompts grade on (SUPERB's 0..3)

    def __init__(self, llm: Any, dataset: Any, *, fields: FieldNames = None, text_tokens: PositiveInt = 64,
                 name: str | None = None, tag: str | None = None):
        self.llm = llm
        self.dataset = dataset
        self.text = ProductText(dataset, fields=fields, text_tokens=text_tokens)
        self.name = name or self.kind
        self.tag = tag or f"judge:{self.name}"
        self.stats: Counter[str] = Counter()
        self.plugin: dict | None = None  # where a judge of one's own came from (superb.judges.registry.resolve)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    # --- facts ---------------------------------------------------------------------------------------------------------
    def max_calls(self, pairs: int, queries: int) -> int:
        """The most requests judging ``pairs`` pairs of ``queries`` queries can make, whatever the answers."""
        return self.calls_per_pair * pairs + self.calls_per_query * queries

    def template_ids(self) -> dict[str, str]:
        """The prompts the judge asks, by role (recorded with its results)."""
        raise NotImplementedError(f"{type(self).__name__} must say which templates it asks (template_ids)")

    # --- what a judge uses -----------------------------------------------------------------------------------------
    async def complete(self, request: ChatRequest) -> Completion:
        """One answer from the LLM: cached, counted, dry-run aware, shipped."""
        return await self.llm.acomplete(request)

    def text_of(self, docno: str) -> str:
        """The document text a prompt shows (neutralised, cut to ``text_tokens``; missing text counted)."""
        return self.text.get(docno, self.stats)

    def scored(self, qid: str, docno: str, completion: Completion, reader: Any, template: str,
               default: float | None = None) -> Scored:
        """The record of one answer read by ``reader`` (superb.llm.answers), its fallbacks counted: a label judge
        (``default`` given) gives an answer it cannot read its default grade."""
        self.stats["calls"] += 1
        if completion.failed:
            status = MISSING if completion.error == DRY_RUN_ERROR else FAILED
            self.stats["missing" if status == MISSING else "failed_calls"] += 1
            if default is not None and status == FAILED:  # a label judge's record of it carries its default grade
                self.stats["default_labels"] += 1
            return Scored(qid, docno, None, status, completion.error or "", template)
        reading = reader.read(completion)
        confidence = getattr(reader, "confidence", lambda c, v: None)(completion, reading.value)
        if reading.source in (PROBABILITIES, WRITTEN):
            return Scored(qid, docno, reading.value, OK, completion.text, template, confidence)
        if reading.source == UNPARSED and default is not None:
            self.stats["unparseable"] += 1
            self.stats["default_labels"] += 1
            return Scored(qid, docno, float(default), DEFAULT, completion.text, template)
        if reading.source == UNPARSED:
            self.stats["unparseable"] += 1
            return Scored(qid, docno, None, UNPARSEABLE, completion.text, template)
        self.stats["fallback_parsed"] += 1
        return Scored(qid, docno, reading.value, PARSED, completion.text, template, confidence)

    # --- hooks ---------------------------------------------------------------------------------------------------------
    async def judge_pair(self, qid: str, query: str, docno: str) -> Scored:
        """One pair's record (implement this, or ajudge_query for a judge that sees a query's pairs together)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither judge_pair nor ajudge_query")

    async def ajudge_query(self, qid: str, query: str, docnos: Sequence[str]) -> list[Scored]:
        """The records of one query's pairs, in ``docnos`` order (default: judge_pair for each, concurrently)."""
        return list(await asyncio.gather(*(self.judge_pair(qid, query, d) for d in docnos)))

    # --- the driver ------------------------------------------------------------------------------------------------
    def score_records(self, pool: pd.DataFrame) -> list[Scored]:
        """One record per distinct (qid, docno) of ``pool`` (columns qid, query, docno), grouped by query, with a
        progress bar; a repeated pair is judged once (``stats["duplicate_pairs"]``)."""
        groups = query_groups(pool, self.name, self.stats)
        if not groups:
            return []
        empty: list[Scored] = []  # a document without text is not asked about: its pair has no score, counted
        asked = []
        for q, text, docs in groups:
            blank = [d for d in docs if self.text.get(d) == NO_TEXT]  # looked at, not counted: asking counts
            empty += [Scored(q, d, None, EMPTY, "", "") for d in blank]
            if len(blank) < len(docs):
                asked.append((q, text, [d for d in docs if d not in set(blank)]))
        if empty:
            self.stats["empty_text_skipped"] += len(empty)
        results = run_all(self.llm, [self.ajudge_query(q, text, docs) for q, text, docs in asked],
                          bar=progress_bar(len(asked), self.tag)) if asked else []
        return [r for per_query in results for r in per_query] + empty

    def score(self, pool: pd.DataFrame) -> pd.DataFrame:
        """qid, docno, score, status for every distinct pair of ``pool``."""
        return scores_frame(self.score_records(pool))
