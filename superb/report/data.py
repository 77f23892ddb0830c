"""A results folder's files gathered into the one JSON payload the page reads (superb.report.page).

The folder is opened through superb.folder, like every command's: each file read is checked against the sha256 its
provenance.json records (``--unverified`` reads a changed one anyway, and the page says so above the table), and each
system's baseline is the folder's (superb.folder.run_folder.baselines_of, the spec's rule), unless a declared
hypothesis pairs it with another system first.

From the folder: table.md (rendered as it is: marks, intervals, notes), cost.png, systems.json and runs/ (each
system's top ``depth`` per query; the first stages' engine scores), table.csv (each row's baseline), perquery.csv,
qrels.trec, llm_qrels.trec (the LLM judge's labels, where `superb judge --fill` wrote them), topics.tsv and
provenance.json (the spec: which system reads which, the data set, the relevance threshold).

Not in the folder: product titles. They come from the data set the spec names, through superb's loaders (as `superb
run` read it); where it cannot be loaded, or lacks a product, the page shows the docno and says how many titles are
missing. Reranked run files hold rank-derived scores (transformers/base.py: n - position), so the page shows each
stage's rank from the run files, the first stages' scores from theirs, and each stage's own score (P(yes), a
probability, a fused value) from stage_scores.csv.gz (superb.stage_scores: each system's top 10 per query) where the
folder has one; a folder written before that file existed renders without them and says so.
"""

from __future__ import annotations

import base64
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from superb.errors import SuperbError
from superb.folder import layout
from superb.folder.kinds import open_folder
from superb.folder.run_folder import RunFolder
from superb.folder.verify import note
from superb.stage_scores import KEYS
from superb.trec.runs import LABELS_ONLY

log = logging.getLogger(__name__)

DEPTH = 20  # entries kept per system and query (the page shows the top 10 and where products came from up to 20)
FIRST_STAGE_DEPTH = 100  # first stages keep their whole run: "moved up from #37"


@dataclass
class Titles:
    """docno -> title, and where the titles came from (shown on the page)."""

    by_docno: dict[str, str] = field(default_factory=dict)
    source: str = ""
    missing: int = 0


def _in_rank_order(run: pd.DataFrame) -> pd.DataFrame:
    """A run (superb.trec.runs.read_run) in rank order per query, the file's query order kept."""
    order = pd.factorize(run["qid"])[0]
    return run.assign(_q=order).sort_values(["_q", "rank"], kind="mergesort").drop(columns=["_q"])


TAKES = "a folder written by `superb run`, `superb evaluate` or `superb merge` (e.g. results/quickstart)"


def load_titles(dataset: dict | None, docnos: set[str]) -> Titles:
    """The titles of ``docnos`` from the data set a spec names (superb.data.load_dataset); a data set that cannot be
    loaded gives no titles, and the reason is kept in ``source``."""
    if not dataset:
        return Titles(source=f"no data set in {layout.PROVENANCE}: docnos shown", missing=len(docnos))
    if dataset.get("name") == LABELS_ONLY:  # superb evaluate: qrels and run files, no documents
        return Titles(source="superb evaluate: qrels and run files, no documents: docnos shown", missing=len(docnos))
    from superb.data import load_dataset

    name = dataset.get("name", "?")
    try:
        store = load_dataset(dataset, path="dataset").docs_store()
    except (SuperbError, OSError) as exc:
        log.warning("report: titles unavailable: %s", exc)
        return Titles(source=f"data set {name!r} could not be loaded ({exc}): docnos shown", missing=len(docnos))
    found = {}
    for docno in docnos:
        doc = store.get(docno)
        title = (doc or {}).get("title") or (doc or {}).get("text") or ""
        if title:
            found[docno] = str(title)
    missing = len(docnos) - len(found)
    if missing:
        log.warning("report: %d of %d products have no title in the data set %r (docno shown)", missing, len(docnos),
                    name)
    return Titles(found, source=f"titles from the data set {name!r} (superb.data.load_dataset)", missing=missing)


