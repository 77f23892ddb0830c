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
from superb.transformers.base import (COMMON_OPTIONS, Candidates, Reranker, default_template, product_text, require_llm,
                                      scores_from_order)
from superb.transformers.options import boolean, non_negative_int, one_of, Opt, read_options, spec_error, template_name
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
    ``fields``, the product-text budget, ``guard``: base.COMMON_OPTIONS).
    """

    type_name = "listwise"

    def __init__(self, llm: Any, *, method: str = "generation", shuffles: int = 0, seed: int = 0,
                 calibrate: bool = False, template: str | None = None, **kw: Any):
        super().__init__(llm, **kw)
        self.ranker = window_ranker(method, shuffles, seed, calibrate, template)
        self.method = method
        size = self.window_size()
        if method == "likelihood" and (size is None or size > MAX_LIKELIHOOD_WINDOW):
            raise ValueError(f"{type(self).__name__}: method \"likelihood\" ranks at most {MAX_LIKELIHOOD_WINDOW} "
                             f"products per window (single-letter ids, top_logprobs <= 20), got {size or 'all'}; "
                             "use a smaller top_k, or type \"sliding\" with window <= 20")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(ranker={self.ranker!r}, top_k={self.top_k}, text={self.text!r})"

    def window_size(self) -> int | None:
        """The most products one call ranks (None: all of a query's list)."""
        return self.top_k

    @classmethod
    def spec_schema(cls, context: Any = None) -> dict[str, Opt]:
        return {**COMMON_OPTIONS, "method": Opt("generation", one_of(*METHODS)), "shuffles": Opt(0, non_negative_int),
                "seed": Opt(getattr(context, "seed", 0), non_negative_int), "calibrate": Opt(False, boolean),
                "template": Opt(None, template_name)}

    @classmethod
    def check_options(cls, opts: dict[str, Any], path: str) -> None:
        """Cross-option checks (SpecError naming the key)."""
        if opts["method"] == "likelihood" and opts["top_k"] > MAX_LIKELIHOOD_WINDOW:
            raise SpecError(f"{path}.top_k", f"method \"likelihood\" ranks at most {MAX_LIKELIHOOD_WINDOW} products "
                                             f"in one window, got {opts['top_k']}; use type \"sliding\" for more")
        check_calibrate(opts, path)

    @classmethod
    def from_spec(cls, options: Mapping[str, Any], context: Any, path: str) -> "ListwiseReranker":
        opts = read_options(options, path, cls.spec_schema(context))
        cls.check_options(opts, path)
        extra = {k: v for k, v in opts.items() if k not in COMMON_OPTIONS}
        extra["template"] = opts["template"] or default_template(DEFAULT_TEMPLATES[opts["method"]], context, path)
        try:
            return cls(require_llm(context, path), text=product_text(opts, context, path), top_k=opts["top_k"],
                       tag=path, **extra)
        except ValueError as e:
            raise spec_error(path, e) from e

    async def rank_window(self, query: str, texts: Sequence[str]) -> list[int]:
        """The window ranker's order of ``texts`` as positions 0..n-1, best first (repaired and counted)."""
        return await self.ranker.rank(self, query, texts)

    async def score(self, cands: Candidates) -> list[float]:
        return scores_from_order(await self.rank_window(cands.query, cands.texts))
