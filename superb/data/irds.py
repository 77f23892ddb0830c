"""Any ir_datasets collection: ``[dataset] name = "irds"``, ``id = "<ir_datasets id>"``.

Documents come from the collection's docs (``docs_iter``), queries and qrels from its queries and qrels, so every
collection ir_datasets knows (and every one a user registers with ``ir_datasets.registry.register``) can be
reranked and judged like superb's own. Options:

  id             the ir_datasets id, e.g. "beir/scifact/test" or "msmarco-passage/trec-dl-2019/judged"
  fields         document fields kept (default: every text field of the docs class but the id); the default text
                 of a document is the docs class's ``default_text()`` where it has one, else these fields joined
  query_field    the query field used as the query text (default: the queries class's ``default_text()``, else
                 "text")
  rel_threshold  label >= this counts as relevant for binary measures (default 1, trec_eval's)
  text_kind      "passage" (default: the rerankers' passage templates, the papers' prompts) or "product"

ir_datasets downloads a collection's files on first use into ``IR_DATASETS_HOME`` (default ~/.ir_datasets). Where
that download cannot happen (no network, a moved mirror), the DataError names the file ir_datasets wants, where it
expects it and the URLs it tried, so it can be fetched elsewhere and put in place (:func:`download_help`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import pandas as pd

from superb.data.base import Dataset, as_str, check_options, compose_text
from superb.errors import DataError, SpecError

OPTIONS = ("name", "id", "fields", "query_field", "rel_threshold", "text_kind")
KINDS = ("passage", "product")
T = TypeVar("T")


def download_help(exc: BaseException, irds_id: str, part: str) -> DataError:
    """The DataError for an ir_datasets failure: for a failed download, the file wanted, its place and the URLs."""
    wanted = _failed_download(exc)
    home = os.environ.get("IR_DATASETS_HOME", os.path.expanduser("~/.ir_datasets"))
    if wanted is None:
        return DataError(f"ir_datasets could not read the {part} of {irds_id!r}: {type(exc).__name__}: {exc}")
    path, urls = wanted
    where = (f"put the file at {path}" if path else f"put the collection's files under IR_DATASETS_HOME ({home})")
    return DataError(f"ir_datasets needs a file for the {part} of {irds_id!r} and could not download it (tried "
                     f"{', '.join(urls) or 'no URL'}: {_last_error(exc)}). Fix: on a machine with internet, download "
                     f"{urls[0] if urls else 'it'} and {where}; or set IR_DATASETS_HOME to a copy of an ir_datasets "
                     f"folder that has it (now {home})")


def _failed_download(exc: BaseException) -> tuple[str | None, list[str]] | None:
    """(the cache path, the mirror URLs) of the ir_datasets Download whose fetch raised ``exc``, found in the
    traceback's frames; None when no download failed."""
    tb = exc.__traceback__
    found = None
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if type(owner).__name__ == "Download" and hasattr(owner, "mirrors"):
            urls = [str(getattr(m, "url", "")) for m in owner.mirrors if getattr(m, "url", None)]
            cache = getattr(owner, "_cache_path", None)
            found = (str(cache) if cache else None, urls)
        tb = tb.tb_next
    return found


def _last_error(exc: BaseException) -> str:
    if isinstance(exc, RuntimeError) and len(exc.args) > 1 and isinstance(exc.args[1], list) and exc.args[1]:
        exc = exc.args[1][-1][1]
    text = str(exc)
    return text[:200] + ("..." if len(text) > 200 else "")


