"""Listwise LLM reranking: the top_k ordered as one window by a window ranker (``window.py``).

``method = "generation"`` (default, RankGPT style): the candidates are shown as "[1] text", "[2] text", ... in
first-stage order (template ``listwise_rankgpt``) and the model writes an order like "[3] > [1] > [2]";
``parse_permutation`` repairs it (duplicates and unknown ids ignored, missing ids appended in their prior order) and
every repair is counted as ``repair_<kind>``. ``method = "likelihood"`` (zero-shot FIRST): one label request, the
window ordered by the probability of each product's letter being the first identifier written (at most 20 products
per window; ``calibrate = true`` divides it by the content-free position prior, ``position_prior.py``).
``shuffles = m`` (>= 1) ranks m seeded shuffles of the window and orders by mean rank (permutation self-consistency,
m calls). A failed call keeps the window's prior order (``fallback_failed_call``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from superb.errors import SpecError
from superb.llm.prompts import TemplateName
from superb.options import Flag, NonNegativeInt, OneOf
from superb.transformers.base import Candidates, Reranker, scores_from_order, text_dataset
from superb.transformers.templates import stage_template
from superb.transformers.window import DEFAULT_TEMPLATES, MAX_LIKELIHOOD_WINDOW, METHODS, window_ranker


def check_calibrate(opts: dict[str, Any], path: str) -> None:
    if opts["calibrate"] and opts["method"] != "likelihood":
        raise SpecError(f"{path}.calibrate", "divides a label distribution by its position prior: needs method "
                                             f"= \"likelihood\", got {opts['method']!r}")


class ListwiseReranker(Reranker):
    """Orders the top_k of each query as one window (type ``listwise``): 1 call per query (``method = "generation"``,
    RankGPT: the model writes a permutation; ``"likelihood"``, FIRST: one label request, at most 20 products), x m
    with ``shuffles = m``, +1 per query and window size with ``calibrate = true``.

    Score: only an order: n - position in the window's order (``scores_from_order``), so the score column
    ``listwise_score`` (``<stage>_score`` when the spec names the stage) carries no strength of preference. Options:
    ``method``, ``shuffles``, ``seed`` (of the shuffles), ``calibrate`` and the common options (``top_k``,
    ``fields``, the product-text budget, ``guard``: the base's and ProductText's constructors).
    """

    type_name = "listwise"

    def __init__(self, llm: Any, *, method: OneOf(*METHODS) = "generation", shuffles: NonNegativeInt = 0,
                 seed: NonNegativeInt = 0, calibrate: Flag = False, template: TemplateName = None, **kw: Any):
        super().__init__(llm, **kw)
        if method in DEFAULT_TEMPLATES:
            template = stage_template(template, DEFAULT_TEMPLATES[method], text_dataset(self.text), self.type_name)
        self.ranker = window_ranker(method, shuffles, seed, calibrate, template)
        self.method = method
        size = self.window_size()
        if method == "likelihood" and (size is None or size > MAX_LIKELIHOOD_WINDOW):
            raise ValueError(f"{type(self).__name__}: method \"likelihood\" ranks at most {MAX_LIKELIHOOD_WINDOW} "
                             f"products per window (single-letter ids, top_logprobs <= 20), got {size or 'all'}; "
                             "use a smaller top_k, or type \"sliding\" with window <= 20")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(ranker={self.ranker!r}, top_k={self.top_k}, text={self.text!r})"

    @classmethod
    def default_template(cls, options: Mapping[str, Any]) -> str | None:
        return DEFAULT_TEMPLATES.get(options.get("method", "generation"))

    def window_size(self) -> int | None:
        """The most products one call ranks (None: all of a query's list)."""
        return self.top_k

    def window_calls(self, n: int) -> int:
        """The most requests one window of n asks: one ranking (one per shuffle with ``shuffles``), plus the
        content-free request of ``calibrate``; none for a window of one."""
        if n <= 1:
            return 0
        inner = getattr(self.ranker, "inner", self.ranker)
        rankings = getattr(self.ranker, "shuffles", 1)
        return rankings + (1 if getattr(inner, "prior", None) is not None else 0)

    def max_calls(self, n: int) -> int:
        return self.window_calls(n)

    @classmethod
    def check_options(cls, opts: dict[str, Any], path: str, given: Mapping[str, Any]) -> None:
        """Cross-option checks (SpecError naming the key)."""
        if opts["method"] == "likelihood" and opts["top_k"] > MAX_LIKELIHOOD_WINDOW:
            raise SpecError(f"{path}.top_k", f"method \"likelihood\" ranks at most {MAX_LIKELIHOOD_WINDOW} products "
                                             f"in one window, got {opts['top_k']}; use type \"sliding\" for more")
        check_calibrate(opts, path)

    async def rank_window(self, query: str, texts: Sequence[str]) -> list[int]:
        """The window ranker's order of ``texts`` as positions 0..n-1, best first (repaired and counted)."""
        return await self.ranker.rank(self, query, texts)

    async def score(self, cands: Candidates) -> list[float]:
        return scores_from_order(await self.rank_window(cands.query, cands.texts))
