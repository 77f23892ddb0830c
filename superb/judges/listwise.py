"""Judges that see several of a query's documents in one prompt: listwise grading and pairwise comparisons.

Both give labels (``output = "label"``): reported as they are, nothing fitted.

- ``ListwiseJudge`` (``type = "listwise"``): the documents of a query in windows of ``window``, all graded in one
  answer (template ``judge_listwise``, lines "[i]: grade"); a document the answer misses gets ``default_label``
  (status "default", ``listwise_missing``); out-of-range items, bad grades and repeated items are counted too.
- ``PairwiseJudge`` (``type = "pairwise"``): the documents of a query compared in pairs through superb.llm.comparator.
  PairwiseComparator (template ``pairwise_compare``): all pairs when there are at most ``max_pairs``, else each
  document against ``opponents`` others drawn with a generator seeded by (seed, qid); which one is shown first is
  drawn too. A document's grade is its win rate (wins + 0.5 undecided) / comparisons mapped to the nearest step of
  the scale 0..3, its confidence the share of its comparisons that were decided; a document never compared (a
  one-document query) gets ``default_label`` ("no_opponent").
"""

from __future__ import annotations

import asyncio
import random
import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

from superb.judges.base import DEFAULT, FAILED, OK, Judge, Scored
from superb.llm.answers import graded_list
from superb.llm.comparator import PairwiseComparator
from superb.llm.prompts import TemplateRef, load_template
from superb.llm.types import ChatRequest
from superb.options import Flag, NonNegativeInt, PositiveInt

LABELS = (0, 1, 2, 3)


class ListwiseJudge(Judge):
    kind = "listwise"
    output = "label"

    def __init__(self, llm: Any, dataset: Any, *, template: TemplateRef = "judge_listwise", window: PositiveInt = 10,
                 default_label: NonNegativeInt = 0, **kw: Any):
        super().__init__(llm, dataset, **kw)
        self.window = int(window)
        self.template = load_template(template)
        self.default_label = int(default_label)

    def max_calls(self, pairs: int, queries: int) -> int:
        # ceil(n / window) per query of n documents: at most pairs / window + one partial window per query
        return min(pairs, pairs // self.window + queries)

    def template_ids(self) -> dict[str, str]:
        return {"grade": self.template.id}

    def _default(self, qid: str, docno: str, raw: str, failed: bool) -> Scored:
        self.stats["default_labels"] += 1
        self.stats["failed_calls" if failed else "unparseable"] += 1
        return Scored(qid, docno, float(self.default_label), FAILED if failed else DEFAULT, raw, self.template.id)

    async def ajudge_query(self, qid: str, query: str, docnos: Sequence[str]) -> list[Scored]:
        out: list[Scored] = []
        for start in range(0, len(docnos), self.window):  # windows of one query in sequence: prompt-cache friendly
            chunk = list(docnos[start:start + self.window])
            products = [(i + 1, self.text_of(d)) for i, d in enumerate(chunk)]
            request = ChatRequest.chat(None, self.template.render(query=query, products=products),
                                       template=self.template.id, max_tokens=8 * len(chunk) + 16, temperature=0.0,
                                       tag=self.tag)
            c = await self.complete(request)
            self.stats["calls"] += 1
            if c.failed:
                out.extend(self._default(qid, d, c.error or "", failed=True) for d in chunk)
                continue
            grades, counts = graded_list(c.text, len(chunk), LABELS)
            for key, value in counts.items():
                self.stats[f"listwise_{key}"] += value
            for i, d in enumerate(chunk, 1):
                out.append(Scored(qid, d, float(grades[i]), OK, c.text, self.template.id) if i in grades
                           else self._default(qid, d, c.text, failed=False))
        return out


class PairwiseJudge(Judge):
    kind = "pairwise"
    output = "label"

    def __init__(self, llm: Any, dataset: Any, *, template: TemplateRef = "pairwise_compare", allow_neither: Flag = False,
                 both_orders: Flag = False, opponents: PositiveInt = 4, max_pairs: PositiveInt = 45,
                 seed: NonNegativeInt = 0, default_label: NonNegativeInt = 0, **kw: Any):
        super().__init__(llm, dataset, **kw)
        self.template = load_template(template)
        self.comparator = PairwiseComparator(llm, self.template, self.text.fields, allow_neither=allow_neither,
                                             both_orders=both_orders, tag=self.tag)
        self.opponents, self.max_pairs, self.seed = int(opponents), int(max_pairs), int(seed)
        self.default_label = int(default_label)

    def max_calls(self, pairs: int, queries: int) -> int:
        # per query of n documents: all n(n-1)/2 pairs when at most max_pairs, else at most n x opponents
        per_pair = 2 if self.comparator.both_orders else 1
        return per_pair * (queries * self.max_pairs + self.opponents * pairs) if pairs else 0

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

    async def ajudge_query(self, qid: str, query: str, docnos: Sequence[str]) -> list[Scored]:
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
                out.append(Scored(qid, d, float(self.default_label), DEFAULT, "", self.template.id))
                continue
            win_rate = (t["wins"] + 0.5 * t["undecided"]) / t["compared"]
            label = LABELS[round(win_rate * (len(LABELS) - 1))]
            confidence = 1.0 - t["undecided"] / t["compared"]
            out.append(Scored(qid, d, float(label), OK, " || ".join(raws[d]), self.template.id, confidence))
        return out
