"""Judgment records: one per (query, product) a judge labelled, and their conversion to qrels and JSON lines."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

import pandas as pd

from superb.errors import DataError

# status of a record: how its label was obtained
OK = "ok"  # parsed from the model's answer
DEFAULT = "default"  # the answer was unparseable: the judge's default label was used (counted in stats)
FAILED = "failed"  # the call failed (record policy): the judge's default label was used (counted in stats)
STATUSES = (OK, DEFAULT, FAILED)


@dataclass(frozen=True)
class Judgment:
    qid: str
    docno: str
    label: int
    confidence: float | None  # P(label) from token logprobs (or a judge-specific score in 0..1); None if unknown
    raw: str  # the model's answer text (several answers joined with " || " for multi-call judges)
    template: str  # prompt template id, "name@fingerprint"
    status: str  # one of STATUSES
    score: float | None = None  # a scoring judge's score before calibration (expected grade, P(yes)); else None

    def to_dict(self) -> dict:
        d = asdict(self)
        for key in ("confidence", "score"):
            if d[key] is not None and not math.isfinite(d[key]):
                d[key] = None
        return d


def to_qrels(judgments: Iterable[Judgment]) -> pd.DataFrame:
    """qid, docno, label frame (the shape of Dataset.qrels())."""
    rows = [(j.qid, j.docno, int(j.label)) for j in judgments]
    return pd.DataFrame(rows, columns=["qid", "docno", "label"])


def write_qrels_trec(judgments: Iterable[Judgment], path: str | Path) -> None:
    """TREC qrels lines: ``qid 0 docno label``."""
    with open(path, "w", encoding="utf-8") as out:
        for j in judgments:
            out.write(f"{j.qid} 0 {j.docno} {int(j.label)}\n")


def write_jsonl(judgments: Iterable[Judgment], path: str | Path) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for j in judgments:
            out.write(json.dumps(j.to_dict(), ensure_ascii=False) + "\n")


def read_jsonl(path: str | Path) -> list[Judgment]:
    records = []
    with open(path, encoding="utf-8") as src:
        for n, line in enumerate(src, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                records.append(Judgment(**d))
            except (json.JSONDecodeError, TypeError) as err:
                raise DataError(f"{path}, line {n}: not a judgment record ({err}); expected the keys of "
                                f"superb.judges.records.Judgment") from None
    return records


def status_counts(judgments: Iterable[Judgment]) -> dict[str, int]:
    counts = {s: 0 for s in STATUSES}
    for j in judgments:
        counts[j.status] = counts.get(j.status, 0) + 1
    return counts


def as_judgments(records: Iterable, default_label: int = 0) -> list[Judgment]:
    """Judgment records from a LABEL judge's records (superb.judges.base.Scored: the grade is the score): status "ok"
    for a read grade, "default" for the judge's default grade, "failed" for a failed call (given ``default_label``)."""
    out = []
    for r in records:
        status = FAILED if r.status in ("failed", "missing") else DEFAULT if r.status == "default" else OK
        label = int(r.score) if r.score is not None else int(default_label)
        out.append(Judgment(r.qid, r.docno, label, r.confidence, r.raw, r.template, status))
    return out
