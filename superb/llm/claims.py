"""Claims: several processes on one response cache never send the same request at the same time.

Without them, two `superb run` processes of one spec on one cache both miss on every key and both call: every request
twice (29 unique prompts, 58 requests at the server). With them, a client that misses on a key first claims it in the
cache's own file (table ``claims``: key, owner, host, pid, heartbeat); then:

* the claim is free (or this owner's): it is taken, the call is made, the answer stored, the claim released;
* the answer is already there (another process stored it since the miss): it is served, no call;
* another live owner holds it: the client waits, polling with backoff (50 ms up to 0.5 s) and re-checking, until the
  answer appears (served from the cache, counted ``served_by_other``) or the claim is released without one (the other
  call failed: this client claims and calls);
* the claim is stale -- its owner's process is gone (same host: its pid no longer exists) or its heartbeat is older
  than ``STALE_S`` (any host; an owner refreshes its claims every ``HEARTBEAT_S`` from a thread) -- it is taken over
  (counted ``stale_taken_over``). A SIGKILLed run thus never blocks the next one.

Why claims in the cache rather than a lock file per key or one lock for the whole cache: the cache file is already
what the processes share (same path, same host or a shared disk), SQLite gives the atomic "insert if absent", and a
whole-cache lock would serialise two runs that need different requests. Only ``cache = "normal"`` claims: "refresh"
calls by design, "read-only" and "off" never call through the cache. Waiting requests hold no concurrency slot, so a
process that waits on some keys goes on with the others. The counts are in the results' provenance (``llm.claims``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol

if TYPE_CHECKING:
    from superb.llm.types import ChatRequest, Completion

log = logging.getLogger(__name__)
HEARTBEAT_S = 5.0  # an owner refreshes its claims this often
STALE_S = 60.0  # a claim not refreshed for this long is taken over (its owner died or hangs)
POLL_S = (0.05, 0.5)  # first and longest wait between two checks of a claimed key

_TABLE = """
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    beat REAL NOT NULL
)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's), or we cannot tell: not stale by this test
    return True


class ClaimedCache(Protocol):
    """What a ClaimBook uses of its cache (superb.llm.cache.ResponseCache, which makes the book)."""

    path: Path

    @property
    def is_open(self) -> bool: ...

    def locked(self, action: str) -> AbstractContextManager[sqlite3.Connection]: ...

    def get(self, model: str, request: "ChatRequest") -> "Completion | None": ...


