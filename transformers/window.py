"""Window rankers: how ``listwise`` and ``sliding`` order one window of products (strategy objects).

A window ranker has ``async rank(owner, query, texts) -> list[int]``: the window's order as positions 0..n-1, best
first. ``owner`` is the reranker (its counted ``complete`` and its ``stats``). Never raises on model output.

- :class:`GenerationRanker` (``method = "generation"``, RankGPT): the model WRITES a permutation "[3] > [1] > [2]"
  (template ``listwise_rankgpt``); ``parse_permutation`` repairs it and every repair is counted (``repair_<kind>``,
  ``repaired_answers``); a failed call keeps the window's order (``fallback_failed_call``). 1 call, ~5 generated
  tokens per product.
- :class:`LikelihoodRanker` (``method = "likelihood"``, zero-shot FIRST, Reddy et al. 2024): ONE label request
  (template ``listwise_first``, products labelled A, B, ...); the window is ordered by the probability of each letter
  being the FIRST identifier the model would write. At most 20 products per window (single-letter ids; the API returns
  at most 20 top logprobs). A letter absent from the top logprobs gets probability 0: such products keep their prior
  order below the others (``likelihood_absent``). No logprobs: the generated letter goes first, the rest keep their
  order (``fallback_generated_letter``); no letter / failed call: the window keeps its order (``fallback_no_label`` /
  ``fallback_failed_call``). 1 call, 1 generated token. ``calibrate = true``: the distribution is divided by the
  model's content-free distribution for the query and window size (contextual calibration, ``position_prior.py``), so
  the first letter's prior share no longer decides: 1 extra call per query and window size.
- :class:`SelfConsistent` (``shuffles = m``, permutation self-consistency, Tang et al. 2023): the window is shown in m
  seeded shuffles (seed = run seed and the window's query and texts, so a rerun asks the same prompts), each ranked by
  the inner ranker (concurrently), and the window ordered by mean rank over the m rankings (Borda count); equal mean
  ranks keep the prior order. m calls.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import Any, Sequence

from superb.llm.answers import LETTERS, permutation, read_choice
from superb.llm.preference import count_choice
from superb.llm.prompts import load_template
from superb.llm.types import ChatRequest
from superb.transformers.position_prior import PositionPrior

TOKENS_PER_ID = 5  # "[12] > " is about 5 tokens: the generation budget per candidate
MAX_LIKELIHOOD_WINDOW = len(LETTERS)


class GenerationRanker:
    name = "generation"

    def __init__(self, template: str = "listwise_rankgpt"):
        self.template = load_template(template)

    def __repr__(self) -> str:
        return "GenerationRanker()"

    def request(self, query: str, texts: Sequence[str], tag: str = "") -> ChatRequest:
        prompt = self.template.render(query=query, n=len(texts), products=list(texts))
        return ChatRequest.chat(None, prompt, template=self.template.id, max_tokens=TOKENS_PER_ID * len(texts) + 8,
                                tag=tag)

    async def rank(self, owner: Any, query: str, texts: Sequence[str]) -> list[int]:
        if len(texts) <= 1:
            return list(range(len(texts)))
        comp = await owner.complete(self.request(query, texts, owner.tag))
        if comp.failed:
            owner.stats["fallback_failed_call"] += 1
            return list(range(len(texts)))
        order, repairs = permutation(comp.text, len(texts))
        for kind, count in repairs.items():
            owner.stats[f"repair_{kind}"] += count
        if repairs:
            owner.stats["repaired_answers"] += 1
        return order


class LikelihoodRanker:
    name = "likelihood"

    def __init__(self, template: str = "listwise_first", calibrate: bool = False):
        self.template = load_template(template)
        self.prior = PositionPrior(self.request) if calibrate else None

    def __repr__(self) -> str:
        return f"LikelihoodRanker(calibrate={self.prior is not None})"

    def request(self, query: str, texts: Sequence[str], tag: str = "") -> ChatRequest:
        if len(texts) > MAX_LIKELIHOOD_WINDOW:
            raise ValueError(f"LikelihoodRanker: a window of {len(texts)} products; at most {MAX_LIKELIHOOD_WINDOW} "
                             "(single-letter identifiers, top_logprobs <= 20)")
        prompt = self.template.render(query=query, n=len(texts), products=list(zip(LETTERS, texts)))
        return ChatRequest.label(prompt, template=self.template.id, tag=tag)

    async def rank(self, owner: Any, query: str, texts: Sequence[str]) -> list[int]:
        n = len(texts)
        if n <= 1:
            return list(range(n))
        choice = read_choice(await owner.complete(self.request(query, texts, owner.tag)), n)
        count_choice(owner.stats, choice)
        if choice.dist is None:
            return list(range(n))
        if choice.source == "logprobs":
            owner.stats["likelihood_absent"] += sum(1 for p in choice.dist if p == 0.0)
        if self.prior is not None:
            choice = await self.prior.apply(owner, query, choice)
        return sorted(range(n), key=lambda i: (-choice.dist[i], i))


class SelfConsistent:
    name = "self_consistency"

    def __init__(self, inner: GenerationRanker | LikelihoodRanker, shuffles: int, seed: int = 0):
        if shuffles < 1:
            raise ValueError(f"SelfConsistent: shuffles must be >= 1, got {shuffles}")
        self.inner, self.shuffles, self.seed = inner, int(shuffles), int(seed)

    def __repr__(self) -> str:
        return f"SelfConsistent({self.inner!r}, shuffles={self.shuffles}, seed={self.seed})"

    def permutations(self, query: str, texts: Sequence[str]) -> list[list[int]]:
        """The m shuffles of a window (deterministic in the run seed, the query and the texts)."""
        import numpy as np

        key = zlib.crc32("\x1f".join([query, *texts]).encode("utf-8"))
        rng = np.random.default_rng([self.seed, key])
        return [[int(i) for i in rng.permutation(len(texts))] for _ in range(self.shuffles)]

    async def rank(self, owner: Any, query: str, texts: Sequence[str]) -> list[int]:
        n = len(texts)
        if n <= 1:
            return list(range(n))
        perms = self.permutations(query, texts)
        locals_ = await asyncio.gather(*(self.inner.rank(owner, query, [texts[i] for i in p]) for p in perms))
        total = [0.0] * n
        for perm, local in zip(perms, locals_):
            for place, shown in enumerate(local):
                total[perm[shown]] += place
        owner.stats["consistency_rankings"] += len(perms)
        return sorted(range(n), key=lambda i: (total[i], i))


METHODS = {"generation": GenerationRanker, "likelihood": LikelihoodRanker}


#: each method's default template (products; a passage data set gets its passage form: base.default_template)
DEFAULT_TEMPLATES = {"generation": "listwise_rankgpt", "likelihood": "listwise_first"}


def window_ranker(method: str = "generation", shuffles: int = 0, seed: int = 0, calibrate: bool = False,
                  template: str | None = None):
    """The window ranker for a spec: ``method`` ("generation" | "likelihood"; ``calibrate`` with "likelihood" only)
    on ``template`` (None: the method's default, :data:`DEFAULT_TEMPLATES`), wrapped in ``SelfConsistent`` when
    ``shuffles`` >= 1."""
    if method not in METHODS:
        raise ValueError(f"unknown listwise method {method!r}; allowed: {sorted(METHODS)}")
    if shuffles < 0:
        raise ValueError(f"shuffles must be >= 0 (0 = rank the window as given), got {shuffles}")
    if calibrate and method != "likelihood":
        raise ValueError(f"calibrate = true divides a label distribution by its position prior: method "
                         f"\"likelihood\" only, got {method!r}")
    template = template or DEFAULT_TEMPLATES[method]
    inner = LikelihoodRanker(template, calibrate=True) if calibrate else METHODS[method](template)
    return SelfConsistent(inner, shuffles, seed) if shuffles else inner