def _chains(spec: dict, systems: list[str]) -> dict[str, list[str]]:
    """Each system's stages: the systems it reads (``input``, recursively), first stage first, itself last."""
    inputs = {p.get("name"): p.get("input") for p in spec.get("pipelines") or []}
    out = {}
    for name in systems:
        chain, seen, current = [name], {name}, inputs.get(name)
        while current and current in systems and current not in seen:
            chain.insert(0, current)
            seen.add(current)
            current = inputs.get(current)
        out[name] = chain
    return out


def _baselines(folder: RunFolder) -> dict[str, str]:
    """Each system's baseline on the page: the ``against`` of its first declared hypothesis, else the folder's
    baseline of it (superb.folder: its ``baseline``, or the ``input`` it reranks; ``baseline = false``: none)."""
    out: dict[str, str] = {}
    for h in folder.hypotheses:
        out.setdefault(str(h["system"]), str(h["against"]))
    for name, base in folder.baselines.items():
        if base and name not in out:
            out[name] = base
    return out


def _hypotheses(folder: RunFolder) -> list[list[str]]:
    """The declared hypotheses as [against, system] pairs, in spec order (the page opens on the first)."""
    return [[str(h["against"]), str(h["system"])] for h in folder.hypotheses]


def _read_runs(folder: RunFolder, spec: dict, qindex: dict[str, int]):
    """Each system's top DEPTH per query (first stages: FIRST_STAGE_DEPTH, with their scores) as indices into one list
    of docnos: (docnos, {system: [[doc index, ...] per query]}, {first stage: [[score, ...] per query]})."""
    docs: list[str] = []
    dindex: dict[str, int] = {}
    runs: dict[str, list[list[int]]] = {}
    scores: dict[str, list[list[float | None]]] = {}
    for name, read in folder.runs().items():
        run = _in_rank_order(read)
        first_stage = _is_first_stage(spec, name)
        lists: list[list[int]] = [[] for _ in qindex]
        kept: list[list[float | None]] = [[] for _ in qindex]
        for qid, group in run.groupby("qid", sort=False):
            if qid not in qindex:
                continue
            head = group.head(FIRST_STAGE_DEPTH if first_stage else DEPTH)
            for docno in head["docno"]:
                if docno not in dindex:
                    dindex[docno] = len(docs)
                    docs.append(docno)
            lists[qindex[qid]] = [dindex[d] for d in head["docno"]]
            kept[qindex[qid]] = [_rounded(v) for v in head["score"]]
        runs[name] = lists
        if first_stage:
            scores[name] = kept
    return docs, runs, scores


def _rounded(value: float, digits: int = 4) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), digits)


def _significant(value: float, digits: int = 4) -> float | None:
    return None if value is None or not math.isfinite(value) else float(f"{value:.{digits}g}")


def _stage_scores(folder: RunFolder, systems: list[str], qindex: dict[str, int], dindex: dict[str, int]):
    """stage_scores.csv.gz for the page: ({system: its *_score columns with a value}, {system: [{doc index: [value
    per column] of each product} per query]}), or None when the folder has no such file."""

    frame = folder.stage_scores()
    if frame is None:
        return None
    columns: dict[str, list[str]] = {}
    values: dict[str, list[dict[str, list[float | None]]]] = {}
    for name, rows in frame.groupby("system", sort=False):
        if name not in systems:
            continue
        own = [c for c in frame.columns[len(KEYS):] if rows[c].notna().any()]
        per_query: list[dict[str, list[float | None]]] = [{} for _ in qindex]
        for row in rows[["qid", "docno", *own]].itertuples(index=False):
            if row[0] in qindex and row[1] in dindex:
                per_query[qindex[row[0]]][str(dindex[row[1]])] = [_significant(v) for v in row[2:]]
        columns[str(name)], values[str(name)] = own, per_query
    return columns, values


