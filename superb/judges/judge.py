"""LLM relevance judges: they label (query, product) pairs with graded labels and produce qrels.

Four prompting strategies of the SUPERB paper, one class each:

- ``PointwiseJudge``: one call per product, a four-level grade (template ``pointwise_best_product``, the reranker's:
  "is the product itself what was searched for, not an accessory", which helped small models on Chorus).
- ``DeliberatedJudge``: per query, the model first writes the attributes of the ideal product
  (``deliberated_attributes``), then grades each product against them (``deliberated_label``); the attribute text is
  kept in ``judge.ideals``. Same templates as the deliberated reranker, as in SUPERB where this prompt built the labels.
- ``ListwiseJudge``: the products of a query in windows of ``window``, all graded in one answer (``judge_listwise``).
- ``PairwiseJudge``: products of a query compared in pairs through :class:`superb.llm.comparator.
  PairwiseComparator` (template ``pairwise_compare``); a product's grade is its win rate mapped onto the label scale.

Every record (:class:`superb.judges.records.Judgment`) carries the label, a confidence, the raw answer, the template
id and a status. DEFAULT LABEL: an unparseable answer or a failed call gets ``default_label`` (0, "not relevant",
unless configured), status "default"/"failed", and is counted in ``stats`` ("unparseable", "failed_calls",
"default_labels"); the share of such labels is part of every agreement report.

From a spec: ``build_judge({type, ...})`` reads the table against ``SCHEMAS[type]`` with the rerankers' typed readers
(superb.options): ``fields``, ``text_tokens`` (the product-text budget; ``max_tokens`` is refused with
the new name), ``default_label``, ``template`` and the type's own options, each error naming ``judge.KEY``.
"""

from __future__ import annotations

import asyncio
import random
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from superb.errors import SpecError
from superb.judges.ideal_step import IdealFirst
from superb.judges.records import DEFAULT, FAILED, OK, Judgment
from superb.llm import ideal
from superb.llm.answers import grade_probabilities, graded_list, written_grade
from superb.llm.runner import progress_bar, run_all  # noqa: F401  (benchmark, studies.pairwise import run_all here)
from superb.llm.prompts import TemplateRef, load_template
from superb.llm.types import ChatRequest, Completion
from superb.options import (FieldNames, Flag, NonNegativeInt, Opt, PositiveInt, constructor_options, construct,
                            read_options)
from superb.llm.comparator import PairwiseComparator
from superb.llm.text import ProductText


class Judge:
    """Base class: product text, label scale, default label, counters, and the sync ``judge(pool)`` driver."""

    kind = "base"

    def __init__(self, llm: Any, dataset: Any, *, fields: FieldNames = ("title",), text_tokens: PositiveInt = 64,
                 labels: Sequence[int] | None = None, default_label: NonNegativeInt = 0, tag: str | None = None):
        self.llm = llm
        self.dataset = dataset
        self.text = ProductText(dataset, fields=fields, text_tokens=text_tokens)
        # the scale of the prompts (SUPERB's 0..3), not the data set's: a judge answers what its template asks
        self.labels = tuple(int(x) for x in (labels or (0, 1, 2, 3)))
        if default_label not in self.labels:
            raise ValueError(f"default_label={default_label!r} is not in the label set {list(self.labels)}")
        self.default_label = int(default_label)
        self.tag = tag or f"judge:{self.kind}"
        self.stats: Counter[str] = Counter()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(fields={self.text.fields!r}, default_label={self.default_label})"

    # --- to implement ------------------------------------------------------------------------------------------------
    async def ajudge_query(self, qid: str, query: str, docnos: Sequence[str]) -> list[Judgment]:
        raise NotImplementedError

    def template_ids(self) -> dict[str, str]:
        raise NotImplementedError

    # --- driver --------------------------------------------------------------------------------------------------------
    def judge(self, pool: pd.DataFrame) -> list[Judgment]:
        """Label every (qid, docno) of ``pool`` (columns qid, query, docno); one record per distinct pair, grouped
        by query (queries in order of first appearance, products in pool order). ``text_tokens`` of the constructor is
        the product-text budget (ProductText), not the answer length. Repeated pairs are judged once and counted
        in ``stats["duplicate_pairs"]``."""
        groups = query_groups(pool, f"{type(self).__name__}.judge", self.stats)
        if not groups:
            return []
        results = run_all(self.llm, [self.ajudge_query(q, text, docs) for q, text, docs in groups],
                          bar=progress_bar(len(groups), self.tag))  # a bar on every phase that calls the model
        out = [j for per_query in results for j in per_query]
        self.stats["judgments"] += len(out)
        return out

    # --- shared pieces ---------------------------------------------------------------------------------------------------
    def _request(self, template: Any, max_tokens: int, logprobs: bool = False, **variables: Any) -> ChatRequest:
        return ChatRequest.chat(None, template.render(**variables), template=template.id, max_tokens=max_tokens,
                                temperature=0.0, logprobs=logprobs, top_logprobs=10 if logprobs else 0, tag=self.tag)

    def _label_request(self, template: Any, **variables: Any) -> ChatRequest:
        """A one-token grade request, the same as the pointwise reranker's for the same prompt (one cached answer)."""
        return ChatRequest.label(template.render(**variables), template=template.id, tag=self.tag)

    def _product(self, docno: str) -> str:
        return self.text.get(docno, self.stats)

    def _default(self, qid: str, docno: str, raw: str, template: str, failed: bool) -> Judgment:
        self.stats["default_labels"] += 1
        self.stats["failed_calls" if failed else "unparseable"] += 1
        return Judgment(qid, docno, self.default_label, None, raw, template, FAILED if failed else DEFAULT)

    def _graded(self, qid: str, docno: str, completion: Completion, template: str) -> Judgment:
        """A record from a one-grade answer: parsed label, P(label) from logprobs, or the counted default."""
        self.stats["calls"] += 1
        if completion.failed:
            return self._default(qid, docno, completion.error or "", template, failed=True)
        label = written_grade(completion.text, self.labels)
        if label is None:
            return self._default(qid, docno, completion.text, template, failed=False)
        dist = grade_probabilities(completion, self.labels)
        if dist is None:
            self.stats["no_logprobs"] += 1
        return Judgment(qid, docno, label, None if dist is None else dist[label], completion.text, template, OK)


