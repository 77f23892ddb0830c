"""A fake judge model on real Chorus data: it reads the query and the fenced product title from a prompt, looks up
the combined human grade (ratings ``final``, else the qrels label) and answers one-token label requests with label
probabilities that follow that grade; pairwise A/B requests with P(A) following the grade difference."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from superb.testing.fakeserver import Reply

MIRROR = Path(os.environ.get("SUPERB_DATA_MIRROR") or Path(__file__).parents[2] / "shared" / "data")
P_YES = {0: 0.05, 1: 0.3, 2: 0.6, 3: 0.92}
_PRODUCT = re.compile(r"<<< (.*?) >>>", re.S)
_LETTERED = re.compile(r"^Product ([AB]): <<< (.*?) >>>$", re.M)
_SIDES = re.compile(r"(LHS|RHS) product:\s*<<<\s*(.*?)\s*>>>", re.S)


def _title(text: str) -> str:
    text = text.strip()
    return text.split(":", 1)[1].strip() if text.lower().startswith("title:") else text


def prompt_of(req: dict) -> str:
    return "".join(m.get("content") or "" for m in req["messages"])


def one_token(dist: dict[str, float]) -> Reply:
    best = max(dist, key=dist.get)
    top = {t: math.log(p) for t, p in dist.items()}
    return Reply(best, ((best, top[best], top),))


def chorus_grades(chorus) -> dict[tuple[str, str], int]:
    """(query text, title) -> combined human grade of every rated pair, then every qrels pair not rated."""
    titles = {d["docno"]: d["title"] for d in chorus.docs_iter()}
    queries = chorus.topics().set_index("qid")["query"].to_dict()
    out = {}
    for q, d, g in chorus.qrels()[["qid", "docno", "label"]].itertuples(index=False):
        out[(queries[q], titles[d])] = int(g)
    ratings = chorus.ratings()
    for q, d, g in ratings[["qid", "docno", "final"]].itertuples(index=False):
        out[(queries[q], titles[d])] = int(g)
    return out


class GradeModel:
    """The responder: ``grades`` (query, title) -> grade; unknown pairs get grade 0. ``unparseable``: titles
    answered with text and no logprobs that parse as no label (a counted fallback)."""

    def __init__(self, grades: dict[tuple[str, str], int], unparseable: set[str] = frozenset()):
        self.grades, self.unparseable = grades, set(unparseable)
        self.asked: list[tuple[str, str]] = []

    def grade(self, query: str, title: str) -> int:
        return self.grades.get((query, title), 0)

    def __call__(self, req: dict) -> Reply | str:
        prompt = prompt_of(req)
        query = prompt.split("Query:", 1)[1].split("\n", 1)[0].strip()
        sides = _SIDES.findall(prompt)
        if len(sides) == 2:  # a generated form: the better one; "Neither" on a tie
            ga, gb = (self.grade(query, _title(t)) for _, t in sides)
            return "LHS" if ga > gb else "RHS" if gb > ga else "Neither"
        pair = _LETTERED.findall(prompt)
        if len(pair) == 2:
            ga, gb = (self.grade(query, _title(t)) for _, t in pair)
            p_a = 1 / (1 + math.exp(-(ga - gb)))
            return one_token({"A": p_a, "B": 1 - p_a})
        titles = _PRODUCT.findall(prompt)
        if not titles:  # a deliberated judge's ideal attributes
            return "- the product searched for"
        title = _title(titles[-1])
        self.asked.append((query, title))
        if title in self.unparseable:
            return "I cannot say."
        g = self.grade(query, title)
        if "yes or no" in prompt:
            return one_token({"yes": P_YES[g], "no": 1 - P_YES[g]})
        return one_token({str(k): (0.7 if k == g else 0.1) for k in range(4)})
