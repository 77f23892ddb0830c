"""LLM work as OpenAI batch files, the export side: a client that collects cache misses instead of calling a model.

A batch line is what the OpenAI Batch API, ``vllm run-batch`` and SGLang's /v1/batches read::

    {"custom_id": KEY, "method": "POST", "url": "/v1/chat/completions", "body": {...}}

``custom_id`` is the response cache key (sha256 of the canonical request, superb/llm/cache_rows.py) and ``body`` is exactly
what the live client would send (``chat_body``: model, messages, max_tokens, temperature, seed, logprobs and
top_logprobs, logit_bias, stop). Nothing secret is in it: no API key, no endpoint URL, no header.

``CollectingClient`` answers from the cache; on a miss it records the request with its sink and raises
``PendingRequest``. The reranker base (transformers/base.py, ``run_all``) catches it per query: that query keeps its
prior order, is marked pending and is not reranked downstream, while every other query goes on. So one pass over a
spec records every request it can form from the answers already cached (all concurrent misses of one round), and
nothing that depends on a missing answer. Import the answers (batch_results.py) and export again for the next round.

``PendingStore`` keeps the exported requests (model, template, canonical request, body) in the response cache's own
SQLite file (tables ``batch_requests`` and ``batch_exports``), so that an imported answer can be stored under its key
and a result line with an unknown custom_id is recognised. Everything streams: requests go to SQLite in chunks, the
file is written from an ordered query (sorted by key, so the same round gives the same bytes).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from superb.errors import LLMError
from superb.llm.cache import CacheMiss, ResponseCache
from superb.llm.cache_rows import canonical, key_of_canonical
from superb.llm.client_base import ClientBase
from superb.llm.wire import chat_body
from superb.llm.config import LLMConfig
from superb.llm.dryrun import PER_MESSAGE_TOKENS, estimate_tokens
from superb.llm.model import model_id
from superb.llm.types import ChatRequest, Completion
from superb.llm.usage import Usage

BATCH_URL = "/v1/chat/completions"
FLUSH_EVERY = 1000  # requests buffered before they are written to SQLite

_TABLES = (
    """CREATE TABLE IF NOT EXISTS batch_requests (
        key TEXT PRIMARY KEY, model TEXT NOT NULL, template TEXT NOT NULL, request TEXT NOT NULL,
        body TEXT NOT NULL, prompt_tokens_est INTEGER NOT NULL, max_tokens INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS batch_exports (
        export_id TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (export_id, key))""",
)


class PendingRequest(Exception):
    """A cache miss under a collecting client: the request was recorded for a batch file; this query stops here."""

    def __init__(self, key: str, template: str):
        self.key = key
        self.template = template
        super().__init__(f"request {key[:12]} (template {template or '(none)'!r}) is not cached: recorded for a batch")


def estimated_prompt_tokens(request: ChatRequest) -> int:
    """Characters / 4 plus a few tokens per message (superb/llm/dryrun.py's estimate)."""
    return PER_MESSAGE_TOKENS * len(request.messages) + sum(estimate_tokens(c) for _, c in request.messages)


def batch_line(key: str, body_json: str) -> str:
    """One line of a batch input file (``body_json`` is the compact JSON of ``chat_body``)."""
    return f'{{"custom_id":"{key}","method":"POST","url":"{BATCH_URL}","body":{body_json}}}\n'


@dataclass(frozen=True)
class RoundTotals:
    """What one export round needs: distinct requests, estimated prompt tokens, the completion-token ceiling
    (sum of max_tokens), and requests per template."""

    requests: int = 0
    prompt_tokens: int = 0
    max_completion_tokens: int = 0
    templates: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class BatchPart:
    """One written batch input file."""

    path: Path
    lines: int
    sha256: str


class RequestSink(Protocol):
    def add(self, model: str, request: ChatRequest) -> str: ...

    def totals(self) -> RoundTotals: ...


class CountingSink:
    """A sink that only counts (``superb batch status`` and ``submit --dry-run``): nothing is written."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._prompt = self._max = 0
        self._templates: dict[str, int] = {}
        self._lock = threading.Lock()

    def add(self, model: str, request: ChatRequest) -> str:
        key = key_of_canonical(canonical(model, request))
        with self._lock:
            if key not in self._seen:
                self._seen.add(key)
                self._prompt += estimated_prompt_tokens(request)
                self._max += request.max_tokens
                self._templates[request.template] = self._templates.get(request.template, 0) + 1
        return key

    def totals(self) -> RoundTotals:
        with self._lock:
            return RoundTotals(len(self._seen), self._prompt, self._max, dict(sorted(self._templates.items())))


class PendingStore:
    """Exported requests, kept in the response cache's SQLite file until their answers are imported."""

    def __init__(self, cache_path: str | Path, *, busy_timeout_s: float = 60.0):
        self.path = Path(cache_path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None,
                                     check_same_thread=False)
        self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._lock = threading.Lock()
        for ddl in _TABLES:
            self._conn.execute(ddl)

    def new_round(self) -> "ExportRound":
        return ExportRound(self, uuid.uuid4().hex)

    def lookup(self, key: str) -> tuple[str, str, str] | None:
        """(model, template, canonical request) of an exported request, or None."""
        with self._lock:
            return self._conn.execute("SELECT model, template, request FROM batch_requests WHERE key = ?",
                                      (key,)).fetchone()

    def is_cached(self, key: str) -> bool:
        with self._lock:
            try:
                return self._conn.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None
            except sqlite3.OperationalError:  # no responses table yet
                return False

    def forget_answered(self) -> int:
        """Drop exported requests whose answers are now cached; returns how many."""
        with self._lock:
            try:
                cur = self._conn.execute("DELETE FROM batch_requests WHERE key IN (SELECT key FROM responses)")
            except sqlite3.OperationalError:
                return 0
            return cur.rowcount

    def pending(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM batch_requests").fetchone()[0]

    def _write_many(self, rows: list[tuple], export_id: str) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany("INSERT OR REPLACE INTO batch_requests VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
                self._conn.executemany("INSERT OR IGNORE INTO batch_exports VALUES (?, ?)",
                                       [(export_id, r[0]) for r in rows])
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "PendingStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ExportRound:
    """The requests one export pass recorded (a sink); ``write(path)`` writes them as a batch input file."""

    def __init__(self, store: PendingStore, export_id: str):
        self.store = store
        self.export_id = export_id
        self._buffer: list[tuple] = []
        self._lock = threading.Lock()

    def add(self, model: str, request: ChatRequest) -> str:
        material = canonical(model, request)
        key = key_of_canonical(material)
        body = json.dumps(chat_body(model, request), ensure_ascii=False, separators=(",", ":"))
        row = (key, model, request.template, material, body, estimated_prompt_tokens(request), request.max_tokens)
        with self._lock:
            self._buffer.append(row)
            full = len(self._buffer) >= FLUSH_EVERY
        if full:
            self.flush()
        return key

    def flush(self) -> None:
        with self._lock:
            rows, self._buffer = self._buffer, []
        if rows:
            self.store._write_many(rows, self.export_id)

    def totals(self) -> RoundTotals:
        self.flush()
        with self.store._lock:
            n, prompt, most = self.store._conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(r.prompt_tokens_est), 0), COALESCE(SUM(r.max_tokens), 0) "
                "FROM batch_exports e JOIN batch_requests r ON r.key = e.key WHERE e.export_id = ?",
                (self.export_id,)).fetchone()
            templates = dict(self.store._conn.execute(
                "SELECT r.template, COUNT(*) FROM batch_exports e JOIN batch_requests r ON r.key = e.key "
                "WHERE e.export_id = ? GROUP BY r.template ORDER BY r.template", (self.export_id,)).fetchall())
        return RoundTotals(n, prompt, most, templates)

    def write(self, path: str | Path) -> tuple[int, str]:
        """Write this round's requests, sorted by key, to ``path`` (JSONL); returns (lines, sha256 of the file).
        The round's bookkeeping rows are dropped afterwards (the requests stay pending until imported)."""
        parts = self.write_parts(path)
        return (parts[0].lines, parts[0].sha256) if parts else (0, hashlib.sha256().hexdigest())

    def write_parts(self, path: str | Path, *, max_lines: int | None = None,
                    max_bytes: int | None = None) -> list["BatchPart"]:
        """Like ``write``, split into files of at most ``max_lines`` lines and ``max_bytes`` bytes (the OpenAI Batch
        API takes 50,000 requests and 200 MB per file): ``path`` itself without limits, else ``stem-1.jsonl``,
        ``stem-2.jsonl``, ... beside it. An empty round writes nothing."""
        self.flush()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        split = max_lines is not None or max_bytes is not None
        parts: list[BatchPart] = []
        out = None

        def close() -> None:
            nonlocal out
            if out is not None:
                f, tmp, target, digest, n = out
                f.close()
                tmp.replace(target)
                parts.append(BatchPart(target, n, digest.hexdigest()))
                out = None

        try:
            with self.store._lock:
                cursor = self.store._conn.execute(
                    "SELECT r.key, r.body FROM batch_exports e JOIN batch_requests r ON r.key = e.key "
                    "WHERE e.export_id = ? ORDER BY e.key", (self.export_id,))
                size = 0
                for key, body in cursor:
                    line = batch_line(key, body).encode("utf-8")
                    if out is not None and ((max_lines and out[4] >= max_lines) or
                                            (max_bytes and size + len(line) > max_bytes)):
                        close()
                    if out is None:
                        target = path.with_name(f"{path.stem}-{len(parts) + 1}{path.suffix}") if split else path
                        tmp = target.with_name(target.name + ".tmp")
                        out = [open(tmp, "wb"), tmp, target, hashlib.sha256(), 0]
                        size = 0
                    out[0].write(line)
                    out[3].update(line)
                    out[4] += 1
                    size += len(line)
                close()
                self.store._conn.execute("DELETE FROM batch_exports WHERE export_id = ?", (self.export_id,))
        except BaseException:  # a full disk: the part being written is removed, and the export is not recorded
            if out is not None:
                out[0].close()
                out[1].unlink(missing_ok=True)
            raise
        return parts

    def discard(self) -> None:
        """Drop this round's bookkeeping without writing a file."""
        self.flush()
        with self.store._lock:
            self.store._conn.execute("DELETE FROM batch_exports WHERE export_id = ?", (self.export_id,))


class CollectingClient(ClientBase):
    """The LLMClient interface without a model: cache hits are answered, misses are recorded and raise
    ``PendingRequest``. ``drain()`` waits for the sibling coroutines a pending query left running (they record their
    own misses) before the round is written."""

    def __init__(self, config: LLMConfig, *, cache: ResponseCache, sink: RequestSink, usage: Usage | None = None):
        super().__init__()

        if cache is None or cache.mode in ("off", "refresh"):
            mode = "off" if cache is None else cache.mode
            raise LLMError(f"a batch export needs the response cache (llm.cache is {mode!r}): the answers are "
                           f"imported into it and the next round reads them; use cache = \"normal\"")
        self.config = config
        self.model = model_id(config)  # the id a live run would send and key its cache on
        self.cache = cache
        self.sink = sink
        self.usage = usage if usage is not None else Usage()
        self.misses = 0  # requests that raised PendingRequest (a request asked twice counts twice)
        self.info: dict[str, Any] = {"model": self.model, "endpoints": [], "batch_export": True}

    def __repr__(self) -> str:
        return f"CollectingClient(model={self.model!r}, misses={self.misses})"

    async def _complete(self, request: ChatRequest) -> Completion:
        try:
            hit = self._cached(request)
        except CacheMiss:  # a read-only cache miss: a request for the batch like any other
            hit = None
        if hit is not None:
            return hit
        key = self.sink.add(self.model, request)
        self.misses += 1
        raise PendingRequest(key, request.template)

    def drain(self) -> None:
        """Wait until every coroutine still running on the client's loop has finished."""
        if self._runner.started:
            self._runner.run(_drain())


async def _drain() -> None:
    me = asyncio.current_task()
    while True:
        others = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
        if not others:
            return
        await asyncio.gather(*others, return_exceptions=True)
