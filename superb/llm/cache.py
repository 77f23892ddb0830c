"""``ResponseCache``: a persistent cache of LLM responses, keyed on everything that determines a response.

Storage is SQLite in WAL mode through the standard library's sqlite3, because:
  * zero extra dependencies, one file you can copy, inspect with any SQLite tool, or delete;
  * every completed call is its own atomic commit, made as soon as the call returns, so an interrupted run
    (Ctrl-C, SIGKILL, a crash) loses no completed call; a re-run makes only the missing calls;
  * WAL lets many readers work alongside one writer, across threads and processes; writers queue on
    busy_timeout instead of failing with "database is locked";
  * synchronous=NORMAL in WAL mode keeps every commit across a process kill (only a power cut could lose the
    last commits), without an fsync per call.

Each row keeps the canonical request JSON beside the answer (for audits and replays). The key is the sha256 of
that canonical JSON of (model id, messages, sampling and logprob parameters, template id with
its fingerprint). It deliberately leaves out the endpoint URL, the API key and the tag: the same model answers the
same request the same way wherever it is served and whoever asked, and keys are never written anywhere.

Modes: "normal" (read, write misses), "read-only" (read; a miss raises LLMError naming the template: for exact
replays), "refresh" (ignore hits, make every call and overwrite), "off" (no reads, no writes).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path

from superb.errors import LLMError
from superb.llm.config import CACHE_MODES
from superb.llm.types import ChatRequest, Completion, TokenLogprob

KEY_VERSION = 1

_SCHEMA = """
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
    created REAL NOT NULL
)
"""


def key_material(model: str, request: ChatRequest) -> dict:
    """What the cache key is made of. The tag is excluded on purpose (accounting only)."""
    return {
        "v": KEY_VERSION,
        "model": model,
        "messages": [list(m) for m in request.messages],
        "template": request.template,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "seed": request.seed,
        "logprobs": request.logprobs,
        "top_logprobs": request.top_logprobs,
        "logit_bias": [list(b) for b in request.logit_bias],
        "stop": list(request.stop),
    }


def _canonical(model: str, request: ChatRequest) -> str:
    return json.dumps(key_material(model, request), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key(model: str, request: ChatRequest) -> str:
    return hashlib.sha256(_canonical(model, request).encode("utf-8")).hexdigest()


def _dump_logprobs(logprobs: tuple[TokenLogprob, ...] | None) -> str | None:
    if logprobs is None:
        return None
    return json.dumps([[t.token, t.logprob, t.top] for t in logprobs], ensure_ascii=False)


def _load_logprobs(raw: str | None) -> tuple[TokenLogprob, ...] | None:
    if raw is None:
        return None
    return tuple(TokenLogprob(tok, lp, dict(top)) for tok, lp, top in json.loads(raw))


class ResponseCache:
    def __init__(self, path: str | Path, mode: str = "normal", *, busy_timeout_s: float = 60.0):
        if mode not in CACHE_MODES:
            raise ValueError(f"cache mode {mode!r} is not one of {', '.join(CACHE_MODES)}")
        self.path = Path(path)
        self.mode = mode
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        if mode == "read-only" and not self.path.exists():
            raise LLMError(f"LLM cache {self.path} does not exist, and cache mode is read-only: "
                           f"run once with cache = \"normal\" to fill it, or point llm.cache_path at a filled cache")
        if mode != "off":
            self._connect(busy_timeout_s)

    def _connect(self, busy_timeout_s: float) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        if self.mode != "read-only":
            conn.execute(_SCHEMA)
        self._conn = conn

    # --- lookups -----------------------------------------------------------------------------------------------------
    def get(self, model: str, request: ChatRequest) -> Completion | None:
        """The cached completion, or None on a miss (and always None in refresh/off modes).
        In read-only mode a miss raises LLMError."""
        if self._conn is None or self.mode == "refresh":
            return None
        key = cache_key(model, request)
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT text, logprobs, prompt_tokens, completion_tokens, latency_s FROM responses WHERE key = ?",
                    (key,),
                ).fetchone()
            except sqlite3.OperationalError as e:
                if self.mode == "read-only" and "no such table" in str(e):
                    row = None
                else:
                    raise
            if row is None:
                self.misses += 1
            else:
                self.hits += 1
        if row is None:
            if self.mode == "read-only":
                raise LLMError(
                    f"cache miss in read-only mode: template {request.template or '(none)'!r}, model {model!r}, "
                    f"key {key[:12]}, in {self.path}. The prompt or parameters differ from the cached run; "
                    f"use cache = \"normal\" to make the missing calls"
                )
            return None
        text, logprobs, p_tok, c_tok, latency = row
        return Completion(text=text, logprobs=_load_logprobs(logprobs), prompt_tokens=p_tok,
                          completion_tokens=c_tok, latency_s=latency, from_cache=True)

    def put(self, model: str, request: ChatRequest, completion: Completion) -> bool:
        """Store a successful completion (committed at once). Failures are never cached. Returns True if written."""
        if self._conn is None or self.mode == "read-only" or completion.failed:
            return False
        canonical = _canonical(model, request)  # stored beside the answer, so a cache can be audited and replayed
        key = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        row = (key, model, request.template, canonical, completion.text,
               _dump_logprobs(completion.logprobs), completion.prompt_tokens, completion.completion_tokens,
               completion.latency_s, time.time())
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
            self.writes += 1
        return True

    def __len__(self) -> int:
        if self._conn is None:
            return 0
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
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
