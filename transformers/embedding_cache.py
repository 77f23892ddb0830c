"""Embeddings kept on disk, so a replayed run does not re-encode what an earlier one encoded.

``CachedEncoder`` wraps an encoder (``encode(texts) -> (n, dim)`` float32) and an :class:`EmbeddingStore`: texts
already stored are read back, only the others are encoded (the wrapped encoder is built on first need, so a warm run
never loads the model), and their vectors are stored. The store is one SQLite file per model under
``$SUPERB_HOME/embeddings/``, named by the model's sha256 and the length budget (max tokens per text), keyed by the
sha256 of the exact text: a new model, another budget or another text is another key, never a stale vector.

Why: the TREC DL command re-derives a year from the shipped LLM answers with 0 calls, yet the bi-encoder re-encoded
its 4,300 passages every time (163 of its 181 s on two cores). A damaged store file is a DataError naming it (delete
it: the vectors are computed again). Within :func:`read_only` (a dry run) stores are read, never created or written.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path

import numpy as np

from superb import paths
from superb.errors import DataError

_SCHEMA = "CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL)"
_READ_ONLY: ContextVar[bool] = ContextVar("embeddings_read_only", default=False)


@contextlib.contextmanager
def read_only() -> Iterator[None]:
    """Within it, stores are read but never created or written (a dry run writes nothing)."""
    token = _READ_ONLY.set(True)
    try:
        yield
    finally:
        _READ_ONLY.reset(token)


_CHUNK = 500  # keys per SELECT ... IN (...)


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingStore:
    """Vectors by text for one model and length budget, in ``folder/<name>.sqlite`` (default folder:
    ``$SUPERB_HOME/embeddings``)."""

    def __init__(self, name: str, dim: int, folder: Path | None = None):
        self.dim = int(dim)
        self.path = Path(folder or paths.home() / "embeddings") / f"{name}.sqlite"
        self._lock = threading.Lock()
        self.read_only = _READ_ONLY.get()
        self._conn = None
        if self.read_only and not self.path.is_file():
            return  # nothing stored yet, and nothing may be created: every text is a miss
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            if not self.read_only:
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute(_SCHEMA)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise self._damaged(exc) from None

    def _damaged(self, exc: Exception) -> DataError:
        if isinstance(exc, OSError) or (isinstance(exc, sqlite3.OperationalError) and
                                        any(w in str(exc) for w in ("unable to open", "readonly", "locked"))):
            return DataError(f"the embedding store {self.path} cannot be opened or written ({exc}): make "
                             f"{self.path.parent} writable, or point SUPERB_HOME at a folder that is")
        return DataError(f"the embedding store {self.path} cannot be read ({exc}); delete it (`rm {self.path}*`): "
                         "the embeddings are computed again")

    def get(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``texts`` (those found), by text."""
        keys = {text_key(t): t for t in texts}
        found: dict[str, np.ndarray] = {}
        if self._conn is None:
            return found
        items = list(keys)
        with self._lock:
            try:
                for start in range(0, len(items), _CHUNK):
                    chunk = items[start:start + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    for key, blob in self._conn.execute(
                            f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", chunk):
                        if len(blob) == 4 * self.dim:  # a row of another shape is a miss, overwritten below
                            found[keys[key]] = np.frombuffer(blob, dtype=np.float32).copy()
            except sqlite3.DatabaseError as exc:
                raise self._damaged(exc) from None
        return found

    def put(self, vectors: dict[str, np.ndarray]) -> None:
        if self.read_only or self._conn is None:
            return
        rows = [(text_key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in vectors.items()]
        with self._lock:
            try:
                self._conn.execute("BEGIN")
                self._conn.executemany("INSERT OR REPLACE INTO embeddings (key, vector) VALUES (?, ?)", rows)
                self._conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                raise self._damaged(exc) from None

    def __len__(self) -> int:
        if self._conn is None:
            return 0
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM embeddings").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()


class CachedEncoder:
    """``encode(texts)`` served from ``store`` where it can, from ``make_encoder()`` (built on first need) for the
    rest, which are then stored. ``hits`` and ``encoded`` count texts."""

    def __init__(self, make_encoder: Callable[[], object], store: EmbeddingStore):
        self._make = make_encoder
        self._encoder = None
        self.store = store
        self.hits = 0
        self.encoded = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        found = self.store.get(texts)
        todo = list(dict.fromkeys(t for t in texts if t not in found))
        self.hits += sum(t in found for t in texts)
        if todo:
            if self._encoder is None:
                self._encoder = self._make()
            fresh = dict(zip(todo, self._encoder.encode(todo)))
            self.store.put(fresh)
            found.update(fresh)
            self.encoded += len(todo)
        out = np.zeros((len(texts), self.store.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = found[t]
        return out