class IrdsDataset(Dataset):
    """An ir_datasets collection behind superb's Dataset interface (see the module docstring)."""

    prompt_fields = ("text",)

    def __init__(self, irds_id: str, handle: Any, *, fields: tuple[str, ...], query_field: str | None,
                 rel_threshold: int, text_kind: str, options: Mapping[str, Any]):
        self.irds_id = irds_id
        self._handle = handle
        self._query_field = query_field
        self.text_kind = text_kind
        labels = tuple(sorted(int(k) for k in (self._call(handle.qrels_defs, "qrels") or {}))) or (0, 1)
        super().__init__(name="irds", fields=fields, rel_threshold=rel_threshold, labels=labels,
                         label_names={int(k): str(v) for k, v in (handle.qrels_defs() or {}).items()},
                         options=options)

    def _call(self, read: Callable[[], T], part: str) -> T:
        try:
            return read()
        except (KeyboardInterrupt, SystemExit, DataError):
            raise
        except Exception as exc:  # ir_datasets raises anything from a download or a parser: say what and where
            raise download_help(exc, self.irds_id, part) from None

    def _load_docs(self) -> Iterator[dict]:
        def read() -> list[dict]:
            docs = []
            for doc in self._handle.docs_iter():
                row = {"docno": str(doc.doc_id), **{f: as_str(getattr(doc, f, "")) for f in self.fields}}
                text = doc.default_text() if hasattr(doc, "default_text") else None
                row["text"] = as_str(text) if text is not None else compose_text(*(row[f] for f in self.fields))
                docs.append(row)
            return docs

        return iter(self._call(read, "documents"))

    def _load_topics(self) -> pd.DataFrame:
        field = self._query_field

        def read() -> pd.DataFrame:
            rows = []
            for query in self._handle.queries_iter():
                if field is None:
                    text = query.default_text() if hasattr(query, "default_text") else getattr(query, "text", "")
                else:
                    text = getattr(query, field)
                rows.append((str(query.query_id), as_str(text)))
            return pd.DataFrame(rows, columns=["qid", "query"])

        return self._call(read, "queries")

    def _load_qrels(self) -> pd.DataFrame:
        def read() -> pd.DataFrame:
            rows = [(str(q.query_id), str(q.doc_id), int(q.relevance)) for q in self._handle.qrels_iter()]
            return pd.DataFrame(rows, columns=["qid", "docno", "label"])

        return self._call(read, "qrels")

    def _source(self) -> dict:
        import ir_datasets

        return {"source": f"ir_datasets {self.irds_id!r} (ir_datasets {ir_datasets.__version__})", "files": []}


def _text_fields(cls: Any) -> tuple[str, ...]:
    hints = getattr(cls, "__annotations__", {}) or {}
    names = [f for f in getattr(cls, "_fields", ()) if f != "doc_id"]
    typed = [f for f in names if hints.get(f, str) in (str, "str")]
    return tuple(typed or names)


def load(config: Mapping[str, Any], path: str = "dataset") -> IrdsDataset:
    check_options(config, OPTIONS, path)
    irds_id = config.get("id")
    if not isinstance(irds_id, str) or not irds_id:
        raise SpecError(f"{path}.id", f"expected an ir_datasets id such as \"beir/scifact/test\", got {irds_id!r}")
    import ir_datasets

    try:
        handle = ir_datasets.load(irds_id)
    except KeyError:
        close = sorted(d for d in ir_datasets.registry._registered if d.split("/")[0] == irds_id.split("/")[0])[:8]
        raise SpecError(f"{path}.id", f"ir_datasets has no data set {irds_id!r}"
                                      + (f"; ids starting alike: {close}" if close else "")) from None
    missing = [part for part, has in (("docs", handle.has_docs()), ("queries", handle.has_queries()),
                                      ("qrels", handle.has_qrels())) if not has]
    if missing:
        raise SpecError(f"{path}.id", f"{irds_id!r} has no {' and no '.join(missing)}; superb needs documents, "
                                      "queries and qrels (pick the id of a split that has all three)")
    available = _text_fields(handle.docs_cls())
    fields = config.get("fields")
    if fields is None:
        fields = available
    if isinstance(fields, str):
        fields = [fields]
    if not isinstance(fields, (list, tuple)) or not all(isinstance(f, str) for f in fields) or not fields:
        raise SpecError(f"{path}.fields", f"expected a list of field names from {list(available)}, got {fields!r}")
    unknown = [f for f in fields if f not in handle.docs_cls()._fields]
    if unknown:
        raise SpecError(f"{path}.fields", f"{unknown} are not fields of {irds_id!r}'s documents: {list(available)}")
    query_field = config.get("query_field")
    if query_field is not None and query_field not in getattr(handle.queries_cls(), "_fields", ()):
        raise SpecError(f"{path}.query_field", f"{query_field!r} is not a field of {irds_id!r}'s queries: "
                                               f"{list(getattr(handle.queries_cls(), '_fields', ()))}")
    rel = config.get("rel_threshold", 1)
    if isinstance(rel, bool) or not isinstance(rel, int):
        raise SpecError(f"{path}.rel_threshold", f"expected an integer label, got {rel!r}")
    kind = config.get("text_kind", "passage")
    if kind not in KINDS:
        raise SpecError(f"{path}.text_kind", f"expected one of {list(KINDS)}, got {kind!r}")
    return IrdsDataset(irds_id, handle, fields=tuple(fields), query_field=query_field, rel_threshold=rel,
                       text_kind=kind, options={k: v for k, v in config.items() if k != "name"})
