"""Filling the unjudged: `superb judge --fill results/NAME` labels the products in the top ranks of every system of
a `superb run` results folder with a CALIBRATED LLM judge, and adds the view "filled" to the folder's table.

What it reads: the folder alone for the systems (runs/*.run, systems.json, topics.tsv, qrels.trec, usage.csv, the
spec in provenance.json): no system is run again, so the systems make zero calls. The judge uses the folder's
[llm] (the same model, so a request a reranker already asked, e.g. pointwise_yesno_product on BM25's top 20, is a
cache hit) and the folder's data set.

The judge (``--judge``, default umbrela: not a reranker's default prompt; a judge that is the model of the LLM
rerankers under test, or asks one of their prompts, is flagged as circular in table.md, views.md and the README
section: superb.judges.fill.write.circularity): a scoring preset (superb.judges.registry.PRESETS) or an ensemble
"a+b" of presets (mean of rank-normalised scores). Its cut points are fitted on the data set's DEV-split rated pairs
(KappaCutSearch, linear-weighted kappa against the combined human label; the same fit as `superb judge`'s calibrated
study, so with the same cache the same cut points; ``--dev-sample N``: a seeded sample of N dev queries instead),
then applied to the target pairs.

Targets: every (query, product) in the top ``depth`` (default 10) of any system. ``scope = "all"`` (default) labels
all of them, judged or not, so the LLM labels also form a complete LLM-only qrels set over those ranks (the label
study: superb.judges.fill.write); ``"unjudged"`` labels only products without a human label.

Views: "filled" = the human qrels, plus the LLM label of every target pair WITHOUT a human label (human labels always
win). A target pair the judge could not score (failed call; missing under --from-cache) gets no LLM label: it stays
unjudged (non-relevant in the full and filled views), and is counted. Measures deeper than ``depth`` (P@20) see
unjudged products below ``depth`` as non-relevant in the filled view too.

Written into the folder (into a copy of it swapped in as a whole, superb.atomic, so an interrupted fill leaves it as
it was):
  llm_qrels.trec          the LLM labels of the scored targets (TREC qrels: qid 0 docno label), apart from qrels.trec
  llm_qrels.json          the judge's fingerprint: judge, template ids, model, cut points, weights, the dev pairs they
                          were fitted on and their kappa, depth, scope, and the counts (targets, judged, scored, status)
  llm_labels.tsv          qid, docno, judged, human, score, label, status of every target pair
  table.md / table.csv / table_filled.csv / perquery.csv   re-evaluated with the spec's views plus "filled" (its
                          rows in table_filled.csv: table.csv keeps what qrels.trec alone gives); table.md says
                          whether a conclusion changes between the views (superb.eval.view_verdicts.views_sentence)
  views.md                that sentence and every changed verdict; README.md gets it between
                          <!-- views: superb judge --fill --> and <!-- end views --> (the section is replaced)
  label_study.md / .csv   Kendall's tau (query-bootstrap intervals) and the agreement on significantly different
                          pairs of systems (superb.judges.pair_agreement) under human vs LLM-only, same-pairs and
                          filled labels (superb.judges.fill.write); label_study_verdicts.csv: every verdict against
                          a baseline under both; label_study_pairs.csv: every pair of systems under both
  responses.jsonl.gz      the folder's shipped responses plus the judge's (merged by key), so the folder re-derives
                          with zero calls after `superb responses replay`
  provenance.json         gains "fill" (fingerprint, LLM usage, mode, seconds); "responses" and "files" updated
A later `superb run` of the spec rewrites the folder without these; run the fill again (its answers are cached).
"""

from __future__ import annotations

import dataclasses
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from superb.atomic import check_replaceable
from superb.folder.kinds import open_folder
from superb.folder.layout import USAGE
from superb.folder.run_folder import RunFolder, ShardFolder
from superb.folder.spec import folder_spec
from superb.folder.verify import as_records, note
from superb.errors import DataError
from superb.judges.fill.inputs import FillOptions, Folder
from superb.judges.fill.write import write_fill
from superb.judges.from_cache import rated_pool
from superb.judges.registry import build_judge
from superb.judges.studies.calibration import Ensemble, KappaCutSearch
from superb.llm.connect import open_for_spec
from superb.llm.ship import response_log
from superb.trec.runs import strictly_decreasing


