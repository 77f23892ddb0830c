"""Pure parsing of the rubric reranker's answers (moved from superb/transformers/rubric.py, beside the other prompt
parsers in superb.llm.parsing): the query-specific rubrics, the selected set, and the per-rubric scores of a set.

Like superb.llm.parsing, nothing here calls a model or raises on bad output: each parser returns its best reading and
a Counter naming every repair or default, so the caller counts it (``RubricReranker.stats``, ``RubricReward.stats``).
JSON is read from anywhere in the text (code fences and prose allowed), bounded so hostile output cannot make it slow.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from superb.llm.text import clean

MAX_RUBRICS = 8
NAME_CHARS, DESCRIPTION_CHARS = 60, 240
DEFAULT_WEIGHT = 3


@dataclass(frozen=True)
class Rubric:
    name: str
    description: str
    weight: int  # importance 1..5
    level: str = "set"  # "set" | "item"


# The meta-rubrics, used as they are when the model's rubrics cannot be parsed (counted as rubrics_defaulted).
DEFAULT_RUBRICS: tuple[Rubric, ...] = (
    Rubric("coverage", "The selected products are what the query asks for and cover its key aspects.", 5, "set"),
    Rubric("conciseness", "Little redundancy: no near-duplicate products in the selection.", 3, "set"),
    Rubric("consistency", "No contradictions: the selection does not mix incompatible product kinds.", 2, "set"),
    Rubric("brand_authority", "Products come from reputable, established brands or sellers.", 2, "item"),
    Rubric("recency", "Current, up-to-date product models rather than outdated ones.", 2, "item"),
    Rubric("spec_completeness", "Product listings state the specifications a shopper needs.", 1, "item"),
)


def json_values(text: str, *, max_chars: int = 20000, max_attempts: int = 200) -> Iterator[Any]:
    """JSON values embedded in ``text`` (code fences and prose around them allowed), in order of appearance.

    Tries ``raw_decode`` at each '[' or '{' (bounded by ``max_attempts`` and ``max_chars`` so hostile output
    cannot make parsing slow); a decoded value's inner brackets are skipped."""
    text = (text or "")[:max_chars]
    pos, attempts = 0, 0
    decoder = json.JSONDecoder()
    while attempts < max_attempts:
        starts = [i for i in (text.find("[", pos), text.find("{", pos)) if i >= 0]
        if not starts:
            return
        start = min(starts)
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # not JSON here, or absurdly deep nesting: try the next bracket
            pos = start + 1
            continue
        yield value
        pos = end


