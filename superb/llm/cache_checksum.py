"""Each cached answer carries a checksum, checked whenever the answer is read.

SQLite's own checks (``PRAGMA quick_check`` at open, superb/llm/cache_file.py) see a damaged page structure, not a
changed byte inside a stored value: one flipped character in an answer's text or logprobs reads back as a valid
string, and a run would use it without a word. So each row of ``responses`` holds ``checksum``: the sha256 of what a
reader uses of it (:func:`answer_checksum`: its key, text, logprobs and token counts; the key binds the answer to its
request). Every lookup (``ResponseCache.get``) and every row read for shipping (``ResponseCache.rows``) recomputes
it; a mismatch is the damaged-answer error naming the key and ``superb responses remove KEY --cache CACHE``.

Caches written before the column existed are MIGRATED when a command opens them to write (normal or refresh mode):
the column is added and every row's checksum computed once, in one transaction (the bytes as they are then are
taken as the answer; about 1 s per 100,000 rows). Opened read-only (``cache = "read-only"``, a dry run, shipping),
such a cache is read as before, unverified: a read-only open writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3

COLUMN = "checksum"
#: set to False only by bench/checksum_cost.py, to measure what the check costs (never in a command)
VERIFY = True


def answer_checksum(key: str, text: object, logprobs: object, prompt_tokens: object, completion_tokens: object) -> str:
    """sha256 of what a reader uses of a cached answer, as the row stores it."""
    material = json.dumps([key, text, logprobs, prompt_tokens, completion_tokens], ensure_ascii=False,
                          separators=(",", ":"), default=repr)  # a value of another type (bytes) still hashes
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


def mismatch(row: tuple, stored: str | None) -> str | None:
    """Why the answer ``row`` (key, text, logprobs, prompt_tokens, completion_tokens) is not what was stored, or None
    when its checksum matches (or it has none: a row of a cache opened read-only before its migration)."""
    if stored is None or not VERIFY:
        return None
    found = answer_checksum(*row)
    if found == stored:
        return None
    return (f"its checksum does not match its bytes (stored {str(stored)[:12]}, computed {found[:12]}): the answer "
            "was changed or damaged after it was cached")


def has_column(conn: sqlite3.Connection) -> bool:
    return COLUMN in {row[1] for row in conn.execute("PRAGMA table_info(responses)")}


def migrate(conn: sqlite3.Connection) -> int:
    """Add the checksum column to a cache written before it existed and fill it for every row, in one transaction;
    returns the rows filled (0 when there was nothing to do: a new cache, or one another process just migrated)."""
    conn.create_function("superb_answer_checksum", 5, answer_checksum, deterministic=True)
    conn.execute("BEGIN IMMEDIATE")
    try:
        if has_column(conn):
            conn.execute("COMMIT")
            return 0
        conn.execute(f"ALTER TABLE responses ADD COLUMN {COLUMN} TEXT")
        filled = conn.execute(f"UPDATE responses SET {COLUMN} = superb_answer_checksum(key, text, logprobs, "
                              "prompt_tokens, completion_tokens)").rowcount
        conn.execute("COMMIT")
        return filled
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        raise
