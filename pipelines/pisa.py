"""The PISA engine (no Java): a cached ``pyterrier_pisa.PisaIndex``, BM25, and RM3 through weighted queries.

Index: the chosen fields joined by spaces, PISA's tokeniser, porter2 stemmer, Terrier stopword list at query time,
block_simdbp encoding. BM25 is ``PisaIndex.bm25(k1, b, num_results)``.

RM3 (formula in :mod:`superb.pipelines.rm3`):

1. BM25 retrieves the top ``fb_docs`` documents for the clean query.
2. Their term counts come from PISA's forward index (``fwd``: stemmed term ids per document), so feedback terms are
   exactly the index's terms; the query is tokenised with ``pyterrier_pisa.tokenize(text, "porter2")``, the same
   analyser PISA uses. Stemmed Terrier stopwords are excluded from the query and the expansion.
3. ``rm3_expansion`` gives term -> weight (summing to 1). PISA takes weights as repetitions of a term
   (``floor(weight * toks_scale)``), so weights are scaled by ``TOKS_SCALE`` = 1000: a resolution of 0.001. Terms
   below it are dropped and counted in ``stats["rm3_terms_dropped"]``.
4. The weighted query is run with ``bm25(query_weighted=True)`` over a second view of the same index opened with
   ``stemmer="none"``: the terms are already stemmed, and PISA's pre-tokenised path expects unstemmed processing.
   Scores are divided by ``TOKS_SCALE`` again, so they stay on BM25's scale.
"""

from __future__ import annotations

import warnings
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from superb.errors import DataError
from superb.pipelines.index_cache import CachedIndex, DocumentStream, document_fields, open_or_build
from superb.pipelines.native_output import quiet
from superb.pipelines.options import FirstStageOptions
from superb.pipelines.rm3 import rm3_expansion

STEMMER = "porter2"
TOKS_SCALE = 1000.0
RECIPE = {"tokeniser": "pisa", "stemmer": STEMMER, "stopwords": "terrier", "encoding": "block_simdbp"}


def build_pisa_index(dataset: Any, fields: tuple[str, ...], folder: Path) -> int:
    """Index ``dataset`` into ``folder`` (empty); return the number of documents indexed."""
    import pyterrier_pisa

    def docs():
        for doc in document_fields(dataset, fields):
            if any(c.isspace() for c in doc["docno"]):
                raise DataError(f"data set {dataset.name!r}: docno {doc['docno']!r} contains whitespace, "
                                "which PISA's collection format cannot store")
            yield doc

    stream = DocumentStream(docs())
    text_field = fields[0] if len(fields) == 1 else list(fields)
    index = pyterrier_pisa.PisaIndex(str(folder), text_field=text_field, stemmer=STEMMER, threads=1)
    return stream.run(index.index, dataset.name)


class ForwardIndex:
    """Random access to PISA's forward index: docno -> {stemmed term: count}."""

    def __init__(self, folder: Path):
        self._postings = np.memmap(folder / "fwd", mode="r", dtype=np.uint32)
        self._terms = (folder / "fwd.terms").read_text().split("\n")
        docnos = (folder / "fwd.documents").read_text().split("\n")[: int(self._postings[1])]
        self._docid = {docno: i for i, docno in enumerate(docnos)}
        starts = np.empty(len(docnos), dtype=np.int64)
        position = 2
        for i in range(len(docnos)):  # layout: [1, num_docs, len_0, ids_0..., len_1, ids_1...]
            starts[i] = position
            position += 1 + int(self._postings[position])
        self._starts = starts

    def counts(self, docno: str) -> dict[str, int]:
        start = self._starts[self._docid[docno]]
        ids = self._postings[start + 1: start + 1 + int(self._postings[start])]
        values, freqs = np.unique(ids, return_counts=True)
        return {self._terms[v]: int(f) for v, f in zip(values, freqs)}


class PisaEngine:
    """Maps clean (qid, query) frames to (qid, docno, score) with PISA."""

    def __init__(self, dataset: Any, options: FirstStageOptions):
        self.dataset = dataset
        self.options = options
        self.stats: dict = {}
        if options.model == "rm3":
            self.stats = {"rm3_no_feedback": 0, "rm3_terms_dropped": 0}
        self._bm25 = self._feedback = self._weighted = self._forward = None

    def prepare(self) -> CachedIndex:
        with quiet():  # PISA's C++ progress and [info] lines (pipelines/native_output.py)
            return self._prepare()

    def _prepare(self) -> CachedIndex:
        import pyterrier_pisa

        o = self.options
        cached = open_or_build(self.dataset, "pisa", o.fields, RECIPE,
                               lambda folder: build_pisa_index(self.dataset, o.fields, folder))
        index = pyterrier_pisa.PisaIndex(str(cached.path), stemmer=STEMMER, threads=1)
        self._bm25 = index.bm25(k1=o.k1, b=o.b, num_results=o.depth, threads=1)
        if o.model == "rm3":
            self._feedback = index.bm25(k1=o.k1, b=o.b, num_results=o.fb_docs, threads=1)
            # PISA warns "requested stemmer=none, but index was constructed with porter2": intended here
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                raw = pyterrier_pisa.PisaIndex(str(cached.path), stemmer="none", threads=1)
            self._weighted = raw.bm25(k1=o.k1, b=o.b, num_results=o.depth, threads=1, query_weighted=True,
                                      toks_scale=TOKS_SCALE)
            self._forward = ForwardIndex(cached.path)
        return cached

    @cached_property
    def _stopwords(self) -> frozenset[str]:
        import pyterrier_pisa
        from pyterrier_pisa.stopwords import _STOPWORDS

        return frozenset(t for w in _STOPWORDS["terrier"] for t in pyterrier_pisa.tokenize(w, STEMMER))

    def retrieve(self, queries: pd.DataFrame) -> pd.DataFrame:
        with quiet():  # the first query compresses the index, and says so from C++
            return self._retrieve(queries)

    def _retrieve(self, queries: pd.DataFrame) -> pd.DataFrame:
        if self.options.model == "bm25":
            return self._bm25(queries)[["qid", "docno", "score"]]
        expansions = self.expansions(queries)
        resolution = 1.0 / TOKS_SCALE
        weighted = []
        for qid, weights in expansions.items():
            kept = {t: w for t, w in weights.items() if w >= resolution}
            self.stats["rm3_terms_dropped"] += len(weights) - len(kept)
            if kept:
                weighted.append({"qid": qid, "query_toks": kept})
        if not weighted:
            return pd.DataFrame(columns=["qid", "docno", "score"])
        found = self._weighted(pd.DataFrame(weighted))
        return found.assign(score=found["score"] / TOKS_SCALE)[["qid", "docno", "score"]]

    def expansions(self, queries: pd.DataFrame) -> dict[str, dict[str, float]]:
        import pyterrier_pisa

        o = self.options
        feedback = self._feedback(queries[["qid", "query"]])
        by_qid = {str(q): group for q, group in feedback.groupby("qid", sort=False)}
        out = {}
        for qid, text in zip(queries["qid"].astype(str), queries["query"]):
            terms = [t for t in pyterrier_pisa.tokenize(text, STEMMER) if t not in self._stopwords]
            docs = by_qid.get(qid)
            if docs is None:
                self.stats["rm3_no_feedback"] += 1
                fb = []
            else:
                fb = [(self._forward.counts(d), float(s)) for d, s in zip(docs["docno"], docs["score"])]
            weights = rm3_expansion(terms, fb, fb_terms=o.fb_terms, fb_lambda=o.fb_lambda, exclude=self._stopwords)
            if weights:
                out[qid] = weights
        return out