class ClaimBook:
    """The claims of one ResponseCache (one owner). Uses the cache's connection under its lock."""

    def __init__(self, cache: ClaimedCache):
        self.cache = cache
        self.owner = uuid.uuid4().hex
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.held: set[str] = set()
        self.counts = {"waited": 0, "served_by_other": 0, "stale_taken_over": 0}
        self._ready = False
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self._warned = False

    def _table(self, conn: sqlite3.Connection) -> None:
        if not self._ready:
            conn.execute(_TABLE)
            self._ready = True

    # --- the database side (each call a short transaction) ---------------------------------------------------------
    def claim(self, key: str) -> str:
        """"mine" (taken: call, store, release), "answered" (in the cache now), or "held" (another live owner).
        A held key is only read (no write transaction while waiting); a free or stale one is taken in one."""
        with self.cache.locked("write") as conn:
            self._table(conn)
            state = self._look(conn, key)
            if state in ("free", "stale", "mine"):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    state = self._look(conn, key)  # again, under the write lock: another owner may have been first
                    if state in ("free", "stale", "mine"):
                        conn.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?)",
                                     (key, self.owner, self.host, self.pid, time.time()))
                    conn.execute("COMMIT")
                except BaseException:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                    raise
        if state == "stale":
            self.counts["stale_taken_over"] += 1
            log.warning("took over the claim on LLM request %s: its owner's process is gone or stopped refreshing it "
                        "for %.0f s", key[:12], STALE_S)
        if state in ("free", "stale", "mine"):
            self.held.add(key)
            self._start_heartbeat()
            return "mine"
        return state

    def _look(self, conn: sqlite3.Connection, key: str) -> str:
        if conn.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone():
            return "answered"
        row = conn.execute("SELECT owner, host, pid, beat FROM claims WHERE key = ?", (key,)).fetchone()
        if row is None:
            return "free"
        if row[0] == self.owner:
            return "mine"
        return "stale" if self._stale(row[1], row[2], row[3]) else "held"

    def release(self, key: str) -> None:
        self.held.discard(key)
        with self.cache.locked("write") as conn:
            self._table(conn)
            conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.owner))

    def force(self, key: str, *, owner: str, host: str | None = None, pid: int | None = None,
              age_s: float = 0.0) -> None:
        """Write a claim as another owner would (tests, and tools that inspect a shared cache)."""
        with self.cache.locked("write") as conn:
            self._table(conn)
            conn.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?)",
                         (key, owner, host or self.host, pid if pid is not None else self.pid, time.time() - age_s))

    def _stale(self, host: str, pid: int, beat: float) -> bool:
        if host == self.host and not _alive(int(pid)):
            return True
        return time.time() - float(beat) > STALE_S

    def _start_heartbeat(self) -> None:
        if self._beat is None:
            self._beat = threading.Thread(target=self._heartbeat, name="superb-claims", daemon=True)
            self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            if not self.held:
                continue
            try:
                with self.cache.locked("write") as conn:
                    conn.execute("UPDATE claims SET beat = ? WHERE owner = ?", (time.time(), self.owner))
            except Exception as e:  # noqa: BLE001 - a closed or damaged cache: the run's own next lookup reports it
                if not self._stop.is_set():  # closing while a beat was due is no failure
                    log.warning("stopped refreshing this process's claims on LLM requests in %s (%s): another "
                                "process may take them over after %.0f s and send those requests too",
                                self.cache.path, e, STALE_S)
                return

    def close(self) -> None:
        """Stop the heartbeat and drop this owner's claims (called by ResponseCache.close, under no lock, so a beat
        under way can finish: the thread is joined before the cache's connection closes)."""
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=STALE_S)
            self._beat = None
        if self.held and self.cache.is_open:
            try:
                with self.cache.locked("write") as conn:
                    conn.execute("DELETE FROM claims WHERE owner = ?", (self.owner,))
            except Exception as e:  # noqa: BLE001 - closing must not fail; a left claim goes stale with this process
                log.warning("could not drop this process's %d claim(s) on LLM requests in %s (%s): another process "
                            "waiting on them takes them over when this process has ended (same host) or after %.0f s",
                            len(self.held), self.cache.path, e, STALE_S)
        self.held.clear()

    # --- the client side --------------------------------------------------------------------------------------------
    async def fetch(self, key: str, model: str, request: "ChatRequest",
                    call: Callable[[], Awaitable["Completion"]]) -> tuple["Completion", bool]:
        """(completion, served_by_other): ``call()`` (the request sent and stored) when this owner holds the claim,
        else the answer another process stored while this one waited."""
        delay = POLL_S[0]
        waiting = False
        while True:
            state = self.claim(key)
            if state == "mine":
                try:
                    return await call(), False
                finally:
                    self.release(key)
            if state == "answered":  # stored by another process since this one missed (waiting, or just before)
                hit = self.cache.get(model, request)
                if hit is not None:
                    self.counts["served_by_other"] += 1
                    return hit, True
            if not waiting:
                waiting = True
                self.counts["waited"] += 1
                if not self._warned:
                    self._warned = True
                    log.warning("another process is making some of these LLM requests with the same response cache "
                                "(%s): waiting for its answers instead of sending them twice", self.cache.path)
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, POLL_S[1])

    def summary(self) -> dict[str, Any]:
        return dict(self.counts)
