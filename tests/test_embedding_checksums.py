"""Each vector of the bi-encoder's embedding store carries a checksum checked on every read
(superb.transformers.embedding_cache): bytes changed inside a stored vector, in the file itself (SQLite's integrity
check still passes), are a DataError naming the store and the way out, never a silent score (issue 50: nDCG@10 went
from 0.8033 to 0.5122 with exit 0); a store written before checksums opens as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from superb.errors import DataError
from superb.transformers.embedding_cache import CachedEncoder, EmbeddingStore, read_only, text_key

DIM = 8
TEXTS = ["a steel water bottle", "a ceramic mug", "a laptop sleeve"]


def vectors() -> dict[str, np.ndarray]:
    return {t: np.linspace(i + 0.25, i + 0.75, DIM, dtype=np.float32) for i, t in enumerate(TEXTS)}


def stored(folder: Path) -> Path:
    store = EmbeddingStore("m", DIM, folder)
    store.put(vectors())
    store.close()  # the last connection: its WAL is written into the file
    return store.path


def damage(path: Path, inside: bytes, at: int) -> None:
    """Change one byte of the file inside the stored value ``inside``; SQLite's integrity check does not see it."""
    data = bytearray(path.read_bytes())
    where = data.find(inside)
    assert where > 0 and data.find(inside, where + 1) == -1
    data[where + at] ^= 0x40  # a high bit of the float's exponent byte: the value moves by orders of magnitude
    path.write_bytes(bytes(data))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


class Refuses:
    def encode(self, texts):  # a damaged vector is an error, never re-encoded silently
        raise AssertionError("the encoder must not run")


def test_a_byte_changed_inside_a_stored_vector_is_refused(tmp_path):
    path = stored(tmp_path)
    damage(path, vectors()[TEXTS[1]].tobytes(), at=4 * 3 + 3)
    store = EmbeddingStore("m", DIM, tmp_path)
    with pytest.raises(DataError) as info:
        CachedEncoder(Refuses, store).encode(TEXTS)
    message = str(info.value)
    assert str(path) in message and "checksum" in message and text_key(TEXTS[1])[:16] in message
    assert f"rm {path}*" in message and "computed again" in message
    with read_only(), pytest.raises(DataError):  # a dry run reads the same store the same way
        EmbeddingStore("m", DIM, tmp_path).get(TEXTS)


def test_an_undamaged_store_serves_every_vector(tmp_path):
    stored(tmp_path)
    found = CachedEncoder(Refuses, EmbeddingStore("m", DIM, tmp_path)).encode(TEXTS)
    assert np.array_equal(found, np.stack([vectors()[t] for t in TEXTS]))


def test_a_store_written_before_checksums_is_read_and_migrated(tmp_path):
    from superb.transformers.embedding_cache import vector_checksum

    path = tmp_path / "m.sqlite"
    with sqlite3.connect(path) as conn:  # the store as superb wrote it before vectors carried checksums
        conn.execute("CREATE TABLE embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        conn.executemany("INSERT INTO embeddings VALUES (?, ?)", [(text_key(t), v.tobytes())
                                                                  for t, v in vectors().items()])
    conn.close()
    with read_only():  # a dry run writes nothing: read unchecked, as before
        assert len(EmbeddingStore("m", DIM, tmp_path).get(TEXTS)) == 3
    with sqlite3.connect(path) as conn:
        assert [r[1] for r in conn.execute("PRAGMA table_info(embeddings)")] == ["key", "vector"]
    conn.close()
    store = EmbeddingStore("m", DIM, tmp_path)  # opened to write: migrated
    assert len(store.get(TEXTS)) == 3
    store.close()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT key, vector, checksum FROM embeddings").fetchall()
    conn.close()
    assert len(rows) == 3 and all(c == vector_checksum(k, v) for k, v, c in rows)
    damage(path, vectors()[TEXTS[0]].tobytes(), at=3)
    with pytest.raises(DataError, match="checksum"):
        EmbeddingStore("m", DIM, tmp_path).get(TEXTS)
