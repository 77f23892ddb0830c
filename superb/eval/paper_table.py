"""The table a paper prints: systems as rows, collections x measures as columns, one cell per folder's own result.

``paper_table(["results/trec_dl19", "results/trec_dl20"], names=["DL19", "DL20"])`` reads each results folder's
table.csv and returns the long form (one row per system, collection and measure): the folder's own mean, effect,
p-values, verdict and mark (its family, its correction, confirmatory or exploratory as that folder declared).
Nothing is re-tested across folders: a folder's numbers are copied, never recomputed. Rows are matched by system
name; a system absent from a collection has no row there (a dash in the table). ``average=True`` adds the mean of
the collections' means per system and measure (collection ``average``: no test, no mark; only for a system present
in every collection). ``anchors`` (a CSV such as experiments/anchors_trec_dl.csv) appends other systems' published
numbers, quoted from their sources (not run here), with the model each used: ``kind`` "quoted", never tested.

Each folder is opened through superb.folder (a run's folder: a ``superb table`` folder or a judge folder is refused,
naming what it is), and each file read is checked against the sha256 its provenance.json records; ``unverified=True``
(``--unverified``) reads a file that differs anyway and marks the table (``frame.attrs["unverified"]``). The frame's
``attrs["inputs"]`` records every folder read: its provenance.json's sha256 and the sha256 of each file read.

Refused (SuperbError, naming the folder and the measure): a measure a folder lacks; a measure whose binary relevance
threshold differs between folders (``P(rel=2)@10`` in one, ``P@10`` in another: not the same measure); two folders of
the same collection (the same queries and labels, or the same data set and query selection). Writers:
superb.eval.paper_table_files (table.md, table.csv, table.tex).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from superb.errors import SuperbError
from superb.eval.table_markdown import significance_mark, main_rows
from superb.folder import layout
from superb.folder.kinds import open_folder
from superb.folder.run_folder import RunFolder
from superb.folder.verify import as_records

COLUMNS = ["system", "collection", "measure", "mean", "delta", "ci_low", "ci_high", "p", "p_corrected", "verdict",
           "kind", "mark", "role", "baseline", "n_queries", "model", "source"]
AVERAGE = "average"
DEFAULT_MEASURES = ("nDCG@10",)
ANCHOR_COLUMNS = ("method", "model", "source")
#: what a spec's [evaluation] means when it leaves these out (superb.run.spec.EvaluationSpec's defaults, a layer above:
#: tests/test_paper_table.py pins them equal)
SPEC_DEFAULTS = {"test": "t", "correction": "holm", "alpha": 0.05}


@dataclass(frozen=True)
class Collection:
    """One column group: a results folder and what its own table declared."""

    name: str
    folder: str
    n_queries: int
    test: str
    correction: str
    alpha: float
    declared: bool  # the spec declared [[hypotheses]]: confirmatory and exploratory rows
    baselines: tuple[str, ...]
    measures: dict[str, str] = field(default_factory=dict)  # the measure asked for -> the folder's name of it


TAKES = ("one folder per collection, written by `superb run`, `superb evaluate` or `superb merge` (e.g. "
         "results/trec_dl19 results/trec_dl20)")


def paper_table(folders: Sequence[str | Path], *, measures: Sequence[str] | None = None,
                names: Sequence[str] | None = None, anchors: str | Path | None = None, average: bool = False,
                view: str = "full", unverified: bool | None = None) -> pd.DataFrame:
    """The long form of the paper's table (columns :data:`COLUMNS`; see the module docstring). ``frame.attrs``
    holds ``collections`` (:class:`Collection` as dicts, in column order), ``measures`` (the table's names),
    ``average``, which the writers need, ``inputs`` (each folder read, with the sha256 of what was read) and
    ``unverified`` (files read although not as recorded: superb.folder.verify.Mismatch as dicts)."""
    opened = [open_folder(f, RunFolder, unverified=unverified, what=TAKES) for f in folders]
    folders = [f.path for f in opened]
    measures = list(measures or DEFAULT_MEASURES)
    names = list(names) if names else [f.name for f in folders]
    if len(names) != len(folders):
        raise SuperbError(f"--names gives {len(names)} names ({', '.join(names)}) for {len(folders)} folders: give "
                          "one collection name per folder, in the same order")
    _refuse_same_collection(opened)
    if len(set(names)) != len(names) or AVERAGE in names:
        raise SuperbError(f"--names {','.join(names)}: each collection needs its own name (and not {AVERAGE!r})")
    tables, collections = [], []
    for folder, name in zip(opened, names):
        table, collection = _read_folder(folder, name, measures, view)
        tables.append(table)
        collections.append(collection)
    shown = _refuse_other_thresholds(collections, measures)
    frame = pd.concat(tables, ignore_index=True)
    if anchors is not None:
        frame = pd.concat([frame, read_anchors(Path(anchors), names, shown)], ignore_index=True)
    if average:
        frame = pd.concat([frame, _averages(frame, names)], ignore_index=True)
    frame = frame.reindex(columns=COLUMNS)
    frame["n_queries"] = frame["n_queries"].astype("Int64")
    frame.attrs = {"collections": [asdict(c) for c in collections], "measures": shown, "average": bool(average),
                   "inputs": [{"collection": n, **f.inputs_record()} for f, n in zip(opened, names)],
                   "unverified": as_records([m for f in opened for m in f.mismatches])}
    return frame


def _read_folder(opened: RunFolder, name: str, measures: list[str], view: str) -> tuple[pd.DataFrame, Collection]:
    folder, record = opened.path, opened.provenance
    table = opened.tables()
    rows = main_rows(table)
    views = list(pd.unique(rows["view"]))
    rows = rows[rows["view"] == view]
    if rows.empty:
        raise SuperbError(f"{folder}: its table has no view {view!r} (it has {', '.join(views)}); pass --view")
    known = list(pd.unique(rows["measure"]))
    chosen = {m: _folder_measure(m, known, folder) for m in measures}
    rows = rows[rows["measure"].isin(set(chosen.values()))].copy()
    evaluation = {**SPEC_DEFAULTS, **((record.get("spec") or {}).get("evaluation") or {})}
    baselines = tuple(str(b) for b in pd.unique(rows["baseline"].dropna()) if str(b))
    collection = Collection(name=name, folder=str(folder), n_queries=int(rows["n_queries"].max()),
                            test=str(evaluation["test"]), correction=str(evaluation["correction"]),
                            alpha=float(evaluation["alpha"]),
                            declared=bool((record.get("spec") or {}).get("hypotheses")),
                            baselines=baselines, measures=chosen)
    models = _models(opened)
    out = pd.DataFrame({
        "system": rows["system"].astype(str), "collection": name, "measure": rows["measure"],
        **{c: rows[c] if c in rows.columns else math.nan for c in ("mean", "delta", "ci_low", "ci_high", "p",
                                                                      "p_corrected")},
        "verdict": rows["verdict"].fillna("").astype(str), "kind": "run",
        "mark": [significance_mark(r).strip() for r in rows.to_dict("records")],
        "role": rows["role"].fillna("").astype(str) if "role" in rows.columns else "",
        "baseline": rows["baseline"].fillna("").astype(str), "n_queries": rows["n_queries"],
        "model": rows["system"].map(lambda s: models.get(str(s), "")), "source": str(folder)})
    return out.reset_index(drop=True), collection


def _models(folder: RunFolder) -> dict[str, str]:
    """system -> the models it used, as the folder's provenance.json records them (``models``: written by the run from
    its stages: the LLM's id, a bi-encoder's name); "" for a system without one (BM25, a given run). A folder written
    before superb recorded models names none (write it again, from its shipped answers: 0 calls)."""
    return {str(k): str(v) for k, v in (folder.provenance.get("models") or {}).items()}


def _measure_key(name: str, keep_rel: bool):
    import ir_measures

    try:
        m = ir_measures.parse_measure(name)
    except Exception:  # noqa: BLE001 - ir_measures raises NameError, ValueError, AssertionError... on bad names
        return name
    return m.NAME, tuple(sorted((k, str(v)) for k, v in m.params.items() if keep_rel or k != "rel"))


def _folder_measure(asked: str, known: list[str], folder: Path) -> str:
    """The folder's name for the measure asked for: itself, or the one measure it names once the binary threshold is
    set (``P@10`` is ``P(rel=2)@10`` in a folder whose threshold is 2)."""
    if asked in known:
        return asked
    explicit = "rel=" in asked
    wanted = _measure_key(asked, keep_rel=explicit)
    same = [k for k in known if _measure_key(k, keep_rel=explicit) == wanted]
    if len(same) == 1:
        return same[0]
    other = [k for k in known if explicit and _measure_key(k, keep_rel=False) == _measure_key(asked, keep_rel=False)]
    if not same and other:
        raise SuperbError(f"{folder}: measure {asked!r}: the folder computes {', '.join(other)} (a different rel "
                          "threshold: labels counted as relevant), not the same measure. Set the same [evaluation] rel "
                          "in the specs and re-run them, or leave the measure out")
    why = f"it could be any of {same}" if same else f"it is not in its {layout.TABLE}"
    raise SuperbError(f"{folder}: measure {asked!r}: {why}; the folder has {', '.join(known)}. Ask for measures every "
                      "folder has (--measures), or re-run the folder with it in [evaluation] measures")


def _refuse_other_thresholds(collections: list[Collection], measures: list[str]) -> list[str]:
    """The table's name of each measure asked for; a measure named differently by two folders (another binary
    relevance threshold) is refused."""
    shown = []
    for m in measures:
        found = {c.measures[m]: c for c in collections}
        if len(found) > 1:
            where = "; ".join(f"{c.folder} computes {name}" for name, c in found.items())
            raise SuperbError(f"measure {m!r} is not the same measure in every folder: {where} (a different rel "
                              "threshold: labels counted as relevant). Set the same [evaluation] rel in their specs "
                              "and re-run them, or leave the measure out")
        shown.append(next(iter(found)))
    return shown


def _refuse_same_collection(folders: list[RunFolder]) -> None:
    """Two folders of one collection (the same queries with the same labels, or the same data set and query
    selection) are refused: a paper's columns are different collections."""
    seen: dict[str, Path] = {}
    for opened in folders:
        folder, spec = opened.path, opened.spec_raw
        keys = []
        if opened.has(layout.QRELS) and opened.has(layout.TOPICS):
            qids = sorted(opened.topics()["qid"])
            opened.file(layout.QRELS)
            digest = opened.read[layout.QRELS]
            keys.append("queries and labels " + hashlib.sha256(json.dumps([qids, digest]).encode()).hexdigest())
        if spec.get("dataset"):
            keys.append("data set " + json.dumps([spec.get("dataset"), spec.get("queries")], sort_keys=True))
        for key in keys:
            if key in seen and seen[key].resolve() != folder.resolve():
                raise SuperbError(f"{seen[key]} and {folder} are two folders of the same collection (the same "
                                  f"{key.split(' ', 1)[0]}...): a column per collection takes one folder of each. "
                                  "Put both folders' systems into one spec, or compare them with `superb compare`")
            if key in seen:
                raise SuperbError(f"{folder} is given twice: give each collection's folder once")
            seen[key] = folder


