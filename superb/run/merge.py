"""``superb merge results/NAME.shard-*``: the shard folders of one spec (superb/run/shards.py) as one experiment.

The checks, each an error that names what is wrong: every folder is a shard folder; the shards split the same
selection the same way (same n); they come from the same spec (the digest of its defining keys: the differing key
paths are named) and the same data (differing data files are named by file and sha256) and were answered by the same
model; every selected query is in exactly one shard (duplicate qids are named with their folders, missing qids with
the shard that holds them); each run holds only its shard's queries.

And what each folder holds is what its shard wrote (:func:`verify_shard`): a provenance.json that is JSON with a
complete sharding record; every run file well formed ('qid Q0 docno rank score tag', line by line), with rows for every
query of the shard (but those the shard recorded as having none) and as many rows as the shard wrote; and every file
with the sha256 its provenance records. A folder cut or edited after it was written is refused, naming the shard, the
file and the queries (or the line), with the fix: run that shard again.

The merge: topics, qrels and every system's run concatenated in the spec's query order; each pipeline's counters and
LLM usage summed (from the exact values of the shards' provenance); the shipped responses merged by key (one row per
key: a key two shards used is kept once, and a key they answered differently is counted as a conflict and keeps the
lower shard's answer); each shard's stage_scores.csv.gz joined to its runs (superb.stage_scores). The result goes
through the results writer of ``superb run`` (superb.run.results.write_results): one table, with its significance over
all queries. Merge reads only the folders: no data set, index or model.
"""

from __future__ import annotations

import heapq
import json
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from superb.digest import sha256_file
from superb.errors import DataError
from superb.folder.kinds import open_folder
from superb.folder.layout import PROVENANCE, RESPONSES, STAGE_SCORES, SYSTEMS, TOPICS
from superb.folder.run_folder import MergedFolder, RunFolder, ShardFolder
from superb.folder.spec import folder_spec
from superb.folder.verify import Mismatch, warn
from superb.run.experiment import ExperimentResult, PipelineResult
from superb.llm.ship import parts_sha256, read_lines, write_lines
from superb.run.shards import SHARD_RULE, Shard, spec_differences, spec_digest
from superb.stage_scores import with_stage_scores

EXAMPLES = 8  # qids or keys named in a message
RECORD_KEYS = ("shard", "index", "count", "spec_digest", "selection", "qids", "pipelines")
log = logging.getLogger(__name__)


SHARDS = "the folders written by `superb run SPEC --shard i/n` (results/NAME.shard-i-of-n)"
AGAIN = "run the shard again (`superb run SPEC --shard i/n`)"


def _shard(s: ShardFolder) -> Shard:
    return Shard(int(s.record["index"]), int(s.record["count"]))


def _name(s: ShardFolder) -> str:
    return f"{s.path} (shard {_shard(s).label})"


def _again(s: ShardFolder) -> str:
    label = _shard(s).label
    return f"run shard {label} again (`superb run SPEC --shard {label}`)"


def _qids(s: ShardFolder, key: str = "qids") -> list[str]:
    return [str(q) for q in s.record[key]]


def read_shard(path: str | Path) -> ShardFolder:
    """The shard folder at ``path`` (superb.folder), its sharding record checked; a DataError naming what is wrong."""
    folder = open_folder(path, RunFolder, what=SHARDS, damaged=AGAIN)
    prov = folder.path / PROVENANCE
    again = f"the folder is damaged: {AGAIN}"
    record = folder.provenance.get("sharding") or {}
    if not isinstance(record, dict):
        raise DataError(f"{prov}: its 'sharding' entry is not an object: {again}")
    if not isinstance(folder, ShardFolder):
        what = "a merged folder" if isinstance(folder, MergedFolder) else "the folder of an unsharded run"
        raise DataError(f"{folder.path} is {what}, not a shard: give {SHARDS}")
    missing = [k for k in RECORD_KEYS if k not in record]
    wrong = [k for k, kind in (("index", int), ("count", int), ("selection", list), ("qids", list),
                               ("pipelines", dict)) if k in record and not isinstance(record[k], kind)]
    if missing or wrong:
        raise DataError(f"{prov}: its sharding record lacks {missing or 'nothing'} and has the wrong type for "
                        f"{wrong or 'nothing'}: {again}")
    try:
        Shard(record["index"], record["count"])
    except ValueError as e:
        raise DataError(f"{prov}: {e}: {again}") from None
    return folder


