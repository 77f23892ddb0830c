"""The Terrier engine: a cached IterDictIndexer index, BM25 via ``pt.terrier.Retriever``, RM3 via ``pt.rewrite.RM3``.

Index: meta ``docno`` (up to ``DOCNO_LENGTH`` characters; longer docnos are a DataError, never truncated), the
chosen fields as text attributes (recorded as Terrier fields when there are several), Terrier's English tokeniser,
Porter stemmer and stopword list. BM25 uses ``c`` = b (Terrier's control) and the ``bm25.k_1`` property; the
property is global in the JVM, so it is set again before every retrieval so two stages with different k1 in one
process do not leak into each other. RM3 is ``BM25(fb_docs) >> RM3(fb_docs, fb_terms, fb_lambda) >> BM25(depth)``.

Ctrl-C: the JVM installs its own SIGINT handler, which runs Java's shutdown hooks and ends the process with status
130 at once: no message, no cleanup (a half-built index folder stays behind). :func:`start_java` starts the JVM with
``-Xrs`` (the JVM leaves the signals to the host process) and puts Python's handler back, so Ctrl-C during an index
build or a retrieval is a KeyboardInterrupt like anywhere else: the build's temporary folder is removed and
``superb`` prints its message and exits 130.
"""

from __future__ import annotations

import re
import signal
import threading
from pathlib import Path
from typing import Any

import pandas as pd

from superb.errors import DataError
from superb.pipelines.native_output import quiet
from superb.pipelines.index_cache import CachedIndex, DocumentStream, document_fields, open_or_build
from superb.pipelines.options import FirstStageOptions

DOCNO_LENGTH = 128
RECIPE = {"tokeniser": "english", "stemmer": "porter", "stopwords": "terrier", "meta_docno": DOCNO_LENGTH}
_WEIGHTED_TERM = re.compile(r"(\S+)\^([0-9.eE+-]+)")


def start_java() -> None:
    """Start PyTerrier's JVM (if not yet started) with ``-Xrs``, and keep SIGINT with Python (see the module doc)."""
    import pyterrier as pt

    if not pt.java.started():
        if "-Xrs" not in (pt.java.configure.get("options") or []):
            pt.java.add_option("-Xrs")
        pt.java.init()
    _restore_python_sigint()


def _restore_python_sigint() -> None:
    """Re-install Python's SIGINT handler at the OS level, in case a JVM started without -Xrs replaced it."""
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may set handlers; the JVM is started there in a CLI run
    handler = signal.getsignal(signal.SIGINT)
    if handler is not None:  # None: a handler not installed from Python, leave it
        signal.signal(signal.SIGINT, handler)


def build_terrier_index(dataset: Any, fields: tuple[str, ...], folder: Path) -> int:
    """Index ``dataset`` into ``folder`` (empty); return the number of documents indexed."""
    import pyterrier as pt

    start_java()
    def docs():
        for doc in document_fields(dataset, fields):
            if len(doc["docno"]) > DOCNO_LENGTH:
                raise DataError(
                    f"data set {dataset.name!r}: docno {doc['docno'][:40]!r}... is {len(doc['docno'])} characters; "
                    f"the Terrier index stores at most {DOCNO_LENGTH}"
                )
            yield doc

    stream = DocumentStream(docs())
    indexer = pt.IterDictIndexer(
        str(folder), meta={"docno": DOCNO_LENGTH}, text_attrs=list(fields), fields=len(fields) > 1, threads=1
    )
    return stream.run(indexer.index, dataset.name)


def parse_terrier_query(query: str) -> dict[str, float]:
    """Weights of a rewritten Terrier query such as ``applypipeline:off batteri^0.6 cabl^0.2``."""
    return {term: float(weight) for term, weight in _WEIGHTED_TERM.findall(query)}


class TerrierEngine:
    """Maps clean (qid, query) frames to (qid, docno, score) with Terrier. The JVM starts in :meth:`prepare`."""

    def __init__(self, dataset: Any, options: FirstStageOptions):
        self.dataset = dataset
        self.options = options
        self.stats: dict = {}
        self._index = None
        self._pipeline = None
        self._expander = None
        self._rescorer = None

    def prepare(self) -> CachedIndex:
        with quiet():  # the JVM's start-up line and Terrier's indexing output (pipelines/native_output.py)
            return self._prepare()

    def _prepare(self) -> CachedIndex:
        import pyterrier as pt

        start_java()
        o = self.options
        cached = open_or_build(self.dataset, "terrier", o.fields, RECIPE,
                               lambda folder: build_terrier_index(self.dataset, o.fields, folder))
        self._index = pt.IndexFactory.of(str(cached.path))
        if o.model == "rm3":
            rm3 = pt.rewrite.RM3(self._index, fb_docs=o.fb_docs, fb_terms=o.fb_terms, fb_lambda=o.fb_lambda)
            self._expander = self._bm25(o.fb_docs) >> rm3
            self._pipeline = self._expander >> self._bm25(o.depth)
        else:
            self._pipeline = self._bm25(o.depth)
        return cached

    def _bm25(self, num_results: int | None):
        import pyterrier as pt

        o = self.options
        return pt.terrier.Retriever(
            self._index, wmodel="BM25", num_results=num_results, controls={"c": str(o.b)},
            properties={"bm25.k_1": str(o.k1)}, metadata=["docno"],
        )

    def _set_k1(self) -> None:
        import pyterrier as pt

        pt.terrier.J.ApplicationSetup.setProperty("bm25.k_1", str(self.options.k1))

    def retrieve(self, queries: pd.DataFrame) -> pd.DataFrame:
        self._set_k1()
        return self._pipeline(queries)[["qid", "docno", "score"]]

    def expansions(self, queries: pd.DataFrame) -> dict[str, dict[str, float]]:
        self._set_k1()
        rewritten = self._expander(queries)
        return {str(q): parse_terrier_query(text) for q, text in zip(rewritten["qid"], rewritten["query"])}

    def rescore(self, rows: pd.DataFrame) -> pd.DataFrame:
        """BM25 scores of the given (qid, query, docno) rows under each row's query: Terrier's re-ranking mode (the
        rows' documents, nothing else) over the same index, k1 and b; call :meth:`prepare` first."""
        if self._rescorer is None:
            self._rescorer = self._bm25(None)
        self._set_k1()
        return self._rescorer(rows)[["qid", "docno", "score"]]