class PointwiseJudge(Judge):
    kind = "pointwise"

    def __init__(self, llm: Any, dataset: Any, *, template: TemplateRef = "pointwise_best_product", **kw: Any):
        super().__init__(llm, dataset, **kw)
        self.template = load_template(template)

    def template_ids(self) -> dict[str, str]:
        return {"grade": self.template.id}

    async def _one(self, qid: str, query: str, docno: str) -> Judgment:
        req = self._label_request(self.template, query=query, product=self._product(docno))
        return self._graded(qid, docno, await self.llm.acomplete(req), self.template.id)

    async def ajudge_query(self, qid: str, query: str, docnos: Sequence[str]) -> list[Judgment]:
        return list(await asyncio.gather(*(self._one(qid, query, d) for d in docnos)))


class DeliberatedJudge(IdealFirst, PointwiseJudge):
    """Ideal attributes first (one call per query, kept in ``ideals``), then one grading call per product. The
    attribute request and text are superb.llm.ideal's, the same as the deliberated reranker's (one cached answer
    serves both). If the ideal call fails or comes back empty, grading goes on with ``ideal.NO_ATTRIBUTES`` and
    ``stats["ideal_failed"]``."""

    kind = "deliberated"

    async def ideal(self, qid: str, query: str) -> str:
        self.stats["ideal_calls"] += 1
        text = ideal.read(await self.llm.acomplete(self.ideal_request(query)))
        if text is None:
            self.stats["ideal_failed"] += 1
            text = ideal.NO_ATTRIBUTES
        self.ideals[qid] = text
        return text

    async def ajudge_query(self, qid: str, query: str, docnos: Sequence[str]) -> list[Judgment]:
        ideal = await self.ideal(qid, query)

        async def one(docno: str) -> Judgment:
            req = self._label_request(self.template, query=query, attributes=ideal, product=self._product(docno))
            return self._graded(qid, docno, await self.llm.acomplete(req), self.template.id)

        return list(await asyncio.gather(*(one(d) for d in docnos)))


class ListwiseJudge(Judge):
    """Windows of ``window`` products graded in one answer each; items the answer misses get the counted default
    label ("listwise_missing"); out-of-range items, bad grades and repeated items are counted too."""

    kind = "listwise"

    def __init__(self, llm: Any, dataset: Any, *, template: TemplateRef = "judge_listwise", window: PositiveInt = 10,
                 **kw: Any):
        super().__init__(llm, dataset, **kw)
        if int(window) < 1:
            raise ValueError(f"window must be >= 1, got {window!r}")
        self.window = int(window)
        self.template = load_template(template)

    def template_ids(self) -> dict[str, str]:
        return {"grade": self.template.id}

    async def ajudge_query(self, qid: str, query: str, docnos: Sequence[str]) -> list[Judgment]:
        out: list[Judgment] = []
        for start in range(0, len(docnos), self.window):  # windows of one query in sequence: prompt-cache friendly
            chunk = list(docnos[start:start + self.window])
            products = [(i + 1, self._product(d)) for i, d in enumerate(chunk)]
            req = self._request(self.template, 8 * len(chunk) + 16, query=query, products=products)
            c = await self.llm.acomplete(req)
            self.stats["calls"] += 1
            if c.failed:
                out.extend(self._default(qid, d, c.error or "", self.template.id, failed=True) for d in chunk)
                continue
            grades, counts = graded_list(c.text, len(chunk), self.labels)
            for key, value in counts.items():
                self.stats[f"listwise_{key}"] += value
            for i, d in enumerate(chunk, 1):
                if i in grades:
                    out.append(Judgment(qid, d, grades[i], None, c.text, self.template.id, OK))
                else:
                    out.append(self._default(qid, d, c.text, self.template.id, failed=False))
        return out


