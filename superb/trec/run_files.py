"""Runs made outside superb, read strictly: TREC run files and rank_llm's JSON candidates.

A run given to a spec (``first_stage = { run = "FILE" }``) or to ``superb evaluate`` is somebody else's output, so it
is read line by line and every defect is reported with its place, before anything runs:

- TREC run format, one line per (query, document): ``qid Q0 docno rank score tag`` (whitespace-separated, 6
  columns; rank an integer, score a finite number). A line with another shape is a DataError naming ``file:line``.
  Numbers are read as C reads them, in ASCII only: trec_eval takes a score with ``atof``, which stops at the first
  character that is not part of a C number, so ``1_000`` is 1 and Arabic-Indic ``٩٩`` is 0 to it, while Python's
  ``float`` reads 1000 and 99. A score or rank that is not a plain ASCII number (``-1.5``, ``2e-3``, ``7``) is
  refused with its place rather than read either way. A UTF-8 byte-order mark at the start of the file (what some
  Windows editors write) is not part of the first query id: it is dropped.
- rank_llm's JSON candidates (``retrieve_results_*.json``, or gzipped: ``.json.gz``): a list of ``{"query": text, "hits": [{"qid", "docid",
  "rank", "score", "content"}, ...]}``; the passage texts are not kept here (the data set holds them). A hit without
  those keys, or whose qid is not its entry's (the first hit's), is a DataError naming ``file: entry i, hit j``; so
  is an entry whose query another entry already holds.

A document repeated within one query is a DataError naming both lines (trec_eval would count it twice). The rows
come back in the order they are evaluated in: per query (queries in file order), score descending, then docno
descending (:func:`superb.trec.runs.trec_order`, trec_eval's rule), with ``rank`` renumbered 1.. in that order. Where
the file's own ranks disagree with that order (beyond ties), the number of queries is counted in
``RunFile.rank_disagreements``: trec_eval ignores the rank column, and so does superb.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from superb.digest import sha256_file
from superb.errors import DataError, utf8_error
from superb.errors import SpecError
from superb.trec.runs import trec_order

FORMATS = ("trec", "rank_llm")
RUN_KEYS = ("run", "depth", "format")  # a spec's first_stage table that is a given run
DATASET_PREFIX = "dataset:"  # run = "dataset:NAME": a run the data set provides
HOW = ("A TREC run file has one line per document: `qid Q0 docno rank score tag`; rank_llm's candidates file is "
       "the JSON list its retrieve step writes (retrieve_results_*.json)")


@dataclass(frozen=True)
class RunOptions:
    """A spec's run table, checked: where the run is (a path, or ``dataset:NAME``), its format and the depth."""

    run: str
    depth: int = 100
    format: str | None = None


def run_options(table: Any, path: str) -> RunOptions:
    """Check a spec's ``first_stage = { run = ..., depth = ..., format = ... }`` table when the spec is read, and read
    the file (unless the data set provides it), so that a missing file or a malformed line is reported before
    anything starts."""

    unknown = sorted(set(table) - set(RUN_KEYS))
    if unknown:
        raise SpecError(f"{path}.{unknown[0]}", f"unknown key for a first stage that is a run; allowed keys: "
                                                f"{list(RUN_KEYS)} (engine, model and their parameters belong to a "
                                                "retrieval first stage, not to a given run)")
    run = table["run"]
    if not isinstance(run, str) or not run.strip():
        raise SpecError(f"{path}.run", f"expected a run file's path or \"dataset:NAME\", got {run!r}")
    depth = table.get("depth", 100)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise SpecError(f"{path}.depth", f"expected an integer >= 1, got {depth!r}")
    fmt = table.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise SpecError(f"{path}.format", f"expected one of {list(FORMATS)}, got {fmt!r}")
    options = RunOptions(run=run, depth=depth, format=fmt)
    if not run.startswith(DATASET_PREFIX):
        try:
            read_run_file(run, fmt)
        except DataError as exc:
            raise SpecError(f"{path}.run", str(exc)) from None
    return options


