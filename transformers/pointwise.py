"""Pointwise LLM reranking: one call per (query, product), a score from the answer's probabilities.

Variants (``variant``):

- ``"best"``: the SUPERB four-level grade (3 Overall best, 2 Almost best, 1 Relevant but not the best, 0 Not
  relevant). Score = expected grade under the model's probabilities over the tokens "0".."3" at the first generated
  position that offers any of them (renormalised over those tokens), divided by 3 so it lies in [0, 1].
- ``"yesno"``: binary relevance; score = P(yes) renormalised over {yes, no}.

Templates (``template``): ``pointwise_best`` / ``pointwise_yesno`` (a shopper's view) and ``pointwise_best_product`` /
``pointwise_yesno_product`` (is the product ITSELF what was searched for, not an accessory, case, cable or part);
``pointwise_yesno_product_guard`` is the last one hardened against product text that speaks to the model (it says the
seller's text is no instruction and restates the query and question after the product; use it with ``guard = true``,
which cuts such text out: docs/injection.md);
for "best" also ``judge_umbrela`` (the UMBRELA-style 0-3 rubric of the judges: the reranker and the umbrela judge ask
the same request, so either one's answers serve the other from the cache).
Every template puts the shared text (instructions, query) first and the product last, so that llama.cpp's prompt
cache reuses the prefix across the products of a query.

Fallbacks, each counted in ``stats``: no logprobs / no label token among them -> the label parsed from the text
(``fallback_parsed_label``); nothing parseable -> score 0 (``fallback_unparsed``); a failed call -> score 0
(``fallback_failed_call``). Score-0 products sink; ties keep the first-stage order.

Blending with the first stage (``alpha``, as the bi-encoder's; formerly ``fusion``): the top_k is ORDERED by
alpha * LLM score + (1 - alpha) * min-max normalised input score of the query's top_k (the first-stage score when this
is the first reranking stage; all equal normalise to 0): base.Reranker.order_values. ``pointwise_score`` keeps the raw
LLM score whatever alpha; the blend goes to ``pointwise_blend_score``. alpha = 1 (default) orders by the LLM score
alone.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Mapping

from superb.llm.types import LABEL_MAX_TOKENS, ChatRequest, Completion
from superb.options import OneOf, PositiveInt, UnitFloat, one_of
from superb.transformers.base import Candidates, Reranker, text_dataset
from superb.transformers.templates import stage_template
from superb.llm.answers import ExpectedGrade, YesProbability
from superb.llm.question import LabelQuestion
from superb.llm.prompts import is_file_ref, load_template, template_name

VARIANTS = ("best", "yesno")
TEMPLATES = {
    "best": ("pointwise_best", "pointwise_best_product", "judge_umbrela"),
    "yesno": ("pointwise_yesno", "pointwise_yesno_product", "pointwise_yesno_product_guard", "pointwise_yesno_passage"),
}


def pointwise_template(value: Any, path: str) -> str:
    """The ``template`` option's parser: a pointwise template's name, or a .j2 file of the user's."""
    if is_file_ref(value):
        return template_name(value, path)
    return one_of(*TEMPLATES["best"], *TEMPLATES["yesno"])(value, path)



class PointwiseReranker(Reranker):
    """Scores each of the top_k products on its own (type ``pointwise``): 1 call per (query, product), so top_k calls
    per query (each a one-token label request read from its probabilities).

    Score column ``pointwise_score`` (``<stage>_score`` when the spec names the stage), the raw LLM score:
    ``variant = "best"``: the expected 0-3 grade / 3; ``"yesno"``: P(yes); both in [0, 1]. With ``alpha`` < 1 the
    top_k is ordered by its blend with the min-max normalised first-stage score (module docstring), the column keeps
    the raw score (the blend: ``pointwise_blend_score``). Options: ``variant``, ``template``, ``alpha``,
    ``max_new_tokens`` (generation length) and the common options (``top_k``, ``fields``, the product-text budget,
    ``guard``: the base's and ProductText's constructors).
    """

    type_name = "pointwise"

    def __init__(self, llm: Any, *, variant: OneOf(*VARIANTS) = "best",
                 template: Annotated[str | None, pointwise_template] = None,
                 alpha: UnitFloat = 1.0, max_new_tokens: PositiveInt = LABEL_MAX_TOKENS, **kw: Any):
        super().__init__(llm, alpha=alpha, **kw)
        if variant not in VARIANTS:
            raise ValueError(f"PointwiseReranker: variant must be one of {list(VARIANTS)}, got {variant!r}")
        template = stage_template(template, TEMPLATES[variant][0], text_dataset(self.text), self.type_name)
        if not is_file_ref(template) and template not in TEMPLATES[variant] and \
                not template.startswith(f"pointwise_{variant}"):
            raise ValueError(f"PointwiseReranker: template {template!r} does not answer variant {variant!r}; "
                             f"use one of {list(TEMPLATES[variant])} (or a pointwise_{variant}* template of your own)")

        self.variant = variant
        self.template = load_template(template)
        self.max_new_tokens = int(max_new_tokens)
        reader = ExpectedGrade(scale=3.0, text="lenient") if variant == "best" else YesProbability()
        self.question = LabelQuestion(self.template, reader, max_tokens=self.max_new_tokens, tag=self.tag)

    @classmethod
    def default_template(cls, options: Mapping[str, Any]) -> str | None:
        return TEMPLATES[options.get("variant") if options.get("variant") in TEMPLATES else "best"][0]

    def max_calls(self, n: int) -> int:
        return n  # one label request per candidate

    def __repr__(self) -> str:
        return (f"PointwiseReranker(variant={self.variant!r}, template={self.template.id!r}, alpha={self.alpha}, "
                f"top_k={self.top_k}, text={self.text!r})")

    def request(self, query: str, product: str) -> ChatRequest:
        return self.question.request(query, product, tag=self.tag)

    async def score(self, cands: Candidates) -> list[float]:
        comps = await asyncio.gather(*(self.complete(self.request(cands.query, t)) for t in cands.texts))
        return [self.read(c) for c in comps]

    def read(self, comp: Completion) -> float:
        """The LLM score in [0, 1] of one completion (with counted fallbacks: Reranker.read_score)."""
        return self.read_score(self.question.reader, comp)
