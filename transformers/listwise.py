"""Listwise LLM reranking (RankGPT style): the model reorders the top_k in one call.

The candidates are shown as "[1] text", "[2] text", ... in first-stage order (template ``listwise_rankgpt``: the
instructions and the query first, then the products, then the query again and the answer format). The model answers
with an order like "[3] > [1] > [2]"; ``parse_permutation`` reads it and repairs it (duplicates and unknown ids
ignored, missing ids appended in their prior order), and every repair is counted in ``stats`` as ``repair_<kind>``.
A failed call keeps the window's prior order (``fallback_failed_call``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from superb.llm.types import ChatRequest
from superb.transformers.base import (
    COMMON_OPTIONS,
    Candidates,
    LLMReranker,
    Opt,
    product_text,
    read_options,
    require_llm,
    scores_from_order,
    spec_error,
)
from superb.llm.parsing import parse_permutation

TOKENS_PER_ID = 5  # "[12] > " is about 5 tokens: the generation budget per candidate


class ListwiseReranker(LLMReranker):
    type_name = "listwise"
    template_name = "listwise_rankgpt"

    def __init__(self, llm: Any, **kw: Any):
        super().__init__(llm, **kw)
        from superb.llm.prompts import load_template

        self.template = load_template(self.template_name)

    @classmethod
    def spec_schema(cls) -> dict[str, Opt]:
        return dict(COMMON_OPTIONS)

    @classmethod
    def check_options(cls, opts: dict[str, Any], path: str) -> None:
        """Cross-option checks (SpecError naming the key); none for plain listwise."""

    @classmethod
    def from_spec(cls, options: Mapping[str, Any], context: Any, path: str) -> "ListwiseReranker":
        opts = read_options(options, path, cls.spec_schema())
        cls.check_options(opts, path)
        extra = {k: v for k, v in opts.items() if k not in COMMON_OPTIONS}
        try:
            return cls(require_llm(context, path), text=product_text(opts, context, path), top_k=opts["top_k"],
                       tag=path, **extra)
        except ValueError as e:
            raise spec_error(path, e) from e

    def request(self, query: str, texts: Sequence[str]) -> ChatRequest:
        prompt = self.template.render(query=query, n=len(texts), products=list(texts))
        return ChatRequest.chat(None, prompt, template=self.template.id,
                                max_tokens=TOKENS_PER_ID * len(texts) + 8, tag=self.tag)

    async def rank_window(self, query: str, texts: Sequence[str]) -> list[int]:
        """One call: the model's order of ``texts`` as positions 0..n-1, best first (repaired and counted)."""
        if len(texts) <= 1:
            return list(range(len(texts)))
        comp = await self.complete(self.request(query, texts))
        if comp.failed:
            self.stats["fallback_failed_call"] += 1
            return list(range(len(texts)))
        order, repairs = parse_permutation(comp.text, len(texts))
        for kind, count in repairs.items():
            self.stats[f"repair_{kind}"] += count
        if repairs:
            self.stats["repaired_answers"] += 1
        return order

    async def score(self, cands: Candidates) -> list[float]:
        return scores_from_order(await self.rank_window(cands.query, cands.texts))
