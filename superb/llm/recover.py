"""Keep what a damaged response cache still holds: ``superb responses recover DAMAGED --cache NEW``.

The recipe docs used to give, ``sqlite3 CACHE.corrupt .recover | sqlite3 CACHE``, fails with the sqlite3 shell
Debian 12 ships (3.40.1: "SQL logic error" even on a healthy cache), and its new cache came out empty. This reads
the damaged file with Python's own sqlite3 module, read-only (nothing is written beside it), in blocks of rows by
rowid; a block that fails is read again row by row, so one damaged page costs only its rows. Every row read is
checked as a shipped one is (its key must be the sha256 of its request: ``CachedRow.from_dict``) and stored in the
new cache with its source; what could not be read or was refused is counted, never guessed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from superb.errors import LLMError
from superb.llm.cache_rows import CachedRow

_COLUMNS = "key, model, template, request, text, logprobs, prompt_tokens, completion_tokens"
_BLOCK = 256


@dataclass
class Recovered:
    """What one recovery read: rows kept (checked), rows refused (key not the sha256 of the request, bad fields),
    rowids that could not be read at all."""

    read: int = 0
    refused: int = 0
    unreadable: int = 0


def recover_rows(damaged: Path, counts: Recovered) -> Iterator[CachedRow]:
    """The checked rows of the ``responses`` table of ``damaged`` (see the module doc); ``counts`` is filled in."""
    conn = _open(damaged)
    try:
        try:
            top = conn.execute("SELECT max(rowid) FROM responses").fetchone()[0] or 0
        except sqlite3.DatabaseError as exc:
            raise LLMError(f"{damaged}: no responses table can be read ({exc}); nothing to recover") from None
        for start in range(1, top + 1, _BLOCK):
            for raw in _block(conn, start, min(start + _BLOCK - 1, top), counts):
                row = _checked(raw)
                if row is None:
                    counts.refused += 1
                else:
                    counts.read += 1
                    yield row
    finally:
        conn.close()


def _open(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise LLMError(f"{path} is not a file: give the damaged cache file (e.g. CACHE.corrupt)")
    # immutable: SQLite creates no -wal/-shm file and takes no lock; a -wal moved beside it is not read
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)


def _block(conn: sqlite3.Connection, first: int, last: int, counts: Recovered) -> list[tuple]:
    try:
        return conn.execute(f"SELECT {_COLUMNS} FROM responses WHERE rowid BETWEEN ? AND ?", (first, last)).fetchall()
    except sqlite3.DatabaseError:
        pass
    rows = []
    for rowid in range(first, last + 1):  # the block holds a damaged page: row by row, keep what reads
        try:
            rows.extend(conn.execute(f"SELECT {_COLUMNS} FROM responses WHERE rowid = ?", (rowid,)).fetchall())
        except sqlite3.DatabaseError:
            counts.unreadable += 1
    return rows


def _checked(raw: tuple) -> CachedRow | None:
    key, model, template, request, text, logprobs, prompt_tokens, completion_tokens = raw
    try:
        return CachedRow.from_dict({
            "key": key, "model": model, "template": template, "request": json.loads(request), "text": text,
            "logprobs": None if logprobs is None else json.loads(logprobs), "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens})
    except (ValueError, TypeError):  # json.JSONDecodeError is a ValueError
        return None
