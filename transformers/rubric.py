"""Rubric-guided set selection (zero-shot RubricRanker) and the rubric reward of a selected set.

Per query, one call expands the meta-rubrics into query-specific rubrics with importance weights 1..5 (set level:
coverage of the key aspects, conciseness/no redundancy, consistency/no contradictions; item level: product quality
signals such as brand authority, recency of the model, completeness of the specs). A second call selects and orders
at most ``m`` products from the top_k candidates (by short ids, never docnos). The selected set ranks first in the
model's order; the other candidates follow in their prior order; docnos are always preserved.

:class:`RubricReward` scores a selected set: the LLM grades the set on each rubric 0..10 and
``reward = sum(w_i * s_i / 10) / sum(w_i)`` (:func:`rubric_reward`). Compare sets only at equal budgets
(:meth:`RubricReward.compare` refuses sets of different sizes).

All parsing is pure and tolerant; every repair or default is counted (``stats``), never silent.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

from superb.llm.types import ChatRequest
from superb.transformers.base import COMMON_OPTIONS, Candidates, Reranker, product_text, require_llm, scores_from_order
from superb.transformers.options import Opt, positive_int, read_options
from superb.llm.comparator import AsyncLLM, PromptTemplate, load_template
from superb.llm.text import ProductText, clean

MAX_RUBRICS = 8
NAME_CHARS, DESCRIPTION_CHARS = 60, 240
DEFAULT_WEIGHT = 3


@dataclass(frozen=True)
class Rubric:
    name: str
    description: str
    weight: int  # importance 1..5
    level: str = "set"  # "set" | "item"


# The meta-rubrics, used as they are when the model's rubrics cannot be parsed (counted as rubrics_defaulted).
DEFAULT_RUBRICS: tuple[Rubric, ...] = (
    Rubric("coverage", "The selected products are what the query asks for and cover its key aspects.", 5, "set"),
    Rubric("conciseness", "Little redundancy: no near-duplicate products in the selection.", 3, "set"),
    Rubric("consistency", "No contradictions: the selection does not mix incompatible product kinds.", 2, "set"),
    Rubric("brand_authority", "Products come from reputable, established brands or sellers.", 2, "item"),
    Rubric("recency", "Current, up-to-date product models rather than outdated ones.", 2, "item"),
    Rubric("spec_completeness", "Product listings state the specifications a shopper needs.", 1, "item"),
)


# ---- pure parsing ----------------------------------------------------------------------------------------------

def json_values(text: str, *, max_chars: int = 20000, max_attempts: int = 200) -> Iterator[Any]:
    """JSON values embedded in ``text`` (code fences and prose around them allowed), in order of appearance.

    Tries ``raw_decode`` at each '[' or '{' (bounded by ``max_attempts`` and ``max_chars`` so hostile output
    cannot make parsing slow); a decoded value's inner brackets are skipped."""
    text = (text or "")[:max_chars]
    pos, attempts = 0, 0
    decoder = json.JSONDecoder()
    while attempts < max_attempts:
        starts = [i for i in (text.find("[", pos), text.find("{", pos)) if i >= 0]
        if not starts:
            return
        start = min(starts)
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # not JSON here, or absurdly deep nesting: try the next bracket
            pos = start + 1
            continue
        yield value
        pos = end


