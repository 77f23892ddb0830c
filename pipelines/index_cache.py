"""On-disk cache of first-stage indexes: one folder per (data set fingerprint, engine, indexed fields, recipe).

Layout: ``superb.paths.index_dir() / <dataset> / <engine>-<fingerprint> /`` holding the engine's files and
``superb-index.json`` (how it was built: data set provenance, fields, recipe, document count, build time, a build id).
A build writes into a sibling ``<name>.tmp-<pid>-<random>`` folder and is renamed into place only after the marker is
written, so an interrupted build never looks complete: a folder counts as built only if the marker is in it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from superb import paths
from superb.errors import DataError
from superb.terminal import status

MARKER = "superb-index.json"
#: Bump when the way indexes are built changes, so old caches are not reused.
RECIPE_VERSION = 1


@dataclass(frozen=True)
class CachedIndex:
    """A complete index folder and its marker contents; ``built_now`` says whether this call built it."""

    path: Path
    info: dict
    built_now: bool


def dataset_fingerprint(dataset: Any) -> dict:
    """What identifies a data set's content: its name and provenance (file checksums). The provenance's ``checks``
    (counts of what loading handled, which grow as topics and qrels load) are left out: they do not change the
    documents, and an index key must not depend on what was loaded before it."""
    try:
        provenance = dataset.provenance()
    except AttributeError as exc:
        name = getattr(dataset, "name", dataset)
        raise DataError(f"data set {name!r} has no provenance(); an index cannot be keyed on its content") from exc
    provenance = {k: v for k, v in provenance.items() if k != "checks"}
    return {"name": str(dataset.name), "provenance": provenance}


def index_key(dataset: Any, engine: str, fields: tuple[str, ...], recipe: Mapping[str, Any]) -> tuple[str, dict]:
    """Return (hex fingerprint, the JSON-able description it hashes)."""
    described = {
        "recipe_version": RECIPE_VERSION,
        "engine": engine,
        "dataset": dataset_fingerprint(dataset),
        "fields": list(fields),
        "recipe": dict(recipe),
    }
    blob = json.dumps(described, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16], described


def index_folder(dataset: Any, engine: str, fingerprint: str) -> Path:
    safe_name = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(dataset.name))
    return paths.index_dir() / safe_name / f"{engine}-{fingerprint}"


def read_marker(folder: Path) -> dict | None:
    """The marker of a complete index folder, or None if the folder is missing or incomplete."""
    marker = folder / MARKER
    if not marker.is_file():
        return None
    try:
        return json.loads(marker.read_text())
    except json.JSONDecodeError as exc:
        raise DataError(f"index marker {marker} is corrupt ({exc}); delete the folder {folder} to rebuild it") from exc


def document_fields(dataset: Any, fields: tuple[str, ...]) -> Iterator[dict]:
    """Stream ``{"docno", <field>: str...}`` dicts; a missing docno/field is a DataError naming the document."""
    for position, doc in enumerate(dataset.docs_iter()):
        docno = doc.get("docno")
        if docno is None or str(docno) == "":
            raise DataError(f"data set {dataset.name!r}: document #{position} has no 'docno'")
        out = {"docno": str(docno)}
        for field in fields:
            if field not in doc:
                raise DataError(
                    f"data set {dataset.name!r}: document {docno!r} has no field {field!r} "
                    f"(it has {sorted(doc)}); choose fields among them"
                )
            out[field] = field_text(doc[field])
        yield out


class DocumentStream:
    """Documents for an indexer that may read them in another thread (PISA's and Terrier's indexers do), where an
    exception would be lost and a partial index would look complete. The first error ends the stream quietly for
    the indexer and is raised again by :meth:`check`, which the build calls once the indexer returns."""

    def __init__(self, docs: Iterator[dict]):
        self._docs = docs
        self.count = 0
        self.error: Exception | None = None

    def __iter__(self) -> Iterator[dict]:
        try:
            for doc in self._docs:
                self.count += 1
                yield doc
        except Exception as exc:  # re-raised by check() in the building thread
            self.error = exc

    def check(self) -> int:
        """Raise the error met while streaming, if any; else return the number of documents streamed."""
        if self.error is not None:
            raise self.error
        return self.count

    def run(self, index: Callable[[Iterator[dict]], Any], dataset_name: str) -> int:
        """``index(stream)``, then :meth:`check`. When the indexer itself fails because the stream ended early (PISA
        peeks at the first document and raises a bare StopIteration on an empty stream), the loader's error is what
        is raised, not the indexer's; a stream that was empty without an error is a DataError saying so."""
        try:
            index(iter(self))
        except Exception as exc:
            if self.error is not None:
                raise self.error from None
            if self.count == 0:
                raise DataError(f"data set {dataset_name!r} has no documents to index "
                                f"(the indexer said: {type(exc).__name__}: {exc})") from exc
            raise
        if self.count == 0 and self.error is None:
            raise DataError(f"data set {dataset_name!r} has no documents to index")
        return self.check()


def field_text(value: Any) -> str:
    """A field value as indexable text: None -> "", lists joined, dicts as "key value" pairs, others str()."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return " ".join(f"{k} {field_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return " ".join(field_text(v) for v in value)
    return str(value)


def _remove_stale_tmp(folder: Path) -> None:
    """Delete tmp folders of this index left by builds whose process is gone."""
    for tmp in folder.parent.glob(folder.name + ".tmp-*"):
        pid_text = tmp.name.rsplit(".tmp-", 1)[1].split("-", 1)[0]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and not _alive(int(pid_text)):
            shutil.rmtree(tmp, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def open_or_build(
    dataset: Any,
    engine: str,
    fields: tuple[str, ...],
    recipe: Mapping[str, Any],
    build: Callable[[Path], int],
) -> CachedIndex:
    """Reopen the complete index for this key, or build it with ``build(tmp_folder) -> number of documents``."""
    fingerprint, described = index_key(dataset, engine, fields, recipe)
    folder = index_folder(dataset, engine, fingerprint)
    info = read_marker(folder)
    if info is not None:
        return CachedIndex(folder, info, built_now=False)
    folder.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_tmp(folder)
    if folder.exists():  # a folder without marker was not produced by a finished build: remove it, rebuild
        shutil.rmtree(folder)
    tmp = folder.parent / f"{folder.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        start = time.perf_counter()
        with status(f"building the {engine} index of data set {dataset.name!r} (once; kept in {folder.parent})"):
            num_docs = build(tmp)
        info = {
            **described,
            "fingerprint": fingerprint,
            "num_docs": int(num_docs),
            "build_seconds": round(time.perf_counter() - start, 3),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_id": uuid.uuid4().hex,
        }
        (tmp / MARKER).write_text(json.dumps(info, indent=2, sort_keys=True, default=str))
        try:
            os.rename(tmp, folder)
        except OSError:
            if read_marker(folder) is None:  # not a concurrent winner: a real failure
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # another process finished the same build first: use theirs
            return CachedIndex(folder, read_marker(folder), built_now=False)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return CachedIndex(folder, info, built_now=True)
