"""Pairwise preference from label probabilities (PRP, Qin et al. 2023), independent of PyTerrier.

A small model that is asked to WRITE which of two products is better answers the same side whatever the order; its
probabilities still carry signal. So the question is a one-token label request (``ChatRequest.label``: max_tokens 1,
top 20 logprobs, temperature 0) on the template ``pairwise_ab`` (instructions and query first, Product A and Product
B fenced as catalogue data, the short question last), and the answer is read as

    P_A(a, b) = P("A") / (P("A") + P("B"))    at the first generated position, a shown as Product A,

over the letter tokens and their variants (" A", "[A", "**A": ``superb.llm.parsing.letter_distribution``). With both
orders (the default) the preference is

    p(a over b) = mean(P_A(a, b), 1 - P_A(b, a))

so a constant position bias cancels: a model that always says "A" with probability 0.9 gives p = 0.5, no preference.

Fallbacks, each counted in ``stats`` under a name starting ``fallback_`` (so a results table shows them):
- ``fallback_generated_letter``: the endpoint returned no logprobs; the generated letter is the answer (P_A = 1 or 0).
- ``fallback_no_label``: neither the top logprobs nor the text held a letter A/B: this order has no answer.
- ``fallback_failed_call``: the call failed (failure policy "record"): this order has no answer.
With both orders, a pair whose either order has no answer gets ``p = None`` (``no_preference``): a one-sided
probability would reintroduce the position bias the two orders remove. Callers treat None as "keep the prior order".

``read_choice`` (a completion -> the distribution over n lettered options, with the same fallbacks) is shared with the
setwise and listwise-by-likelihood rerankers. The generated check-both-ways comparator (``superb.llm.comparator``)
stays as it is, for judges that want decisions from written answers.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence

from superb.llm.answers import Choice, read_choice
from superb.llm.prompts import load_template
from superb.llm.text import clean
from superb.llm.types import ChatRequest, Completion

DEFAULT_TEMPLATE = "pairwise_ab"
FALLBACK_STATS = {"generated": "fallback_generated_letter", "no_label": "fallback_no_label",
                  "failed": "fallback_failed_call"}


class AsyncLLM(Protocol):
    async def acomplete(self, request: ChatRequest) -> Completion: ...


def count_choice(stats: Counter, choice: Choice) -> None:
    """Count a choice's source into ``stats`` (``answered_logprobs`` or its ``fallback_*`` name)."""
    stats[FALLBACK_STATS.get(choice.source, "answered_logprobs")] += 1


@dataclass(frozen=True)
class Preference:
    """The preference between products a and b for one query.

    ``p``: P(a preferred over b) in [0, 1] (0.5 = no preference), or None when an order asked has no answer.
    ``orders``: the Choice of each order asked: first a shown as Product A, then (both orders) b shown as Product A.
    """

    p: float | None
    orders: tuple[Choice, ...]

    @property
    def winner(self) -> str | None:
        """"A" (a preferred), "B" (b preferred), or None (p is None or exactly 0.5)."""
        if self.p is None or self.p == 0.5:
            return None
        return "A" if self.p > 0.5 else "B"

    @property
    def p_first(self) -> tuple[float | None, ...]:
        """P(the product shown as A is better) per order asked (the raw, position-biased readings)."""
        return tuple(None if c.dist is None else c.dist[0] for c in self.orders)


def combine(orders: Sequence[Choice]) -> float | None:
    """p(a over b) from the Choice of (a as A) and, optionally, of (b as A): mean(P_A(a,b), 1 - P_A(b,a))."""
    if not orders or any(c.dist is None for c in orders):
        return None
    readings = [orders[0].dist[0]] + [1.0 - c.dist[0] for c in orders[1:]]
    return sum(readings) / len(readings)


def one_line(doc: Mapping[str, Any] | str, fields: Sequence[str], max_chars: int = 600) -> str:
    """A product as ONE line (so it cannot open a prompt line of its own): a string whitespace-collapsed; a field dict
    as its ``fields`` values (one field) or "field: value | field: value" (several; like ``ProductText``); empty ->
    "(no text)"; cut to ``max_chars`` with "...". """
    if isinstance(doc, str):
        text = clean(doc)
    else:
        parts = [(clean(doc.get(f)), f) for f in fields]
        parts = [(v, f) for v, f in parts if v]
        text = " | ".join(v if len(fields) == 1 else f"{f}: {v}" for v, f in parts)
    text = text or "(no text)"
    return text if len(text) <= max_chars else text[: max_chars - 3].rstrip() + "..."


class PairwisePreference:
    """Ask ``llm`` which of two products is better for a query, and read the answer from the label probabilities.

    ``template`` renders with ``query``, ``a``, ``b`` (the product texts: strings, or field dicts rendered over
    ``fields``, each as one line: ``one_line``). ``both_orders`` (default True) asks both orders, concurrently, and
    averages them (see the module docstring). Counters in ``stats``: pairs, orders (label requests made),
    answered_logprobs, the ``fallback_*`` counts, no_preference (pairs with p None), ties (p exactly 0.5 from answered
    orders).
    """

    def __init__(self, llm: AsyncLLM, template: Any = DEFAULT_TEMPLATE, *, both_orders: bool = True,
                 fields: Sequence[str] = ("title",), max_chars: int = 600, tag: str = "pairwise"):
        if not fields:
            raise ValueError("PairwisePreference: fields is empty; give at least one product field, e.g. ['title']")
        self.llm = llm
        self.template = load_template(template)
        self.both_orders = bool(both_orders)
        self.fields = tuple(fields)
        self.max_chars = int(max_chars)
        self.tag = tag
        self.stats: Counter = Counter()

    def __repr__(self) -> str:
        return f"PairwisePreference(template={self.template.id!r}, both_orders={self.both_orders})"

    def request(self, query: str, a: Mapping[str, Any] | str, b: Mapping[str, Any] | str) -> ChatRequest:
        """The label request with ``a`` shown as Product A and ``b`` as Product B."""
        prompt = self.template.render(query=query, a=one_line(a, self.fields, self.max_chars),
                                      b=one_line(b, self.fields, self.max_chars))
        return ChatRequest.label(prompt, template=self.template.id, tag=self.tag)

    async def ask(self, query: str, a: Mapping[str, Any] | str, b: Mapping[str, Any] | str) -> Choice:
        """One order: the Choice over (A = ``a``, B = ``b``), counted."""
        self.stats["orders"] += 1
        choice = read_choice(await self.llm.acomplete(self.request(query, a, b)), 2)
        count_choice(self.stats, choice)
        return choice

    async def prefer(self, query: str, a: Mapping[str, Any] | str, b: Mapping[str, Any] | str) -> Preference:
        """The preference of ``a`` over ``b`` (both orders asked concurrently when ``both_orders``), counted."""
        if self.both_orders:
            orders = tuple(await asyncio.gather(self.ask(query, a, b), self.ask(query, b, a)))
        else:
            orders = (await self.ask(query, a, b),)
        return self.preference(orders)

    def preference(self, orders: Sequence[Choice]) -> Preference:
        """The Preference from the Choices of the orders asked (a as A, then b as A), counted as one pair. For callers
        that schedule the orders themselves (e.g. to group prompts that share a Product A for the server's prompt
        cache)."""
        self.stats["pairs"] += 1
        p = combine(orders)
        if p is None:
            self.stats["no_preference"] += 1
        elif p == 0.5:
            self.stats["ties"] += 1
        return Preference(p, tuple(orders))
