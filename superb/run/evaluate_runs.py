"""``superb evaluate``: run files and qrels in, superb's table out, with 0 LLM calls.

    superb evaluate --qrels qrels.txt bm25.run rankzephyr.run [--names BM25,RankZephyr] [--baseline BM25]
                    [--hypotheses hyp.toml] [--measures nDCG@10 P@10] [--rel 2] [--topics topics.tsv] [--out DIR]

Each run file becomes a system exactly as ``first_stage = { run = "FILE" }`` makes one in a spec (the same strict
reader, superb.trec.run_files, and the same order: trec_eval's), and the folder is written by the same writer as ``superb
run`` (superb.run.results): table.md, table.csv, perquery.csv, power.csv, runs/, qrels.trec, provenance.json, and
report.html (document ids instead of titles: no data set is named). So a spec over the same run files, qrels and
options gives the same numbers (tests/test_evaluate_runs.py checks it).

The queries evaluated are those of the qrels that have a label (or those of ``--topics``, a ``qid<TAB>text`` file):
a run's queries without labels are ignored and counted; a query a run lacks scores 0 for it, warned and counted
(``queries_without_results``), as in a spec. Every other run is tested against ``--baseline`` (default: the first
run; ``--baseline none``: no tests); ``--hypotheses FILE`` reads ``[[hypotheses]]`` tables in the spec's form, naming
the systems by their names. Binary measures count labels >= ``--rel`` (default 1, trec_eval's; TREC DL: 2).
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import Any

import pandas as pd

from superb.digest import sha256_file
from superb.errors import DataError, Errors, SpecError
from superb.folder.kinds import check_inputs
from superb.folder.verify import Mismatch
from superb.trec.run_files import read_run_file
from superb.trec.runs import LABELS_ONLY, read_qrels
from superb.run.experiment import ExperimentResult, PipelineResult, queries_without_results, check_evaluable
from superb.run.spec import parse_spec, read_toml

log = logging.getLogger(__name__)


def system_names(runs: list[Path], names: str | None) -> list[str]:
    """``--names`` (comma-separated, one per run) or the run files' stems."""
    if names is None:
        found = [re.sub(r"[^A-Za-z0-9 _.+>@()=,-]+", "_", p.stem).strip("_") or "run" for p in runs]
    else:
        found = [n.strip() for n in names.split(",")]
        if len(found) != len(runs):
            raise SpecError("--names", f"gives {len(found)} names for {len(runs)} run files; give one per run, "
                                       "separated by commas")
    repeated = sorted({n for n in found if found.count(n) > 1})
    if repeated:
        raise SpecError("--names", f"two runs would be called {repeated[0]!r}; name them with --names A,B,...")
    return found


def build_spec(runs: list[Path], *, qrels: Path, names: list[str], baseline: str | None, measures: list[str] | None,
               views: list[str] | None, rel: int, hypotheses: Path | None, name: str, topics: Path | None):
    """The spec that `superb run` would read for these runs: one pipeline per run file. Independent errors (the
    baseline, the hypotheses file, every measure, every hypothesis) are reported at once."""

    errors = Errors()
    if baseline is not None and baseline not in names:
        errors.found.append(SpecError("--baseline", f"{baseline!r} is not one of the systems {names}"))
        baseline = None

    pipelines = []
    for system, run in zip(names, runs):
        try:
            depth = int(read_run_file(run).rows.groupby("qid").size().max())  # every line: trec_eval reads them all
        except DataError as exc:
            raise SpecError("runs", str(exc)) from None
        table: dict[str, Any] = {"name": system, "first_stage": {"run": str(run), "depth": depth}}
        if baseline is not None and system != baseline:
            table["baseline"] = baseline
        pipelines.append(table)
    evaluation: dict[str, Any] = {"rel": rel}
    if measures:
        evaluation["measures"] = list(measures)
    if views:
        evaluation["views"] = list(views)
    raw: dict[str, Any] = {"name": name, "dataset": {"name": LABELS_ONLY, "qrels": str(qrels)}, "evaluation": evaluation,
                           "pipelines": pipelines,
                           "description": f"superb evaluate: {len(runs)} run files against {qrels}"}
    if topics is not None:
        raw["dataset"]["topics"] = str(topics)
    if hypotheses is not None:
        table = read_toml(hypotheses, what="hypotheses file", hint="[[hypotheses]] tables as in a spec")
        for key in sorted(set(table) - {"hypotheses"}):
            errors.found.append(SpecError(key, f"{hypotheses} may only hold [[hypotheses]] tables"))
        raw["hypotheses"] = table.get("hypotheses", [])
    spec = errors.part(parse_spec, raw)
    errors.raise_any()
    return spec