def read_folder(path: str | Path, *, allow_plugins: bool = False) -> Folder:
    """The folder's files, read through superb.folder (each checked against its recorded sha256; the systems'
    baselines by the folder's rule); a missing file or a shard folder is a DataError naming it. Files read with
    --unverified mark the filled table (a line under its heading) and its provenance ("unverified"). A spec naming a
    plug-in is refused unless ``allow_plugins`` (`--allow-plugins`)."""
    opened = open_folder(path, RunFolder, what="a folder written by `superb run` (or `superb merge`)")
    if isinstance(opened, ShardFolder):
        raise DataError(f"{path} is one shard of a run: merge the shards first (`superb merge`), then fill the merge")
    spec = folder_spec(opened, allow_plugins=allow_plugins)
    runs, topics, qrels = opened.runs(), opened.topics(), opened.qrels()
    usage = opened.usage()
    if usage is None:
        opened.file(USAGE, missing="--fill takes a folder written by `superb run` (or `superb merge`)")
    spec = dataclasses.replace(spec, baselines={p.name: opened.baselines.get(p.name) for p in spec.pipelines})
    provenance = dict(opened.provenance)
    if opened.mismatches:
        spec = dataclasses.replace(spec, description=f"{spec.description}\n\n{note(opened.mismatches)}".strip())
        provenance["unverified"] = as_records(opened.mismatches)
    return Folder(opened.path, provenance, spec, runs, topics, qrels, usage)


def top_pairs(runs: dict[str, pd.DataFrame], depth: int) -> pd.DataFrame:
    """qid, docno, systems (how many systems rank it in their top ``depth``), best_rank: the union of every run's
    top ``depth`` (rank order by superb.trec.runs, as evaluation reads the runs)."""

    parts = []
    for name, run in runs.items():
        ordered = strictly_decreasing(run[[c for c in ("qid", "docno", "score", "rank") if c in run.columns]]
                                      .astype({"qid": str, "docno": str}))
        ordered = ordered.sort_values(["qid", "score"], ascending=[True, False], kind="mergesort")
        ordered["r"] = ordered.groupby("qid").cumcount() + 1
        parts.append(ordered.loc[ordered["r"] <= depth, ["qid", "docno", "r"]].assign(system=name))
    every = pd.concat(parts, ignore_index=True)
    out = every.groupby(["qid", "docno"], sort=True).agg(systems=("system", "nunique"), best_rank=("r", "min"))
    return out.reset_index()


class FittedJudge:
    """A scoring judge, or the mean of several (superb.judges.studies.calibration.Ensemble), with cut points fitted on
    dev rated pairs. ``score(pool)`` -> qid, docno, score, status; ``fit(dev_pool, ratings)``; ``label(scores)``."""

    def __init__(self, members: list[str], *, llm: Any, dataset: Any, weights: str = "linear"):
        self.names = members
        self.scorers = {m: build_judge(m, llm=llm, dataset=dataset, name=m, path=f"--judge {m}")
                        for m in members}
        self.ensemble = Ensemble(members) if len(members) > 1 else None
        self.calibration = KappaCutSearch(weights=weights)
        self.dev_queries = 0

    @property
    def name(self) -> str:
        return "+".join(self.names)

    def score(self, pool: pd.DataFrame) -> pd.DataFrame:
        """One score per distinct pair: the member's, or the ensemble's where every member scored it (status
        "ok"; else the first failing member's status). Needs fitted normalisers for an ensemble (call fit first)."""
        frames = {m: j.score(pool).set_index(["qid", "docno"]) for m, j in self.scorers.items()}
        first = frames[self.names[0]]
        if self.ensemble is None:
            return first.reset_index()
        wide = pd.DataFrame({m: f["score"] for m, f in frames.items()}).reindex(first.index)
        status = pd.Series("ok", index=first.index)
        for m in reversed(self.names):
            status = status.where(frames[m]["status"].reindex(first.index).isin(("ok", "parsed")),
                                  frames[m]["status"].reindex(first.index))
        out = wide.assign(score=np.nan, status=status)  # the ensemble score comes from fitted normalisers
        return out[["score", "status", *self.names]].reset_index()

    def fit(self, dev: pd.DataFrame, ratings: pd.DataFrame) -> pd.DataFrame:
        """Score the dev pairs and fit (normalisers, then cut points on the combined label); returns their scores."""
        scores = self.score(dev)
        if self.ensemble is not None:
            ok = scores[self.names].notna().all(axis=1)
            if ok.sum() == 0:
                raise DataError(f"{self.name}: no dev pair scored by every member: nothing to calibrate on")
            self.ensemble.fit(scores.loc[ok, self.names])
            scores.loc[ok, "score"] = self.ensemble.apply(scores.loc[ok, self.names])
        merged = scores.dropna(subset=["score"]).merge(ratings[["qid", "docno", "final"]].astype(
            {"qid": str, "docno": str}), on=["qid", "docno"])
        self.dev_queries = merged["qid"].nunique()
        if self.dev_queries < 2:
            raise DataError(f"{self.name}: {len(merged)} dev pairs scored (from {self.dev_queries} queries): too few "
                            "to fit cut points. Run without --from-cache (the dev pairs' answers are not cached yet)")
        self.calibration.fit(merged["score"], merged["final"])
        return scores

    def label(self, pool: pd.DataFrame) -> pd.DataFrame:
        scores = self.score(pool)
        if self.ensemble is not None:
            ok = scores[self.names].notna().all(axis=1)
            if ok.any():
                scores.loc[ok, "score"] = self.ensemble.apply(scores.loc[ok, self.names])
        scores["label"] = pd.array([pd.NA] * len(scores), dtype="Int64")
        has = scores["score"].notna()
        if has.any():
            scores.loc[has, "label"] = self.calibration.apply(scores.loc[has, "score"]).astype(int)
        return scores[["qid", "docno", "score", "status", "label"]]

    def fingerprint(self, model: str | None) -> dict[str, Any]:
        c = self.calibration
        return {"judge": self.name, "members": self.names, "model": model,
                "templates": {m: j.template_ids() for m, j in self.scorers.items()},
                "normaliser": "rank" if self.ensemble is not None else None,
                "cuts": list(c.cuts), "weights": c.weights, "dev_pairs": c.n_dev, "dev_queries": self.dev_queries,
                "dev_kappa": c.dev_kappa, "stats": {m: dict(j.stats) for m, j in self.scorers.items()}}