@dataclass
class RunFile:
    """A run read from a file: rows (qid, docno, rank, score, in evaluation order), where it came from, and what
    reading it found."""

    path: Path
    format: str
    rows: pd.DataFrame
    sha256: str
    tag: str = ""
    query_texts: dict[str, str] = field(default_factory=dict)  # rank_llm's files carry the query text
    rank_disagreements: int = 0  # queries whose file ranks do not follow the score order (beyond ties)

    @property
    def qids(self) -> list[str]:
        return list(dict.fromkeys(self.rows["qid"]))

    def record(self) -> dict[str, Any]:
        """Provenance entry: path, format, sha256, bytes, counts."""
        return {"path": str(self.path), "format": self.format, "sha256": self.sha256,
                "bytes": self.path.stat().st_size, "queries": len(self.qids), "rows": len(self.rows),
                "tag": self.tag, "rank_disagreements": self.rank_disagreements}


def format_of(path: Path, fmt: str | None = None) -> str:
    """``fmt`` when given (checked), else "rank_llm" for a .json or .json.gz file and "trec" otherwise."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise DataError(f"{path}: unknown run format {fmt!r}; known: {list(FORMATS)}")
        return fmt
    return "rank_llm" if path.name.lower().endswith((".json", ".json.gz")) else "trec"


def read_text(path: Path) -> str:
    """A file's text as UTF-8 (a leading byte-order mark dropped), gunzipped first when it is gzip data (its first
    two bytes 1f 8b, whatever its name): rank_llm's candidates files are often kept as .json.gz. A truncated or
    damaged gzip stream is a DataError naming the file."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataError(f"{path}: not a complete gzip file ({exc}); the file may be truncated: get it again") \
                from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise utf8_error(path) from None


_READ: dict[tuple, RunFile] = {}  # (path, format, size, mtime) -> RunFile: the spec check and the stage read once


