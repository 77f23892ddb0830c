"""The checks that a response cache file is one superb can use, made when it is opened, and the errors that name the
file and the way out: not SQLite, cut short, damaged pages, another program's database, an answer that cannot be
loaded (see docs/integrity.md)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from superb.errors import LLMError

_SQLITE_MAGIC = b"SQLite format 3\x00"
COLUMNS = ("key", "model", "template", "request", "text", "logprobs", "prompt_tokens", "completion_tokens",
           "latency_s", "created", "checksum")
BEFORE_CHECKSUMS = COLUMNS[:-1]  # a cache written before answers carried checksums (superb/llm/cache_checksum.py)
# the tables superb keeps in a cache file: answers, their sources, batch exports (superb/llm/batch.py), claims
TABLES = {"responses", "response_sources", "batch_requests", "batch_exports", "claims"}


def corrupt_cache_error(path: Path, cause: object) -> LLMError:
    """The error for a cache file SQLite cannot use: which file, what is wrong, and the way out."""
    return LLMError(
        f"the LLM response cache {path} is corrupt ({cause}). Move it aside and run again: "
        f"`mv {path} {path}.corrupt` (also any {path.name}-wal and {path.name}-shm beside it); the run creates a "
        f"new cache and makes the calls again. To keep what is still readable, first copy it into a new cache: "
        f"`superb responses recover {path}.corrupt --cache {path}`."
    )


def unloadable_row_error(path: Path, key: str, cause: object) -> LLMError:
    """The error for one cached answer that cannot be loaded: its key, why, and the command that removes it."""
    return LLMError(f"the cached answer {key} in the LLM response cache {path} cannot be loaded ({cause}). Remove it "
                    f"and run again (that one request is made again): `superb responses remove {key} --cache {path}`")


def foreign_cache_error(path: Path, found: str) -> LLMError:
    """The error for a valid SQLite file that is not a response cache: superb writes nothing into it."""
    return LLMError(f"the LLM response cache {path} is an SQLite database but not a superb response cache ({found}); "
                    f"superb will not write into it. Point llm.cache_path (or --cache) at a superb cache file or a new "
                    f"path, or move the file away: `mv {path} {path}.other`")


def check_file(path: Path) -> None:
    """Refuse a file that is not an SQLite database, or is shorter than its header says (a truncated copy), before
    SQLite reads it: both would otherwise fail later, mid-run, on whichever page is missing."""
    if path.is_dir():
        raise LLMError(f"the LLM response cache {path} is a directory, not a file: set llm.cache_path (or --cache) to "
                       f"a file, e.g. {path / 'llm-cache.sqlite'}, or move the directory away")
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return  # a new cache
    if size == 0:
        return  # SQLite treats an empty file as a new database
    with open(path, "rb") as handle:
        header = handle.read(100)
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        raise corrupt_cache_error(path, "not an SQLite database: its first bytes are not the SQLite header")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    valid_count = header[24:28] == header[92:96]  # the in-header page count is valid only when these agree
    wal = path.with_name(path.name + "-wal")
    pending = wal.exists() and wal.stat().st_size > 0  # a checkpoint may still have pages to write from the WAL
    if valid_count and pages and not pending and size < pages * page_size:
        raise corrupt_cache_error(path, f"truncated: {size} bytes, but its header counts {pages} pages of "
                                        f"{page_size} bytes = {pages * page_size} bytes")


def check_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a database whose tables are not a response cache's (before superb writes anything into it)."""
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
              if not name.startswith("sqlite_")}
    others = sorted(tables - TABLES)
    if others:
        raise foreign_cache_error(path, f"it holds the table(s) {', '.join(others[:5])}")
    if "responses" in tables:
        columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(responses)"))
        if columns not in (COLUMNS, BEFORE_CHECKSUMS):
            raise foreign_cache_error(path, f"its table responses has the columns {', '.join(columns)}, not "
                                            f"{', '.join(COLUMNS)}")


def probe_pages(conn: sqlite3.Connection, path: Path) -> None:
    """Read every page (PRAGMA quick_check: about 0.1 s for an 85 MB cache), so a damaged file fails here, at open,
    rather than mid-run, or in a dry run that would count every damaged answer as a call to pay for."""
    problems = [row[0] for row in conn.execute("PRAGMA quick_check(5)")]
    if problems != ["ok"]:
        found = " ".join(" ".join(problems).split())  # quick_check's report spans lines
        raise corrupt_cache_error(path, f"database disk image is malformed: {found[:300]}")