def verify_shard(s: ShardFolder) -> bool:
    """Refuse a shard folder whose files are not what the shard wrote (see the module docstring): each run file
    line by line and against the shard's queries and row count (read before its sha256 is checked, so that the error
    names the line or the queries), then every file against its recorded sha256 (merged anyway, and counted in
    ``s.mismatches``, under ``--unverified``), then topics.tsv's queries. Returns False for a folder written before
    superb recorded row counts and sha256s (checked for form only)."""
    recorded = "sha256" in s.record
    for name, rel in s.systems().items():
        _check_run_file(s, name, rel)
    for rel, want in (s.record.get("sha256") or {}).items():
        path = s.path / rel
        if not path.is_file():
            raise DataError(f"{_name(s)}: {rel} is missing ({PROVENANCE} records it): {_again(s)}")
        got = sha256_file(path)
        if got == want:
            continue
        if not s.allow_unverified:
            raise DataError(f"{_name(s)}: {rel} was changed after the shard was written (sha256 {got[:12]}, "
                            f"{PROVENANCE} records {str(want)[:12]}): {_again(s)}, or restore the file; or pass "
                            "--unverified to merge it anyway (the merged folder is then marked unverified)")
        if all(m.name != rel for m in s.mismatches):
            mismatch = Mismatch(str(s.path), rel, str(want), got)
            warn(mismatch)
            s.mismatches.append(mismatch)
    topics = set(s.topics()["qid"])
    if topics != set(_qids(s)):
        raise DataError(f"{_name(s)}: {TOPICS} holds qids {_some(sorted(topics ^ set(_qids(s))))} that differ "
                        f"from the shard's; the file was edited after the shard was written: {_again(s)}")
    if not recorded:
        log.warning("%s was written before superb recorded its files' sha256s and its runs' row counts: its files "
                    "are checked for form only", _name(s))
    return recorded


def _check_run_file(s: ShardFolder, name: str, rel: str) -> None:
    path = s.path / rel  # its form first (the error names the line), its sha256 after (verify_shard)
    if not path.is_file():
        raise DataError(f"{path} is missing: {s.path} is not a complete shard folder ({_again(s)})")
    mine, found, rows = set(_qids(s)), set(), 0
    fix = f"the file was cut or edited after the shard was written: {_again(s)}"
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                parts = line.split()
                if not (line.endswith("\n") and len(parts) == 6 and _whole(parts[3]) and _finite(parts[4])):
                    raise DataError(f"{_name(s)}: {rel} line {n} is not 'qid Q0 docno rank score tag' "
                                    f"({line.rstrip()[:80]!r}): {fix}")
                if parts[0] not in mine:
                    raise DataError(f"{_name(s)}: {rel} line {n} is a row of query {parts[0]!r}, not one of the "
                                    f"shard's queries: {fix}")
                found.add(parts[0])
                rows += 1
    except UnicodeDecodeError as e:
        raise DataError(f"{_name(s)}: {rel} is not UTF-8 text ({e}): {fix}") from None
    record = s.record["pipelines"].get(name)
    if not isinstance(record, dict) or "rows" not in record:
        return  # a shard of an earlier superb: no row count to check against
    empty = set(record.get("queries_without_rows") or [])
    missing = [q for q in _qids(s) if q not in found and q not in empty]
    if missing:
        raise DataError(f"{_name(s)}: {rel} (system {name!r}) has no rows for {len(missing)} of the shard's "
                        f"{len(_qids(s))} queries: {_some(missing)}; {fix}")
    if rows != record["rows"]:
        raise DataError(f"{_name(s)}: {rel} (system {name!r}) holds {rows} rows where the shard wrote "
                        f"{record['rows']}: {fix}")


