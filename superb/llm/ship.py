"""Responses shipped with results: ``results/NAME/responses.jsonl.gz`` holds exactly the LLM answers a run used.

Why: a results folder should re-derive anywhere. With its responses beside it, a reader (or another machine that
takes over a long run) replays them into an empty response cache and ``superb run SPEC`` makes 0 LLM calls:

    superb responses replay results/NAME      # verify every row, store it in the cache ($SUPERB_HOME or --cache)
    superb run experiments/NAME.toml           # every answer is a cache hit

The file: one JSON object per line, sorted by key, gzip with mtime 0 (so the same responses give the same bytes):
``key`` (the cache key: sha256 of ``request``), ``model``, ``template``, ``request`` (the canonical key material:
model, messages, sampling and logprob parameters, template id), ``text``, ``logprobs``, ``prompt_tokens``,
``completion_tokens``. No API key, endpoint URL, latency or timestamp is in it. Replaying refuses (and reports) a row
whose key is not the sha256 of its request. Which rows came from where (live calls, a batch file, another results
folder) is counted in provenance.json under "responses".

Parts: a file would grow past what a git host takes comfortably, so the writer starts a new part when the compressed
bytes of the current one reach ``PART_BYTES``: ``responses.jsonl.gz``, then ``responses.2.jsonl.gz``, ... Each part
is sorted and the parts follow each other in key order, so reading them in turn (``read_lines``) gives the one
sorted file; the summary's sha256 covers all parts in order.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from superb.digest import sha256_files
from superb.errors import SuperbError
from superb.folder.layout import RESPONSES
from superb.llm.cache import ResponseCache
from superb.llm.cache_file import unloadable_row_error
from superb.llm.cache_rows import CachedRow, StoreCounts

SHIPPED_FILE = RESPONSES
PART_BYTES = 4_000_000  # compressed bytes after which the writer starts the next part (files stay under 5 MB)
EXAMPLES = 5  # invalid rows named in a report


@dataclass(frozen=True)
class ResponseLog:
    """The responses a run used: the cache they are in and their keys (sorted)."""

    cache_path: Path
    keys: tuple[str, ...]

    def write(self, path: Path) -> dict[str, Any]:
        """The shipped file at ``path`` (see :func:`write_shipped`); the results writer calls this on whatever
        ``ExperimentResult.responses`` holds (a merge of shards holds superb.run.merge.MergedResponses instead)."""
        return write_shipped(self, path)


def response_log(client: Any) -> ResponseLog | None:
    """What ``client`` served or wrote through its response cache (None without a cache: nothing to ship)."""
    cache = getattr(client, "cache", None)
    if not isinstance(cache, ResponseCache) or cache.mode == "off":
        return None
    return ResponseLog(cache.path, tuple(cache.used_keys()))


def write_shipped(log: ResponseLog, path: Path) -> dict[str, Any]:
    """Write the rows of ``log.keys`` to ``path`` (gzip JSONL, sorted by key, mtime 0); returns a summary for
    provenance: rows, keys missing from the cache, sha256 of the file, and the rows' sources."""
    path = Path(path)
    with ResponseCache(log.cache_path, "read-only") as cache:
        written = write_lines(path, (row_line(_loaded(row, cache.path)) for row in cache.rows(log.keys)))
        sources = cache.source_counts(log.keys)
    missing = len(log.keys) - written
    return {"file": path.name, "rows": written, "missing_from_cache": missing, "sha256": parts_sha256(path),
            "sources": sources}


def _loaded(row: CachedRow, cache_path: Path) -> dict[str, Any]:
    """The row as a dict; a row whose request or logprobs are not JSON is named with the command that removes it."""
    try:
        return row.to_dict()
    except ValueError as e:
        raise unloadable_row_error(Path(cache_path), row.key, e) from None


def row_line(row: dict[str, Any]) -> str:
    """One row as the shipped file holds it: canonical JSON (sorted keys, no spaces), no newline."""
    return json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def part_paths(path: Path) -> list[Path]:
    """The parts of the shipped file ``path`` that exist, in order: ``path`` itself, then NAME.2.jsonl.gz, ..."""
    path = Path(path)
    if not path.is_file():
        return []
    parts = [path]
    while (nxt := _part(path, len(parts) + 1)).is_file():
        parts.append(nxt)
    return parts


def _part(path: Path, n: int) -> Path:
    """Part ``n`` (>= 2) of ``path``: responses.jsonl.gz -> responses.2.jsonl.gz (other names: NAME.2)."""
    stem, ext = (path.name[: -len(".jsonl.gz")], ".jsonl.gz") if path.name.endswith(".jsonl.gz") else (path.name, "")
    return path.with_name(f"{stem}.{n}{ext}")