def _column_key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def read_anchors(path: Path, names: Sequence[str], measures: Sequence[str]) -> pd.DataFrame:
    """Quoted rows from a CSV with columns method, model, source and one column per collection and measure named
    ``COLLECTION_MEASURE`` in any spelling (``dl19_ndcg10`` is DL19's nDCG@10); an empty cell is a dash."""
    if not path.is_file():
        raise SuperbError(f"--anchors {path}: no such file (a CSV like experiments/anchors_trec_dl.csv)")
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = list(reader.fieldnames or [])
        records = list(reader)
    missing = [c for c in ANCHOR_COLUMNS if c not in header]
    if missing:
        raise SuperbError(f"--anchors {path}: no column {', '.join(missing)} (it has {', '.join(header)}); each row "
                          "names its method, the model it used and its source")
    by_key = {_column_key(h): h for h in header}
    cells = {(c, m): by_key[_column_key(c) + _column_key(m)] for c in names for m in measures
             if _column_key(c) + _column_key(m) in by_key}
    if not cells:
        wanted = ", ".join(f"{c}_{m}" for c in names for m in measures)
        raise SuperbError(f"--anchors {path}: no column holds a collection and measure of the table ({wanted}); "
                          f"it has {', '.join(header)}")
    rows = []
    for line, record in enumerate(records, 2):
        for (collection, measure), column in cells.items():
            text = (record.get(column) or "").strip()
            if not text:
                continue
            try:
                value = float(text)
            except ValueError:
                raise SuperbError(f"--anchors {path}:{line}: column {column} holds {text!r}, not a number") from None
            rows.append({"system": record["method"], "collection": collection, "measure": measure, "mean": value,
                         "verdict": "", "kind": "quoted", "mark": "", "role": "", "baseline": "",
                         "model": record["model"], "source": record["source"]})
    return pd.DataFrame(rows, columns=COLUMNS)


def _averages(frame: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """Per row (a run system; a quoted system and model) and measure: the mean of its collections' means, when it has
    every collection."""
    rows = []
    keyed = frame.assign(_model=frame["model"].where(frame["kind"] == "quoted", "").fillna(""))
    for (kind, system, _, measure), group in keyed.groupby(["kind", "system", "_model", "measure"], sort=False):
        if set(group["collection"]) != set(names):
            continue
        rows.append({"system": system, "collection": AVERAGE, "measure": measure, "mean": float(group["mean"].mean()),
                     "verdict": "", "kind": kind, "mark": "", "role": "", "baseline": "",
                     "model": group["model"].iloc[0], "source": "; ".join(dict.fromkeys(group["source"].astype(str)))})
    return pd.DataFrame(rows, columns=COLUMNS)