def _whole(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _finite(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def check_shards(shards: list[ShardFolder]) -> list[str]:
    """Raise DataError naming what keeps ``shards`` from being one experiment; return the spec's selection."""
    first = shards[0]
    for other in shards[1:]:
        if _shard(other).count != _shard(first).count:
            raise DataError(f"{_name(other)} and {_name(first)} split the queries differently "
                            f"({_shard(other).count} vs {_shard(first).count} shards): merge the n shards of one split")
        if other.record["spec_digest"] != first.record["spec_digest"]:
            diff = spec_differences(first.provenance["spec"], other.provenance["spec"])
            raise DataError(f"{other.path} comes from a different spec than {first.path}: "
                            f"{'; '.join(diff) or 'the spec digests differ'}. Run every shard with one spec")
        data = _data_differences(first.provenance.get("dataset") or {}, other.provenance.get("dataset") or {})
        if data:
            raise DataError(f"{other.path} was run on different data than {first.path}: {'; '.join(data)}")
        models = [(s.provenance.get("llm") or {}).get("model") for s in (first, other)]
        if models[0] != models[1]:
            raise DataError(f"{other.path} was answered by model {models[1]!r}, {first.path} by {models[0]!r}")
        if _qids(other, "selection") != _qids(first, "selection"):
            raise DataError(f"{other.path} and {first.path} select different queries from the same spec and data "
                            f"({len(_qids(other, 'selection'))} vs {len(_qids(first, 'selection'))}): was the data "
                            "set changed?")
    selection = _qids(first, "selection")
    for s in shards:
        expected = _shard(s).qids(selection)
        if _qids(s) != expected:
            raise DataError(f"{s.path} holds qids {_some(_qids(s))}, but shard {_shard(s).label} of this selection is "
                            f"{_some(expected)} ({SHARD_RULE})")
    _check_coverage(shards, selection)
    for s in shards:
        s.provenance["sharding"]["verified"] = "sha256" if verify_shard(s) else "form only"
    return selection


def _check_coverage(shards: list[ShardFolder], selection: list[str]) -> None:
    where: dict[str, list[ShardFolder]] = {}
    for s in shards:
        for q in _qids(s):
            where.setdefault(q, []).append(s)
    twice = [q for q in selection if len(where.get(q, [])) > 1]
    if twice:
        named = ", ".join(f"{q} ({' and '.join(str(s.path) for s in where[q])})" for q in twice[:EXAMPLES])
        raise DataError(f"{len(twice)} queries are in more than one shard folder: {named}"
                        f"{' ...' if len(twice) > EXAMPLES else ''}. Give each shard once")
    missing = [q for q in selection if q not in where]
    if missing:
        count = _shard(shards[0]).count
        given = {_shard(s).index for s in shards}
        absent = [f"{i}/{count}" for i in range(1, count + 1) if i not in given]
        raise DataError(f"{len(missing)} of the {len(selection)} queries are in no shard folder given: "
                        f"{_some(missing)}; missing shard(s) {', '.join(absent)} (`superb run SPEC --shard i/n`)")


def _data_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    files_a = {f.get("name"): f.get("sha256") for f in a.get("files") or []}
    files_b = {f.get("name"): f.get("sha256") for f in b.get("files") or []}
    out = [f"file {name}: sha256 {str(files_a.get(name))[:12]} vs {str(files_b.get(name))[:12]}"
           for name in sorted(set(files_a) | set(files_b), key=str) if files_a.get(name) != files_b.get(name)]
    out += [f"{key}: {a.get(key)!r} vs {b.get(key)!r}" for key in sorted(set(a) | set(b) - {"files"})
            if a.get(key) != b.get(key)]
    return out


def _some(qids: list[str]) -> str:
    return ", ".join(qids[:EXAMPLES]) + (f" ... ({len(qids)} in all)" if len(qids) > EXAMPLES else "")


def _runs(s: ShardFolder) -> dict[str, pd.DataFrame]:
    """The shard's runs with its stage scores joined (superb.stage_scores), every file checked against its record."""
    runs = s.runs()
    if s.has(STAGE_SCORES):
        s.file(STAGE_SCORES)
    return with_stage_scores(runs, s.path)


def merge_shards(folders: list[str | Path], *, allow_plugins: bool = False
                 ) -> tuple[ExperimentResult, list[Mismatch]]:
    """The shards as one ExperimentResult (spec, topics, qrels, runs, summed counters and usage, merged
    responses), ready for superb.run.results.write_results, and the files merged although they were not as their
    shard recorded them (``--unverified``; none otherwise). The spec comes from the shards' provenance.json: one
    naming a plug-in is refused unless ``allow_plugins`` (`superb merge --allow-plugins`)."""

    t0 = time.perf_counter()
    if not folders:
        raise DataError("give the shard folders to merge (results/NAME.shard-*)")
    shards = sorted((read_shard(f) for f in folders), key=lambda s: (_shard(s).index, str(s.path)))
    selection = check_shards(shards)
    order = {q: i for i, q in enumerate(selection)}
    first = shards[0]
    spec = folder_spec(first, allow_plugins=allow_plugins)

    runs = [_runs(s) for s in shards]
    names = [p.name for p in spec.pipelines]
    pipelines = {}
    for name in names:
        parts = []
        for s, shard_runs in zip(shards, runs):
            if name not in shard_runs:
                raise DataError(f"{s.path} has no run of system {name!r} (its {SYSTEMS}: {sorted(shard_runs)})")
            run = shard_runs[name]
            stray = sorted(set(run["qid"].astype(str)) - set(_qids(s)))
            if stray:
                raise DataError(f"{s.path}: the run of {name!r} holds queries of other shards: {_some(stray)}")
            parts.append(run)
        counters = [s.record["pipelines"].get(name, {}) for s in shards]
        pipelines[name] = PipelineResult(
            name=name, run=_in_order(pd.concat(parts, ignore_index=True), order, "rank"),
            seconds=sum(float(c.get("seconds", 0.0)) for c in counters),
            stats=_summed(c.get("stats", {}) for c in counters), usage=_summed(c.get("usage", {}) for c in counters))

    topics = _in_order(pd.concat([s.topics() for s in shards], ignore_index=True), order)
    qrels_order = {q: i for i, q in enumerate(first.record.get("qrels_order") or selection)}
    qrels = _in_order(pd.concat([s.qrels() for s in shards], ignore_index=True), qrels_order)
    llm_info = _llm_info(shards)
    shipped = [(_shard(s).label, s.path / RESPONSES) for s in shards]
    sources = [(s.provenance.get("responses") or {}).get("sources") or {} for s in shards
               if (s.path / RESPONSES).is_file()]  # each shipped file's rows by where they came from
    responses = MergedResponses(shipped, sources) if any(p.is_file() for _, p in shipped) else None  # none: no cache
    sharding = {"merged": [_summary(s) for s in shards], "count": _shard(first).count, "rule": SHARD_RULE,
                "spec_digest": spec_digest(spec.raw)}
    timings = {"shards_total_s": sum(float((s.provenance.get("timings") or {}).get("total_s", 0.0)) for s in shards),
               "merge_s": time.perf_counter() - t0}
    result = ExperimentResult(spec=spec, topics=topics, qrels=qrels, pipelines=pipelines,
                              dataset_provenance=first.provenance.get("dataset") or {}, llm_info=llm_info,
                              timings=timings, responses=responses, sharding=sharding)
    return result, [m for s in shards for m in s.mismatches]


def _in_order(frame: pd.DataFrame, order: dict[str, int], then: str | None = None) -> pd.DataFrame:
    """Rows in the spec's query order (a stable sort: each query's rows keep their order, or ``then``'s)."""
    frame = frame.assign(_q=frame["qid"].astype(str).map(order))
    keys = ["_q"] + ([then] if then else [])
    return frame.sort_values(keys, kind="mergesort").drop(columns="_q").reset_index(drop=True)


def _summed(dicts) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for d in dicts:
        for k, v in d.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = out.get(k, 0) + v
    return out


def _llm_info(shards: list[ShardFolder]) -> dict[str, Any] | None:
    infos = [s.provenance.get("llm") for s in shards]
    if all(i is None for i in infos):
        return None
    info = dict(next(i for i in infos if i is not None))
    info["usage_total"] = _summed((i or {}).get("usage_total") or {} for i in infos)
    info["endpoints"] = sorted({e for i in infos for e in (i or {}).get("endpoints") or []})
    return info


def _summary(s: ShardFolder) -> dict[str, Any]:
    llm = s.provenance.get("llm") or {}
    return {"folder": str(s.path), "shard": _shard(s).label, "queries": len(_qids(s)),
            "spec_file": s.provenance.get("spec_file"), "project": s.provenance.get("project"),
            "host": s.provenance.get("host"), "endpoints": llm.get("endpoints"),
            "responses": s.provenance.get("responses"), "verified": s.record.get("verified"),
            **({"unverified": [m.name for m in s.mismatches]} if s.mismatches else {})}


@dataclass
class MergedResponses:
    """The shards' responses.jsonl.gz merged by key (each file is sorted by key; so is the result), written by the
    results writer's hook like a run's own (superb.llm.ship.ship_responses)."""

    files: list[tuple[str, Path]]  # (shard label, its responses.jsonl.gz), lowest shard first
    shard_sources: list[dict[str, int]] = field(default_factory=list)  # each shipped file's sources (provenance)
    duplicates: int = 0
    conflicts: list[str] = field(default_factory=list)

    def write(self, path: Path) -> dict[str, Any]:
        present = [(label, p) for label, p in self.files if p.is_file()]
        taken: dict[str, int] = {label: 0 for label, _ in present}
        sources: dict[str, int] = {}
        for counts in self.shard_sources:
            for src, n in counts.items():
                sources[src] = sources.get(src, 0) + int(n)

        def merged() -> Iterator[str]:
            streams = [_keyed_lines(p, rank, label) for rank, (label, p) in enumerate(present)]
            last_key = last_line = None
            for key, _, label, line in heapq.merge(*streams):
                if key == last_key:
                    if line == last_line:
                        self.duplicates += 1
                    else:
                        self.conflicts.append(key)
                    continue
                last_key, last_line = key, line
                taken[label] += 1
                yield line

        rows = write_lines(Path(path), merged())
        return {"file": Path(path).name, "rows": rows, "missing_from_cache": 0, "sha256": parts_sha256(Path(path)),
                "sources": sources, "merged_from": taken, "duplicates": self.duplicates,
                "conflicts": len(self.conflicts), "conflict_keys": self.conflicts[:EXAMPLES],
                "shards_without_responses": [label for label, p in self.files if not p.is_file()]}


def _keyed_lines(path: Path, rank: int, label: str) -> Iterator[tuple[str, int, str, str]]:
    """(key, shard rank, shard label, line) of a shipped file, checking that it is sorted by key."""
    previous = ""

    try:
        for part, n, line in read_lines(path):
            if not line:
                continue
            try:
                key = json.loads(line)["key"]
            except (ValueError, KeyError, TypeError):
                raise DataError(f"{part} line {n} is not a shipped response row (JSON with a key)") from None
            if key < previous:
                raise DataError(f"{part} is not sorted by key (line {n}): was it written by `superb run`?")
            previous = key
            yield key, rank, label, line
    except (OSError, EOFError) as e:
        raise DataError(f"cannot read {path}: {e}") from None
