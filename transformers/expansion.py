"""LLM query expansion as a PyTerrier query rewriter: the model writes the product the shopper wants, once per query.

``QueryExpansion`` (spec type ``expand``) follows ``pt.rewrite``'s convention: the original query moves to
``query_0`` (``pt.model.push_queries``), ``query`` becomes the expanded text, and the generated text alone is kept
in ``expansion``. ``RestoreQuery`` (spec type ``reset``) is ``pt.rewrite.reset()`` that keeps ``expansion``: the
original query back in ``query``, so a later reranker reads what the shopper typed. Composed with ``>>``::

    expand >> bm25 >> reset                     # Query2doc: retrieve with the expanded query
    bm25 >> expand >> biencoder >> reset        # HyDE: the bi-encoder embeds the expansion, BM25 retrieved
    bm25 >> expand >> BM25Rescore >> reset      # BM25's top 100 rescored with the expanded query

The expanded query (Query2doc: Wang et al. 2023; generative relevance feedback: Mackie et al. 2023) is the original
query repeated ``repeat`` times (the weight of the original words; 0: the generated text alone, HyDE's query) and
then the generated text of ``samples`` answers: the first at temperature 0 (seed 0, the answer a one-sample stage
caches too), the others at ``temperature`` with seeds 1, 2, ...; merged by concatenation (term frequency is the
weight of a word the samples agree on). The expanded text is word characters only (``sanitise_query``: Terrier's
query parser rejects ``'``, ``/``, ``&``, ``:`` and reads ``+ - " ^ ~`` as operators); ``sanitise = false`` keeps it as
written (for a dense encoder; never before Terrier).

One call per distinct query text and sample (a results frame's rows share their query's answer); the calls go
through the superb client (cached, counted in usage.csv, shipped). Counted fallbacks: ``fallback_failed_call`` (a
sample's call failed: the other samples are used), ``fallback_empty_answer`` (a sample answered no text once its
labels were stripped: likewise) and ``fallback_no_expansion`` (no sample gave text: the query is
left as the original, repeated).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from typing import Annotated, Any

import pandas as pd
import pyterrier as pt

from superb.errors import SpecError
from superb.llm.prompts import template_name
from superb.llm.prompts import load_template
from superb.llm.runner import progress_bar, run_all
from superb.llm.types import ChatRequest, Completion
from superb.options import Flag, NonNegativeInt, PositiveInt
from superb.pipelines.query_text import sanitise_query
from superb.transformers.base import build_stage

TEMPLATE = "deliberated_attributes"  # the ideal product's attributes: superb.llm.ideal's request, shared (and cached)
MAX_TOKENS = 160  # with the deliberated reranker and judge when repeat/samples leave sample 0 as it is
EXPANSION = "expansion"  # the column holding the generated text alone
# Labels the model writes before its lines ("Product title:", "Description -"): not words of the product.
_LABEL = re.compile(r"^\s*(?:[-*\u2022]\s*)?(?:product\s+title|title|product\s+description|description|product)"
                    r"\s*[:\-]\s*", re.IGNORECASE)


def read_expansion(completion: Completion) -> str | None:
    """The generated text of one answer: lines stripped of leading labels ("Title:", "Description:") and joined with
    spaces; None for a failed call or an empty answer (pure, tested on its own)."""
    if completion.failed:
        return None
    lines = [_LABEL.sub("", line).strip() for line in (completion.text or "").splitlines()]
    text = " ".join(line for line in lines if line)
    return text or None


def expanded_query(query: str, texts: list[str], repeat: int, sanitise: bool = True) -> str:
    """The query repeated ``repeat`` times, then the texts; word characters only when ``sanitise``. With no text
    the original query is kept (at least once, so a repeat of 0 never gives an empty query)."""
    parts = [query] * (repeat if texts else max(repeat, 1)) + list(texts)
    text = " ".join(p for p in parts if p)
    return sanitise_query(text) if sanitise else " ".join(text.split())


def _temperature(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 2.0:
        raise SpecError(path, f"expected a number from 0 to 2, got {value!r}")
    return float(value)


class QueryExpansion(pt.Transformer):
    """Rewrites ``query`` to the LLM-expanded query (original in ``query_0``, generated text in ``expansion``).

    ``stats``: queries (distinct query texts expanded), calls, failures, prompt/completion tokens, from_cache and the
    fallbacks of the module docstring."""

    type_name = "expand"
    calls_llm, needs_text, writes_score = True, False, False  # rewrites the query; scores nothing

    def __init__(self, llm: Any, *, template: Annotated[str, template_name] = TEMPLATE, repeat: NonNegativeInt = 1,
                 samples: PositiveInt = 1, temperature: Annotated[float, _temperature] = 0.7,
                 max_tokens: PositiveInt = MAX_TOKENS, sanitise: Flag = True, tag: str = "expand"):
        if int(repeat) < 0 or int(samples) < 1 or int(max_tokens) < 1:
            raise ValueError(f"QueryExpansion: repeat must be >= 0, samples and max_tokens >= 1; got repeat={repeat!r}, "
                             f"samples={samples!r}, max_tokens={max_tokens!r}")
        self.llm = llm
        self.template = load_template(template)
        self.repeat, self.samples, self.max_tokens = int(repeat), int(samples), int(max_tokens)
        self.temperature = float(temperature)
        self.sanitise = bool(sanitise)
        self.tag = tag
        self.progress_label: str | None = None
        self.progress = True
        self.stats: Counter = Counter()
        self.texts: dict[str, list[str]] = {}  # query text -> the generated texts of its samples

    def __repr__(self) -> str:
        return (f"QueryExpansion(template={self.template.id!r}, repeat={self.repeat}, samples={self.samples}, "
                f"temperature={self.temperature}, sanitise={self.sanitise})")

    from_spec = classmethod(build_stage)

    def requests(self, query: str) -> list[ChatRequest]:
        """The requests of one query: sample 0 greedy (temperature 0, seed 0), the others sampled (seeds 1, 2, ...)."""
        prompt = self.template.render(query=query)
        return [ChatRequest.chat(None, prompt, template=self.template.id, max_tokens=self.max_tokens,
                                 temperature=0.0 if i == 0 else self.temperature, seed=i, tag=self.tag)
                for i in range(self.samples)]

    async def _complete(self, request: ChatRequest) -> Completion:
        comp = await self.llm.acomplete(request)
        self.stats["calls"] += 1
        self.stats["failures"] += int(comp.failed)
        self.stats["prompt_tokens"] += comp.prompt_tokens
        self.stats["completion_tokens"] += comp.completion_tokens
        self.stats["from_cache"] += int(comp.from_cache)
        return comp

    async def _expand(self, query: str) -> list[str]:
        comps = await asyncio.gather(*(self._complete(r) for r in self.requests(query)))
        texts = []
        for comp in comps:
            text = read_expansion(comp)
            if text is None:
                self.stats["fallback_failed_call" if comp.failed else "fallback_empty_answer"] += 1
            else:
                texts.append(text)
        if not texts:
            self.stats["fallback_no_expansion"] += 1
        return texts

    def expansions(self, queries: list[str]) -> dict[str, list[str]]:
        """The generated texts of each distinct query (memoised per query text)."""

        if self.llm is None:
            raise ValueError("QueryExpansion: no LLM client was given (pass llm=..., or context.llm in a spec)")
        todo = [q for q in dict.fromkeys(queries) if q not in self.texts]
        if todo:
            bar = progress_bar(len(todo), self.progress_label or self.tag, show=self.progress)
            for q, texts in zip(todo, run_all(self.llm, [self._expand(q) for q in todo], bar=bar)):
                self.texts[q] = texts
            self.stats["queries"] += len(todo)
        return {q: self.texts[q] for q in queries}

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "query"], context=self)
        out = pt.model.push_queries(inp, keep_original=True)
        if len(out) == 0:
            return out.assign(**{EXPANSION: pd.Series(dtype="object")})
        originals = out["query_0"].astype(str)
        texts = self.expansions(originals.tolist())
        out[EXPANSION] = [" ".join(texts[q]) for q in originals]
        out["query"] = [expanded_query(q, texts[q], self.repeat, self.sanitise) for q in originals]
        return out


class RestoreQuery(pt.Transformer):
    """``pt.rewrite.reset()`` for an expanded frame: ``query_0`` back into ``query`` (``pt.model.pop_queries``), the
    generated text kept in ``expansion``. Spec type ``reset`` (no LLM)."""

    type_name = "reset"
    calls_llm = needs_text = writes_score = False
    stats: dict = {}

    def __repr__(self) -> str:
        return "RestoreQuery()"

    from_spec = classmethod(build_stage)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        if "query_0" not in inp.columns:
            raise ValueError(f"RestoreQuery: no 'query_0' column to restore the query from (found columns "
                             f"{list(inp.columns)}); put it after a query rewriter such as QueryExpansion")
        return pt.model.pop_queries(inp)
