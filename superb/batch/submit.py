"""`superb batch submit SPEC`: rounds of the OpenAI Batch API until the spec needs no more LLM answers.

Each round: export the requests the spec needs now (collect.py), upload the file, create a batch, poll it with
backoff (``poll_s``, times 1.5 per poll, capped at ``max_poll_s``), download its output and error files, import them
(superb/llm/batch_results.py), and export again. An expired batch's partial results are imported and the rest are
exported again in the next round; failed lines likewise. The state (round files, file and batch ids) is saved under
``$SUPERB_HOME/batches/<spec name>-<fingerprint>/state.json`` after every step, so an interrupted submit, run again,
resumes the batch it had created instead of paying for it twice. Two rounds in a row that import no answer stop with
the batch's errors (a spec the endpoint cannot answer would loop forever).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from superb import paths
from superb.errors import LLMError
from superb.llm.batch import PendingStore
from superb.llm.batch_api import BatchAPI, BatchStatus
from superb.llm.batch_results import ImportReport, import_results
from superb.llm.cache import ResponseCache

MAX_IDLE_ROUNDS = 2  # rounds in a row without one imported answer before submit gives up


def work_dir(spec: Any, base_url: str, model: str) -> Path:
    """Where a spec's batch rounds are kept: one folder per (spec content, endpoint, model)."""
    raw = json.dumps({"spec": spec.raw, "endpoint": base_url, "model": model}, sort_keys=True, default=str)
    return paths.home() / "batches" / f"{spec.name}-{hashlib.sha256(raw.encode()).hexdigest()[:12]}"


@dataclass
class SubmitState:
    """The rounds of one spec against one endpoint, saved as JSON after every step."""

    path: Path
    rounds: list[dict[str, Any]] = field(default_factory=list)

    @staticmethod
    def load(path: Path) -> "SubmitState":
        path = Path(path)
        if path.is_file():
            return SubmitState(path, json.loads(path.read_text(encoding="utf-8"))["rounds"])
        return SubmitState(path)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"rounds": self.rounds}, indent=2), encoding="utf-8")
        tmp.replace(self.path)

    def active(self) -> dict[str, Any] | None:
        """The round that was uploaded but not yet imported (at most one)."""
        return next((r for r in self.rounds if r.get("file_id") and not r.get("imported")), None)


@dataclass
class SubmitReport:
    rounds: int = 0  # rounds completed in this call
    imports: list[ImportReport] = field(default_factory=list)
    finished: bool = False


class Submitter:
    """Drives the rounds. ``export(path) -> (requests, sha256)`` writes the next round's batch file (0 = done)."""

    def __init__(self, api: BatchAPI, export: Callable[[Path], tuple[int, str | None]], cache_path: Path,
                 state: SubmitState, *, poll_s: float = 30.0, max_poll_s: float = 600.0, max_rounds: int = 100,
                 sleep: Callable[[float], None] = time.sleep, log: Callable[[str], None] = print):
        self.api, self.export, self.cache_path, self.state = api, export, Path(cache_path), state
        self.poll_s, self.max_poll_s, self.max_rounds = poll_s, max_poll_s, max_rounds
        self.sleep, self.log = sleep, log

    def run(self) -> SubmitReport:
        report = SubmitReport()
        idle = 0
        while True:
            current = self.state.active()
            if current is not None:
                answered = self._finish(current, report)
                idle = 0 if answered else idle + 1
                if idle >= MAX_IDLE_ROUNDS:
                    raise LLMError(f"{idle} batch rounds in a row imported no answer (last batch "
                                   f"{current.get('batch_id')}: {current.get('status')}, "
                                   f"{'; '.join(current.get('errors') or []) or 'see its error file'}); stopping. "
                                   f"Rounds are in {self.state.path.parent}")
                continue
            if report.rounds >= self.max_rounds:
                self.log(f"stopped after {report.rounds} rounds (--max-rounds); run again to go on")
                return report
            number = len(self.state.rounds) + 1
            batch_file = self.state.path.parent / f"round-{number}.jsonl"
            n, sha = self.export(batch_file)
            if n == 0:
                self.log("nothing left: every LLM answer the spec needs is cached")
                report.finished = True
                return report
            entry = {"round": number, "file": batch_file.name, "requests": n, "sha256": sha}
            self.state.rounds.append(entry)
            self.state.save()
            entry["file_id"] = self.api.upload(batch_file)
            self.state.save()
            self.log(f"round {number}: uploaded {n} requests as {entry['file_id']}")

    def _finish(self, entry: dict[str, Any], report: SubmitReport) -> int:
        """Create (if needed), poll, download and import one round; returns the answers it imported."""
        if not entry.get("batch_id"):
            status = self.api.create(entry["file_id"])
            entry["batch_id"] = status.id
            self.state.save()
            self.log(f"round {entry['round']}: batch {status.id} created")
        status = self._poll(entry["batch_id"])
        entry["status"], entry["counts"], entry["errors"] = status.status, status.counts, list(status.errors)
        folder = self.state.path.parent
        answered = 0
        with ResponseCache(self.cache_path) as cache, PendingStore(self.cache_path) as store:
            for kind, file_id in (("output", status.output_file_id), ("errors", status.error_file_id)):
                if file_id:
                    local = self.api.download(file_id, folder / f"round-{entry['round']}.{kind}.jsonl")
                    result = import_results(local, cache, store)
                    report.imports.append(result)
                    answered += result.answered
                    for line in result.lines_out():
                        self.log(f"round {entry['round']}: {line}")
        entry["imported"] = True
        entry["answered"] = answered
        self.state.save()
        report.rounds += 1
        self.log(f"round {entry['round']}: batch {status.id} {status.status}; {answered} answers imported")
        return answered

    def _poll(self, batch_id: str) -> BatchStatus:
        delay = self.poll_s
        while True:
            status = self.api.retrieve(batch_id)
            if status.done:
                return status
            c = status.counts
            self.log(f"batch {batch_id}: {status.status} ({c.get('completed', 0)}/{c.get('total', 0)} done); "
                     f"next check in {delay:.0f} s")
            self.sleep(delay)
            delay = min(delay * 1.5, self.max_poll_s)
