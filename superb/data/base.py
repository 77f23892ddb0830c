"""The one interface every data set loader returns: documents, topics, qrels, optional human ratings, provenance.

A loader subclasses :class:`Dataset` and implements the ``_load_*`` hooks; the base class loads each part once,
lazily, validates it, and counts what it had to handle:

- documents: a dict per product with ``docno``, ``text`` (the default text: title, short description and attributes,
  one per line) and every field in ``fields`` as ``str`` (missing values are ""). Documents whose text is empty are
  KEPT (their qrels stay valid) and counted in ``stats["docs_empty_text"]``.
- topics: DataFrame ``qid, query`` (str). Queries whose text is empty are DROPPED, with their qrels; both are counted
  (``stats["queries_dropped_empty"]``, ``stats["qrels_dropped_empty_query"]``). Duplicate qids are a DataError.
- qrels: DataFrame ``qid, docno, label`` (int). Judged docnos missing from the corpus are kept and counted
  (``stats["qrels_docno_not_in_corpus"]``). Qids that have qrels but no query (``stats["qids_only_in_qrels"]``, with
  their rows in ``stats["qrels_qid_not_in_topics"]``) are kept too: no run can retrieve for them, so experiments
  ignore them.

Dropped or ignored queries are never silent: they are logged as warnings when topics and qrels are loaded (the CLI
prints warnings on stderr), and every count made so far is in ``provenance()["checks"]``, which the results folders
store. A file that is not UTF-8 is a DataError naming the file, the line and the column (:func:`superb.errors.utf8_error`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

from superb.digest import sha256_file
from superb.errors import DataError, SpecError
from superb.options import check_keys

log = logging.getLogger(__name__)


class Dataset:
    """A product search test collection. See the module docstring for the contract."""

    name: str
    fields: tuple[str, ...]
    rel_threshold: int
    labels: tuple[int, ...]
    label_names: Mapping[int, str]
    irds_id: str | None = None
    text_kind: str = "product"  # "passage": the rerankers' default templates are the passage ones (trec-dl)
    prompt_fields: tuple[str, ...] = ("title",)  # the fields a reranker shows when its spec names none
    location_options: tuple[str, ...] = ()  # options that only say where files are (left out of fingerprint())

    def __init__(self, *, name: str, fields: Iterable[str], rel_threshold: int, labels: Iterable[int],
                 label_names: Mapping[int, str], options: Mapping[str, Any] | None = None):
        self.name = name
        self.fields = tuple(fields)
        self.rel_threshold = int(rel_threshold)
        self.labels = tuple(int(x) for x in labels)
        self.label_names = dict(label_names)
        self.options = dict(options or {})
        self._docs: dict[str, dict] | None = None
        self._topics: pd.DataFrame | None = None
        self._qrels: pd.DataFrame | None = None
        self._ratings: pd.DataFrame | None = None
        self._ratings_loaded = False
        self._counts: dict[str, int] = {}
        self._provenance: dict | None = None

    # ---- hooks for loaders -------------------------------------------------------------------------------------
    def _load_docs(self) -> Iterable[dict]:
        raise NotImplementedError

    def _load_topics(self) -> pd.DataFrame:
        raise NotImplementedError

    def _load_qrels(self) -> pd.DataFrame:
        raise NotImplementedError

    def _load_ratings(self) -> pd.DataFrame | None:
        return None

    def _source(self) -> dict:
        """Where the data came from: {"source": str, "files": [{"name", "path", "sha256", ...}]}."""
        raise NotImplementedError

    # ---- documents -----------------------------------------------------------------------------------------------
    def docs_store(self) -> Mapping[str, dict]:
        """docno -> document dict, loaded once."""
        if self._docs is None:
            store: dict[str, dict] = {}
            empty = 0
            for doc in self._load_docs():
                docno = doc["docno"]
                if docno in store:
                    raise DataError(f"data set {self.name!r}: docno {docno!r} occurs twice in the corpus")
                if not doc["text"].strip():
                    empty += 1
                store[docno] = doc
            self._counts["docs_empty_text"] = empty
            self._docs = store
        return MappingProxyType(self._docs)

    def docs_iter(self) -> Iterator[dict]:
        for doc in self.docs_store().values():
            yield dict(doc)

    def doc(self, docno: str) -> dict:
        store = self.docs_store()
        if docno not in store:
            raise DataError(f"data set {self.name!r} has no document with docno {docno!r} ({len(store)} documents)")
        return dict(store[docno])

    # ---- topics, qrels, ratings ----------------------------------------------------------------------------------
    def topics(self) -> pd.DataFrame:
        self._load_topics_and_qrels()
        return self._topics.copy()

    def qrels(self) -> pd.DataFrame:
        self._load_topics_and_qrels()
        return self._qrels.copy()

    def ratings(self) -> pd.DataFrame | None:
        """Individual human ratings, when the data set has them (else None)."""
        if not self._ratings_loaded:
            self._ratings = self._load_ratings()
            self._ratings_loaded = True
        return None if self._ratings is None else self._ratings.copy()

    def _load_topics_and_qrels(self) -> None:
        if self._topics is not None:
            return
        topics = self._load_topics()
        missing = {"qid", "query"} - set(topics.columns)
        if missing:
            raise DataError(f"data set {self.name!r}: topics lack columns {sorted(missing)} (have {list(topics.columns)})")
        topics = topics[["qid", "query"]].astype({"qid": str}).reset_index(drop=True)
        topics["query"] = topics["query"].fillna("").astype(str).str.strip()
        dup = topics["qid"][topics["qid"].duplicated()]
        if len(dup):
            raise DataError(f"data set {self.name!r}: qids occur twice in the topics: {sorted(set(dup))[:5]}")
        empty = topics["query"] == ""
        dropped = set(topics.loc[empty, "qid"])
        topics = topics[~empty].reset_index(drop=True)

        qrels = self._load_qrels()
        missing = {"qid", "docno", "label"} - set(qrels.columns)
        if missing:
            raise DataError(f"data set {self.name!r}: qrels lack columns {sorted(missing)} (have {list(qrels.columns)})")
        qrels = qrels[["qid", "docno", "label"]].astype({"qid": str, "docno": str, "label": int})
        dup = qrels[qrels.duplicated(["qid", "docno"])]
        if len(dup):
            raise DataError(f"data set {self.name!r}: {len(dup)} qrels repeat a (qid, docno) pair, e.g. "
                            f"({dup.iloc[0]['qid']!r}, {dup.iloc[0]['docno']!r}); keep one label per pair")
        drop_q = qrels["qid"].isin(dropped)
        qrels = qrels[~drop_q].reset_index(drop=True)
        orphan = ~qrels["qid"].isin(set(topics["qid"]))
        orphan_qids = sorted(set(qrels.loc[orphan, "qid"]))
        self._counts["queries_dropped_empty"] = len(dropped)
        self._counts["qrels_dropped_empty_query"] = int(drop_q.sum())
        self._counts["qids_only_in_qrels"] = len(orphan_qids)
        self._counts["qrels_qid_not_in_topics"] = int(orphan.sum())
        if dropped:
            log.warning("data set %r: %d queries with empty text dropped (qids %s), with their %d qrels",
                        self.name, len(dropped), _some(sorted(dropped)), int(drop_q.sum()))
        if orphan_qids:
            log.warning("data set %r: %d qids have qrels but no query text (qids %s; %d qrels): no run can retrieve "
                        "for them, so they are ignored", self.name, len(orphan_qids), _some(orphan_qids),
                        int(orphan.sum()))
        self._topics = topics
        self._qrels = qrels

    # ---- bookkeeping ---------------------------------------------------------------------------------------------
    @property
    def stats(self) -> dict[str, int]:
        """Counts of what was loaded and of every handled irregularity (loads all parts)."""
        store = self.docs_store()
        topics, qrels = self.topics(), self.qrels()
        out = {
            "docs": len(store),
            "queries": len(topics),
            "qrels": len(qrels),
            "qrels_docno_not_in_corpus": int((~qrels["docno"].isin(set(store))).sum()),
        }
        out.update(self._counts)
        return out

    def provenance(self) -> dict:
        """source, files (name, sha256, bytes, url or path), loader options, label scale (computed once); and
        ``checks``: the counts of what loading dropped or handled so far (empty queries, qids only in qrels, empty
        documents...), when anything was loaded. ``checks`` grows as parts load: it is not part of the data's
        identity (:meth:`fingerprint` and the index cache leave it out)."""
        if self._provenance is None:
            self._provenance = {
                "dataset": self.name,
                **self._source(),
                "options": dict(self.options),
                "rel_threshold": self.rel_threshold,
                "labels": {label: self.label_names.get(label, "") for label in self.labels},
            }
        out = copy.deepcopy(self._provenance)
        if self._counts:
            out["checks"] = dict(self._counts)
        return out

    def fingerprint(self) -> str:
        """A short id of exactly this data: file checksums, loader options and fields (not where files live).
        Indexes and caches built from the data set can key on it."""
        prov = self.provenance()
        options = {k: v for k, v in prov["options"].items() if k not in self.location_options}
        key = {"dataset": prov["dataset"], "options": options, "fields": list(self.fields),
               "files": sorted((f["name"], f["sha256"]) for f in prov["files"])}
        return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def run_file(self, name: str, path: str = "first_stage.run") -> Path:
        """The local path of a run the data set provides, for ``first_stage = { run = "dataset:NAME" }`` (TREC DL
        provides BM25's); a data set without runs refuses every name."""
        raise SpecError(path, f"data set {self.name!r} provides no runs; give a run file's path instead of "
                              f"\"dataset:{name}\"")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, fields={self.fields})"


