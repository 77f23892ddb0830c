"""stage_scores.csv.gz of a results folder: each stage's own score of the products a system ranks first.

A reranked run file holds rank-derived scores (transformers/base.py: ``score`` is only an order, n - position, so that
score and rank agree); the raw scores live in the run frame's ``*_score`` columns while ``superb run`` runs:
``first_stage_score`` (the retrieval score a reranking stage read), ``<stage>_score`` (each reranker's own raw score:
P(yes), an expected grade, a cosine, whatever the stage's ``alpha``; base.py ``score_column``), ``<stage>_blend_score``
(the blend a stage with alpha < 1 is ordered by) and ``fuse_score`` (transformers/fuse.py). This file keeps them for the
top :data:`TOP` of each query of each system, the rows report.html shows: columns ``system, qid, docno, rank`` (rank as
in ``runs/SYSTEM.run``: the same order, counted from 0 as PyTerrier writes it), then every ``*_score`` column any system
has, in order of first appearance, empty where a system lacks it or a stage did not score the product (below its top_k).
Values at full precision (the shortest text that reads back as the same double); gzip with mtime 0, so the same run
gives the same bytes.
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pandas as pd

from superb.errors import DataError
from superb.folder.layout import STAGE_SCORES

FILE = STAGE_SCORES  # superb.folder.layout: every file name of a results folder
TOP = 10  # the rows report.html shows per system and query
KEYS = ["system", "qid", "docno", "rank"]


def score_columns(run: pd.DataFrame) -> list[str]:
    """The run's numeric ``*_score`` columns, in frame order."""
    return [c for c in run.columns if str(c).endswith("_score") and pd.api.types.is_numeric_dtype(run[c])]


def stage_scores_frame(runs: dict[str, pd.DataFrame], top: int = TOP) -> pd.DataFrame:
    """The top ``top`` of each query of each run (in the order and with the ranks runs/SYSTEM.run is written with:
    superb.trec.runs.strictly_decreasing) with their ``*_score`` columns."""
    import pyterrier as pt

    from superb.trec.runs import strictly_decreasing

    parts, columns = [], []
    for name, run in runs.items():
        ordered = strictly_decreasing(run if "rank" in run.columns else pt.model.add_ranks(run))
        head = ordered.groupby("qid", sort=False).head(top)
        own = score_columns(head)
        columns += [c for c in own if c not in columns]
        parts.append(head[["qid", "docno", "rank", *own]].assign(system=name))
    if not parts:
        return pd.DataFrame(columns=KEYS)
    frame = pd.concat(parts, ignore_index=True)
    frame["qid"], frame["docno"] = frame["qid"].astype(str), frame["docno"].astype(str)
    frame["rank"] = frame["rank"].astype(int)
    return frame.reindex(columns=KEYS + columns)


def write_stage_scores(runs: dict[str, pd.DataFrame], out_dir: Path) -> Path:
    """Writes ``out_dir/stage_scores.csv.gz`` (see the module docstring); returns its path."""
    text = stage_scores_frame(runs).to_csv(index=False, lineterminator="\n")  # floats as repr: exact
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as gz:
        gz.write(text.encode("utf-8"))
    path = Path(out_dir) / FILE
    path.write_bytes(buffer.getvalue())
    return path


def read_stage_scores(folder: Path) -> pd.DataFrame | None:
    """A folder's stage_scores.csv.gz (qid, docno as text; rank as int; scores as float, NaN where empty), or None
    when the folder has none (written before the file existed)."""

    path = Path(folder) / FILE
    if not path.is_file():
        return None
    try:
        frame = pd.read_csv(path, dtype={"system": str, "qid": str, "docno": str}, keep_default_na=False,
                            na_values=[""])
        missing = [c for c in KEYS if c not in frame.columns]
        if missing:
            raise ValueError(f"no column(s) {missing} (it has {list(frame.columns)})")
        for column in frame.columns[len(KEYS):]:
            frame[column] = pd.to_numeric(frame[column], errors="raise").astype("float64")
        frame["rank"] = pd.to_numeric(frame["rank"], errors="raise").astype(int)
    except (OSError, EOFError, ValueError, pd.errors.ParserError) as exc:
        raise DataError(f"{path} is not a readable {FILE} (gzip CSV: {', '.join(KEYS)}, then *_score columns): "
                        f"{exc}; write the folder again with `superb run`") from None
    return frame


def with_stage_scores(runs: dict[str, pd.DataFrame], folder: Path) -> dict[str, pd.DataFrame]:
    """``runs`` (read from ``folder``'s run files) with the ``*_score`` columns of ``folder``'s stage_scores.csv.gz
    joined on (qid, docno), NaN outside each system's top rows: how ``superb merge`` carries a shard's stage scores
    into the merged folder. Unchanged when the folder has no such file."""
    scores = read_stage_scores(folder)
    if scores is None:
        return runs
    columns = list(scores.columns[len(KEYS):])
    out = {}
    for name, run in runs.items():
        own = scores.loc[scores["system"] == name, ["qid", "docno", *columns]]
        keyed = run.assign(qid=run["qid"].astype(str), docno=run["docno"].astype(str))
        out[name] = keyed.drop(columns=[c for c in columns if c in keyed.columns]).merge(
            own, on=["qid", "docno"], how="left", validate="one_to_one")
    return out
