"""THE answer readers: how a model's answer becomes a value, for every reranker and judge, built-in or plug-in.

One module, so that a one-token answer is read one way wherever it is asked (pointwise and deliberated rerankers,
the scoring judges, a plug-in's ``score()``):

- :class:`YesProbability`: P(yes) renormalised over {yes, no} at the first generated position that offers either;
  the written word when there are no probabilities.
- :class:`ExpectedGrade`: the expected grade sum_g g * P(g) over the label tokens (renormalised), divided by
  ``scale`` (3 puts a 0-3 grade in [0, 1]); the written grade when there are no probabilities, read ``lenient``
  (the first digit of the label set anywhere: the rerankers' reading, which their committed tables re-derive from) or
  ``strict`` (:func:`superb.llm.parsing.parse_grade`: the judges'). With a ``cue`` (UMBRELA's "final score"), the
  probabilities are read at the grade the answer writes after the cue ("##final score: 2"), not at the first
  position where a digit is merely an alternative.
- :class:`WrittenGrade`: the grade a pointwise answer writes, read strictly (the generated judges' reading), with
  P(that grade) as its confidence.
- :class:`UmbrelaGrade`: the grade an UMBRELA answer writes, read by UMBRELA's own rule
  (:func:`superb.llm.parsing.parse_umbrela`); an answer it cannot read is "unparsed" (UMBRELA gives it 0, flagged).
- first-identifier probabilities (:func:`first_identifier_probabilities`: P(A), P(B), ... at the first generated
  token: setwise and pairwise preferences) and permutations (:func:`permutation`: "[3] > [1] > [2]": listwise).

A reader's ``read(completion)`` gives a :class:`Reading`: the value and how it was obtained (``source``:
"probabilities", "text" — a repair, to be counted —, "unparsed" or "failed"), so each caller counts its fallbacks
under its own names. Nothing here calls a model or raises on bad output. The parsing underneath is
superb.llm.parsing (pure string and logprob functions).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from superb.llm.parsing import (LETTERS, YES_NO_TOKENS, distribution_after, first_distribution,
                                first_letter_distribution, grade_after, grade_distribution, parse_confidence,
                                parse_grade, parse_label, parse_letter, parse_listwise, parse_permutation,
                                parse_umbrela, parse_yes_no)

PROBABILITIES, TEXT, UNPARSED, FAILED = "probabilities", "text", "unparsed", "failed"
WRITTEN = "written"  # a reader whose value IS the written answer (UMBRELA's score): not a repair


@dataclass(frozen=True)
class Reading:
    """One answer read: ``value`` (None when ``source`` is "unparsed" or "failed"), ``source``, and ``position``,
    the generated position the probabilities were read at (-1 without probabilities; > 0: the label came after some
    other token, e.g. a space or markup)."""

    value: float | None
    source: str
    position: int = -1


class _LabelReader:
    """A reading of a one-token label answer: ``vocabulary`` maps answer tokens to answers; subclasses say how a
    distribution over the answers, or a written answer, becomes a value."""

    name = "label"
    vocabulary: Mapping[str, Any] = {}

    def from_distribution(self, dist: Mapping[Any, float]) -> float:
        raise NotImplementedError

    def from_text(self, text: str) -> float | None:
        raise NotImplementedError

    def distribution(self, logprobs: Iterable[object] | None) -> tuple[dict | None, int]:
        """The answer distribution at the first generated position offering an answer token, and that position."""
        return first_distribution(logprobs or (), self.vocabulary)

    def read(self, completion: Any) -> Reading:
        if completion.failed:
            return Reading(None, FAILED)
        dist, at = self.distribution(completion.logprobs)
        if dist is not None:
            return Reading(self.from_distribution(dist), PROBABILITIES, at)
        value = self.from_text(completion.text)
        return Reading(None, UNPARSED) if value is None else Reading(value, TEXT)


class YesProbability(_LabelReader):
    """P(yes) renormalised over {yes, no}: a value in [0, 1] (written "yes" -> 1, "no" -> 0)."""

    name = "p_yes"
    vocabulary = YES_NO_TOKENS
    low, high = 0.0, 1.0

    def __repr__(self) -> str:
        return "YesProbability()"

    def from_distribution(self, dist: Mapping[Any, float]) -> float:
        return float(dist.get(True, 0.0))

    def from_text(self, text: str) -> float | None:
        answer = parse_yes_no(text)
        return None if answer is None else float(answer)


class ExpectedGrade(_LabelReader):
    """The expected grade over ``labels`` divided by ``scale``; a written grade read ``lenient`` or ``strict``
    (module docstring)."""

    name = "expected_grade"

    def __init__(self, labels: Sequence[int] = (0, 1, 2, 3), *, scale: float = 1.0, text: str = "strict",
                 cue: str | None = None):
        if text not in ("strict", "lenient"):
            raise ValueError(f"ExpectedGrade: text must be \"strict\" or \"lenient\", got {text!r}")
        self.labels = tuple(int(x) for x in labels)
        self.vocabulary = {str(x): x for x in self.labels}
        self.scale, self.text, self.cue = float(scale), text, cue
        self.low, self.high = min(self.labels) / self.scale, max(self.labels) / self.scale

    def __repr__(self) -> str:
        cue = "" if self.cue is None else f", cue={self.cue!r}"
        return f"ExpectedGrade(labels={self.labels}, scale={self.scale:g}, text={self.text!r}{cue})"

    def distribution(self, logprobs: Iterable[object] | None) -> tuple[dict | None, int]:
        if self.cue is None:
            return super().distribution(logprobs)
        return distribution_after(logprobs or (), self.cue, self.vocabulary)

    def from_distribution(self, dist: Mapping[Any, float]) -> float:
        return float(sum(g * p for g, p in dist.items())) / self.scale

    def from_text(self, text: str) -> float | None:
        if self.cue is not None:
            grade = grade_after(text, self.cue, self.labels)
        else:
            grade = (parse_grade if self.text == "strict" else parse_label)(text, self.labels)
        return None if grade is None else grade / self.scale

    def most_probable(self, completion: Any) -> tuple[int, float] | None:
        """(grade, its probability) of the most probable grade (a tie goes to the lower grade), or None without
        probabilities."""
        dist, _ = self.distribution(completion.logprobs)
        if dist is None:
            return None
        grade = max(dist, key=lambda k: (dist[k], -k))
        return grade, dist[grade]


class WrittenGrade:
    """The grade a pointwise answer writes ("3", "Grade: 2", "2 - almost best"), read strictly
    (superb.llm.parsing.parse_grade); source "written", or "unparsed". ``confidence``: P(that grade) at the first
    generated position offering a grade token, when the answer carried probabilities."""

    name = "grade"

    def __init__(self, labels: Sequence[int] = (0, 1, 2, 3)):
        self.labels = tuple(int(x) for x in labels)
        self.low, self.high = float(min(self.labels)), float(max(self.labels))

    def __repr__(self) -> str:
        return f"WrittenGrade(labels={self.labels})"

    def read(self, completion: Any) -> Reading:
        if completion.failed:
            return Reading(None, FAILED)
        grade = parse_grade(completion.text, self.labels)
        return Reading(None, UNPARSED) if grade is None else Reading(float(grade), WRITTEN)

    def confidence(self, completion: Any, value: float | None) -> float | None:
        dist = grade_distribution(completion.logprobs, self.labels)
        return None if dist is None or value is None else dist.get(int(value))


class UmbrelaGrade:
    """The grade an UMBRELA answer writes ("##final score: 2" -> 2), read by UMBRELA's own rule
    (superb.llm.parsing.parse_umbrela); source "written", or "unparsed" where UMBRELA would give 0 and flag it."""

    name = "written"
    low, high = 0.0, 3.0

    def __repr__(self) -> str:
        return "UmbrelaGrade()"

    def read(self, completion: Any) -> Reading:
        if completion.failed:
            return Reading(None, FAILED)
        grade, valid = parse_umbrela(completion.text)
        return Reading(float(grade), WRITTEN) if valid else Reading(None, UNPARSED)


@dataclass(frozen=True)
class Choice:
    """What one label request said about options labelled ``letters[:n]``.

    ``dist``: probability per option, in label order (renormalised over the option letters; an option whose letter is
    not among the top logprobs gets 0), or None when there is no answer. ``source``: "logprobs", "generated" (no
    logprobs: the generated letter, one-hot), "no_label" or "failed". ``mass``: the probability the option letters held
    among the top logprobs before renormalisation (1.0 for a generated letter, 0.0 without an answer).
    """

    dist: tuple[float, ...] | None
    source: str
    mass: float = 0.0
    text: str = ""

    @property
    def answered(self) -> bool:
        return self.dist is not None


def read_choice(comp: Any, n: int, letters: Sequence[str] = LETTERS) -> Choice:
    """The distribution over ``n`` lettered options that a one-token completion gives (see ``Choice``)."""
    if not 1 <= n <= len(letters):
        raise ValueError(f"read_choice: n must be between 1 and {len(letters)} (the letters available), got {n}")
    options = tuple(letters[:n])
    if comp.failed:
        return Choice(None, "failed", 0.0, comp.error or "")
    if comp.logprobs:
        dist, mass = first_identifier_probabilities(comp, options)
        if dist is None:
            return Choice(None, "no_label", 0.0, comp.text)
        return Choice(tuple(dist[x] for x in options), "logprobs", mass, comp.text)
    letter = written_identifier(comp, options)
    if letter is None:
        return Choice(None, "no_label", 0.0, comp.text)
    return Choice(tuple(1.0 if x == letter else 0.0 for x in options), "generated", 1.0, comp.text)


def first_identifier_probabilities(completion: Any, letters: Sequence[str] = LETTERS
                                   ) -> tuple[dict[str, float] | None, float]:
    """P(letter) over ``letters`` at the FIRST generated token (renormalised) and the raw mass the letters held:
    which item a set or pair prompt's answer names. (None, 0.0) without probabilities."""
    return first_letter_distribution(completion.logprobs or (), letters)


def written_identifier(completion: Any, letters: Sequence[str] = LETTERS) -> str | None:
    """The letter a written answer starts with ("B", "**B**", "Product A"), or None."""
    return parse_letter(completion.text, letters)


def graded_list(text: str | None, n: int, labels: Sequence[int] = (0, 1, 2, 3)) -> tuple[dict[int, int], dict]:
    """Grades of items 1..n from lines like "[3]: 2", with counts of what was refused
    (superb.llm.parsing.parse_listwise)."""
    return parse_listwise(text, n, labels)


def stated_confidence(text: str) -> float | None:
    """A confidence the answer states ("confidence: 80%", "Confidence 0.8") as a probability, or None."""
    return parse_confidence(text)


def permutation(text: str, n: int) -> tuple[list[int], Counter]:
    """A RankGPT-style answer over identifiers 1..n as positions 0..n-1, best first, with its repairs counted
    (superb.llm.parsing.parse_permutation)."""
    return parse_permutation(text, n)
