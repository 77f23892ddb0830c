"""Rubric-guided set selection (zero-shot RubricRanker) and the rubric reward of a selected set.

Per query, one call expands the meta-rubrics into query-specific rubrics with importance weights 1..5 (set level:
coverage of the key aspects, conciseness/no redundancy, consistency/no contradictions; item level: product quality
signals such as brand authority, recency of the model, completeness of the specs). A second call selects and orders
at most ``m`` products from the top_k candidates (by short ids, never docnos). The selected set ranks first in the
model's order; the other candidates follow in their prior order; docnos are always preserved.

:class:`RubricReward` scores a selected set: the LLM grades the set on each rubric 0..10 and
``reward = sum(w_i * s_i / 10) / sum(w_i)`` (:func:`rubric_reward`). Compare sets only at equal budgets
(:meth:`RubricReward.compare` refuses sets of different sizes).

All parsing is pure and tolerant (superb.llm.rubric_parsing); every repair or default is counted (``stats``), never
silent.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

from superb.llm.comparator import AsyncLLM, PromptTemplate
from superb.llm.prompts import load_template
from superb.llm.rubric_parsing import DEFAULT_RUBRICS, Rubric, parse_rubric_scores, parse_rubrics, parse_selection
from superb.llm.text import clean
from superb.llm.types import ChatRequest
from superb.options import PositiveInt, TopK
from superb.transformers.base import Candidates, Reranker, Text, scores_from_order


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




class RubricReranker(Reranker):
    """Zero-shot RubricRanker over the top_k (default 20): generate weighted rubrics, select at most ``m`` products.

    ``selections[qid]`` keeps (rubrics, selected docnos in order) for set-level evaluation with RubricReward.
    ``stats``: base counters plus the parse counters of parse_rubrics/parse_selection and fallback_rubric_call /
    fallback_select_call (a failed call: meta-rubrics / prior order)."""

    type_name = "rubric"

    def __init__(self, llm: Any = None, *, text: Text = None, top_k: TopK = 20, m: PositiveInt = 10,
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