def fill(folder: str | Path, options: FillOptions = FillOptions(), *, mode: str = "live", llm: Any = None,
         out: str | Path | None = None, allow_plugins: bool = False) -> dict:
    """Label the folder's targets and write the files of the module docstring (mode "live" or "from_cache"), or
    only count the calls a live fill would make (mode "dry_run": returns ``usage``; nothing is written). ``out``: write
    the filled copy there and leave ``folder`` unchanged (default: fill ``folder`` in place). ``allow_plugins``: the
    folder's spec may name plug-ins (read_folder)."""
    from superb.data import load_dataset

    t0 = time.perf_counter()
    members = options.members()
    if out is not None:
        check_replaceable(Path(out))  # before any call is paid for
    f = read_folder(folder, allow_plugins=allow_plugins)
    dataset = load_dataset(f.spec.dataset, path="dataset")
    ratings = dataset.ratings()
    if ratings is None:
        raise DataError(f"data set {dataset.name!r} has no individual ratings: the judge's cut points are fitted on "
                        "dev-split rated pairs")
    targets = top_pairs(f.runs, options.depth).merge(f.topics, on="qid", how="left")
    human = f.qrels.rename(columns={"label": "human"})
    targets = targets.merge(human, on=["qid", "docno"], how="left")
    targets["judged"] = targets["human"].notna()
    asked = targets if options.scope == "all" else targets[~targets["judged"]]
    dev = dev_pairs(dataset, options.dev_sample)
    with ExitStack() as stack:
        info: dict[str, Any] = {"model": getattr(llm, "model", None), "endpoint": "given by the caller"}
        if llm is None:
            llm, info = open_for_spec(f.spec.llm, stack, dry_run=mode != "live")
            if mode == "from_cache":
                info["endpoint"] = "none: answers from the response cache alone (--from-cache)"
        judge = FittedJudge(members, llm=llm, dataset=dataset, weights=options.weights)
        if mode == "dry_run":
            for scorer in judge.scorers.values():
                scorer.score(pd.concat([dev, asked[["qid", "query", "docno"]]], ignore_index=True))
            return {"usage": llm.usage.to_dict(), "targets": len(asked), "dev_pairs": len(dev), "llm": info}
        judge.fit(dev, ratings)
        labels = judge.label(asked[["qid", "query", "docno"]])
        usage = llm.usage.to_dict() if hasattr(llm, "usage") else {}

        log = response_log(llm)
    targets = targets.merge(labels, on=["qid", "docno"], how="left")
    if options.scope == "unjudged":
        targets["status"] = targets["status"].fillna("not asked (judged)")
    fingerprint = judge.fingerprint(info.get("model"))
    fingerprint.update({"depth": options.depth, "scope": options.scope, "dev_sample": options.dev_sample,
                        "counts": _counts(targets)})
    return write_fill(f, targets, fingerprint, {"mode": mode, "llm": info, "usage": usage,
                                                "seconds": round(time.perf_counter() - t0, 2)},
                      log=log, options=options, out=out)


def dev_pairs(dataset: Any, sample: int | None, seed: int = 0) -> pd.DataFrame:
    """The dev-split rated pairs the cut points are fitted on: all, or those of ``sample`` seeded dev queries."""

    dev = rated_pool(dataset, ["dev"])
    if sample is None:
        return dev
    qids = sorted(dev["qid"].unique())
    keep = set(np.random.default_rng(seed).choice(qids, size=min(sample, len(qids)), replace=False))
    return dev[dev["qid"].isin(keep)].reset_index(drop=True)


def _counts(targets: pd.DataFrame) -> dict[str, Any]:
    scored = targets["label"].notna()
    return {"targets": len(targets), "judged": int(targets["judged"].sum()),
            "unjudged": int((~targets["judged"]).sum()), "labelled": int(scored.sum()),
            "unjudged_labelled": int((scored & ~targets["judged"]).sum()),
            "status": {str(k): int(v) for k, v in targets["status"].value_counts().items()},
            "labels": {str(int(k)): int(v) for k, v in targets.loc[scored, "label"].value_counts().sort_index().items()}}