# ---- helpers shared by loaders ---------------------------------------------------------------------------------
def _some(items: list, n: int = 5) -> str:
    shown = ", ".join(str(x) for x in items[:n])
    return shown + (f", ... ({len(items) - n} more)" if len(items) > n else "")


def compose_text(*parts: str | None) -> str:
    """The default document text: non-empty parts, stripped, one per line."""
    return "\n".join(p.strip() for p in parts if p and p.strip())


def as_str(value: Any) -> str:
    """A field value as text: None/NaN -> "", floats without a useless ".0", everything else str()."""
    if value is None:
        return ""
    if isinstance(value, float):
        if value != value:  # NaN
            return ""
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value).strip()


def sorted_query_ids(queries: Iterable[str], prefix: str = "q") -> dict[str, str]:
    """query text -> qid: ``prefix`` + zero-padded position of the text in the sorted set of distinct texts.

    Stable for a given (pinned) file: the same query set always gets the same ids, whatever the row order."""
    distinct = sorted(set(queries))
    width = max(3, len(str(len(distinct))))
    return {text: f"{prefix}{i + 1:0{width}d}" for i, text in enumerate(distinct)}


def check_options(config: Mapping[str, Any], allowed: Iterable[str], path: str) -> None:
    """Reject unknown keys of a loader's config table, naming the key path and the allowed keys."""
    check_keys(config, path, optional=allowed, what=f"option for data set {config.get('name')!r}")


def require_file(value: Any, path: str, key: str, how: str) -> Path:
    """The user-provided file named by config key ``key``; a missing file is a DataError saying how to get it."""
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise SpecError(f"{path}.{key}", f"expected a file path, got {value!r}. {how}")
    file = Path(value).expanduser()
    if not file.is_file():
        raise DataError(f"data file not found: {file} (from {path}.{key}). {how}")
    return file


def file_record(file: Path, **extra: Any) -> dict:
    """Provenance entry of one local file (its sha256 is computed here)."""
    return {"name": file.name, "path": str(file), "bytes": file.stat().st_size, "sha256": sha256_file(file), **extra}
