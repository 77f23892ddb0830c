"""Pairwise LLM comparison of two products for one query ("which is more relevant: LHS or RHS?").

Independent of PyTerrier: the pairwise reranker and the pairwise judge both use it. Variants (Turnbull's
local-llm-judge): forced choice; ``allow_neither`` (the model may abstain); ``both_orders`` ("check both ways": ask
again with the products swapped and keep a decision only when both orders name the same product, which removes
position bias). Every abstention, disagreement, unparseable answer and failed call is counted in ``stats``.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from superb.llm.prompts import load_template
from superb.llm.text import clean
from superb.llm.types import ChatRequest, Completion

LHS, RHS, NEITHER = "LHS", "RHS", "NEITHER"

# Label words, longest first so "left-hand side" is matched before "left". Single letters/digits are accepted only
# as the whole answer (an article "a" inside a sentence is not an answer).
_WORDS: tuple[tuple[str, str], ...] = (
    (r"left[\s-]*hand[\s-]*side", LHS), (r"right[\s-]*hand[\s-]*side", RHS),
    (r"product\s*a\b", LHS), (r"product\s*b\b", RHS), (r"product\s*1\b", LHS), (r"product\s*2\b", RHS),
    (r"option\s*a\b", LHS), (r"option\s*b\b", RHS),
    (r"lhs", LHS), (r"rhs", RHS), (r"left", LHS), (r"right", RHS), (r"first", LHS), (r"second", RHS),
    (r"neither", NEITHER), (r"none", NEITHER), (r"both", NEITHER), (r"equal(?:ly)?", NEITHER), (r"tie", NEITHER),
    (r"same", NEITHER),
)
_LABEL_RE = re.compile(r"\b(?:" + "|".join(f"(?P<g{i}>{w})" for i, (w, _) in enumerate(_WORDS)) + r")\b")
_BARE = {"a": LHS, "b": RHS, "1": LHS, "2": RHS}
_PREFIX_RE = re.compile(r"^(?:(?:final\s+)?answer|choice|verdict|output|response)\s*[:=\-]\s*")
_STRIP = " \t\r\n.,;:!?\"'`*_()[]{}<>#"


def parse_pairwise_answer(text: str | None) -> str | None:
    """Map a model answer to ``"LHS"``, ``"RHS"``, ``"NEITHER"`` or None (unparseable or ambiguous).

    Tolerant of case, punctuation, markup and synonyms ("Left", "Product A", "rhs.", "**RHS**", "Answer: LHS").
    An answer that starts with a label is that label ("Product A is better than product B" -> LHS); otherwise the
    answer counts only if it mentions exactly one distinct label ("I pick the right one" -> RHS); an answer naming
    both sides without leading with one is ambiguous -> None.
    """
    if not text:
        return None
    t = text.strip().lower()
    t = _PREFIX_RE.sub("", t.strip(_STRIP)).strip(_STRIP)
    if not t:
        return None
    if t in _BARE:
        return _BARE[t]
    matches = [(m.start(), _label_of(m)) for m in _LABEL_RE.finditer(t)]
    if not matches:
        return None
    if matches[0][0] == 0:
        return matches[0][1]
    labels = {label for _, label in matches}
    return labels.pop() if len(labels) == 1 else None


def _label_of(m: re.Match[str]) -> str:
    for name, value in m.groupdict().items():
        if value is not None:
            return _WORDS[int(name[1:])][1]
    raise RuntimeError("regex matched without a group")  # unreachable: every alternative is a named group


def render_product(doc: Mapping[str, Any] | str, fields: Sequence[str], max_chars: int = 600) -> str:
    """The product as ``Field: value`` lines over ``fields`` (missing/empty fields skipped), cut to ``max_chars``.

    A string is taken as already-rendered product text (e.g. from ``ProductText``): whitespace-collapsed and cut."""
    if isinstance(doc, str):
        doc, fields = {"": doc}, ("",)
    lines = []
    for f in fields:
        value = doc.get(f)
        if value is None or (isinstance(value, float) and value != value):
            continue
        value = clean(value)  # one line, with fence and answer-format strings neutralised (superb.llm.text)
        if value:
            lines.append(f"{f.capitalize()}: {value}" if f else value)
    out = "\n".join(lines) or "(no text)"
    return out if len(out) <= max_chars else out[: max_chars - 3].rstrip() + "..."


class AsyncLLM(Protocol):
    async def acomplete(self, request: ChatRequest) -> Completion: ...


class PromptTemplate(Protocol):
    id: str

    def render(self, **variables: Any) -> str: ...


@dataclass(frozen=True)
class PairDecision:
    """The outcome of comparing products A and B for one query.

    ``winner`` is "A", "B" or None (no decision). ``answers`` holds the parsed answer of each order, as seen from
    A/B ("A", "B", "NEITHER" or None when unparseable/failed): first the order A=LHS, then (with both orders) B=LHS.
    ``raw`` holds the model texts in the same order. ``agreed`` is True when only one order was asked or both
    orders gave the same answer. ``flags`` names every reason the decision is not a clean one.
    """

    winner: str | None
    answers: tuple[str | None, ...]
    raw: tuple[str, ...]
    agreed: bool
    flags: frozenset[str] = field(default_factory=frozenset)


class PairwiseComparator:
    """Ask ``llm`` which of two products is more relevant to a query.

    ``template`` (a name such as "pairwise_compare", or a loaded template) renders with ``query``, ``lhs``, ``rhs``
    (product texts) and ``allow_neither``; ``fields`` are the product fields shown (see :func:`render_product`).
    Counters in ``stats``: pairs (pairs asked), calls, failed_calls, decisions, abstentions (no decision, any reason),
    neither (model chose Neither), disagreements (the two orders named different winners), unparseable (answers
    matching no label), forced_neither (Neither although not allowed).
    """

    def __init__(self, llm: AsyncLLM, template: str | PromptTemplate = "pairwise_compare",
                 fields: Sequence[str] = ("title",), allow_neither: bool = False, both_orders: bool = False, *,
                 max_chars: int = 600, max_tokens: int = 8, tag: str = "pairwise"):
        if not fields:
            raise ValueError("PairwiseComparator: fields is empty; give at least one product field, e.g. ['title']")
        self.llm = llm
        self.template = load_template(template)
        self.fields = tuple(fields)
        self.allow_neither = bool(allow_neither)
        self.both_orders = bool(both_orders)
        self.max_chars = max_chars
        self.max_tokens = max_tokens
        self.tag = tag
        self.stats: Counter[str] = Counter()

    def request(self, query: str, lhs: Mapping[str, Any] | str, rhs: Mapping[str, Any] | str) -> ChatRequest:
        prompt = self.template.render(query=query, lhs=render_product(lhs, self.fields, self.max_chars),
                                      rhs=render_product(rhs, self.fields, self.max_chars),
                                      allow_neither=self.allow_neither)
        return ChatRequest.chat(None, prompt, template=self.template.id, max_tokens=self.max_tokens,
                                temperature=0.0, tag=self.tag)

    async def _ask(self, query: str, lhs: Mapping[str, Any] | str,
                   rhs: Mapping[str, Any] | str) -> tuple[str | None, str]:
        self.stats["calls"] += 1
        completion = await self.llm.acomplete(self.request(query, lhs, rhs))
        if completion.failed:
            self.stats["failed_calls"] += 1
            return None, ""
        label = parse_pairwise_answer(completion.text)
        if label is None:
            self.stats["unparseable"] += 1
        return label, completion.text

    async def compare(self, query: str, doc_a: Mapping[str, Any] | str,
                      doc_b: Mapping[str, Any] | str) -> PairDecision:
        """Compare A and B (field dicts, or already-rendered texts); with ``both_orders`` the two calls run
        concurrently."""
        self.stats["pairs"] += 1
        if self.both_orders:
            (first, raw1), (second, raw2) = await asyncio.gather(self._ask(query, doc_a, doc_b),
                                                                 self._ask(query, doc_b, doc_a))
            answers = (_as_ab(first, swapped=False), _as_ab(second, swapped=True))
            raw = (raw1, raw2)
        else:
            first, raw1 = await self._ask(query, doc_a, doc_b)
            answers, raw = (_as_ab(first, swapped=False),), (raw1,)
        return self._decide(answers, raw)

    def _decide(self, answers: tuple[str | None, ...], raw: tuple[str, ...]) -> PairDecision:
        flags = set()
        if any(a is None for a in answers):
            flags.add("unparseable_or_failed")
        if NEITHER in answers:
            flags.add("neither")
            self.stats["neither"] += 1
            if not self.allow_neither:
                flags.add("forced_neither")
                self.stats["forced_neither"] += 1
        agreed = len(set(answers)) == 1
        if {"A", "B"} <= set(answers):
            flags.add("orders_disagree")
            self.stats["disagreements"] += 1
        winner = answers[0] if agreed and answers[0] in ("A", "B") else None
        self.stats["decisions" if winner else "abstentions"] += 1
        return PairDecision(winner=winner, answers=answers, raw=raw, agreed=agreed, flags=frozenset(flags))


def _as_ab(label: str | None, *, swapped: bool) -> str | None:
    """An LHS/RHS label as the product it names: A or B (B is the LHS when the order is swapped)."""
    if label == LHS:
        return "B" if swapped else "A"
    if label == RHS:
        return "A" if swapped else "B"
    return label  # NEITHER or None
