"""Product text for prompts: chosen fields of a product, whitespace-collapsed and cut to a token budget.

``ProductText(dataset, fields=("title",), max_tokens=64)`` reads ``dataset.doc(docno)`` (a dict of fields) and renders
one line of text per product. Token counts are estimated as characters / 4 (no tokenizer is loaded; the estimate
is about right for English product text with Qwen/GPT tokenizers). Whitespace, including newlines, is collapsed to
single spaces so that a product cannot open a new line that imitates a prompt's structure. Everything that is
missing or cut is counted into the ``stats`` counter the caller passes in.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterable

from superb.errors import SpecError

CHARS_PER_TOKEN = 4  # the token estimate used for text budgets (documented above)
_WS = re.compile(r"\s+")


def clean(value: Any) -> str:
    """A field value as one line of text (None -> ""; lists joined with ", "; whitespace collapsed)."""
    if value is None:
        return ""
    if isinstance(value, float) and value != value:  # NaN from pandas
        return ""
    if isinstance(value, dict):
        value = "; ".join(f"{k}: {v}" for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value)
    return _WS.sub(" ", str(value)).strip()


def truncate(text: str, max_tokens: int) -> tuple[str, bool]:
    """Cut ``text`` to about ``max_tokens`` tokens (chars/4) at a word boundary; returns (text, was_cut)."""
    limit = max_tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip() + " ...", True


class ProductText:
    """Renders the prompt text of a product from a dataset's fields, within a token budget.

    One field is rendered as its value alone ("Apple iPhone 12 case"); several fields as "field: value" parts joined
    with " | ". The budget applies to the whole rendered text. Rendered texts are memoised per docno.
    """

    def __init__(self, dataset: Any, fields: Iterable[str] = ("title",), max_tokens: int = 64):
        self.dataset = dataset
        self.fields = tuple(fields)
        if not self.fields:
            raise ValueError("ProductText: fields is empty; name at least one product field, e.g. fields=('title',)")
        if int(max_tokens) < 1:
            raise ValueError(f"ProductText: max_tokens must be >= 1, got {max_tokens!r}")
        self.max_tokens = int(max_tokens)
        known = getattr(dataset, "fields", None)
        if known:
            unknown = [f for f in self.fields if f not in known]
            if unknown:
                raise SpecError("fields", f"unknown product field(s) {unknown}; this dataset has {sorted(known)}")
        self._memo: dict[str, tuple[str, Counter]] = {}

    def __repr__(self) -> str:
        return f"ProductText(fields={self.fields!r}, max_tokens={self.max_tokens})"

    def get(self, docno: str, stats: Counter | None = None) -> str:
        """The rendered text of ``docno``; counts text_missing_field / text_empty / text_truncated into ``stats``."""
        if docno not in self._memo:
            self._memo[docno] = self._render(docno)
        text, counts = self._memo[docno]
        if stats is not None:
            stats.update(counts)
        return text

    def _render(self, docno: str) -> tuple[str, Counter]:
        counts: Counter = Counter()
        doc = self.dataset.doc(docno)
        parts = []
        for f in self.fields:
            value = clean(doc.get(f)) if doc is not None else ""
            if not value:
                counts["text_missing_field"] += 1
                continue
            parts.append(value if len(self.fields) == 1 else f"{f}: {value}")
        text = " | ".join(parts)
        if not text:
            counts["text_empty"] += 1
            text = "(no text)"
        text, cut = truncate(text, self.max_tokens)
        if cut:
            counts["text_truncated"] += 1
        return text, counts
