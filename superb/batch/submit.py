"""`superb batch submit SPEC`: rounds of the OpenAI Batch API until the spec needs no more LLM answers.

Each round: export the requests the spec needs now (collect.py; split into files of at most 50,000 requests and
190 MB, under the OpenAI limits), upload every file and create its batch, poll each with backoff (``poll_s``, times
1.5 per poll, capped at ``max_poll_s``), download its output and error files, import them
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
from superb.llm.batch import BatchPart, PendingStore
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
    """The batches of one spec against one endpoint (one entry per uploaded file; a round may need several files),
    saved as JSON after every step."""

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

    def open_entries(self) -> list[dict[str, Any]]:
        """The files of the current round not yet imported (after an interruption: where to resume)."""
        return [r for r in self.rounds if not r.get("imported")]


@dataclass
class SubmitReport:
    rounds: int = 0  # rounds completed in this call
    imports: list[ImportReport] = field(default_factory=list)
    finished: bool = False


class Submitter:
    """Drives the rounds. ``export(path) -> [BatchPart]`` writes the next round's batch file(s) (none = done)."""

    def __init__(self, api: BatchAPI, export: Callable[[Path], list[BatchPart]], cache_path: Path,
                 state: SubmitState, *, poll_s: float = 30.0, max_poll_s: float = 600.0, max_rounds: int = 100,
                 sleep: Callable[[float], None] = time.sleep, log: Callable[[str], None] = print):
        self.api, self.export, self.cache_path, self.state = api, export, Path(cache_path), state
        self.poll_s, self.max_poll_s, self.max_rounds = poll_s, max_poll_s, max_rounds
        self.sleep, self.log = sleep, log

    def run(self) -> SubmitReport:
        report = SubmitReport()
        idle = 0
        while True:
            entries = self.state.open_entries()
            if entries:
                self._launch(entries)  # every file of the round is uploaded and its batch created before polling
                answered = sum(self._finish(e, report) for e in entries)
                report.rounds += 1
                idle = 0 if answered else idle + 1
                if idle >= MAX_IDLE_ROUNDS:
                    last = entries[-1]
                    raise LLMError(f"{idle} batch rounds in a row imported no answer (last batch "
                                   f"{last.get('batch_id')}: {last.get('status')}, "
                                   f"{'; '.join(last.get('errors') or []) or 'see its error file'}); stopping. "
                                   f"Rounds are in {self.state.path.parent}")
                continue
            if report.rounds >= self.max_rounds:
                self.log(f"stopped after {report.rounds} rounds (--max-rounds); run again to go on")
                return report
            number = max((r["round"] for r in self.state.rounds), default=0) + 1
            parts = self.export(self.state.path.parent / f"round-{number}.jsonl")
            if not parts:
                self.log("nothing left: every LLM answer the spec needs is cached")
                report.finished = True
                return report
            for k, part in enumerate(parts, 1):
                self.state.rounds.append({"round": number, "part": k, "file": part.path.name,
                                          "requests": part.lines, "sha256": part.sha256})
            self.state.save()

    def _launch(self, entries: list[dict[str, Any]]) -> None:
        folder = self.state.path.parent
        for entry in entries:
            if not entry.get("file_id"):
                entry["file_id"] = self.api.upload(folder / entry["file"])
                self.state.save()
                self.log(f"round {entry['round']}: uploaded {entry['requests']} requests as {entry['file_id']}")
            if not entry.get("batch_id"):
                entry["batch_id"] = self.api.create(entry["file_id"]).id
                self.state.save()
                self.log(f"round {entry['round']}: batch {entry['batch_id']} created")

    def _finish(self, entry: dict[str, Any], report: SubmitReport) -> int:
        """Poll, download and import one batch; returns the answers it imported."""
        status = self._poll(entry["batch_id"])
        entry["status"], entry["counts"], entry["errors"] = status.status, status.counts, list(status.errors)
        stem = Path(entry["file"]).stem
        answered = 0
        with ResponseCache(self.cache_path) as cache, PendingStore(self.cache_path) as store:
            for kind, file_id in (("output", status.output_file_id), ("errors", status.error_file_id)):
                if file_id:
                    local = self.api.download(file_id, self.state.path.parent / f"{stem}.{kind}.jsonl")
                    result = import_results(local, cache, store)
                    report.imports.append(result)
                    answered += result.answered
                    for line in result.lines_out():
                        self.log(f"round {entry['round']}: {line}")
        entry["imported"] = True
        entry["answered"] = answered
        self.state.save()
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
