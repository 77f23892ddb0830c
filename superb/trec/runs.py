"""TREC runs and qrels: the run-order rule every superb run follows, and reading and writing the files.

Tied scores are broken once, so that any tool computes the same numbers from a run.

trec_eval (and pytrec_eval, hence ir_measures and ``pt.Experiment``) orders each query's documents by score
descending and breaks ties by docno DESCENDING. A run whose rank order follows another rule (the engine's docid
order, docno ascending...) is evaluated in a different order than the system produced, and a top-k reranker sees an
arbitrary subset when a tie straddles rank k.

So the first stage orders its documents once by :func:`trec_order` and ranks them in that order: what a top-k
reranker sees is fixed, and it is the order trec_eval would use. Scores stay the engine's (a reranker that fuses
them with its own, after min-max normalisation, sees the real values). Where a run is written to a file or
evaluated, :func:`strictly_decreasing` rounds the scores to 32-bit floats -- trec_eval, hence pytrec_eval, ir_measures
and pt.Experiment, compare scores as 32-bit floats, so two doubles closer than that are a tie to them, broken by
docno -- and lowers every score that is not below its predecessor in rank order to the next 32-bit float below it.
The written scores then strictly decrease in rank order for every tool (trec_eval, every ir_measures provider,
pt.Experiment), and each is exactly representable, so the separation survives a TREC file.

:func:`write_run`, :func:`read_run` and :func:`read_qrels` read and write the TREC files of a results folder
(runs/SYSTEM.run, qrels.trec, llm_qrels.trec); malformed files are DataErrors naming the file.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from superb.errors import DataError

#: the [dataset] name `superb evaluate` writes into its spec: labels from a qrels file, no documents (so no titles)
LABELS_ONLY = "qrels"
#: the largest label magnitude a qrels file may hold: graded scales run to a few levels (TREC: -2..4), and a label of
#: 3000000000 (a typo) makes pytrec_eval allocate memory per level up to it (23 GB seen) and 1e20 overflows
MAX_LABEL = 1000
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)  # as C's atol reads a whole field: no "1_0", no other scripts' digits
TIE_RULE = ("ranks: score descending, then docno descending (trec_eval's rule), decided once at the first stage; "
            "files: scores as 32-bit floats (trec_eval's precision), lowered one 32-bit step below their predecessor "
            "where not already below it, so they strictly decrease in rank order")


def trec_order(run: pd.DataFrame) -> pd.DataFrame:
    """Each query's rows by score descending, then docno descending; queries keep their order of first
    appearance; the index is reset. Scores are unchanged."""
    if run.empty:
        return run.reset_index(drop=True)
    frame = run.assign(_q=pd.factorize(run["qid"])[0], _docno=run["docno"].astype(str),
                       _score=pd.to_numeric(run["score"], errors="raise").astype("float64"))
    frame = frame.sort_values(["_q", "_score", "_docno"], ascending=[True, False, False], kind="mergesort")
    return frame.drop(columns=["_q", "_docno", "_score"]).reset_index(drop=True)


def strictly_decreasing(run: pd.DataFrame) -> pd.DataFrame:
    """``run`` in rank order (its ``rank`` column, the system's decision; without one, :func:`trec_order`) with
    each query's scores strictly decreasing as 32-bit floats: a score not below its predecessor is lowered to the
    next 32-bit float below it (values stored as float64, exactly)."""
    if run.empty:
        return run.reset_index(drop=True)
    if "rank" in run.columns:
        frame = run.assign(_q=pd.factorize(run["qid"])[0]).sort_values(["_q", "rank"], kind="mergesort")
        frame = frame.drop(columns="_q").reset_index(drop=True)
    else:
        frame = trec_order(run)
    scores = pd.to_numeric(frame["score"], errors="raise").to_numpy(dtype="float64").astype(np.float32)
    _separate(scores, pd.factorize(frame["qid"])[0])
    return frame.assign(score=scores.astype(np.float64))


def _separate(scores: np.ndarray, queries: np.ndarray) -> None:
    """In place: within each query, lower every score that is not below its predecessor to the next value below it
    (in the array's own precision)."""
    same_query = queries[1:] == queries[:-1]
    if not (same_query & (scores[1:] >= scores[:-1])).any():
        return
    for i in range(1, len(scores)):
        if queries[i] == queries[i - 1] and scores[i] >= scores[i - 1]:
            scores[i] = np.nextafter(scores[i - 1], scores.dtype.type(-np.inf))


def is_strictly_decreasing(run: pd.DataFrame) -> bool:
    """True when, in rank order (else row order), each query's scores strictly decrease as 32-bit floats (as
    trec_eval reads them)."""
    frame = run.sort_values(["qid", "rank"], kind="mergesort") if "rank" in run.columns else run
    same = frame["qid"].to_numpy()[1:] == frame["qid"].to_numpy()[:-1]
    scores = frame["score"].to_numpy(dtype="float64").astype(np.float32)
    return bool(not (same & (scores[1:] >= scores[:-1])).any())


def write_run(run: pd.DataFrame, path: Path, tag: str) -> None:
    """A run as a TREC file through pt.io, in rank order, with scores strictly decreasing in that order
    (:func:`strictly_decreasing`, the same as evaluation applies) at full precision."""
    import pyterrier as pt

    run = strictly_decreasing(run)
    pt.io.write_results(run if "rank" in run.columns else pt.model.add_ranks(run), str(path), run_name=tag)


def read_run(path: str | Path) -> pd.DataFrame:
    """qid, docno, rank, score (and the tag as ``name``) of a TREC run file, through pt.io; a malformed file is a
    DataError naming it."""
    import pyterrier as pt

    try:
        return pt.io.read_results(str(path))
    except (ValueError, TypeError, pd.errors.ParserError) as exc:
        raise DataError(f"{path} is not a TREC run file ('qid Q0 docno rank score tag' per line): {exc}") from None


def read_qrels(path: str | Path) -> pd.DataFrame:
    """qid, docno, label (int) of a TREC qrels file as results folders hold them (qrels.trec, llm_qrels.trec); a
    malformed file is a DataError naming it."""
    try:
        frame = pd.read_csv(path, sep=r"\s+", header=None, names=["qid", "it", "docno", "label"],
                            dtype={"qid": str, "docno": str}, keep_default_na=False)
        labels = pd.to_numeric(frame["label"], errors="raise")
        if not (labels % 1 == 0).all():
            raise ValueError("a label is not a whole number")
        if (labels.abs() > MAX_LABEL).any():
            raise ValueError(f"a label is outside -{MAX_LABEL}..{MAX_LABEL}")
        frame["label"] = labels.astype(int)
    except (ValueError, pd.errors.ParserError) as exc:
        raise qrels_line_error(Path(path), exc) from None
    return frame[["qid", "docno", "label"]]


def label_error(text: str, where: str) -> str:
    """"" when ``text`` is a qrels label superb reads (a whole number, ASCII digits, within +-MAX_LABEL), else the
    sentence saying why, starting with ``where`` (``file:line``)."""
    if not _INTEGER.fullmatch(text):
        return f"{where}: label {text!r} is not an integer"
    if abs(int(text)) > MAX_LABEL:
        return (f"{where}: label {text} is outside -{MAX_LABEL}..{MAX_LABEL} (graded scales have a few levels, "
                "e.g. TREC's 0..3: a typo?)")
    return ""


def qrels_line_error(path: Path, cause: Exception) -> DataError:
    """The DataError for a qrels file that does not read: its first line that is not ``qid 0 docno label`` (an
    integer label), with its number, and whether the file ends there mid-line (a copy cut short)."""
    how = "TREC qrels have 'qid 0 docno label' per line, the label an integer"
    with open(path, "rb") as handle:
        data = handle.read()
    lines = data.decode("utf-8", errors="replace").split("\n")
    for number, line in enumerate(lines, 1):
        parts = line.split()
        if not parts:
            continue
        cut = " (the file ends here without a newline: a copy cut short?)" if number == len(lines) else ""
        if len(parts) != 4:
            return DataError(f"{path}:{number}: expected 4 columns, found {len(parts)}: {line.strip()[:80]!r}{cut}. "
                             f"{how}")
        error = label_error(parts[3], f"{path}:{number}")
        if error:
            return DataError(f"{error}{cut}. {how}")
    return DataError(f"{path} is not a TREC qrels file ({cause}). {how}")