def read_lines(path: Path) -> Iterator[tuple[Path, int, str]]:
    """(part, line number, line without its newline) of every part of a shipped file, in order."""
    for part in part_paths(path):
        with gzip.open(part, "rt", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                yield part, n, line.rstrip("\n")


def write_lines(path: Path, lines: Iterator[str]) -> int:
    """Write ``lines`` (already sorted by key) to ``path`` as gzip with mtime 0, each part atomically, in parts of
    about ``PART_BYTES`` compressed bytes, at least one line each (see the module's docstring); parts an earlier,
    longer write left are removed. Returns how many lines."""
    path, limit = Path(path), PART_BYTES
    written, n, lines = 0, 1, iter(lines)
    pending = next(lines, None)
    while True:
        target = path if n == 1 else _part(path, n)
        tmp = target.with_name(target.name + ".tmp")
        try:
            with open(tmp, "wb") as raw:
                with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                    out = io.TextIOWrapper(gz, encoding="utf-8", newline="\n")
                    in_part = 0
                    # raw.tell() trails the text by what zlib and the wrapper still buffer (tens of KB): close enough
                    while pending is not None and (in_part == 0 or raw.tell() < limit):
                        out.write(pending)
                        out.write("\n")
                        written, in_part = written + 1, in_part + 1
                        pending = next(lines, None)
                    out.flush()
                    out.detach()
            os.replace(tmp, target)
        except BaseException:  # a full disk, an unwritable folder: no temporary part is left behind
            tmp.unlink(missing_ok=True)
            raise
        if pending is None:
            break
        n += 1
    while (stale := _part(path, n + 1)).is_file():
        stale.unlink()
        n += 1
    return written


def ship_responses(result: Any, out_dir: Path) -> dict[str, Any] | None:
    """The results writer's hook: write ``responses.jsonl.gz`` for ``result.responses`` (anything with
    ``write(path) -> summary``: a ResponseLog, or the merged responses of shards) and return its summary, which the
    results writer records in provenance.json; a run without a cache ships nothing (a stale file is removed) and
    returns None."""
    path = Path(out_dir) / SHIPPED_FILE
    log = getattr(result, "responses", None)
    if log is None:
        path.unlink(missing_ok=True)
        return None
    return log.write(path)


@dataclass
class ReplayReport:
    """What a replay or an import did. ``invalid`` rows were refused (named in ``examples``)."""

    source: str
    rows: int = 0
    invalid: int = 0
    examples: list[str] = field(default_factory=list)
    counts: StoreCounts = field(default_factory=StoreCounts)

    def refuse(self, where: str, reason: str) -> None:
        self.invalid += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(f"{where}: {reason}")

    def lines(self) -> list[str]:
        c = self.counts
        out = [f"{self.source}: {self.rows} rows; stored {c.stored}, already cached {c.identical}, "
               f"conflicting answers {c.conflicts} ({'replaced' if c.replaced else 'kept the cached ones'}), "
               f"refused {self.invalid}"]
        out += [f"  refused {e}" for e in self.examples]
        return out


def shipped_path(where: str | Path) -> Path:
    """A results folder (holding responses.jsonl.gz) or the file itself; SuperbError naming the path otherwise."""
    where = Path(where)
    path = where / SHIPPED_FILE if where.is_dir() else where
    if not path.is_file():
        raise SuperbError(f"{path} does not exist: give a results folder written by `superb run` (results/NAME) "
                          f"or its {SHIPPED_FILE}")
    return path


def replay(where: str | Path, cache: ResponseCache, *, replace: bool = False) -> ReplayReport:
    """Verify every row of a shipped file and store the valid ones in ``cache`` (streaming; source
    "shipped:<folder name>"). Conflicting answers keep the cached one unless ``replace``."""
    path = shipped_path(where)
    label = path.parent.name if path.name == SHIPPED_FILE else path.name
    report = ReplayReport(source=f"shipped:{label}")
    cache.store_rows(_verified(path, report), report.source, replace=replace, counts=report.counts)
    return report


def _verified(path: Path, report: ReplayReport) -> Iterator[CachedRow]:
    try:
        for part, n, line in read_lines(path):
            if not line.strip():
                continue
            report.rows += 1
            try:
                yield CachedRow.from_dict(json.loads(line))
            except (ValueError, TypeError, AttributeError) as e:
                report.refuse(f"{part.name} line {n}" if part != path else f"line {n}", str(e))
    except (OSError, EOFError) as e:  # not gzip, truncated
        raise SuperbError(f"cannot read {path}: {e}. Is it a {SHIPPED_FILE} written by `superb run`?") from None


def parts_sha256(path: Path) -> str:
    """sha256 of the bytes of every part of ``path``, in order (one part: the file's own sha256)."""
    return sha256_files(part_paths(path))