class PairwiseJudge(Judge):
    """Grades from pairwise preferences. Pairs per query: all pairs when there are at most ``max_pairs``, else each
    product against ``opponents`` others drawn with a generator seeded by (seed, qid); which product is shown first
    is drawn too. A product's score is (wins + 0.5 * undecided) / comparisons, its label the nearest step of the label
    scale (score 0 -> lowest label, 1 -> highest); its confidence the share of its comparisons that were decided.
    A product never compared (a one-product query) gets the counted default label ("no_opponent")."""

    kind = "pairwise"

    def __init__(self, llm: Any, dataset: Any, *, template: TemplateRef = "pairwise_compare", allow_neither: Flag = False,
                 both_orders: Flag = False, opponents: PositiveInt = 4, max_pairs: PositiveInt = 45,
                 seed: NonNegativeInt = 0, **kw: Any):
        super().__init__(llm, dataset, **kw)

        self.template = load_template(template)
        self.comparator = PairwiseComparator(llm, self.template, self.text.fields, allow_neither=allow_neither,
                                             both_orders=both_orders, tag=self.tag)
        self.opponents, self.max_pairs, self.seed = int(opponents), int(max_pairs), int(seed)

    def template_ids(self) -> dict[str, str]:
        return {"compare": self.template.id}

    def pairs(self, qid: str, docnos: Sequence[str]) -> list[tuple[str, str]]:
        docs = list(docnos)
        rng = random.Random((self.seed << 32) ^ zlib.crc32(qid.encode()))
        every = [(a, b) for i, a in enumerate(docs) for b in docs[i + 1:]]
        if len(every) <= self.max_pairs:
            chosen = every
        else:
            seen: set[frozenset] = set()
            chosen = []
            for a in docs:
                for b in rng.sample([d for d in docs if d != a], min(self.opponents, len(docs) - 1)):
                    if frozenset((a, b)) not in seen:
                        seen.add(frozenset((a, b)))
                        chosen.append((a, b))
        return [(a, b) if rng.random() < 0.5 else (b, a) for a, b in chosen]

    async def ajudge_query(self, qid: str, query: str, docnos: Sequence[str]) -> list[Judgment]:
        pairs = self.pairs(qid, docnos)
        docs = {d: self.dataset.doc(d) for d in docnos}
        decisions = await asyncio.gather(*(self.comparator.compare(query, docs[a], docs[b]) for a, b in pairs))
        self.stats["calls"] = self.comparator.stats["calls"]
        tally = {d: Counter() for d in docnos}
        raws: dict[str, list[str]] = {d: [] for d in docnos}
        for (a, b), dec in zip(pairs, decisions):
            for d in (a, b):
                tally[d]["compared"] += 1
                raws[d].append(" | ".join(dec.raw))
            if dec.winner is None:
                tally[a]["undecided"] += 1
                tally[b]["undecided"] += 1
            else:
                tally[a if dec.winner == "A" else b]["wins"] += 1
        out = []
        for d in docnos:
            t = tally[d]
            if not t["compared"]:
                self.stats["no_opponent"] += 1
                self.stats["default_labels"] += 1
                out.append(Judgment(qid, d, self.default_label, None, "", self.template.id, DEFAULT))
                continue
            score = (t["wins"] + 0.5 * t["undecided"]) / t["compared"]
            label = self.labels[round(score * (len(self.labels) - 1))]
            confidence = 1.0 - t["undecided"] / t["compared"]
            out.append(Judgment(qid, d, label, confidence, " || ".join(raws[d]), self.template.id, OK))
        return out


JUDGES = {c.kind: c for c in (PointwiseJudge, DeliberatedJudge, ListwiseJudge, PairwiseJudge)}
# The spec options of each judge type, read from its constructor (superb.options.constructor_options): a name, a
# default and a type are declared once. ``text_tokens`` is the product-text budget (``max_tokens`` is refused with it).
SCHEMAS: dict[str, dict[str, Opt]] = {kind: constructor_options(cls) for kind, cls in JUDGES.items()}


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


def read_judge_options(options: Any, path: str = "judge") -> tuple[str, dict[str, Any]]:
    """(type, constructor keywords) of a spec table ``{type, ...}`` read against ``SCHEMAS[type]``
    (superb.options): unknown keys, renamed keys and wrong types raise SpecError naming ``path.key``.
    Needs no data set or model, so a judge spec is checked when it is read."""
    if not isinstance(options, Mapping):
        raise SpecError(path, f"expected a table, found {type(options).__name__}")
    kind = options.get("type")
    if kind not in JUDGES:
        raise SpecError(f"{path}.type", f"unknown judge type {kind!r}; choose one of {sorted(JUDGES)}")
    return kind, read_options(options, path, SCHEMAS[kind])


def build_judge(options: dict, *, llm: Any, dataset: Any, path: str = "judge") -> Judge:
    """A judge from a spec table ``{type, ...}`` (:func:`read_judge_options`); a bad field name or label raises
    SpecError naming ``path`` too."""
    kind, kw = read_judge_options(options, path)
    return construct(JUDGES[kind], path, llm, dataset, **kw)