def collect(folder: str | Path) -> dict[str, Any]:
    """The page's payload for the results folder ``folder`` (see the module docstring)."""

    opened = open_folder(folder, RunFolder, what=TAKES, record_optional=True)
    folder = opened.path
    systems = list(opened.systems())
    table_md = opened.table_md()
    perquery = opened.perquery()
    topics = opened.topics()
    spec = opened.spec_raw
    chains = _chains(spec, systems)

    qids = list(topics["qid"])
    qindex = {q: i for i, q in enumerate(qids)}
    docs, runs, scores = _read_runs(opened, spec, qindex)
    dindex = {d: i for i, d in enumerate(docs)}

    def labels(frame: pd.DataFrame) -> list[dict[str, int]]:
        out: list[dict[str, int]] = [{} for _ in qids]
        for qid, docno, label in frame.itertuples(index=False):
            if qid in qindex and docno in dindex:  # only products some system shows
                out[qindex[qid]][str(dindex[docno])] = int(label)
        return out

    qrels = opened.qrels()
    llm_qrels = opened.llm_qrels()  # where `superb judge --fill` wrote the LLM judge's labels
    llm_qrels = qrels.iloc[:0] if llm_qrels is None else llm_qrels
    rel = opened.rel
    relevant = qrels[qrels["label"] >= rel].groupby("qid").size()
    judged = qrels.groupby("qid").size()

    views = [str(v) for v in pd.unique(perquery["view"])]
    measures = [str(m) for m in pd.unique(perquery["measure"])]
    values: dict[str, dict[str, list[float | None]]] = {}
    for (view, measure, system), group in perquery.groupby(["view", "measure", "system"], sort=False):
        column: list[float | None] = [None] * len(qids)
        for qid, value in zip(group["qid"], group["value"]):
            if qid in qindex:
                column[qindex[qid]] = _rounded(value)
        values.setdefault(f"{view}|{measure}", {})[str(system)] = column

    stored = _stage_scores(opened, systems, qindex, dindex)
    found = load_titles(spec.get("dataset"), set(docs))
    cost = opened.file(layout.COST_PLOT).read_bytes() if opened.has(layout.COST_PLOT) else None
    name = spec.get("name") or folder.name
    return {
        "name": name,
        "folder": folder.name,
        "table_md": _marked(table_md, name, note(opened.mismatches)),
        "cost_png": base64.b64encode(cost).decode("ascii") if cost is not None else None,
        "systems": systems,
        "baselines": _baselines(opened),
        "hypotheses": _hypotheses(opened),
        "chains": chains,
        "first_stages": sorted(scores),
        "views": views,
        "measures": measures,
        "rel": rel,
        "queries": [{"qid": q, "query": t, "relevant": int(relevant.get(q, 0)), "judged": int(judged.get(q, 0))}
                    for q, t in zip(qids, topics["query"])],
        "docs": docs,
        "titles": [found.by_docno.get(d, "") for d in docs],
        "title_source": found.source,
        "titles_missing": found.missing,
        "runs": runs,
        "scores": scores,
        "scores_stored": stored is not None,
        "stage_columns": stored[0] if stored else {},
        "stage_scores": stored[1] if stored else {},
        "qrels": labels(qrels),
        "llm_qrels": labels(llm_qrels),
        "has_llm_qrels": bool(len(llm_qrels)),
        "values": values,
        "depth": DEPTH,
    }


def _marked(table_md: str, name: str, unverified: str) -> str:
    """table.md with the line that marks files read unverified under its heading (as the page shows it)."""
    if not unverified:
        return table_md
    head, rest = (table_md.split("\n", 1) + [""])[:2] if table_md.startswith(f"# {name}\n") else ("", table_md)
    return f"{head}\n{unverified}\n\n{rest}" if head else f"{unverified}\n\n{rest}"


def _is_first_stage(spec: dict, name: str) -> bool:
    """Whether the spec's pipeline ``name`` only retrieves (its run file holds the engine's scores). Without the spec
    (no provenance.json) every system counts as one: its whole run and its file's scores are shown."""
    for p in spec.get("pipelines") or []:
        if p.get("name") == name:
            return not p.get("rerank") and not p.get("input")
    return True