def _int_in(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and value == value:
        return int(round(value))
    if isinstance(value, str):
        m = re.search(r"-?\d+(?:\.\d+)?", value)
        return int(round(float(m.group()))) if m else None
    return None


def parse_rubrics(text: str, max_rubrics: int = MAX_RUBRICS) -> tuple[list[Rubric], Counter]:
    """Rubrics from the generation answer: a JSON list (or {"rubrics": [...]}) of objects with name, description,
    weight (1..5) and level ("set"/"item"); the complete objects of a cut-off list are kept (rubrics_repaired).
    Returns (rubrics, counts); counts name every repair: weight_defaulted,
    weight_clamped, level_defaulted, rubric_dropped, rubrics_truncated, rubrics_duplicate, and rubrics_defaulted
    (nothing usable: the meta-rubrics DEFAULT_RUBRICS are returned)."""
    counts: Counter = Counter()
    items: list[Any] | None = None
    loose: list[dict] = []  # rubric-like objects outside any complete list (e.g. a list cut by max_tokens)
    for value in json_values(text):
        if isinstance(value, dict) and ("rubrics" in value or "Rubrics" in value):
            value = value.get("rubrics", value.get("Rubrics"))
        elif isinstance(value, dict) and {"name", "description"} & {str(k).lower() for k in value}:
            loose.append(value)
            continue
        if isinstance(value, list) and any(isinstance(v, (dict, str)) for v in value):
            items = value
            break
    if items is None and loose:
        counts["rubrics_repaired"] += 1
        items = loose
    out: list[Rubric] = []
    seen: set[str] = set()
    for item in items or []:
        rubric = _rubric(item, counts)
        if rubric is None:
            counts["rubric_dropped"] += 1
        elif rubric.name.lower() in seen:
            counts["rubrics_duplicate"] += 1
        elif len(out) >= max_rubrics:
            counts["rubrics_truncated"] += 1
        else:
            seen.add(rubric.name.lower())
            out.append(rubric)
    if not out:
        counts["rubrics_defaulted"] += 1
        return list(DEFAULT_RUBRICS), counts
    return out, counts


def _rubric(item: Any, counts: Counter) -> Rubric | None:
    if isinstance(item, str):
        item = {"description": item}
    if not isinstance(item, dict):
        return None
    lower = {str(k).lower(): v for k, v in item.items()}
    name = clean(lower.get("name") or lower.get("rubric") or lower.get("title"))[:NAME_CHARS]
    description = clean(lower.get("description") or lower.get("criterion") or "")[:DESCRIPTION_CHARS]
    if not name and not description:
        return None
    name = name or description[:NAME_CHARS]
    weight = _int_in(lower.get("weight", lower.get("importance")))
    if weight is None:
        counts["weight_defaulted"] += 1
        weight = DEFAULT_WEIGHT
    elif not 1 <= weight <= 5:
        counts["weight_clamped"] += 1
        weight = min(5, max(1, weight))
    level = clean(lower.get("level") or lower.get("type")).lower()
    if level not in ("set", "item"):
        counts["level_defaulted"] += 1
        level = "item" if level in ("document", "doc", "product") else "set"
    return Rubric(name=name, description=description or name, weight=weight, level=level)


def parse_selection(text: str, k: int, m: int) -> tuple[list[int], Counter]:
    """The selected candidates (0-based positions, best first, at most ``m``) from an answer naming 1-based ids.

    Accepts bracketed ids "[3] > [1]" (two or more) or a JSON list of ids ([3, 1, "7"], or an object holding one);
    else a single bracketed id or bare integers (counted as selection_repaired). Ids outside 1..k
    (selection_invalid), repeats (selection_duplicate) and ids beyond m (selection_truncated) are dropped and
    counted; no usable id -> [] (selection_empty)."""
    counts: Counter = Counter()
    bracketed = [int(x) for x in re.findall(r"\[\s*(\d{1,4})\s*\]", text or "")]
    ids: list[int] | None = bracketed if len(bracketed) >= 2 else None  # RankGPT style "[3] > [1] > [2]"
    for value in ([] if ids is not None else json_values(text)):
        if isinstance(value, dict):
            value = next((v for v in value.values() if isinstance(v, list)), None)
        if isinstance(value, list) and value:
            got = [_int_in(v) for v in value if not isinstance(v, (list, dict))]
            if got and all(g is not None for g in got):
                ids = [g for g in got if g is not None]
                break
    if ids is None:
        ids = bracketed or [int(x) for x in re.findall(r"(?<![\d.])\d{1,4}(?![\d.])", text or "")]
        if ids:
            counts["selection_repaired"] += 1
    out: list[int] = []
    for i in ids:
        if not 1 <= i <= k:
            counts["selection_invalid"] += 1
        elif i - 1 in out:
            counts["selection_duplicate"] += 1
        elif len(out) >= m:
            counts["selection_truncated"] += 1
        else:
            out.append(i - 1)
    if not out:
        counts["selection_empty"] += 1
    return out, counts


def parse_rubric_scores(text: str, rubrics: Sequence[Rubric]) -> tuple[list[float | None], Counter]:
    """One score 0..10 per rubric (None when missing) from a JSON object keyed by rubric number or name, a JSON
    list in rubric order, or lines "1: 7" (whichever reading finds more scores; the lines reading is counted as
    scores_repaired). Out-of-range scores are clamped (score_clamped); missing ones counted (score_missing)."""
    n = len(rubrics)
    names = {r.name.lower(): i for i, r in enumerate(rubrics)}
    from_json: tuple[list[float | None], Counter] = ([None] * n, Counter())
    for value in json_values(text):
        scores, counts = [None] * n, Counter()
        if isinstance(value, dict):
            for key, v in value.items():
                key_s = str(key).strip().lower()
                idx = names.get(key_s)
                if idx is None and re.fullmatch(r"\d{1,3}", key_s):
                    idx = int(key_s) - 1
                if idx is not None and 0 <= idx < n:
                    scores[idx] = _score(v, counts)
        elif isinstance(value, list) and all(isinstance(v, (int, float, str)) for v in value):
            for idx, v in enumerate(value[:n]):
                scores[idx] = _score(v, counts)
        if any(s is not None for s in scores):
            from_json = (scores, counts)
            break
    from_lines: tuple[list[float | None], Counter] = ([None] * n, Counter())
    for key, v in re.findall(r"(?m)^\s*\[?(\d{1,3})\]?\s*[:.)=\-]\s*(-?\d+(?:\.\d+)?)", (text or "")[:20000]):
        idx = int(key) - 1
        if 0 <= idx < n and from_lines[0][idx] is None:
            from_lines[0][idx] = _score(v, from_lines[1])
    found = lambda parsed: sum(s is not None for s in parsed[0])  # noqa: E731
    scores, counts = from_lines if found(from_lines) > found(from_json) else from_json
    if scores is from_lines[0]:
        counts["scores_repaired"] += 1
    counts["score_missing"] += sum(s is None for s in scores)
    return scores, counts


def _score(value: Any, counts: Counter) -> float | None:
    if isinstance(value, dict):
        value = value.get("score")
    if isinstance(value, bool) or value is None:
        return None
    try:
        s = float(value) if not isinstance(value, str) else float(re.search(r"-?\d+(?:\.\d+)?", value).group())
    except (AttributeError, ValueError, TypeError):
        return None
    if s != s:
        return None
    if not 0.0 <= s <= 10.0:
        counts["score_clamped"] += 1
        s = min(10.0, max(0.0, s))
    return s


def rubric_reward(weights: Sequence[float], scores: Sequence[float]) -> float:
    """sum(w_i * s_i / 10) / sum(w_i), with scores s_i in 0..10 and weights w_i > 0."""
    if len(weights) != len(scores) or not weights:
        raise ValueError(f"rubric_reward: need one score per weight, got {len(weights)} weights, {len(scores)} scores")
    if any(w <= 0 for w in weights):
        raise ValueError(f"rubric_reward: weights must be > 0, got {list(weights)}")
    if any(not 0.0 <= s <= 10.0 for s in scores):
        raise ValueError(f"rubric_reward: scores must be in 0..10, got {list(scores)}")
    return sum(w * s / 10.0 for w, s in zip(weights, scores)) / sum(weights)


# ---- prompts and LLM calls ------------------------------------------------------------------------------------

def _rubric_lines(rubrics: Sequence[Rubric]) -> list[dict[str, Any]]:
    return [{"id": i + 1, "name": r.name, "level": r.level, "weight": r.weight, "description": r.description}
            for i, r in enumerate(rubrics)]


def _products(texts: Sequence[str]) -> list[dict[str, Any]]:
    return [{"id": i + 1, "text": clean(t)} for i, t in enumerate(texts)]


@dataclass(frozen=True)
class SetScore:
    reward: float
    scores: tuple[float, ...]  # per rubric, 0..10 (missing scores as 0, counted)
    raw: str
    failed: bool = False  # the call failed: every score is missing (0), so the reward is 0


class RubricReward:
    """LLM-judged rubric scores of a product set, and the weighted reward. ``stats``: calls, failed_calls, the
    parse counters of :func:`parse_rubric_scores`. A missing score counts as 0 (conservative; counted)."""

    def __init__(self, llm: AsyncLLM, template: str | PromptTemplate = "rubric_score", *, max_tokens: int = 160,
                 tag: str = "rubric_reward"):
        self.llm, self.template, self.max_tokens, self.tag = llm, load_template(template), max_tokens, tag
        self.stats: Counter = Counter()

    async def score(self, query: str, rubrics: Sequence[Rubric], texts: Sequence[str]) -> SetScore:
        prompt = self.template.render(query=query, rubrics=_rubric_lines(rubrics), products=_products(texts))
        comp = await self.llm.acomplete(ChatRequest.chat(None, prompt, template=self.template.id,
                                                         max_tokens=self.max_tokens, tag=self.tag))
        self.stats["calls"] += 1
        if comp.failed:
            self.stats["failed_calls"] += 1
        parsed, counts = parse_rubric_scores(comp.text, rubrics)
        self.stats.update(counts)
        scores = tuple(0.0 if s is None else s for s in parsed)
        return SetScore(rubric_reward([r.weight for r in rubrics], scores), scores, comp.text, comp.failed)

    async def compare(self, query: str, rubrics: Sequence[Rubric], set_a: Sequence[str],
                      set_b: Sequence[str]) -> tuple[SetScore, SetScore]:
        """Score two sets of product texts at an equal budget (same size, else ValueError), concurrently."""
        if len(set_a) != len(set_b):
            raise ValueError(f"RubricReward.compare: sets must have equal budgets, got {len(set_a)} and "
                             f"{len(set_b)} products; cut the longer one to the same size")
        a, b = await asyncio.gather(self.score(query, rubrics, set_a), self.score(query, rubrics, set_b))
        return a, b


OPTIONS: dict[str, Opt] = {**COMMON_OPTIONS, "m": Opt(10, positive_int)}


class RubricReranker(Reranker):
    """Zero-shot RubricRanker over the top_k (default 20): generate weighted rubrics, select at most ``m`` products.

    ``selections[qid]`` keeps (rubrics, selected docnos in order) for set-level evaluation with RubricReward.
    ``stats``: base counters plus the parse counters of parse_rubrics/parse_selection and fallback_rubric_call /
    fallback_select_call (a failed call: meta-rubrics / prior order)."""

    type_name = "rubric"

    def __init__(self, llm: Any = None, *, text: ProductText | None = None, top_k: int | None = 20, m: int = 10,
                 rubric_template: str | PromptTemplate = "rubric_generate",
                 select_template: str | PromptTemplate = "rubric_select", rubric_tokens: int = 400, tag: str = ""):
        super().__init__(llm, text=text, top_k=top_k, tag=tag)
        if int(m) < 1:
            raise ValueError(f"RubricReranker: m must be >= 1, got {m!r}")
        self.m = int(m)
        self.rubric_tokens = int(rubric_tokens)  # generation budget of the rubric call (a JSON list of <= 8 rubrics)
        self.rubric_template, self.select_template = load_template(rubric_template), load_template(select_template)
        self.selections: dict[str, tuple[list[Rubric], list[str]]] = {}

    def __repr__(self) -> str:
        return f"RubricReranker(top_k={self.top_k}, m={self.m}, text={self.text!r})"

    @classmethod
    def from_spec(cls, options: Mapping[str, Any], context: Any, path: str) -> "RubricReranker":
        opts = read_options(options, path, OPTIONS)
        return cls(require_llm(context, path), text=product_text(opts, context, path), top_k=opts["top_k"],
                   m=opts["m"])

    async def rubrics(self, query: str) -> list[Rubric]:
        prompt = self.rubric_template.render(query=query, meta=_rubric_lines(DEFAULT_RUBRICS))
        comp = await self.complete(ChatRequest.chat(None, prompt, template=self.rubric_template.id,
                                                    max_tokens=self.rubric_tokens, tag=self.tag))
        if comp.failed:
            self.stats["fallback_rubric_call"] += 1
            return list(DEFAULT_RUBRICS)
        rubrics, counts = parse_rubrics(comp.text)
        self.stats.update(counts)
        return rubrics

    async def select(self, query: str, rubrics: Sequence[Rubric], texts: Sequence[str]) -> list[int]:
        m = min(self.m, len(texts))
        prompt = self.select_template.render(query=query, rubrics=_rubric_lines(rubrics), products=_products(texts),
                                             m=m)
        comp = await self.complete(ChatRequest.chat(None, prompt, template=self.select_template.id,
                                                    max_tokens=8 * m + 16, tag=self.tag))
        if comp.failed:
            self.stats["fallback_select_call"] += 1
            return []
        chosen, counts = parse_selection(comp.text, len(texts), m)
        self.stats.update(counts)
        return chosen

    async def score(self, cands: Candidates) -> Sequence[float]:
        rubrics = await self.rubrics(cands.query)
        chosen = await self.select(cands.query, rubrics, cands.texts)
        self.stats["selected"] += len(chosen)
        taken = set(chosen)
        rest = [i for i in range(len(cands)) if i not in taken]
        self.selections[cands.qid] = (rubrics, [cands.docnos[i] for i in chosen])
        return scores_from_order(chosen + rest)
