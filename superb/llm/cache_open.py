"""Opening a response cache file: the connection every ``ResponseCache`` gets, after the checks of
superb/llm/cache_file.py (the file is SQLite, whole, a response cache's, every page readable), with the schema made
and a cache written before answers carried checksums migrated (superb/llm/cache_checksum.py) when it is opened to
write. A file that another process holds busy while it is being opened is opened again, up to the busy timeout."""

from __future__ import annotations

import logging
import random
import sqlite3
import time
from pathlib import Path

from superb.errors import LLMError
from superb.llm import cache_checksum
from superb.llm.cache_file import check_file, check_schema, corrupt_cache_error, probe_pages

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    template TEXT NOT NULL,
    request TEXT NOT NULL,
    text TEXT NOT NULL,
    logprobs TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    created REAL NOT NULL,
    checksum TEXT
)
"""


class _Busy(Exception):
    """SQLite said the file is locked or busy while the cache was being opened (retried by :func:`connect`)."""

    def __init__(self, error: sqlite3.OperationalError):
        super().__init__(str(error))
        self.error = error


def connect(path: Path, mode: str, busy_timeout_s: float) -> sqlite3.Connection:
    """The checked connection to the cache file ``path`` for ``mode`` ("normal", "read-only", "refresh")."""
    path.parent.mkdir(parents=True, exist_ok=True)
    check_file(path)
    deadline = time.monotonic() + busy_timeout_s
    while True:
        try:
            return _open(path, mode, busy_timeout_s)
        except _Busy as busy:
            # Switching a new file to WAL (or reading one another process is recovering) returns SQLITE_BUSY at
            # once, without waiting in the busy handler: two processes opening a fresh cache together both get here.
            # Wait a little and open again, up to the same busy timeout.
            if time.monotonic() >= deadline:
                raise LLMError(f"cannot open the LLM response cache {path}: {busy.error}. Check that no other "
                               "program holds the file locked, or set llm.cache_path") from None
            time.sleep(random.uniform(0.02, 0.2))


def _open(path: Path, mode: str, busy_timeout_s: float) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        check_schema(conn, path)
        probe_pages(conn, path)
        if mode != "read-only" and conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode = WAL")  # persistent: set once, by the first opener that writes
        conn.execute("PRAGMA synchronous = NORMAL")
        if mode != "read-only":
            conn.execute(SCHEMA)
            if not cache_checksum.has_column(conn):  # written before answers carried checksums: migrated once
                filled = cache_checksum.migrate(conn)
                log.info("superb: the LLM response cache %s: a checksum added to each of its %d answers", path, filled)
    except LLMError:
        conn.close()
        raise
    except sqlite3.OperationalError as e:  # locked past busy_timeout, no permission, disk I/O: not corruption
        conn.close()
        if "locked" in str(e) or "busy" in str(e):
            raise _Busy(e) from None
        raise LLMError(f"cannot open the LLM response cache {path}: {e}. Check that the folder is writable and no "
                       "other program holds the file locked, or set llm.cache_path") from None
    except sqlite3.DatabaseError as e:  # "file is not a database", "database disk image is malformed"
        conn.close()
        raise corrupt_cache_error(path, e) from None
    return conn
