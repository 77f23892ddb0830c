"""Binding README numbers: `python scripts/readme_numbers.py bind FILES` proposes, for each plain number of a
`<!-- numbers from FILES -->` block, the cell of FILES that holds it, choosing among several by the prose around the
number (the row's names before it, the column after it). The markup and the check are in scripts/readme_numbers.py."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from pathlib import Path

import readme_numbers
from readme_numbers import BLOCK, csv_rows, definitions, escape, matches, plain_numbers, read_tree, shown_path, side


@dataclass
class Candidate:
    path: Path
    value: float
    keys: list[tuple[str, str]]  # the row's identifying (column, value) pairs, or JSON path steps as ("key", step)
    col: str
    order: int

    def target(self, base: Path) -> str:
        rel = _relpath(self.path, base)
        if self.path.suffix == ".csv":
            frag = "&".join(f"{k}={v.replace('&', '%26')}" for k, v in self.keys) + f"&col={self.col}"
        else:
            frag = "key=" + "/".join(v for _, v in self.keys)
        return f"{rel}#{frag}"


def _relpath(path: Path, base: Path) -> str:
    return os.path.relpath(path, base).replace(os.sep, "/")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() != "" and text.lower() not in ("nan", "inf", "-inf", "true", "false")


@lru_cache(maxsize=None)
def candidates(path: Path) -> list[Candidate]:
    out: list[Candidate] = []
    if path.suffix == ".csv":
        columns, rows = csv_rows(path)
        text_cols = [c for c in columns if any(r[c] and not _is_number(r[c]) for r in rows)]
        for row in rows:
            keys = _row_key(row, rows, text_cols, columns)
            if keys is None:
                continue
            for c in columns:
                if _is_number(row[c]):
                    out.append(Candidate(path, float(row[c]), keys, c, len(out)))
    elif path.suffix in (".json", ".toml"):
        def walk(node, steps):
            if isinstance(node, bool):
                return
            if isinstance(node, (int, float)):
                keys = [("key", s) for s in steps]
                out.append(Candidate(path, float(node), keys, steps[-1] if steps else "", len(out)))
            elif isinstance(node, dict):
                for k, v in node.items():
                    walk(v, steps + [str(k)])
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    step = str(i)
                    if isinstance(v, dict):
                        step = _element_selector(v, node) or step
                    walk(v, steps + [step])
        walk(read_tree(path), [])
    return out


def _element_selector(element: dict, siblings: list) -> str | None:
    """`field:value` (or `f:v;g:w`) naming this dict among the dicts of its list, from its short string/int fields."""
    fields = [k for k, v in element.items() if isinstance(v, (str, int)) and not isinstance(v, bool)
              and len(str(v)) <= 60 and ";" not in str(v) and "/" not in str(v)]
    fields.sort(key=lambda k: (k not in KEY_COLUMNS and k not in ("k", "n_parallel", "concurrency"),
                               not isinstance(element[k], str)))
    for size in (1, 2, 3):
        for combo in combinations(fields, size):
            if sum(isinstance(x, dict) and all(x.get(k) == element[k] for k in combo) for x in siblings) == 1:
                return ";".join(f"{k}:{element[k]}" for k in combo)
    return None


def _row_key(row: dict, rows: list[dict], text_cols: list[str], columns: list[str]):
    """The fewest text columns (in file order) whose values pick this row alone."""
    combos = [combo for size in range(1, min(len(text_cols), 4) + 1) for combo in combinations(text_cols, size)]
    combos.sort(key=lambda combo: (sum(c not in KEY_COLUMNS for c in combo), len(combo),
                                   sum(row[c] == "" for c in combo), sum(len(row[c]) for c in combo)))
    for combo in combos:
        if sum(all(r[c] == row[c] for c in combo) for r in rows) == 1:
            return [(c, row[c]) for c in sorted(combo, key=text_cols.index)]
    # text columns do not tell the rows apart (a threshold curve): all of them and one numeric column
    for c in columns:
        if c not in text_cols:
            combo = [*text_cols, c]
            if sum(all(r[k] == row[k] for k in combo) for r in rows) == 1:
                return [(k, row[k]) for k in combo if row[k] != "" or k == c]
    return None


# columns that name a row (preferred as its selector over, say, a long ordering or a True/False flag)
KEY_COLUMNS = {"system", "name", "judge", "measure", "view", "family", "split", "against", "labels", "fields", "choice",
               "orders", "rule", "threshold", "engine", "model", "reranker", "variant", "preset"}


COLUMN_PRIORITY = ["mean", "delta", "p_corrected", "p", "kappa_linear", "tau", "precision", "recall", "requests",
                   "calls_per_query", "n"]


def _keys_for_matching(c: Candidate) -> tuple[list[str], str | None]:
    """The candidate's names as prose writes them, and its view: 'nDCG(judged_only=True)@10' is nDCG@10, condensed;
    'P(rel=2)@5' is P@5; a JSON step 'name:BM25' is BM25."""
    names, view = [], None
    for k, v in c.keys:
        if k == "family":  # tested against its baseline: implied; head-to-head: the other system is named
            if not v.startswith("head-to-head:"):
                continue
            v = v.partition(":")[2]
        for part in v.split(";") if k == "key" else [v]:
            part = (part.partition(":")[2] or part) if k == "key" else part
            if "judged_only=True" in part:
                view = "condensed"
            measure = re.sub(r"\((?:rel=\d,?)?(?:judged_only=True)?\)", "", part)
            if measure != part and view is None:
                view = "full"
            if k == "view":
                view = part
            else:
                names.append(measure.lower())
    return names, view


P_CORRECTED = re.compile(r"(holm p|corrected p|corrected|after holm|holm over \d+\)?,? p)\s*=?\s*$")
P_RAW = re.compile(r"(raw p|uncorrected p|uncorrected|paired t p)\s*=?\s*$")


def _score(c: Candidate, before: str, after: str, previous: Candidate | None, written: str = "") -> float:
    """How well the candidate cell fits the prose around the number (higher is better)."""
    score = 0.0
    near = before[-160:].lower()
    far = before[-600:].lower()
    following = after[:40].lower()
    names, view = _keys_for_matching(c)
    for v in names:
        if len(v) < 2 or v in ("full", "condensed", "filled"):
            continue
        if v in near:
            score += 4 + len(v) / 20 + (near.rfind(v) / len(near) if near else 0)
        elif v in far:
            score += 2 + len(v) / 40
        elif " >> " in v and v.rsplit(" >> ", 1)[1] in near:  # "BM25 >> pointwise" written as "pointwise"
            score += 2.5
    if view:
        if re.match(r"[\s)\]]*" + view, following):
            score += 6
        elif view in near[-40:]:
            score += 3
        elif re.match(r"\s*/\s*[\[+\-\d]", following):  # "a / b": the first is the full view
            score += 2 if view == "full" else 0
        elif re.search(r"/\s*\[?$", near):
            score += 2 if view == "condensed" else 0
        elif view == "full":
            score += 1
    colname = c.col.lower().replace("_", " ")
    if colname and colname in near[-80:]:
        score += 2
    if colname and len(colname) > 2 and colname.rstrip("s") in following[:30]:
        score += 4
    tail = re.sub(r"\[([^\]]+)\]\[\d+\]", r"\1", near)[-40:]
    if c.col == "p_corrected" and P_CORRECTED.search(tail):
        score += 5
    if c.col == "p" and P_RAW.search(tail):
        score += 5
    if c.col in ("p", "p_corrected") and re.search(r"\bp\s*=?\s*$|\bp [\d.]+ /\s*$", tail):
        score += 2 if c.col == "p_corrected" else 1
    if c.col == "delta" and (written[:1] in "+-\u2212" or re.search(r"\b(by|ahead|behind|gains?|adds?)\s*$", tail)):
        score += 3
    if "head-to-head" in " ".join(v for _, v in c.keys) and re.search(r"head to head|head-to-head|ahead|behind", far):
        score += 2
    if c.col in COLUMN_PRIORITY:
        score += 1 - COLUMN_PRIORITY.index(c.col) / len(COLUMN_PRIORITY)
    if c.col == "baseline_mean":  # the baseline's own row holds its mean
        score -= 1
    body = written.lstrip("+-\u2212").replace(",", "").rstrip("%x")
    if "." in body and len(body.partition(".")[2]) <= 2 and abs(c.value - float(body)) > 1e-12:
        score -= 3  # 0.5 written is a setting of 0.5 rather than a mean of 0.5495
    if previous is not None and previous.path == c.path:
        score += 1
        same = sum(1 for kv in c.keys if kv in previous.keys)
        score += same * 0.8
    return score


def bind(readme: Path) -> list[str]:
    """Binds every plain number of every block (in place); returns notes on choices and failures."""
    text = readme.read_text(encoding="utf-8")
    notes = []
    defs = definitions(text)
    used = {int(k) for k in defs if k.isdigit()}
    next_label = max(used, default=0) + 1
    pieces, last = [], 0
    for block in BLOCK.finditer(text):
        sources = (block.group(1) or "").split()
        pool = [c for s in sources for c in candidates((readme_numbers.ROOT / s).resolve())]  # ROOT read at the call
        body = block.group(2)
        new_defs = []
        out, pos, previous = [], 0, None
        for t in plain_numbers(body):
            written = t.group(0)
            hits = [c for c in pool if matches(c.value, written)]
            if written[:1] not in "+-\u2212<":  # unsigned: a value >= 0, or <= 0 after "behind by" (the checker's rule)
                line_start = body.rfind("\n", 0, t.start()) + 1
                negative = side(body[line_start: t.start()]) == "-"
                hits = [c for c in hits if (c.value <= 0 if negative else c.value >= 0)
                        or round(c.value, 12) == 0]
            if written[:1] in "+-\u2212":  # a signed number is a difference: a delta cell, never a p-value or a mean
                hits = [c for c in hits if c.path.suffix != ".csv" or c.col == "delta"
                        or "delta" not in csv_rows(c.path)[0]]
            line = text.count("\n", 0, block.start(2) + t.start()) + 1
            if not hits:
                notes.append(f"{shown_path(readme)}:{line}: {written}: no cell of {sources} holds it; left unbound "
                             "(a difference of two rows: bind it by hand with minus.COLUMN=VALUE)")
                continue
            before, after = body[: t.start()], body[t.end():]
            ranked = sorted(((_score(c, before, after, previous, written), c) for c in hits),
                            key=lambda sc: (-sc[0], sc[1].order))
            best = ranked[0][1]
            if len(ranked) > 1 and ranked[0][0] - ranked[1][0] < 1:
                notes.append(f"{shown_path(readme)}:{line}: {written} -> {best.target(readme.parent)} "
                             f"(chosen among {len(hits)}; next {ranked[1][1].target(readme.parent)})")
            label = str(next_label)
            next_label += 1
            out.append(body[pos: t.start()] + f"[{written}][{label}]")
            pos = t.end()
            new_defs.append(f"[{label}]: <{escape(best.target(readme.parent))}>")
            previous = best
        out.append(body[pos:])
        new_body = "".join(out)
        if new_defs:
            new_body = new_body.rstrip("\n") + "\n\n" + "\n".join(new_defs) + "\n"
        pieces.append(text[last: block.start(2)] + new_body)
        last = block.end(2)
    pieces.append(text[last:])
    readme.write_text("".join(pieces), encoding="utf-8")
    return notes
