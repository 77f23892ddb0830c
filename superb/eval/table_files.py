"""The significance table on disk, so that a standard evaluator reproduces every row of table.csv.

``table.csv`` holds the views computed from the folder's run files and ``qrels.trec`` alone, each measure under the
name ir_measures computes it by: the full view as ``nDCG@10``, the condensed view as ``nDCG(judged_only=True)@10``
(trec_eval ``-J``). So trec_eval, ir_measures or pt.Experiment on ``runs/*.run`` and ``qrels.trec`` give table.csv's
means, whatever column a reader looks at. A view with labels of its own (``filled``: qrels.trec plus
llm_qrels.trec) is written to ``table_<view>.csv``, where a reader that knows nothing of views cannot take its rows
for the human-label ones.

In memory (and from :func:`read_table_files`) every row carries the measure's spec name (``nDCG@10``) and its view.
A results folder's tables are read through superb.folder (RunFolder.tables), which checks each file against its
recorded sha256 before this reads it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from superb.eval.evaluate import VIEW_KINDS
from superb.folder.layout import TABLE, view_table


def view_file(view: str) -> str:
    """The file a view's rows are written to."""
    return TABLE if view in VIEW_KINDS else view_table(view)


def _judged_only(name: str, on: bool) -> str:
    """``name`` with ir_measures' judged_only parameter set (on) or removed (off), in ir_measures' spelling."""
    import ir_measures

    measure = ir_measures.parse_measure(name)
    params = {k: v for k, v in measure.params.items() if k != "judged_only"}
    if on:
        params["judged_only"] = True
    return repr(ir_measures.measures.registry[measure.NAME](**params))


def _rename_condensed(table: pd.DataFrame, on: bool) -> pd.DataFrame:
    """A copy with the measure of every judged_only view's row named with (on) or without (off) judged_only."""
    table = table.copy()
    rows = table["view"].map(lambda v: VIEW_KINDS.get(v, False)).astype(bool)
    table.loc[rows, "measure"] = table.loc[rows, "measure"].map(lambda m: _judged_only(m, on))
    return table


def write_tables(table: pd.DataFrame, out_dir: Path) -> list[Path]:
    """table.csv (and table_<view>.csv for views with labels of their own); returns the paths written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = _rename_condensed(table, on=True)
    files = table["view"].map(view_file)
    written = []
    for name in [TABLE, *sorted(set(files) - {TABLE})]:
        path = out_dir / name
        table[files == name].to_csv(path, index=False)
        written.append(path)
    return written


def read_table_files(paths: list[Path]) -> pd.DataFrame:
    """Every row of the table files ``paths`` (table.csv first, then table_<view>.csv), measures under their spec
    names, as :func:`significance` returned them (``family`` and ``verdict`` "" where a row has none); a table written
    before views (no view column) is the full view."""
    table = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    for column in ("family", "verdict", "kind", "role"):  # "" (not NaN) where a row has none, as in memory
        if column in table.columns:
            table[column] = table[column].fillna("").astype(str)
    if "view" not in table.columns:
        return table.assign(view="full")
    return _rename_condensed(table, on=False)
