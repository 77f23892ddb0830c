"""The "ideal product" step of deliberated prompting (SUPERB), in ONE place for the reranker and the judge.

Per query the model first writes the attributes the ideal product would have (template ``deliberated_attributes``);
the grading prompt (``deliberated_label``) then shows that text before the product. The deliberated reranker
(superb.transformers.deliberated) and the deliberated judges (superb.judges) build this request and read its answer
here, so that one cached answer serves both, and the grading prompts that follow are identical too (same attribute
text, hence the same cached grade answers).

- ``attributes_request(query, ...)``: the request (temperature 0, seed 0, no logprobs, ``max_tokens`` 160 by default).
- ``normalise(text)``: the attribute text as it goes into the grading prompt: every line stripped, empty lines
  dropped, joined with "\\n"; "" when nothing is left.
- ``read(completion)``: the normalised text of a completion, or None when the call failed or the text is empty; the
  caller then grades against ``NO_ATTRIBUTES`` and counts that fallback.
"""

from __future__ import annotations

import asyncio
from typing import Any

from superb.llm.prompts import load_template
from superb.llm.types import ChatRequest, Completion

TEMPLATE = "deliberated_attributes"
MAX_TOKENS = 160
NO_ATTRIBUTES = "(no attributes available)"  # what the grading prompt shows when the attribute call gave nothing


def attributes_request(query: str, *, template: Any = None, max_tokens: int = MAX_TOKENS, tag: str = ""
                       ) -> ChatRequest:
    """The ideal-attributes request for ``query``; ``template`` is a Template or a name (default TEMPLATE)."""

    if template is None or isinstance(template, str):
        template = load_template(template or TEMPLATE)
    if int(max_tokens) < 1:
        raise ValueError(f"attributes_request: max_tokens must be >= 1, got {max_tokens!r}")
    return ChatRequest.chat(None, template.render(query=query), template=template.id, max_tokens=int(max_tokens),
                            temperature=0.0, seed=0, tag=tag)


def normalise(text: str | None) -> str:
    """Lines stripped, empty lines dropped (see the module docstring)."""
    return "\n".join(line.strip() for line in (text or "").strip().splitlines() if line.strip())


def read(completion: Completion) -> str | None:
    """The normalised attribute text of ``completion``; None for a failed call or an empty answer (a fallback)."""
    if completion.failed:
        return None
    return normalise(completion.text) or None


class IdealStep:
    """The attribute text of each distinct query text, asked ONCE (concurrent askers of the same text share the one
    call), for the deliberated reranker and the deliberated judge alike. ``await step.text(query, complete)``:
    (text, status) with status "ok", or "failed" / "missing" (a failed call, or one a cache-only client could not
    serve) when ``NO_ATTRIBUTES`` stands in; the caller counts the fallback under its own name."""

    def __init__(self, template: Any = None, max_tokens: int = MAX_TOKENS):
        self.template = load_template(template or TEMPLATE) if template is None or isinstance(template, str) \
            else template
        self.max_tokens = int(max_tokens)
        self.done: dict[str, tuple[str, str]] = {}
        self._pending: dict[str, Any] = {}

    def request(self, query: str, tag: str = "") -> ChatRequest:
        return attributes_request(query, template=self.template, max_tokens=self.max_tokens, tag=tag)

    async def text(self, query: str, complete: Any, *, tag: str = "", missing_error: str | None = None,
                   on_ask: Any = None) -> tuple[str, str]:
        """``on_ask()`` is called once, when the request for a new query text is made (to count it); ``tag``: the
        asker's, for usage accounting."""
        if query in self.done:
            return self.done[query]
        if query not in self._pending:
            if on_ask is not None:
                on_ask()
            self._pending[query] = asyncio.ensure_future(self._ask(query, complete, missing_error, tag))
        result = await asyncio.shield(self._pending[query])
        self.done[query] = result
        self._pending.pop(query, None)
        return result

    async def _ask(self, query: str, complete: Any, missing_error: str | None, tag: str) -> tuple[str, str]:
        completion = await complete(self.request(query, tag))
        text = read(completion)
        if text is not None:
            return text, "ok"
        missing = completion.failed and missing_error is not None and completion.error == missing_error
        return NO_ATTRIBUTES, "missing" if missing else "failed"
