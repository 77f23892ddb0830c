"""Any local test collection: JSONL documents, TSV queries, TREC qrels.

Options:
  docs      JSONL, one object per line with "docno" and any string fields (optionally "text").
  queries   TSV without header: qid <TAB> query (a first line "qid<TAB>query" is taken as a header and skipped).
  qrels     TREC qrels: qid iteration docno label (whitespace-separated).
  fields    which document keys are fields (default: every key seen except docno and text, in first-seen order).
  text_fields  fields joined (one per line) into the default text of documents that have no "text" (default: fields).
  rel_threshold  label >= this is relevant for binary measures (default 1).
  labels    the label scale (default: the distinct labels found in the qrels).
  text_kind "passage" or "product": which default templates and prompt field the rerankers use (passage: the papers'
            passage prompts, field ``text``, as irds and trec-dl have it; product: the shop prompts, field
            ``title``). Default: "passage" when the documents have no field but ``text`` (passages), else "product".
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from superb.data.base import Dataset, as_str, check_options, compose_text, file_record, require_file
from superb.errors import DataError, SpecError, utf8_error
from superb.trec.runs import label_error

OPTIONS = ("name", "docs", "queries", "qrels", "fields", "text_fields", "rel_threshold", "labels", "text_kind")
KINDS = ("passage", "product")
HOW = {
    "docs": "Give a JSONL file, one document per line with a \"docno\" and string fields, as option `docs`.",
    "queries": "Give a tab-separated file of `qid<TAB>query` lines as option `queries`.",
    "qrels": "Give a TREC qrels file (`qid 0 docno label` per line) as option `qrels`.",
}


def _lines(file: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 file; bytes that are not UTF-8 are a DataError naming the line and column."""
    try:
        with open(file, encoding="utf-8-sig") as handle:  # -sig: a leading byte-order mark is dropped
            yield from enumerate(handle, 1)
    except UnicodeDecodeError as exc:
        raise utf8_error(file, exc) from None


def _read_jsonl(file: Path) -> list[dict]:
    rows = []
    for number, line in _lines(file):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{file}:{number}: not valid JSON ({exc.msg}). {HOW['docs']}") from exc
        if not isinstance(row, dict) or "docno" not in row:
            raise DataError(f"{file}:{number}: each line must be a JSON object with a \"docno\" key. {HOW['docs']}")
        rows.append(row)
    return rows


def read_queries_tsv(file: Path) -> pd.DataFrame:
    """qid, query of a ``qid<TAB>query`` file; a qid given twice is a DataError naming both lines."""
    rows, first = [], {}
    for number, line in _lines(file):
        line = line.rstrip("\n").rstrip("\r")
        if not line.strip() or (number == 1 and line.lower() == "qid\tquery"):
            continue
        qid, sep, query = line.partition("\t")
        if not sep:
            raise DataError(f"{file}:{number}: expected `qid<TAB>query`, found {line[:60]!r}. {HOW['queries']}")
        qid = qid.strip()
        if first.setdefault(qid, number) != number:
            raise DataError(f"{file}:{number}: query {qid!r} is already given at line {first[qid]}; a topics file "
                            "lists each query once: remove one")
        rows.append((qid, query.strip()))
    return pd.DataFrame(rows, columns=["qid", "query"])


def read_trec_qrels(file: Path) -> pd.DataFrame:
    rows = []
    for number, line in _lines(file):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise DataError(f"{file}:{number}: expected 4 columns `qid iteration docno label`, found {len(parts)}. "
                            f"{HOW['qrels']}")
        error = label_error(parts[3], f"{file}:{number}")
        if error:
            raise DataError(f"{error}. {HOW['qrels']}")
        rows.append((parts[0], parts[2], int(parts[3])))
    return pd.DataFrame(rows, columns=["qid", "docno", "label"])


class LocalDataset(Dataset):
    location_options = ("docs", "queries", "qrels")

    def __init__(self, files: Mapping[str, Path], *, fields: tuple[str, ...] | None,
                 text_fields: tuple[str, ...] | None, rel_threshold: int, labels: tuple[int, ...] | None,
                 options: Mapping[str, Any], path: str = "dataset", text_kind: str | None = None):
        self.files = dict(files)
        self._rows = _read_jsonl(self.files["docs"])
        if fields is None:
            seen: dict[str, None] = {}
            for row in self._rows:
                seen.update((k, None) for k in row if k not in ("docno", "text"))
            fields = tuple(seen)
        self._text_fields = text_fields if text_fields is not None else fields
        unknown = [f for f in self._text_fields if f not in fields]
        if unknown:
            raise SpecError(f"{path}.text_fields", f"{unknown} are not among the fields {list(fields)}")
        if labels is None:
            labels = tuple(sorted(set(read_trec_qrels(self.files["qrels"])["label"])))
        super().__init__(name="local", fields=fields, rel_threshold=rel_threshold, labels=labels,
                         label_names={}, options=options)
        self.text_kind = text_kind or ("passage" if not fields else "product")
        if self.text_kind == "passage":
            self.prompt_fields = ("text",)  # the passage itself, as irds and trec-dl show it

    def _load_docs(self) -> Iterator[dict]:
        for row in self._rows:
            doc = {"docno": as_str(row["docno"]), **{f: as_str(row.get(f)) for f in self.fields}}
            text = row.get("text")
            doc["text"] = as_str(text) if text is not None else compose_text(*(doc[f] for f in self._text_fields))
            yield doc

    def _load_topics(self) -> pd.DataFrame:
        return read_queries_tsv(self.files["queries"])

    def _load_qrels(self) -> pd.DataFrame:
        return read_trec_qrels(self.files["qrels"])

    def _source(self) -> dict:
        return {"source": "local files", "files": [file_record(f, role=role) for role, f in self.files.items()]}


def _str_tuple(config: Mapping[str, Any], key: str, path: str) -> tuple[str, ...] | None:
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise SpecError(f"{path}.{key}", f"expected a list of field names, got {value!r}")
    return tuple(value)


def load(config: Mapping[str, Any], path: str = "dataset") -> LocalDataset:
    check_options(config, OPTIONS, path)
    files = {key: require_file(config.get(key), path, key, HOW[key]) for key in ("docs", "queries", "qrels")}
    rel = config.get("rel_threshold", 1)
    if not isinstance(rel, int) or isinstance(rel, bool):
        raise SpecError(f"{path}.rel_threshold", f"expected an integer label, got {rel!r}")
    labels = config.get("labels")
    if labels is not None and (not isinstance(labels, (list, tuple)) or not all(isinstance(x, int) for x in labels)):
        raise SpecError(f"{path}.labels", f"expected a list of integer labels, got {labels!r}")
    kind = config.get("text_kind")
    if kind is not None and kind not in KINDS:
        raise SpecError(f"{path}.text_kind", f"expected one of {list(KINDS)}, got {kind!r}")
    return LocalDataset(files, fields=_str_tuple(config, "fields", path), text_kind=kind,
                        text_fields=_str_tuple(config, "text_fields", path),
                        rel_threshold=rel, labels=tuple(labels) if labels is not None else None,
                        options={k: v for k, v in config.items() if k != "name"}, path=path)
