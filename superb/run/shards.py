"""Sharded runs: ``superb run SPEC --shard i/n`` runs one deterministic part of a spec's queries (on one machine, with
its own endpoint and cache); ``superb merge results/NAME.shard-*`` checks the parts and writes the experiment's table.

The rule (:data:`SHARD_RULE`): the spec selects its queries as usual ([queries] split/sample/subset); their qids,
sorted as strings, are dealt round robin: shard i of n takes positions i-1, i-1+n, i-1+2n, ... of that list. So the
same spec on the same data gives the same shards on every machine, shard sizes differ by at most one, and the n
shards cover every selected query exactly once. What a qid's shard is depends on the whole selection: change the
sample (or n) and the parts change; shards of different selections are refused by ``merge``.

A shard folder is a normal results folder (its table covers the shard's queries only, and says so) whose
provenance.json carries a ``sharding`` record: the shard, the rule, the digest of the spec (:func:`spec_digest`),
the spec's whole selection and the shard's qids, each pipeline's exact counters and LLM usage, its run's rows and
the queries it has no row for, and the sha256 of every file of the folder (:func:`file_digests`).
``merge`` (superb/run/merge.py) reads only the folders: no data set, index or model is needed where it runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from superb.provenance import folder_files
from superb.errors import DataError
from superb.folder.layout import PROVENANCE

SHARD_RULE = ("the selected qids sorted as strings, dealt round robin: shard i of n takes positions i-1, i-1+n, "
              "i-1+2n, ... of that list")

# Spec keys that say where and how a shard ran, not what it computes: they may differ between the machines of one
# experiment (each its own endpoint, key, cache file, concurrency) and are left out of the spec digest.
PLACEMENT_KEYS = (
    "output", "description",
    "llm.base_urls", "llm.api_key_env", "llm.concurrency", "llm.timeout_s", "llm.max_retries", "llm.backoff_s",
    "llm.cache", "llm.cache_path", "llm.prices", "llm.model_path", "llm.threads", "llm.n_parallel",
    "llm.prompt_cache",
    "llm.max_failure_share",
)


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based, as written on the command line: ``--shard 2/3``)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not (1 <= self.index <= self.count):
            raise ValueError(f"shard {self.index}/{self.count}: i must be between 1 and n")

    @classmethod
    def parse(cls, text: str) -> "Shard":
        """``"i/n"`` -> Shard; ValueError naming what was found otherwise."""
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
        if not m:
            raise ValueError(f"expected i/n with whole numbers (e.g. 2/3), found {text!r}")
        return cls(int(m[1]), int(m[2]))

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def suffix(self) -> str:
        """What the default results folder gets appended: results/NAME.shard-2-of-3."""
        return f".shard-{self.index}-of-{self.count}"

    def qids(self, selection: list[str]) -> list[str]:
        """This shard's qids of the selected ones (by :data:`SHARD_RULE`), in the selection's order."""
        dealt = sorted(set(selection))[self.index - 1::self.count]
        mine = set(dealt)
        return [q for q in selection if q in mine]

    def select(self, topics: pd.DataFrame, spec_name: str = "") -> pd.DataFrame:
        """The rows of ``topics`` (the spec's selection) in this shard; a shard with no query is a DataError."""
        selection = [str(q) for q in topics["qid"]]
        mine = set(self.qids(selection))
        if not mine:
            raise DataError(f"shard {self.label} of spec {spec_name!r} has no query: the spec selects "
                            f"{len(set(selection))} queries; use at most {len(set(selection))} shards")
        return topics[topics["qid"].astype(str).isin(mine)].reset_index(drop=True)

    def record(self, spec: Any, selection: pd.DataFrame, topics: pd.DataFrame, pipelines: dict[str, Any],
               qrels: pd.DataFrame) -> dict:
        """What provenance.json keeps of the shard (the ``sharding`` record); ``pipelines`` are the run's
        PipelineResults, whose exact counters and usage ``merge`` sums; ``qrels`` the data set's, whose order of
        the selected queries ``merge`` restores (so the merged qrels.trec is an unsharded run's, line for line)."""
        chosen = set(selection["qid"].astype(str))
        qids = qrels["qid"].astype(str)
        return {
            "shard": self.label, "index": self.index, "count": self.count, "rule": SHARD_RULE,
            "spec_digest": spec_digest(spec.raw),
            "selection": [str(q) for q in selection["qid"]], "qids": [str(q) for q in topics["qid"]],
            "qrels_order": list(pd.unique(qids[qids.isin(chosen)])),
            "pipelines": {name: {"seconds": pr.seconds, "stats": dict(pr.stats), "usage": dict(pr.usage),
                                 **run_record(pr.run, topics)} for name, pr in pipelines.items()},
        }

    def table_spec(self, spec: Any, n_queries: int, n_selected: int) -> Any:
        """``spec`` with a description that says the shard's table is partial (the table's heading)."""
        note = (f"Shard {self.label}: {n_queries} of the {n_selected} selected queries. A partial table: "
                f"`superb merge` the {self.count} shard folders for the experiment's table.")
        return dataclasses.replace(spec, description=f"{spec.description}\n\n{note}".strip())


def run_record(run: pd.DataFrame, topics: pd.DataFrame) -> dict[str, Any]:
    """What ``merge`` checks a shard's run file against: its rows, and the shard's queries it has no row for (a first
    stage that found nothing): every other query of the shard must have rows."""
    found = set(run["qid"].astype(str))
    return {"rows": int(len(run)), "queries_without_rows": [str(q) for q in topics["qid"] if str(q) not in found]}


def file_digests(folder: Path) -> dict[str, str]:
    """sha256 of every file of a finished results folder but provenance.json (which holds them), by relative path:
    ``merge`` refuses a shard whose files changed after it was written."""
    return {name: sha for name, sha in folder_files(folder, skip=()).items() if name != PROVENANCE}


def defining(raw: dict[str, Any]) -> dict[str, Any]:
    """The spec's TOML without its :data:`PLACEMENT_KEYS` (what the digest covers)."""
    out = json.loads(json.dumps(raw, default=str))
    for key in PLACEMENT_KEYS:
        table, _, leaf = key.rpartition(".")
        holder = out.get(table) if table else out
        if isinstance(holder, dict):
            holder.pop(leaf, None)
    return out


def spec_digest(raw: dict[str, Any]) -> str:
    """sha256 of the spec's defining part (canonical JSON): equal for the shards of one experiment."""
    text = json.dumps(defining(raw), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def spec_differences(a: dict[str, Any], b: dict[str, Any], limit: int = 5) -> list[str]:
    """The key paths where two specs' defining parts differ, with both values (at most ``limit``)."""
    flat_a, flat_b = _flatten(defining(a)), _flatten(defining(b))
    out = []
    for key in sorted(set(flat_a) | set(flat_b)):
        va, vb = flat_a.get(key, "(absent)"), flat_b.get(key, "(absent)")
        if va != vb:
            out.append(f"{key}: {va!r} vs {vb!r}")
    return out[:limit] + ([f"... and {len(out) - limit} more"] if len(out) > limit else [])


def _flatten(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{path}.{k}" if path else str(k)))
        return out or {path: {}}
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        out = {}
        for i, v in enumerate(value):
            out.update(_flatten(v, f"{path}[{i}]"))
        return out or {path: []}
    return {path: value}
