"""Pure parsing of model outputs: listwise permutations, graded labels, yes/no, label distributions from logprobs,
and letter labels (A, B, C, ...) naming products, read from logprobs or from the generated text.

Grades are read two ways, both here: :func:`parse_label` (the first digit of the label set anywhere: the rerankers'
reading, kept as it is because the committed tables re-derive from it) and :func:`parse_grade` (the judges': stricter,
so "product 2 ... grade 3" is not read as 2; an answer mentioning several different grades without leading with one
is unparseable, counted, and given the judge's default label). :func:`parse_listwise` reads a judge's graded list.

Nothing here calls a model or raises on bad output: every function returns its best reading and says what it had
to repair, so the caller can count it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Iterable, Mapping, Sequence

_BRACKETED = re.compile(r"\[\s*(\d+)\s*\]")
_BARE = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
_LABEL = re.compile(r"(?<!\d)([0-9])(?!\d)")
_CONFIDENCE = re.compile(r"confiden\w*\W{0,3}(\d{1,3}(?:\.\d+)?)\s*(%?)", re.IGNORECASE)
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_permutation(text: str, n: int) -> tuple[list[int], Counter]:
    """Read a RankGPT-style answer such as "[3] > [1] > [2]" over identifiers 1..n.

    Returns ``(order, repairs)``: ``order`` is a permutation of the positions 0..n-1, best first; ``repairs`` counts
    what was fixed, by kind: ``unbracketed`` (no [k] found; bare numbers were read instead), ``duplicate`` (an id
    repeated; later mentions ignored), ``unknown_id`` (outside 1..n; ignored), ``missing`` (ids never mentioned;
    appended in their prior order), ``empty`` (no usable id at all; the prior order is kept).
    """
    if n < 0:
        raise ValueError(f"parse_permutation: n must be >= 0, got {n}")
    repairs: Counter = Counter()
    text = text or ""
    found = _BRACKETED.findall(text)
    if not found:
        found = _BARE.findall(text)
        if found:
            repairs["unbracketed"] += 1
    order: list[int] = []
    seen: set[int] = set()
    for token in found:
        ident = int(token) if len(token) <= 6 else -1  # absurdly long numbers are unknown ids
        if not 1 <= ident <= n:
            repairs["unknown_id"] += 1
            continue
        if ident in seen:
            repairs["duplicate"] += 1
            continue
        seen.add(ident)
        order.append(ident - 1)
    if not order and n > 0:
        repairs["empty"] += 1
    missing = [i for i in range(n) if i + 1 not in seen]
    if missing and order:
        repairs["missing"] += len(missing)
    return order + missing, repairs


def parse_label(text: str, labels: Sequence[int] = (0, 1, 2, 3)) -> int | None:
    """The first single digit in ``text`` that is one of ``labels``, or None."""
    allowed = set(labels)
    for m in _LABEL.finditer(text or ""):
        if int(m.group(1)) in allowed:
            return int(m.group(1))
    return None


def parse_yes_no(text: str) -> bool | None:
    """True for a leading "yes", False for "no" (the first of the two words in the text), None if neither."""
    m = _YES_NO.search(text or "")
    return None if m is None else m.group(1).lower() == "yes"


def parse_confidence(text: str) -> float | None:
    """A stated confidence ("confidence: 80%", "Confidence 0.8") as a probability in [0, 1], or None."""
    m = _CONFIDENCE.search(text or "")
    if m is None:
        return None
    value = float(m.group(1))
    if m.group(2) == "%" or value > 1.0:
        value /= 100.0
    return value if 0.0 <= value <= 1.0 else None


def token_distribution(top: Mapping[str, float], vocabulary: Mapping[str, object]) -> dict[object, float] | None:
    """Renormalised probabilities over the answers in ``vocabulary`` from one position's top logprobs.

    ``top`` maps token -> logprob; ``vocabulary`` maps a normalised token (stripped, lower-cased) to its answer,
    e.g. {"0": 0, ..., "3": 3} or {"yes": True, "no": False}. Several tokens that normalise to the same answer
    (" 3", "3") add up. Returns None when no listed token is an answer.
    """
    mass: dict[object, float] = {}
    for token, logprob in top.items():
        key = token.strip().lower()
        if key in vocabulary and logprob is not None and math.isfinite(logprob):
            answer = vocabulary[key]
            mass[answer] = mass.get(answer, 0.0) + math.exp(min(logprob, 0.0))  # > 0 is malformed: probability 1
    total = sum(mass.values())
    if total <= 0.0:
        return None
    return {a: p / total for a, p in mass.items()}


def first_distribution(positions: Iterable[object], vocabulary: Mapping[str, object]) -> tuple[dict | None, int]:
    """The answer distribution at the first generated position whose alternatives include an answer token.

    ``positions`` are TokenLogprob-like objects (``.token``, ``.logprob``, ``.top``). Returns (distribution or None,
    index of the position used or -1). The chosen token itself counts as an alternative when ``top`` misses it.
    """
    for i, pos in enumerate(positions or ()):
        top = dict(pos.top or {})
        top.setdefault(pos.token, pos.logprob)
        dist = token_distribution(top, vocabulary)
        if dist is not None:
            return dist, i
    return None, -1


LABEL_TOKENS = {str(k): k for k in range(4)}
YES_NO_TOKENS = {"yes": True, "no": False}


# ---- judge grades: one grade per answer (parse_grade), P(grade) from logprobs, a graded list -------------------------

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


def grade_distribution(logprobs: Iterable[object] | None, labels: Sequence[int] = (0, 1, 2, 3)
                       ) -> dict[int, float] | None:
    """P(grade) over the label set at the first generated position whose top alternatives include a grade
    (:func:`first_distribution`; TokenLogprob-like positions); every label present as a key. None without logprobs."""
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


# ---- letter labels: "A", "B", ... naming the products of a pairwise, setwise or listwise prompt -------------------

LETTERS = tuple("ABCDEFGHIJKLMNOPQRST")  # 20 single-token identifiers: the API returns at most 20 top logprobs
_LETTER_MARKUP = " \t\r\n*_[](){}<>\"'`#.:,;!-=|"
_LETTER_TEXT = re.compile(r"^(?:(?:product|option|passage|answer|choice)\s*[:=\-]?\s*)?([A-Z])(?![A-Za-z0-9])",
                          re.IGNORECASE)


def letter_of(token: str, letters: Sequence[str]) -> str | None:
    """The letter a token stands for, or None: markup and whitespace around it are ignored ("A", " A", "[A", "**A",
    "(A", "A.", "A)" all read "A"); the case must match (a lower-case "a" is the article, not an answer)."""
    key = (token or "").strip(_LETTER_MARKUP)
    return key if key in letters else None


def letter_distribution(top: Mapping[str, float], letters: Sequence[str]) -> tuple[dict[str, float] | None, float]:
    """Renormalised probabilities over ``letters`` from one position's top logprobs, and the raw label mass.

    Token variants of one letter (``letter_of``) add up; a letter absent from ``top`` gets probability 0. Returns
    ``(distribution, mass)``: ``mass`` is the summed probability of the letter tokens before renormalisation (how
    much of the model's belief the labels hold); the distribution is None when no letter token is among ``top``.
    """
    mass = dict.fromkeys(letters, 0.0)
    for token, logprob in top.items():
        letter = letter_of(token, letters)
        if letter is not None and logprob is not None and math.isfinite(logprob):
            mass[letter] += math.exp(min(logprob, 0.0))  # a logprob above 0 is malformed: read as probability 1
    total = sum(mass.values())
    if total <= 0.0:
        return None, 0.0
    return {letter: p / total for letter, p in mass.items()}, min(total, 1.0)


def first_letter_distribution(positions: Iterable[object], letters: Sequence[str]
                              ) -> tuple[dict[str, float] | None, float]:
    """``letter_distribution`` at the FIRST generated position (TokenLogprob-like: ``.token``, ``.logprob``,
    ``.top``; the chosen token counts as an alternative when ``top`` misses it). Only the first position is read: the
    first letter the model would write is the answer. (None, 0.0) when there is no position or no letter in it."""
    for pos in positions or ():
        top = dict(pos.top or {})
        top.setdefault(pos.token, pos.logprob)
        return letter_distribution(top, letters)
    return None, 0.0


def parse_letter(text: str | None, letters: Sequence[str]) -> str | None:
    """The letter a generated answer starts with ("B", "**B**", "[C]", "Product A", "Answer: D"), if it is one of
    ``letters``; None otherwise. An upper-case letter is required unless the answer is prefixed ("product a")."""
    t = (text or "").strip(_LETTER_MARKUP)
    m = _LETTER_TEXT.match(t)
    if m is None:
        return None
    letter = m.group(1)
    if letter not in letters and m.start(1) > 0:  # "product a": the prefix makes a lower-case letter an answer
        letter = letter.upper()
    return letter if letter in letters else None


# ---- UMBRELA's written score ("##final score: 2"), read as castorini/umbrela reads it -------------------------------
# The rule of umbrela's parse_fewshot_response (castorini/umbrela @ 16cba3eb, src/umbrela/utils/common_utils.py): the
# answer is stripped and lower-cased; these patterns are tried in this order, and the FIRST one that matches anywhere
# gives the grade of its LAST match; when none matches, the grade is 0 and the answer is flagged invalid. The rule is
# restated here (umbrela writes the separator class as [:-=], the characters : ; < =).
_SEP = r"\s*[:;<=]?\s*([0-3])"
UMBRELA_PATTERNS = tuple(re.compile(p, re.IGNORECASE | re.MULTILINE | re.DOTALL) for p in (
    r'"o"' + _SEP, r"'o'" + _SEP, r"o" + _SEP,
    r'"overall_score"' + _SEP, r'"overall"' + _SEP, r'"overall score"' + _SEP, r'"final score"' + _SEP,
    r"final score" + _SEP, r"final score is ([0-3])", r'"final_score"' + _SEP, r'"score"' + _SEP,
    r'"o_score"' + _SEP, r"output score is ([0-3])", r"score is ([0-3])", r"[a-zA-Z]+\s+is\s+([0-3])\s",
    r"relevance category" + _SEP, r"relevance category" + _SEP, r"relevance category is ([0-3])",
    r"it falls into the category ([0-3])", r"category\s*([0-3])", r"relevance category ([0-3])",
    r"relevance category for this passage would be ([0-3])", r"the relevance category would be ([0-3])",
    r"\n*([0-3])"))


def parse_umbrela(text: str | None) -> tuple[int, bool]:
    """(grade, valid) of an UMBRELA answer by UMBRELA's own rule (above): an answer no pattern reads is (0, False)."""
    answer = (text or "").strip().lower()
    for pattern in UMBRELA_PATTERNS:
        last = None
        for last in pattern.finditer(answer):
            pass
        if last is not None:
            return int(last.group(1)), True
    return 0, False


def distribution_after(positions: Iterable[object], cue: str, vocabulary: Mapping[str, object]
                       ) -> tuple[dict | None, int]:
    """The answer distribution at the first generated position AFTER the text ``cue`` (case-insensitive) whose
    generated token is itself an answer token: the digit of "##final score: 2", not an earlier position where a
    digit was only an unlikely alternative. (None, -1) when the cue is never written or no answer token follows it."""
    seen, cue = "", cue.lower()
    after = False
    for i, pos in enumerate(positions or ()):
        if after and pos.token.strip().lower() in vocabulary:
            top = dict(pos.top or {})
            top.setdefault(pos.token, pos.logprob)
            return token_distribution(top, vocabulary), i
        seen += pos.token.lower()
        after = after or cue in seen
    return None, -1


def grade_after(text: str | None, cue: str, labels: Sequence[int] = (0, 1, 2, 3)) -> int | None:
    """The grade written right after the last ``cue`` in ``text`` ("##final score: 2" -> 2), or None."""
    found = None
    for found in re.finditer(re.escape(cue) + r"\s*[:;<=]?\s*(\d+)(?!\d)", text or "", re.IGNORECASE):
        pass
    if found is None:
        return None
    grade = int(found.group(1))
    return grade if grade in set(int(x) for x in labels) else None
