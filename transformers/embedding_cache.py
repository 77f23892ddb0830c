"""Embeddings kept on disk, so a replayed run does not re-encode what an earlier one encoded.

``CachedEncoder`` wraps an encoder (``encode(texts) -> (n, dim)`` float32) and an :class:`EmbeddingStore`: texts
already stored are read back, only the others are encoded (the wrapped encoder is built on first need, so a warm run
never loads the model), and their vectors are stored. The store is one SQLite file per model under
``$SUPERB_HOME/embeddings/``, named by the model's sha256 and the length budget (max tokens per text), keyed by the
sha256 of the exact text: a new model, another budget or another text is another key, never a stale vector. Each
vector is stored with a checksum (:func:`vector_checksum`: sha256 of its key and bytes), checked on every read: bytes
changed inside a stored vector (SQLite's integrity check does not look inside a value) are a DataError naming the
store and the way out, never a silent number. A store written before checksums is migrated when it is opened to
write (the column added, every vector's checksum computed once); opened read-only (a dry run) it is read unchecked.

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

_SCHEMA = "CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL, checksum TEXT)"
_READ_ONLY: ContextVar[bool] = ContextVar("embeddings_read_only", default=False)
#: set to False only by bench/checksum_cost.py, to measure what the check costs (never in a command)
VERIFY = True


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


def vector_checksum(key: str, blob: bytes) -> str:
    """sha256 of a stored vector's key and bytes (what a read checks)."""
    return hashlib.sha256(key.encode("utf-8") + b"\0" + bytes(blob)).hexdigest()


def _migrate(conn: sqlite3.Connection) -> None:
    """Add the checksum column to a store written before it existed and fill it, in one transaction."""
    conn.create_function("superb_vector_checksum", 2, vector_checksum, deterministic=True)
    conn.execute("BEGIN IMMEDIATE")
    try:
        if "checksum" not in _columns(conn):
            conn.execute("ALTER TABLE embeddings ADD COLUMN checksum TEXT")
            conn.execute("UPDATE embeddings SET checksum = superb_vector_checksum(key, vector)")
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:  # a damaged file may refuse the rollback too: the first error is the one
            pass
        raise


def _columns(conn: sqlite3.Connection) -> set[str]:
    return {row[1] for row in conn.execute("PRAGMA table_info(embeddings)")}


class EmbeddingStore:
    """Vectors by text for one model and length budget, in ``folder/<name>.sqlite`` (default folder:
    ``$SUPERB_HOME/embeddings``)."""

    def __init__(self, name: str, dim: int, folder: Path | None = None):
        self.dim = int(dim)
        self.path = Path(folder or paths.home() / "embeddings") / f"{name}.sqlite"
        self._lock = threading.Lock()
        self.read_only = _READ_ONLY.get()
        self._conn = None
        self._checksums = False  # the store's vectors carry checksums (a store opened read-only may predate them)
        if self.read_only and not self.path.is_file():
            return  # nothing stored yet, and nothing may be created: every text is a miss
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            if not self.read_only:
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute(_SCHEMA)
                if "checksum" not in _columns(self._conn):  # written before vectors carried checksums
                    _migrate(self._conn)
            self._checksums = "checksum" in _columns(self._conn)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise self._damaged(exc) from None

    def _damaged(self, exc: Exception | str) -> DataError:
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
        checksum = "checksum" if self._checksums else "NULL"
        damaged: list[str] = []
        with self._lock:
            try:
                for start in range(0, len(items), _CHUNK):
                    chunk = items[start:start + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    for key, blob, stored in self._conn.execute(
                            f"SELECT key, vector, {checksum} FROM embeddings WHERE key IN ({marks})", chunk):
                        if stored is not None and VERIFY and stored != vector_checksum(key, blob):
                            damaged.append(key)
                        elif len(blob) == 4 * self.dim:  # a row of another shape is a miss, overwritten below
                            found[keys[key]] = np.frombuffer(blob, dtype=np.float32).copy()
            except sqlite3.DatabaseError as exc:
                raise self._damaged(exc) from None
        if damaged:
            raise self._damaged(f"{len(damaged)} stored vector(s) do not match their checksum, e.g. the vector of "
                                f"text key {damaged[0][:16]}: its bytes were changed after it was stored")
        return found

    def put(self, vectors: dict[str, np.ndarray]) -> None:
        if self.read_only or self._conn is None:
            return
        rows = []
        for text, vector in vectors.items():
            key, blob = text_key(text), np.asarray(vector, dtype=np.float32).tobytes()
            rows.append((key, blob, vector_checksum(key, blob)))
        with self._lock:
            try:
                self._conn.execute("BEGIN")
                self._conn.executemany("INSERT OR REPLACE INTO embeddings (key, vector, checksum) VALUES (?, ?, ?)",
                                       rows)
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
