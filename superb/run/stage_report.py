"""What a stage did to its documents that a reader of the table must know, from the stages' own counters: scores that
are NaN or infinite, documents a stage left out, queries that got no score at all (their input order kept: no
ranking, not a tie). Printed on the terminal when a pipeline has run, and noted under table.md; usage.csv keeps the
counters (``stat:nonfinite_scores``, ``stat:dropped_by_stage``, ``stat:queries_without_scores``)."""

from __future__ import annotations

import logging
from typing import Mapping

log = logging.getLogger(__name__)

COUNTERS = {
    "nonfinite_scores": "non-finite score(s) (NaN or infinite: sorted last, counted here, not as dropped)",
    "dropped_by_stage": "document(s) a stage left out (kept below the ones it scored, in input order)",
    "queries_without_scores": "quer(ies) with no score for any document (input order kept: no ranking, not a tie)",
}


def stage_line(name: str, stats: Mapping[str, int]) -> str:
    """``name: 3 non-finite score(s) ...; 1 quer(ies) ...``, or "" when its stages scored every document."""
    parts = [f"{int(stats[key])} {what}" for key, what in COUNTERS.items() if stats.get(key)]
    return f"{name}: " + "; ".join(parts) if parts else ""


def report(name: str, stats: Mapping[str, int]) -> str:
    """:func:`stage_line` for a pipeline that has run, printed as a warning when not empty."""
    line = stage_line(name, stats)
    if line:
        log.warning("pipeline %s", line)
    return line


def table_notes(lines: list[str]) -> list[str]:
    """The note under table.md for the pipelines' :func:`stage_line`s (none when every document got a score)."""
    lines = [line for line in lines if line]
    if not lines:
        return []
    return ["**Scores the stages did not give** (usage.csv has the counts): " + "; ".join(lines) + "."]
