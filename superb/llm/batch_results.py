"""LLM work as OpenAI batch files, the import side: result files of OpenAI's Batch API, ``vllm run-batch`` and SGLang.

All three write one JSON object per line, keyed by the ``custom_id`` of the request (here: the cache key)::

    {"id": ..., "custom_id": KEY, "response": {"status_code": 200, "request_id": ..., "body": {chat.completion}},
     "error": null}

Failed requests differ by engine, and each is counted as an error line (by status or error code), not stored:
OpenAI puts them in the batch's error file (``"response": null, "error": {"code": "batch_expired", ...}``) or gives a
non-200 ``status_code`` with an error body; ``vllm run-batch`` writes ``"status_code": 400`` (or the error's code),
``"body": null`` and the message in ``"error"``; SGLang writes ``"response": null, "error": {"message": ...}``. SGLang's
successful bodies hold ``"choices"`` as one object rather than a list; both are read.

A line whose custom_id is not an exported request (``PendingStore``) is reported and not stored (unless its answer
is already cached: a file imported twice). A line that is not JSON, or whose body is not a chat completion, is
counted as malformed. The rest is stored in the response cache with source "batch:<file name>" and leaves the
pending requests.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from superb.errors import SuperbError
from superb.llm.cache import ResponseCache
from superb.llm.cache_rows import CachedRow, StoreCounts, dump_logprobs
from superb.llm.batch import PendingStore
from superb.llm.wire import completion_from_json

EXAMPLES = 5  # unknown ids / malformed lines named in a report


@dataclass
class ImportReport:
    """What importing one result file did."""

    source: str
    lines: int = 0
    errors: Counter = field(default_factory=Counter)  # error lines by status/code ("400", "batch_expired", ...)
    error_examples: list[str] = field(default_factory=list)
    unknown: int = 0  # custom_id matches no exported request (and no cached answer)
    unknown_examples: list[str] = field(default_factory=list)
    malformed: int = 0  # not JSON, no custom_id, or a body that is not a chat completion
    malformed_examples: list[str] = field(default_factory=list)
    counts: StoreCounts = field(default_factory=StoreCounts)

    @property
    def answered(self) -> int:
        return self.counts.stored + self.counts.identical + self.counts.conflicts

    def lines_out(self) -> list[str]:
        c = self.counts
        errors = ", ".join(f"{k} x{v}" for k, v in sorted(self.errors.items())) or "none"
        out = [f"{self.source}: {self.lines} lines; stored {c.stored}, already cached {c.identical}, "
               f"conflicting {c.conflicts} ({'replaced' if c.replaced else 'kept the cached answers'}); "
               f"error lines {sum(self.errors.values())} ({errors}); unknown custom_id {self.unknown}; "
               f"malformed {self.malformed}"]
        out += [f"  error {e}" for e in self.error_examples]
        out += [f"  unknown custom_id {e} (not exported from this cache; not stored)" for e in self.unknown_examples]
        out += [f"  malformed {e}" for e in self.malformed_examples]
        return out


def _note(examples: list[str], text: str) -> None:
    if len(examples) < EXAMPLES:
        examples.append(text)


def result_body(obj: Any) -> tuple[str, dict | None, str | None]:
    """(custom_id, chat.completion body or None, error code or None) of one result line; ValueError if the line
    has no string custom_id or no response/error at all."""
    if not isinstance(obj, dict) or not isinstance(obj.get("custom_id"), str):
        raise ValueError("no string custom_id")
    custom_id = obj["custom_id"]
    response, error = obj.get("response"), obj.get("error")
    if not isinstance(response, dict):
        if error is None:
            raise ValueError("neither a response nor an error")
        return custom_id, None, _error_code(error, None)
    status = response.get("status_code", 200)
    body = response.get("body")
    if status != 200 or body is None or error is not None:
        return custom_id, None, _error_code(error if error is not None else body, status)
    if not isinstance(body, dict):
        raise ValueError(f"response body is not an object: {str(body)[:80]!r}")
    if isinstance(body.get("choices"), dict):  # SGLang's batch output: one choice object, not a list
        body = {**body, "choices": [body["choices"]]}
    return custom_id, body, None


def _error_code(error: Any, status: Any) -> str:
    """A short code for an error line: the error's code or type, else the HTTP status."""
    if isinstance(error, dict):
        inner = error.get("error") if isinstance(error.get("error"), dict) else error
        for name in ("code", "type"):
            if inner.get(name) not in (None, ""):
                return str(inner[name])
    return str(status) if status not in (None, 200) else "error"


def import_results(path: str | Path, cache: ResponseCache, store: PendingStore, *,
                   replace: bool = False) -> ImportReport:
    """Store the answers of one result file (streaming) and return what happened, line by line counted."""
    path = Path(path)
    if not path.is_file():
        raise SuperbError(f"{path} does not exist: give the result (output or error) file of a batch")
    report = ImportReport(source=f"batch:{path.name}")
    cache.store_rows(_rows(path, store, report), report.source, replace=replace, counts=report.counts)
    store.forget_answered()
    return report


def _rows(path: Path, store: PendingStore, report: ImportReport) -> Iterator[CachedRow]:
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            report.lines += 1
            row = _row(n, line, store, report)
            if row is not None:
                yield row


def _row(n: int, line: str, store: PendingStore, report: ImportReport) -> CachedRow | None:
    try:
        custom_id, body, error = result_body(json.loads(line))
    except ValueError as e:  # JSONDecodeError is a ValueError
        report.malformed += 1
        _note(report.malformed_examples, f"line {n}: {e}")
        return None
    if error is not None:
        report.errors[error] += 1
        _note(report.error_examples, f"line {n}: custom_id {custom_id[:12]}: {error}")
        return None
    exported = store.lookup(custom_id)
    if exported is None:
        if store.is_cached(custom_id):
            report.counts.identical += 1  # imported before (the same file twice): nothing to do
        else:
            report.unknown += 1
            _note(report.unknown_examples, f"line {n}: {custom_id[:40]!r}")
        return None
    try:
        completion = completion_from_json(body)
    except ValueError as e:
        report.malformed += 1
        _note(report.malformed_examples, f"line {n}: custom_id {custom_id[:12]}: {e}")
        return None
    model, template, request = exported
    return CachedRow(key=custom_id, model=model, template=template, request=request, text=completion.text,
                     logprobs=dump_logprobs(completion.logprobs), prompt_tokens=completion.prompt_tokens,
                     completion_tokens=completion.completion_tokens)

