"""``ResponseCache``: a persistent cache of LLM responses, keyed on everything that determines a response.

SQLite in WAL mode (the standard library's sqlite3): no extra dependency, one file to copy or inspect; every completed
call is its own commit (an interrupted run loses no completed call); many readers beside one writer, across threads
and processes (writers queue on busy_timeout); synchronous=NORMAL keeps every commit across a process kill.

Each row keeps the canonical request JSON beside the answer (audits, replays); the key is its sha256 (model id,
messages, sampling and logprob parameters, template id with its fingerprint: superb/llm/cache_rows.py), leaving out
the endpoint URL, the API key and the tag. Each row also carries a checksum of its answer, checked on every read
(superb/llm/cache_checksum.py: a byte changed inside a stored answer is the damaged-answer error, never a silent
number); a cache written before checksums is migrated when it is opened to write.

Modes: "normal" (read, write misses), "read-only" (read; a miss raises LLMError naming the template: for exact
replays), "refresh" (ignore hits, make every call and overwrite), "off" (no reads, no writes).

Opening is the same for every command (run, dry run, responses save/replay, batch, judge) and refuses, naming the
file and the way out (superb/llm/cache_file.py): a directory at the path, bytes that are not SQLite, a copy cut
short, damaged pages anywhere (``PRAGMA quick_check``), an SQLite file with other tables or columns. Damage found
later, by any lookup, store or row read, raises the same errors; a cached answer that cannot be loaded names its key
and ``superb responses remove KEY``. A read-only miss is ``CacheMiss``, the only error a dry run or a batch export
takes as "not cached". In "normal" mode, ``claims`` (superb/llm/claims.py) keeps two processes on one file from
sending the same request at once. See docs/integrity.md.

Rows move between caches as dicts (``CachedRow.to_dict``; superb/llm/ship.py, batch_results.py): every key served or
written is remembered in ``used`` (the responses a run used), ``rows(keys)`` reads them back, and ``store_rows``
stores rows from elsewhere, recording their source in the table ``response_sources``.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from superb.errors import LLMError
from superb.llm import cache_checksum
from superb.llm.cache_checksum import answer_checksum
from superb.llm.cache_file import corrupt_cache_error, foreign_cache_error, unloadable_row_error
from superb.llm.cache_open import connect
from superb.llm.cache_rows import (CachedRow, StoreCounts, cache_key, canonical, dump_logprobs, key_of_canonical,
                                   load_logprobs, same_logprobs)
from superb.llm.claims import ClaimBook
from superb.llm.config import CACHE_MODES
from superb.llm.types import ChatRequest, Completion

log = logging.getLogger(__name__)


class CacheMiss(LLMError):
    """A miss in read-only mode. Dry runs and batch exports catch this, and only this: a damaged cache is never a
    miss."""


_SOURCES = """
CREATE TABLE IF NOT EXISTS response_sources (
    key TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    imported REAL NOT NULL
)
"""
_ROW_COLUMNS = "key, model, template, request, text, logprobs, prompt_tokens, completion_tokens"
_INSERT = ("INSERT OR REPLACE INTO responses (key, model, template, request, text, logprobs, prompt_tokens, "
           "completion_tokens, latency_s, created, checksum) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_CHUNK = 500  # keys per SELECT ... IN (...) (SQLite allows 999 parameters by default on old builds)


def _drop_sources(conn: sqlite3.Connection, keys: list[str]) -> None:
    """Forget where the answers of ``keys`` were imported from (no response_sources table: none ever was)."""
    try:
        conn.executemany("DELETE FROM response_sources WHERE key = ?", [(k,) for k in keys])
    except sqlite3.OperationalError as e:
        if "no such table" not in str(e):
            raise


class ResponseCache:
    def __init__(self, path: str | Path, mode: str = "normal", *, busy_timeout_s: float = 60.0):
        if mode not in CACHE_MODES:
            raise ValueError(f"cache mode {mode!r} is not one of {', '.join(CACHE_MODES)}")
        self.path = Path(path)
        self.mode = mode
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.used: set[str] = set()  # keys served (hits) or written through this object: the responses a run used
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._checksums = False  # the responses table has its checksum column (superb/llm/cache_checksum.py)
        if mode == "read-only" and not self.path.exists():
            raise LLMError(f"LLM cache {self.path} does not exist, and cache mode is read-only: "
                           f"run once with cache = \"normal\" to fill it, or point llm.cache_path at a filled cache")
        if mode != "off" and self.path.is_file() and self.path.stat().st_size == 0:
            if mode == "read-only":  # reading would make SQLite write a header into it: refused, left as it is
                raise LLMError(f"the LLM response cache {self.path} is an empty file (0 bytes), and cache mode is "
                               "read-only: it holds no answer (a copy that failed?). Restore the copy, or delete the "
                               "file and run once with cache = \"normal\"")
            log.warning("superb: the LLM response cache %s is an empty file (0 bytes): it is taken as a new cache. If "
                        "it held answers (a copy that failed?), stop now and restore it: every call is paid again",
                        self.path)
        self.claims = None  # superb.llm.claims.ClaimBook: in "normal" mode, what keeps processes from calling twice
        if mode != "off":
            self._connect(busy_timeout_s)
        if mode == "normal":
            self.claims = ClaimBook(self)

    def _connect(self, busy_timeout_s: float) -> None:
        self._conn = connect(self.path, self.mode, busy_timeout_s)
        self._checksums = cache_checksum.has_column(self._conn)

    # --- lookups -----------------------------------------------------------------------------------------------------
    def get(self, model: str, request: ChatRequest) -> Completion | None:
        """The cached completion, or None on a miss (and always None in refresh/off modes).
        In read-only mode a miss raises LLMError."""
        if self._conn is None or self.mode == "refresh":
            return None
        key = cache_key(model, request)
        with self.locked("read") as conn:  # damaged since it was opened: the error given at open
            try:
                row = conn.execute(
                    "SELECT text, logprobs, prompt_tokens, completion_tokens, latency_s"
                    f"{', checksum' if self._checksums else ', NULL'} FROM responses WHERE key = ?", (key,),
                ).fetchone()
            except sqlite3.OperationalError as e:
                if not (self.mode == "read-only" and "no such table" in str(e)):
                    raise
                row = None  # an empty file opened read-only: every lookup misses
            if row is None:
                self.misses += 1
            else:
                self.hits += 1
                self.used.add(key)
        if row is None:
            if self.mode == "read-only":
                raise CacheMiss(
                    f"cache miss in read-only mode: template {request.template or '(none)'!r}, model {model!r}, "
                    f"key {key[:12]}, in {self.path}. The prompt or parameters differ from the cached run; "
                    f"use cache = \"normal\" to make the missing calls"
                )
            return None
        text, logprobs, p_tok, c_tok, latency, stored = row
        try:
            if not isinstance(text, str):
                raise ValueError(f"its text is {type(text).__name__}, not a string")
            loaded = load_logprobs(logprobs)
            damaged = cache_checksum.mismatch((key, text, logprobs, p_tok, c_tok), stored)
            if damaged:
                raise ValueError(damaged)
        except (ValueError, TypeError) as e:
            raise unloadable_row_error(self.path, key, e) from None
        return Completion(text=text, logprobs=loaded, prompt_tokens=p_tok,
                          completion_tokens=c_tok, latency_s=latency, from_cache=True)

    def put(self, model: str, request: ChatRequest, completion: Completion) -> bool:
        """Store a successful completion (committed at once). Failures are never cached. Returns True if written."""
        if self._conn is None or self.mode == "read-only" or completion.failed:
            return False
        material = canonical(model, request)  # stored beside the answer, so a cache can be audited and replayed
        key = key_of_canonical(material)
        logprobs = dump_logprobs(completion.logprobs)
        row = (key, model, request.template, material, completion.text, logprobs, completion.prompt_tokens,
               completion.completion_tokens, completion.latency_s, time.time(),
               answer_checksum(key, completion.text, logprobs, completion.prompt_tokens, completion.completion_tokens))
        with self.locked("write") as conn:
            conn.execute(_INSERT, row)
            _drop_sources(conn, [key])  # an answer made here replaces an imported one: it is no longer from that source
            self.writes += 1
            self.used.add(key)
        return True

    def _fail(self, action: str, e: sqlite3.DatabaseError) -> None:
        """Raise a lookup's or a store's failure mid-run named as at open: a damaged file is the corrupt-cache error
        (with its way out); an I/O failure (disk full, I/O error, locked past busy_timeout) says what SQLite said.
        Other sqlite3 errors (constraint, API misuse) are bugs and pass unchanged."""
        if type(e) is sqlite3.DatabaseError:  # "database disk image is malformed", "file is not a database"
            raise corrupt_cache_error(self.path, e) from None
        if isinstance(e, sqlite3.OperationalError) and any(
                s in str(e) for s in ("no such table", "no such column", "has no column", "columns but")):
            raise foreign_cache_error(self.path, f"changed since it was opened: {e}") from None
        if isinstance(e, sqlite3.OperationalError):
            raise LLMError(f"cannot {action} the LLM response cache {self.path}: {e}. Check the disk (space, "
                           f"errors) and that no other program holds the file locked, then run again: completed "
                           f"calls are kept") from None
        raise e

    @contextmanager
    def locked(self, action: str) -> Iterator[sqlite3.Connection]:
        """The cache's connection under its lock, for a layer that keeps tables of its own in the cache file (the
        claims of superb.llm.claims): ``action`` ("read" or "write") names what failed in an error; a damaged file
        found here is the error given at open (see _fail)."""
        with self._lock:
            if self._conn is None:
                raise LLMError(f"the LLM response cache {self.path} is closed")
            try:
                yield self._conn
            except sqlite3.DatabaseError as e:
                self._fail(action, e)

    # --- rows in and out (shipped responses, batch results) -------------------------------------------------------
    def used_keys(self) -> list[str]:
        """The keys this object served or wrote, sorted."""
        with self._lock:
            return sorted(self.used)

    def rows(self, keys: Iterable[str]) -> Iterator[CachedRow]:
        """The rows of ``keys`` (in the order given; keys not in the cache are skipped), read in chunks."""
        if self._conn is None:
            return
        chunk: list[str] = []
        for key in keys:
            chunk.append(key)
            if len(chunk) == _CHUNK:
                yield from self._rows_chunk(chunk)
                chunk = []
        if chunk:
            yield from self._rows_chunk(chunk)

    def _rows_chunk(self, keys: list[str]) -> list[CachedRow]:
        marks = ",".join("?" * len(keys))
        with self.locked("read") as conn:
            rows = conn.execute(f"SELECT {_ROW_COLUMNS}{', checksum' if self._checksums else ', NULL'} FROM responses "
                                f"WHERE key IN ({marks})", keys).fetchall()
        found = {}
        for *r, stored in rows:
            damaged = cache_checksum.mismatch((r[0], r[4], r[5], r[6], r[7]), stored)
            if damaged is None and cache_checksum.VERIFY and isinstance(r[3], str) and key_of_canonical(r[3]) != r[0]:
                damaged = "its key is not the sha256 of its stored request (the request was changed or damaged)"
            if damaged:
                raise unloadable_row_error(self.path, r[0], damaged)
            found[r[0]] = CachedRow(*r)
        return [found[k] for k in keys if k in found]

    def store_rows(self, rows: Iterable[CachedRow], source: str, *, replace: bool = False,
                   counts: StoreCounts | None = None) -> StoreCounts:
        """Store rows from elsewhere, committed every few hundred rows, each with its ``source`` (e.g.
        "batch:results.jsonl"). A key already cached with the same answer is left alone (identical); with another
        answer it is a conflict: kept, or overwritten when ``replace``. Rows must already be verified
        (``CachedRow.from_dict`` checks the key)."""
        if self._conn is None or self.mode == "read-only":
            raise LLMError(f"cannot store responses in {self.path}: the cache is {self.mode!r}; use cache = \"normal\"")
        counts = counts if counts is not None else StoreCounts()
        with self.locked("write") as conn:
            conn.execute(_SOURCES)
        batch: list[CachedRow] = []
        for row in rows:
            batch.append(row)
            if len(batch) == _CHUNK:
                self._store_chunk(batch, source, replace, counts)
                batch = []
        if batch:
            self._store_chunk(batch, source, replace, counts)
        return counts

    def _store_chunk(self, rows: list[CachedRow], source: str, replace: bool, counts: StoreCounts) -> None:
        now = time.time()
        marks = ",".join("?" * len(rows))
        with self.locked("write") as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                have = {k: (t, lp) for k, t, lp in conn.execute(
                    f"SELECT key, text, logprobs FROM responses WHERE key IN ({marks})", [r.key for r in rows])}
                write = []
                for r in rows:
                    if r.key in have:
                        text, logprobs = have[r.key]
                        if text == r.text and same_logprobs(logprobs, r.logprobs):
                            counts.identical += 1
                            continue
                        counts.conflicts += 1
                        if not replace:
                            continue
                        counts.replaced += 1
                    else:
                        counts.stored += 1
                    have[r.key] = (r.text, r.logprobs)  # a key twice in one file counts once
                    write.append(r)
                conn.executemany(_INSERT, [(r.key, r.model, r.template, r.request, r.text, r.logprobs, r.prompt_tokens,
                                            r.completion_tokens, 0.0, now, answer_checksum(
                                                r.key, r.text, r.logprobs, r.prompt_tokens, r.completion_tokens))
                                           for r in write])
                conn.executemany("INSERT OR REPLACE INTO response_sources VALUES (?, ?, ?)",
                                 [(r.key, source, now) for r in write])
                conn.execute("COMMIT")
            except BaseException:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:  # a damaged file may refuse the rollback too: the first error is the one
                    pass
                raise
            self.writes += len(write)

    def remove(self, keys: Iterable[str]) -> int:
        """Delete the answers of ``keys`` (and their sources); returns how many were there."""
        if self._conn is None or self.mode == "read-only":
            raise LLMError(f"cannot remove responses from {self.path}: the cache is {self.mode!r}")
        keys = list(keys)
        with self.locked("write") as conn:
            removed = sum(conn.execute("DELETE FROM responses WHERE key = ?", (key,)).rowcount for key in keys)
            _drop_sources(conn, keys)
        return removed

    def source_counts(self, keys: Iterable[str]) -> dict[str, int]:
        """How many of ``keys`` came from each imported source; the rest (answered live here) count as "live"."""
        counts: dict[str, int] = {}
        if self._conn is None:
            return counts
        with self.locked("read") as conn:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'response_sources'").fetchone():
                n = sum(1 for _ in keys)
                return {"live": n} if n else {}
        chunk: list[str] = []

        def flush() -> None:
            marks = ",".join("?" * len(chunk))
            with self.locked("read") as conn:
                found = dict(conn.execute(
                    f"SELECT key, source FROM response_sources WHERE key IN ({marks})", chunk).fetchall())
            for k in chunk:
                src = found.get(k, "live")
                counts[src] = counts.get(src, 0) + 1

        for key in keys:
            chunk.append(key)
            if len(chunk) == _CHUNK:
                flush()
                chunk = []
        if chunk:
            flush()
        return dict(sorted(counts.items()))

    def __len__(self) -> int:
        if self._conn is None:
            return 0
        with self.locked("read") as conn:
            return conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    @property
    def is_open(self) -> bool:
        """False once closed (ClaimBook.close asks before it drops its claims)."""
        return self._conn is not None

    def close(self) -> None:
        if self.claims is not None:
            self.claims.close()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> "ResponseCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r}, mode={self.mode!r}, hits={self.hits}, misses={self.misses})"