def read_run_file(path: str | Path, fmt: str | None = None) -> RunFile:
    """The run in ``path`` (see the module docstring); every defect is a DataError naming the place."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError(f"run file not found: {path} (relative paths are read from the current folder, "
                        f"{Path.cwd()}). {HOW}")
    fmt = format_of(path, fmt)
    stat = path.stat()
    key = (str(path.resolve()), fmt, stat.st_size, stat.st_mtime_ns)
    if key not in _READ:
        _READ[key] = _read(path, fmt)
    return _READ[key]


def _read(path: Path, fmt: str) -> RunFile:
    if fmt == "trec":
        records, tag, texts = _read_trec(path), "", {}
        tags = {r[5] for r in records}
        tag = next(iter(tags)) if len(tags) == 1 else ""
    else:
        records, texts = _read_rank_llm(path)
        tag = "rank_llm"
    if not records:
        raise DataError(f"{path}: the run holds no lines. {HOW}")
    frame = pd.DataFrame([r[:5] for r in records], columns=["qid", "docno", "file_rank", "score", "_where"])
    _refuse_repeats(frame, path)
    ordered = trec_order(frame)
    disagree = 0
    for _, group in ordered.groupby("qid", sort=False):
        ranks = group["file_rank"].to_numpy()
        scores = group["score"].to_numpy()
        # beyond ties: two documents with different scores whose file ranks are in the opposite order
        for i in range(1, len(ranks)):
            if ranks[i] < ranks[i - 1] and scores[i] < scores[i - 1]:
                disagree += 1
                break
    ordered["rank"] = ordered.groupby("qid", sort=False).cumcount() + 1
    rows = ordered[["qid", "docno", "rank", "score"]].reset_index(drop=True)
    return RunFile(path=path, format=fmt, rows=rows, sha256=sha256_file(path), tag=tag, query_texts=texts,
                   rank_disagreements=disagree)


#: numbers as C's atof/atol read them whole, ASCII only (no ``_`` separators, no other scripts' digits, no hex)
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(inf|infinity|nan)", re.ASCII | re.I)


def _number(text: str, what: str, where: str, integer: bool = False) -> float:
    if not (_INTEGER if integer else _FLOAT).fullmatch(text):
        kind = "an integer" if integer else "a number"
        raise DataError(f"{where}: {what} {text!r} is not {kind} written in ASCII digits (trec_eval reads numbers "
                        f"with C's atof, which would stop at the first other character). {HOW}")
    value = int(text) if integer else float(text)
    if not integer and not math.isfinite(value):
        raise DataError(f"{where}: {what} {text!r} is not a finite number. {HOW}")
    return value


def _read_trec(path: Path) -> list[tuple]:
    records = []
    try:
        with open(path, encoding="utf-8-sig") as handle:  # -sig: a leading byte-order mark is dropped
            for number, line in enumerate(handle, 1):
                parts = line.split()
                if not parts:
                    continue
                where = f"{path}:{number}"
                if len(parts) != 6:
                    raise DataError(f"{where}: expected 6 columns `qid Q0 docno rank score tag`, found {len(parts)} "
                                    f"({line.strip()[:80]!r}). {HOW}")
                rank = _number(parts[3], "rank", where, integer=True)
                score = _number(parts[4], "score", where)
                records.append((parts[0], parts[2], rank, score, where, parts[5]))
    except UnicodeDecodeError:
        raise utf8_error(path) from None
    return records


def rank_llm_entries(path: Path) -> list[dict]:
    """The entries of a rank_llm candidates file (.json, or gzipped), each an object with a ``hits`` list (a leading
    byte-order mark dropped); a file that is not UTF-8, not JSON (truncated) or not such a list is a DataError naming the place. The
    ``candidates`` data set reads its passages from the same entries."""
    try:
        entries = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); the file may be truncated. {HOW}") from None
    if not isinstance(entries, list):
        raise DataError(f"{path}: expected a JSON list of {{\"query\", \"hits\"}} entries, found "
                        f"{type(entries).__name__}. {HOW}")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("hits"), list):
            raise DataError(f"{path}: entry {i}: expected an object with a \"hits\" list. {HOW}")
    return entries


def _read_rank_llm(path: Path) -> tuple[list[tuple], dict[str, str]]:
    records, texts = [], {}
    owner: dict[str, int] = {}  # qid -> the entry that holds it
    for i, entry in enumerate(rank_llm_entries(path)):
        where = f"{path}: entry {i}"
        entry_qid = None
        for j, hit in enumerate(entry["hits"]):
            at = f"{where}, hit {j}"
            missing = [k for k in ("qid", "docid", "score") if not isinstance(hit, dict) or k not in hit]
            if missing:
                raise DataError(f"{at}: missing {missing} (each hit needs qid, docid, rank, score). {HOW}")
            qid, docno = str(hit["qid"]), str(hit["docid"])
            if entry_qid is None:
                entry_qid = qid
                if owner.setdefault(qid, i) != i:
                    raise DataError(f"{at}: query {qid!r} is already the query of entry {owner[qid]}; rank_llm "
                                    f"writes one entry per query: join their hits into one entry. {HOW}")
            elif qid != entry_qid:
                raise DataError(f"{at}: qid {qid!r} differs from its entry's qid {entry_qid!r} (hit 0's): every hit "
                                f"of an entry belongs to the entry's query; move the hit to its own query's entry "
                                f"or correct its qid. {HOW}")
            score = _number(str(hit["score"]), "score", at)
            rank = _number(str(hit.get("rank", j + 1)), "rank", at, integer=True)
            records.append((qid, docno, rank, score, at))
            if isinstance(entry.get("query"), str):
                texts.setdefault(qid, entry["query"])
    return records, texts


def _refuse_repeats(frame: pd.DataFrame, path: Path) -> None:
    repeated = frame[frame.duplicated(["qid", "docno"], keep=False)]
    if len(repeated):
        first = repeated.iloc[0]
        places = repeated[(repeated["qid"] == first["qid"]) & (repeated["docno"] == first["docno"])]["_where"]
        n = int(frame.duplicated(["qid", "docno"]).sum())
        raise DataError(f"{path}: document {first['docno']!r} appears more than once for query {first['qid']!r} "
                        f"({', '.join(places.tolist()[:3])}); {n} repeated (query, document) line(s) in all. "
                        "A run lists each document once per query: keep the first and remove the others")
