"""Parsing judge answers: pure functions from model text (and token logprobs) to graded labels.

Grades are integers of a fixed label set (default 0..3). ``parse_grade`` is stricter than
superb.llm.parsing.parse_label (the first digit anywhere): a judge must not read "product 2 ... grade 3" as 2,
so an answer that mentions several different grades without leading with one is unparseable (counted, default label). A parser returns None when the answer is unparseable or
ambiguous; the judge then applies its documented default label and counts it. Nothing here raises on model output.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from superb.llm.types import TokenLogprob

_PREFIX = re.compile(r"^\s*(?:\*\*)?(?:final\s+)?(?:answer|grade|label|score|rating)\s*(?:\*\*)?\s*[:=\-]?\s*", re.I)
# label words of the SUPERB scale, longest first ("not relevant" before "relevant")
_WORDS = (("overall best", 3), ("almost best", 2), ("not relevant", 0), ("irrelevant", 0), ("relevant", 1))


def parse_grade(text: str | None, labels: Sequence[int] = (0, 1, 2, 3)) -> int | None:
    """One grade from a pointwise answer: "3", "Grade: 2", "**1**", "2 - almost best", "Overall best" -> int.

    The answer counts if it starts with a grade of the label set, or if it mentions exactly one distinct grade
    (as a standalone number or a label word); anything else (empty, several different grades, out of range) is None.
    """
    if not text:
        return None
    t = _PREFIX.sub("", text.strip()).strip().strip("*_`\"'[]() .,;:!").lower()
    if not t:
        return None
    allowed = {str(x): int(x) for x in labels}
    lead = re.match(r"(\d+)(?!\d|\.\d)", t)
    if lead:
        return allowed.get(lead.group(1))
    found = {allowed[m] for m in re.findall(r"(?<!\w)(?<!\d\.)(\d+)(?!\w|\.\d)", t) if m in allowed}
    rest = t
    for word, grade in _WORDS:
        if word in rest and grade in allowed.values():
            found.add(grade)
            rest = rest.replace(word, " ")
    return found.pop() if len(found) == 1 else None


def grade_distribution(logprobs: Sequence[TokenLogprob] | None, labels: Sequence[int] = (0, 1, 2, 3)
                       ) -> dict[int, float] | None:
    """P(grade) over the label set at the first generated position whose top alternatives include a grade
    (superb.llm.parsing.first_distribution); every label present as a key. None without logprobs."""
    from superb.llm.parsing import first_distribution

    dist, _ = first_distribution(logprobs or (), {str(x): int(x) for x in labels})
    if dist is None:
        return None
    return {int(x): float(dist.get(int(x), 0.0)) for x in labels}


_LIST_LINE = re.compile(r"^\W*(?:product\s*)?\[?\s*(\d+)\s*\]?\s*(?:[:=\-\u2013>]|\bis\b)+\s*\W*(\d+)\b", re.I)


def parse_listwise(text: str | None, n: int, labels: Sequence[int] = (0, 1, 2, 3)
                   ) -> tuple[dict[int, int], dict[str, int]]:
    """Grades of items 1..n from lines like "[3]: 2". Returns ({item: grade}, counts) where counts has
    out_of_range (item number not in 1..n), bad_grade (grade not in the label set), duplicates (an item graded
    again; the first grade is kept) and missing (items without a grade)."""
    allowed = {int(x) for x in labels}
    grades: dict[int, int] = {}
    counts = {"out_of_range": 0, "bad_grade": 0, "duplicates": 0, "missing": 0}
    for line in (text or "").splitlines():
        m = _LIST_LINE.match(line.strip())
        if not m:
            continue
        item, grade = int(m.group(1)), int(m.group(2))
        if not 1 <= item <= n:
            counts["out_of_range"] += 1
        elif grade not in allowed:
            counts["bad_grade"] += 1
        elif item in grades:
            counts["duplicates"] += 1
        else:
            grades[item] = grade
    counts["missing"] = n - len(grades)
    return grades, counts
