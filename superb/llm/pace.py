"""The pace a response cache recorded for a model: how many prompt tokens per second its live answers took, for the
dry run's time estimate (`superb run --dry-run`: calls x seconds before a long run starts).

Only answers the model gave live are read (``latency_s > 0``: an answer imported from shipped responses or batch
results is stored with latency 0), the most recent ``last`` of them. They are cut into stretches of work wherever two
answers are more than ``gap_s`` apart (a pause between runs is no work), and the pace is their prompt tokens over the
stretches' wall-clock seconds: every endpoint and every concurrent request of those runs together, so it holds for a
new run with the same endpoints and the same load. Generation-heavy prompts (listwise by generation writes about 90
tokens an answer) take longer per prompt token than one-token answers: the estimate says which mix it came from.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

LAST = 1000  # live answers read, newest first
GAP_S = 120.0  # seconds between two answers that end a stretch of work


@dataclass(frozen=True)
class Pace:
    answers: int
    prompt_tokens: int
    seconds: float  # wall clock of the stretches, each from its first answer's start to its last answer
    stretches: int
    templates: tuple[tuple[str, int], ...]  # the most answered prompt templates of those answers, with their counts

    @property
    def tokens_per_s(self) -> float:
        return self.prompt_tokens / self.seconds


_LIVE = "SELECT created, latency_s, prompt_tokens, template FROM responses WHERE latency_s > 0"


def live_answers(cache_path: str | Path, *, model: str | None = None, keys: list[str] | None = None,
                 last: int | None = None) -> list[tuple[float, float, int, str]]:
    """(created, latency_s, prompt_tokens, template) of the cache file's live answers in time order: of ``model``,
    or of the request ``keys`` (any model), the newest ``last`` when given. The file is opened read-only; one that
    cannot be read raises sqlite3.Error."""
    conn = sqlite3.connect(f"file:{Path(cache_path)}?mode=ro", uri=True, timeout=30)
    try:
        if keys is None:
            where, args = (" AND model = ?", [model]) if model is not None else ("", [])
            limit = " ORDER BY created DESC LIMIT ?" if last is not None else ""
            rows = conn.execute(_LIVE + where + limit, args + ([last] if last is not None else [])).fetchall()
        else:
            rows = []
            for i in range(0, len(keys), 500):  # SQLite's bound-parameter limit
                chunk = keys[i:i + 500]
                rows += conn.execute(f"{_LIVE} AND key IN ({','.join('?' * len(chunk))})", chunk).fetchall()
    finally:
        conn.close()
    return sorted(rows)


def recorded_pace(cache_path: str | Path, model: str, *, last: int = LAST, gap_s: float = GAP_S) -> Pace | None:
    """The pace of ``model``'s newest live answers in the cache file, or None when it holds fewer than two; a file
    that cannot be read raises sqlite3.Error."""
    return pace_of(live_answers(cache_path, model=model, last=last), gap_s)


def pace_of(rows: list[tuple[float, float, int, str]], gap_s: float = GAP_S) -> Pace | None:
    """(created, latency_s, prompt_tokens, template) rows in time order -> their pace. A row's ``created`` is when its
    answer arrived, so a stretch starts at its first answer's ``created - latency_s``."""
    seconds, tokens, answers, stretches = 0.0, 0, 0, 0
    i = 0
    while i < len(rows):
        j = i
        while j + 1 < len(rows) and rows[j + 1][0] - rows[j][0] <= gap_s:
            j += 1
        start = rows[i][0] - rows[i][1]
        seconds += rows[j][0] - start
        tokens += sum(r[2] for r in rows[i:j + 1])
        answers += j + 1 - i
        stretches += 1
        i = j + 1
    if answers < 2 or seconds <= 0 or tokens <= 0:
        return None
    templates = tuple(Counter(r[3] for r in rows).most_common(3))
    return Pace(answers, tokens, seconds, stretches, templates)


def duration(seconds: float) -> str:
    """3 h 05 min, 12 min, 40 s."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def time_line(prompt_tokens: int, llm_info: dict) -> str:
    """The dry run's `time:` line: how long ``prompt_tokens`` would take at the pace the response cache recorded for
    the model (``llm_info``: the run's model and cache, as superb.llm.connect describes them)."""
    cache, model = llm_info.get("cache"), llm_info.get("model")
    if not prompt_tokens:
        return "time: nothing to send"
    if not cache:
        return "time: no estimate (no response cache to take a pace from)"
    try:
        pace = recorded_pace(cache["path"], model)
    except sqlite3.Error as e:  # the calls are counted either way: the time is what is missing
        return f"time: no estimate (the response cache {cache['path']} could not be read for a pace: {e})"
    if pace is None:
        return (f"time: no estimate (the response cache holds no live answers of {model} to take a pace from; a short "
                "run first, e.g. [queries] sample = 3, records one)")
    mix = ", ".join(f"{name.split('@')[0]} {n}" for name, n in pace.templates)
    return (f"time: about {duration(prompt_tokens / pace.tokens_per_s)} for {prompt_tokens:,} prompt tokens at "
            f"{pace.tokens_per_s:.0f} prompt tokens/s, the pace the cache recorded for {model} over its last "
            f"{pace.answers} live answers ({pace.stretches} stretch(es) of work, {duration(pace.seconds)}; {mix}): "
            "the same endpoints under the same load; answers of many tokens take longer")
