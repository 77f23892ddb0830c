"""Per-query effectiveness of one run: the numbers every table and significance test is built from.

Conventions (documented because they change the numbers):

- The evaluated topic set is ``queries`` when given, else every query of the qrels. Each value is reported for
  every query of that set: a query the run does not answer (or answers only with unjudged documents under
  ``condensed=True``, or that has no qrels at all) scores 0 on every measure, it is **not** dropped. Dropping such
  queries would reward a system for failing on hard queries. Run queries outside the set are ignored. All of these
  are counted in ``result.attrs`` (see :func:`per_query`).
- Ranking order: when the run has a ``rank`` column the documents are scored in that order (what the system
  showed); otherwise by ``score`` descending, with trec_eval's tie-break (docno descending). The order is fixed
  here once, so all measures (pytrec_eval's and Judged's) see the same ranking.
- ``condensed=True`` removes documents without any label for the query from the run before scoring (Sakai's
  condensed lists), so unjudged documents neither count as non-relevant nor take rank positions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from superb.eval.measures import parse_measure

RUN_COLUMNS = ("qid", "docno")
QREL_COLUMNS = ("qid", "docno", "label")
OUTPUT_COLUMNS = ["qid", "measure", "value"]


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame with columns {list(columns)}, found {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; found columns {list(frame.columns)}. "
                         f"Expected at least {list(columns)}.")


def _as_measures(measures) -> list:
    if isinstance(measures, str) or not isinstance(measures, Iterable):
        measures = [measures]
    out = [parse_measure(m, path="measures") if isinstance(m, str) else m for m in measures]
    if not out:
        raise ValueError("measures is empty; pass e.g. superb.eval.measures.parse_measures(None, rel=2)")
    names = [repr(m) for m in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"measures lists {twice} more than once; give each measure once")
    return out


def _topic_set(queries, qrels: pd.DataFrame) -> list[str]:
    if queries is None:
        return list(pd.unique(qrels["qid"].astype(str)))
    if isinstance(queries, pd.DataFrame):
        _require(queries, ["qid"], "queries")
        queries = queries["qid"]
    if isinstance(queries, str):
        raise TypeError(f"queries must be a list of qids or a DataFrame with a qid column, found the string {queries!r}")
    topic = list(pd.unique(pd.Series(list(queries), dtype=object).astype(str)))
    if not topic:
        raise ValueError("queries is empty: the evaluated topic set needs at least one qid")
    return topic


def _qrels_dict(qrels: pd.DataFrame) -> dict[str, dict[str, int]]:
    labels = pd.to_numeric(qrels["label"], errors="coerce")
    bad = labels.isna() | (labels != np.round(labels))
    if bad.any():
        row = qrels[bad].iloc[0]
        raise ValueError(f"qrels column 'label' must hold integers; found {row['label']!r} "
                         f"(qid {row['qid']!r}, docno {row['docno']!r}) and {int(bad.sum()) - 1} more")
    frame = pd.DataFrame({"qid": qrels["qid"].astype(str), "docno": qrels["docno"].astype(str),
                          "label": labels.astype(int)})
    dup = frame.duplicated(["qid", "docno"], keep=False)
    if dup.any():
        first = frame[dup].iloc[0]
        raise ValueError(f"qrels label the same (qid, docno) more than once, e.g. ({first.qid!r}, {first.docno!r}) "
                         f"({int(dup.sum())} rows); keep one label per pair")
    out: dict[str, dict[str, int]] = {}
    for qid, docno, label in zip(frame["qid"], frame["docno"], frame["label"]):
        out.setdefault(qid, {})[docno] = int(label)
    return out


def _run_frame(run: pd.DataFrame) -> pd.DataFrame:
    """qid, docno (str) and an evaluation score that orders each query's documents strictly: by rank when given,
    else by score descending, ties broken by docno descending (trec_eval's rule), so that every ir_measures
    provider sees the same ranking."""
    keys = [c for c in ("rank", "score") if c in run.columns]
    if not keys:
        raise ValueError(f"run needs a 'score' or a 'rank' column to order documents; found {list(run.columns)}")
    frame = pd.DataFrame({"qid": run["qid"].astype(str).to_numpy(), "docno": run["docno"].astype(str).to_numpy()})
    for key in keys:
        values = pd.to_numeric(run[key], errors="coerce").astype(float).to_numpy()
        if np.isnan(values).any():
            raise ValueError(f"run column {key!r} has {int(np.isnan(values).sum())} missing or non-numeric values")
        frame[key] = values
    dup = frame.duplicated(["qid", "docno"], keep=False)
    if dup.any():
        first = frame[dup].iloc[0]
        raise ValueError(f"run lists the same document twice for a query, e.g. ({first.qid!r}, {first.docno!r}) "
                         f"({int(dup.sum())} rows); a ranking holds each document once")
    frame = frame.sort_values(["qid", *keys, "docno"], ascending=[True, *[k == "rank" for k in keys], False],
                              kind="stable")
    frame["score"] = -frame.groupby("qid").cumcount().astype(float)
    return frame[["qid", "docno", "score"]]


def per_query(run: pd.DataFrame, qrels: pd.DataFrame, measures, *, condensed: bool = False,
              queries=None) -> pd.DataFrame:
    """Per-query values of ``measures`` for ``run`` against ``qrels``: DataFrame[qid, measure, value].

    ``run``: qid, docno and score and/or rank. ``qrels``: qid, docno, label (integers). ``measures``: measure
    objects (see :func:`superb.eval.measures.parse_measures`) or names. ``queries``: the evaluated topic set (qids,
    or a DataFrame with a qid column); default all qrels queries. ``measure`` holds ``repr(measure)``.

    Every query of the topic set gets a value for every measure; those the evaluator cannot score are 0.
    ``result.attrs`` counts it all: ``n_queries``, ``missing_from_run`` (topic qids the run does not answer),
    ``unjudged_queries`` (topic qids without any qrels), ``ignored_run_queries`` (run qids outside the topic set,
    dropped), ``condensed_removed`` (unjudged run rows removed when ``condensed``), ``filled_zero`` (cells set to 0).
    """
    import ir_measures

    _require(run, RUN_COLUMNS, "run")
    _require(qrels, QREL_COLUMNS, "qrels")
    measures = _as_measures(measures)
    topic = _topic_set(queries, qrels)
    topic_set = set(topic)
    qrels_d = _qrels_dict(qrels)
    frame = _run_frame(run)

    run_qids = set(frame["qid"])
    ignored = sorted(run_qids - topic_set)
    frame = frame[frame["qid"].isin(topic_set)]
    removed = 0
    if condensed:
        labelled = {f"{q}\x00{d}" for q, docs in qrels_d.items() for d in docs}
        judged = (frame["qid"] + "\x00" + frame["docno"]).isin(labelled).to_numpy()
        removed = int((~judged).sum())
        frame = frame[judged]

    run_d: dict[str, dict[str, float]] = {}
    for qid, docno, score in zip(frame["qid"], frame["docno"], frame["score"]):
        run_d.setdefault(qid, {})[docno] = float(score)
    qrels_topic = {q: d for q, d in qrels_d.items() if q in topic_set}

    values: dict[tuple[str, str], float] = {}
    if run_d and qrels_topic:
        native = [m for m in measures if ir_measures.pytrec_eval.supports(m)]
        other = [m for m in measures if not ir_measures.pytrec_eval.supports(m)]
        results = []
        if native:
            results.append(ir_measures.pytrec_eval.iter_calc(native, qrels_topic, run_d))
        if other:  # e.g. Judged@10: ir_measures picks a provider, or raises naming the pip command
            results.append(ir_measures.iter_calc(other, qrels_topic, run_d))
        for result in results:
            for metric in result:
                values[(str(metric.query_id), repr(metric.measure))] = float(metric.value)

    names = [repr(m) for m in measures]
    rows = [(qid, name, values.get((qid, name), np.nan)) for qid in topic for name in names]
    out = pd.DataFrame(rows, columns=OUTPUT_COLUMNS)
    filled = int(out["value"].isna().sum())
    out["value"] = out["value"].fillna(0.0).astype(float)
    out.attrs.update({
        "n_queries": len(topic),
        "missing_from_run": sorted(topic_set - run_qids),
        "unjudged_queries": sorted(topic_set - set(qrels_d)),
        "ignored_run_queries": ignored,
        "condensed_removed": removed,
        "filled_zero": filled,
    })
    return out


def per_query_systems(runs, qrels: pd.DataFrame, measures, *, condensed: bool = False,
                      queries=None) -> pd.DataFrame:
    """:func:`per_query` for several systems, stacked: DataFrame[system, qid, measure, value] (the input of
    :func:`superb.eval.report.compare`). ``runs`` maps system name -> run. ``result.attrs["coverage"]`` holds each
    system's counters (missing_from_run, condensed_removed, filled_zero, ...)."""
    if not runs:
        raise ValueError("runs is empty: give at least one system name -> run DataFrame")
    frames, coverage = [], {}
    for system, run in runs.items():
        one = per_query(run, qrels, measures, condensed=condensed, queries=queries)
        coverage[str(system)] = dict(one.attrs)
        frames.append(one.assign(system=str(system))[["system", *OUTPUT_COLUMNS]])
    out = pd.concat(frames, ignore_index=True)
    out.attrs["coverage"] = coverage
    return out
