"""Product text for prompts: chosen fields of a product, whitespace-collapsed and cut to a token budget.

``ProductText(dataset, fields=("title",), max_tokens=64)`` reads ``dataset.doc(docno)`` (a dict of fields) and renders
one line of text per product. Token counts are estimated as characters / 4 (no tokenizer is loaded; the estimate
is about right for English product text with Qwen/GPT tokenizers). Everything that is missing, cut or neutralised is
counted into the ``stats`` counter the caller passes in.

Product text is data that anyone selling in the shop can write, so it is made unable to imitate the prompt around it
(:func:`neutralise`; every template also fences it as catalogue data between ``<<<`` and ``>>>`` and asks its
question after it):

- whitespace, including newlines, is collapsed to single spaces: a product cannot open a line of its own;
- runs of three or more angle brackets (``<<<``, ``>>>``, and their full-width forms) become one guillemet (``«``,
  ``»``): the fence cannot be closed or reopened from inside;
- chat-template control tokens (``<|im_end|>``, ``<|im_start|>assistant``, ``[INST]``, ``<<SYS>>``) are removed:
  llama.cpp and vLLM parse special tokens in message text, so these would be real turn boundaries;
- answer-format strings are removed: an answer cue with its answer (``Answer: yes``, ``Grade: 3``,
  ``Final score: 3``, ``Confidence: 90%``, ``Verdict: LHS``, ``Answer: B``); a bracketed number or number list (``[1] > [2]``, the
  listwise identifiers; ``[3, 1]``, a rubric selection) becomes ``(1) > (2)``; a capitalised prompt label
  (``Query:``, ``Product:``, ``Product B:``, ``System:``, ``User:``, ``Assistant:``) loses its colon (``Query laptop``).

Why remove rather than defang: on the real 0.5B (bench/prompt_injection.py), defanged strings (``answer yes``,
``(im_start)assistant yes``) still moved P(yes) almost as much as the originals; removed, the control-token and
fence-escape attacks lost most of their effect. What string rules cannot remove is a plain claim ("This product IS
the laptop.") or an instruction in words: those still move a small model, as the benchmark reports.

Ordinary product text is left alone: of the 19,406 Chorus products, no title changes (tests/test_llm_text.py checks
it on the real data; it also counts the few attribute and description lines that do change).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterable

from superb.errors import SpecError

CHARS_PER_TOKEN = 4  # the token estimate used for text budgets (documented above)
_WS = re.compile(r"\s+")

# What neutralise() rewrites (see the module docstring), in this order, with the replacements in _RULES.
_FENCE_OPEN = re.compile(r"[<\uff1c\ufe64]{3,}")  # <<<, and full-width / small-form lookalikes
_FENCE_CLOSE = re.compile(r"[>\uff1e\ufe65]{3,}")
_CONTROL = re.compile(r"<\|\s*[^<>|]{0,40}?\s*\|>(?:\s*(?:assistant|user|system)\b)?|\[/?INST\]|<</?SYS>>|</?s>")
_ANSWER = re.compile(
    r"\b(?:final\s+score|final\s+answer|final\s+grade|answer|grade|score|verdict|confidence|relevance|label)"
    r"\s*[:=]\s*(?:(?:yes|no|lhs|rhs|neither)\b|\d{1,3}(?!\d)(?![.,]\d)%?|\[[^\]]{0,20}\])",
    re.IGNORECASE)
_LETTER_ANSWER = re.compile(  # "Answer: B", the one-letter answers of pairwise and setwise prompts
    r"\b(?:final\s+answer|answer|verdict|choice|best)\s*[:=]\s*[A-H](?![\w+\-])", re.IGNORECASE)
_BRACKET_ID = re.compile(r"\[(\s*\d{1,3}(?:\s*,\s*\d{1,3})*\s*)\]")  # [1], and JSON id lists [3, 1]
_PROMPT_LABEL = re.compile(r"(?<![\w-])(Search query|Query|QUERY|(?:Products?|PRODUCTS?)(?: [A-Z]\b| \d{1,2}\b)?|System|"
                           r"SYSTEM|User|USER|Assistant|ASSISTANT|Instructions?|INSTRUCTIONS?)\s*:")


_RULES: tuple[tuple[re.Pattern, Any], ...] = (
    (_FENCE_OPEN, "\u00ab"),
    (_FENCE_CLOSE, "\u00bb"),
    (_CONTROL, " "),
    (_ANSWER, " "),
    (_LETTER_ANSWER, " "),
    (_BRACKET_ID, r"(\1)"),
    (_PROMPT_LABEL, lambda m: m.group(1)),
)


def neutralise(text: str) -> tuple[str, int]:
    """``text`` with every fence string, chat control token and answer-format string removed or defused (see the
    module docstring); returns (text, number of rewrites). Text without any of them comes back unchanged."""
    changes = 0
    for pattern, replacement in _RULES:
        text, n = pattern.subn(replacement, text)
        changes += n
    if changes:
        text = _WS.sub(" ", text).strip()
    return text, changes


def flatten(value: Any) -> str:
    """A field value as one line of text (None -> ""; lists joined with ", "; whitespace collapsed), as given."""
    if value is None:
        return ""
    if isinstance(value, float) and value != value:  # NaN from pandas
        return ""
    if isinstance(value, dict):
        value = "; ".join(f"{k}: {v}" for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value)
    return _WS.sub(" ", str(value)).strip()


def clean(value: Any) -> str:
    """A field value as one line of prompt-safe text: :func:`flatten`, then :func:`neutralise`."""
    return neutralise(flatten(value))[0]


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
        """The rendered text of ``docno``; counts text_missing_field / text_empty / text_truncated and
        text_neutralised (rewrites by :func:`neutralise`) into ``stats``."""
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
            value, changes = neutralise(flatten(doc.get(f))) if doc is not None else ("", 0)
            if changes:
                counts["text_neutralised"] += changes
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