def read_topics(qrels: pd.DataFrame, topics: Path | None) -> pd.DataFrame:
    """The queries evaluated: ``topics`` (qid<TAB>text), else the qrels' queries with their qid as text."""
    if topics is not None:
        from superb.data.local import read_queries_tsv

        frame = read_queries_tsv(topics)
    else:
        frame = pd.DataFrame({"qid": list(dict.fromkeys(qrels["qid"])), "query": list(dict.fromkeys(qrels["qid"]))})
    judged = set(qrels["qid"])
    missing = [q for q in frame["qid"] if q not in judged]
    if missing:
        log.warning("%d queries of %s have no labels (e.g. %s): not evaluated", len(missing), topics, missing[:3])
    return frame[frame["qid"].isin(judged)].reset_index(drop=True)


def evaluate_runs(runs: list[Path], *, qrels: Path, names: str | None = None, baseline: str | None = "",
                  measures: list[str] | None = None, views: list[str] | None = None, rel: int = 1,
                  hypotheses: Path | None = None, name: str = "evaluate", topics: Path | None = None,
                  unverified: bool | None = None) -> tuple[ExperimentResult, list[Mismatch]]:
    """The ExperimentResult of evaluating ``runs`` against ``qrels`` (nothing is run); ``baseline = ""`` means the
    first run, None no tests. A run, qrels or topics file inside a results folder superb wrote is checked against the
    sha256 the folder records (superb.folder.kinds.check_inputs): refused when it differs, or (``unverified``) read
    and returned among the mismatches, which mark the written table."""

    t0 = time.perf_counter()
    if not runs:
        raise SpecError("runs", "give at least one run file")
    mismatches = check_inputs([*runs, qrels, *([topics] if topics is not None else [])], unverified=unverified)
    labels = _qrels(qrels, read_qrels)
    system = system_names(runs, names)
    spec = build_spec(runs, qrels=qrels, names=system, baseline=(system[0] if baseline == "" else baseline),
                      measures=measures, views=views, rel=rel, hypotheses=hypotheses, name=name, topics=topics)
    chosen = read_topics(labels, topics)
    if chosen.empty:
        raise DataError(f"{qrels}: no query has a label; nothing to evaluate")
    # as `superb run` refuses it, before anything is evaluated: a paired test needs 2 labelled queries
    check_evaluable(spec, chosen, labels, fix=("give a qrels file with more labelled queries" +
                                               (" or more queries in --topics" if topics is not None else "") +
                                               ", or --baseline none (no tests)"))
    results = {}
    labelled = set(labels["qid"])
    for p, path in zip(spec.pipelines, runs):
        rows = read_run_file(path).rows
        strangers = sorted(set(rows["qid"]) - set(chosen["qid"]))
        unlabelled = [q for q in strangers if q not in labelled]
        if unlabelled:
            log.warning("run %s: %d queries have no labels in %s (e.g. %s): ignored", path, len(unlabelled), qrels,
                        unlabelled[:3])
        unselected = [q for q in strangers if q in labelled]
        if unselected:
            log.warning("run %s: %d queries are not in --topics %s (e.g. %s): not evaluated", path,
                        len(unselected), topics, unselected[:3])
        run = chosen.merge(rows, on="qid")
        stats = {"run_queries_without_labels": len(unlabelled), **queries_without_results(p.name, chosen, run)}
        if unselected:
            stats["run_queries_not_in_topics"] = len(unselected)
        results[p.name] = PipelineResult(name=p.name, run=run, seconds=0.0, stats=stats)
    qrels_used = labels[labels["qid"].isin(set(chosen["qid"]))].reset_index(drop=True)

    files = [{"name": Path(qrels).name, "path": str(qrels), "sha256": sha256_file(Path(qrels)), "role": "qrels"}]
    files += [{"name": Path(r).name, "path": str(r), "sha256": sha256_file(Path(r)), "role": "run"} for r in runs]
    provenance = {"dataset": LABELS_ONLY, "source": "superb evaluate: given qrels and run files", "files": files,
                  "options": {}, "rel_threshold": rel, "labels": {}}
    return ExperimentResult(spec=spec, topics=chosen, qrels=qrels_used, pipelines=results,
                            dataset_provenance=provenance, llm_info=None,
                            timings={"total_s": time.perf_counter() - t0}), mismatches


def _qrels(path: Path, read) -> pd.DataFrame:
    if not Path(path).is_file():
        raise DataError(f"qrels file not found: {path}. Give a TREC qrels file (`qid 0 docno label` per line)")
    frame = read(path)
    dup = frame[frame.duplicated(["qid", "docno"])]
    if len(dup):
        raise DataError(f"{path}: ({dup.iloc[0]['qid']!r}, {dup.iloc[0]['docno']!r}) is labelled twice; keep one "
                        "label per (query, document)")
    return frame