def _int_in(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and value == value:
        return int(round(value))
    if isinstance(value, str):
        m = re.search(r"-?\d+(?:\.\d+)?", value)
        return int(round(float(m.group()))) if m else None
    return None


def parse_rubrics(text: str, max_rubrics: int = MAX_RUBRICS) -> tuple[list[Rubric], Counter]:
    """Rubrics from the generation answer: a JSON list (or {"rubrics": [...]}) of objects with name, description,
    weight (1..5) and level ("set"/"item"); the complete objects of a cut-off list are kept (rubrics_repaired).
    Returns (rubrics, counts); counts name every repair: weight_defaulted,
    weight_clamped, level_defaulted, rubric_dropped, rubrics_truncated, rubrics_duplicate, and rubrics_defaulted
    (nothing usable: the meta-rubrics DEFAULT_RUBRICS are returned)."""
    counts: Counter = Counter()
    items: list[Any] | None = None
    loose: list[dict] = []  # rubric-like objects outside any complete list (e.g. a list cut by max_tokens)
    for value in json_values(text):
        if isinstance(value, dict) and ("rubrics" in value or "Rubrics" in value):
            value = value.get("rubrics", value.get("Rubrics"))
        elif isinstance(value, dict) and {"name", "description"} & {str(k).lower() for k in value}:
            loose.append(value)
            continue
        if isinstance(value, list) and any(isinstance(v, (dict, str)) for v in value):
            items = value
            break
    if items is None and loose:
        counts["rubrics_repaired"] += 1
        items = loose
    out: list[Rubric] = []
    seen: set[str] = set()
    for item in items or []:
        rubric = _rubric(item, counts)
        if rubric is None:
            counts["rubric_dropped"] += 1
        elif rubric.name.lower() in seen:
            counts["rubrics_duplicate"] += 1
        elif len(out) >= max_rubrics:
            counts["rubrics_truncated"] += 1
        else:
            seen.add(rubric.name.lower())
            out.append(rubric)
    if not out:
        counts["rubrics_defaulted"] += 1
        return list(DEFAULT_RUBRICS), counts
    return out, counts


def _rubric(item: Any, counts: Counter) -> Rubric | None:
    if isinstance(item, str):
        item = {"description": item}
    if not isinstance(item, dict):
        return None
    lower = {str(k).lower(): v for k, v in item.items()}
    name = clean(lower.get("name") or lower.get("rubric") or lower.get("title"))[:NAME_CHARS]
    description = clean(lower.get("description") or lower.get("criterion") or "")[:DESCRIPTION_CHARS]
    if not name and not description:
        return None
    name = name or description[:NAME_CHARS]
    weight = _int_in(lower.get("weight", lower.get("importance")))
    if weight is None:
        counts["weight_defaulted"] += 1
        weight = DEFAULT_WEIGHT
    elif not 1 <= weight <= 5:
        counts["weight_clamped"] += 1
        weight = min(5, max(1, weight))
    level = clean(lower.get("level") or lower.get("type")).lower()
    if level not in ("set", "item"):
        counts["level_defaulted"] += 1
        level = "item" if level in ("document", "doc", "product") else "set"
    return Rubric(name=name, description=description or name, weight=weight, level=level)


def parse_selection(text: str, k: int, m: int) -> tuple[list[int], Counter]:
    """The selected candidates (0-based positions, best first, at most ``m``) from an answer naming 1-based ids.

    Accepts bracketed ids "[3] > [1]" (two or more) or a JSON list of ids ([3, 1, "7"], or an object holding one);
    else a single bracketed id or bare integers (counted as selection_repaired). Ids outside 1..k
    (selection_invalid), repeats (selection_duplicate) and ids beyond m (selection_truncated) are dropped and
    counted; no usable id -> [] (selection_empty)."""
    counts: Counter = Counter()
    bracketed = [int(x) for x in re.findall(r"\[\s*(\d{1,4})\s*\]", text or "")]
    ids: list[int] | None = bracketed if len(bracketed) >= 2 else None  # RankGPT style "[3] > [1] > [2]"
    for value in ([] if ids is not None else json_values(text)):
        if isinstance(value, dict):
            value = next((v for v in value.values() if isinstance(v, list)), None)
        if isinstance(value, list) and value:
            got = [_int_in(v) for v in value if not isinstance(v, (list, dict))]
            if got and all(g is not None for g in got):
                ids = [g for g in got if g is not None]
                break
    if ids is None:
        ids = bracketed or [int(x) for x in re.findall(r"(?<![\d.])\d{1,4}(?![\d.])", text or "")]
        if ids:
            counts["selection_repaired"] += 1
    out: list[int] = []
    for i in ids:
        if not 1 <= i <= k:
            counts["selection_invalid"] += 1
        elif i - 1 in out:
            counts["selection_duplicate"] += 1
        elif len(out) >= m:
            counts["selection_truncated"] += 1
        else:
            out.append(i - 1)
    if not out:
        counts["selection_empty"] += 1
    return out, counts


def parse_rubric_scores(text: str, rubrics: Sequence[Rubric]) -> tuple[list[float | None], Counter]:
    """One score 0..10 per rubric (None when missing) from a JSON object keyed by rubric number or name, a JSON
    list in rubric order, or lines "1: 7" (whichever reading finds more scores; the lines reading is counted as
    scores_repaired). Out-of-range scores are clamped (score_clamped); missing ones counted (score_missing)."""
    n = len(rubrics)
    names = {r.name.lower(): i for i, r in enumerate(rubrics)}
    from_json: tuple[list[float | None], Counter] = ([None] * n, Counter())
    for value in json_values(text):
        scores, counts = [None] * n, Counter()
        if isinstance(value, dict):
            for key, v in value.items():
                key_s = str(key).strip().lower()
                idx = names.get(key_s)
                if idx is None and re.fullmatch(r"\d{1,3}", key_s):
                    idx = int(key_s) - 1
                if idx is not None and 0 <= idx < n:
                    scores[idx] = _score(v, counts)
        elif isinstance(value, list) and all(isinstance(v, (int, float, str)) for v in value):
            for idx, v in enumerate(value[:n]):
                scores[idx] = _score(v, counts)
        if any(s is not None for s in scores):
            from_json = (scores, counts)
            break
    from_lines: tuple[list[float | None], Counter] = ([None] * n, Counter())
    for key, v in re.findall(r"(?m)^\s*\[?(\d{1,3})\]?\s*[:.)=\-]\s*(-?\d+(?:\.\d+)?)", (text or "")[:20000]):
        idx = int(key) - 1
        if 0 <= idx < n and from_lines[0][idx] is None:
            from_lines[0][idx] = _score(v, from_lines[1])
    found = lambda parsed: sum(s is not None for s in parsed[0])  # noqa: E731
    scores, counts = from_lines if found(from_lines) > found(from_json) else from_json
    if scores is from_lines[0]:
        counts["scores_repaired"] += 1
    counts["score_missing"] += sum(s is None for s in scores)
    return scores, counts


def _score(value: Any, counts: Counter) -> float | None:
    if isinstance(value, dict):
        value = value.get("score")
    if isinstance(value, bool) or value is None:
        return None
    try:
        s = float(value) if not isinstance(value, str) else float(re.search(r"-?\d+(?:\.\d+)?", value).group())
    except (AttributeError, ValueError, TypeError):
        return None
    if s != s:
        return None
    if not 0.0 <= s <= 10.0:
        counts["score_clamped"] += 1
        s = min(10.0, max(0.0, s))
    return s
