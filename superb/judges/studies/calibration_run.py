"""The scoring judges of `superb judge SPEC`: dev-calibrated labels, reported on the test-split pairs.

A spec's judge variants (a ``preset`` of superb.judges.registry.PRESETS, or a type and its options; and
``type = "ensemble"`` over earlier ones) each score every pool pair from label probabilities. The pool's pairs are
split by query (superb.data.splits.split_of); the cut points that turn a score into a label 0..3 are fitted on the
DEV pairs (maximising [calibration] weights' kappa against the combined human label) and applied unchanged to the
TEST pairs, which are reported: superb.judges.studies.calibration_agreement.calibrated_agreement, with
query-bootstrap intervals, against the combined label and each rater, beside the human ceiling on the same pairs.

ORDER: the judges run one after the other in the spec's order (the priority order), each over every pool pair, the
dev pairs' queries first (calibration needs them before the test pairs mean anything). An interrupted run loses no
answer (the response cache keeps every completed call), and ``superb judge SPEC --from-cache`` writes the report from
the cached answers alone.

PARTIAL RUNS: a pair without a score (its answer not in the cache under --from-cache, a failed call, an unparseable
answer) is left out and counted. A judge is reported over the pairs it scored, with its coverage per split (the
"Coverage" section and coverage.csv), the human ceiling on exactly those pairs, and a note when its test coverage is
below 100%; a judge with fewer than two scored dev queries cannot be calibrated and is left out with a note; an
ensemble covers the pairs every member scored.

Files (beside the spec's other outputs): agreement_calibrated.md / .csv, coverage.csv, calibration.json (per judge: the
cut points, the dev pairs they were fitted on, template ids, the model, coverage), and per judge NAME/scores.tsv (qid,
docno, split, score, status), NAME/labels.tsv, NAME/per_label.csv, NAME/confusion_{final,rater_*}.png.
"""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from superb.errors import DataError, SpecError
from superb.judges.base import scores_frame
from superb.judges.records import as_judgments, write_jsonl
from superb.judges.registry import build_judge
from superb.folder import layout


def build_scorers(variants, *, llm: Any, dataset: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(scoring judges by name, ensembles by name), all built before any call, so a bad option fails first."""
    from superb.judges.studies.calibration import Ensemble

    judges, ensembles = {}, {}
    for name, options in variants:
        if options.get("type") == "ensemble":
            ensembles[name] = Ensemble(options["members"], normaliser=options.get("normaliser", "rank"))
            continue
        judges[name] = build_judge(options, llm=llm, dataset=dataset, name=name, path=f"judge[{name}]")
    return judges, ensembles


def split_pool(pool: pd.DataFrame, split_of=None) -> pd.DataFrame:
    """The pool with a ``split`` column, dev pairs first (queries in pool order within each split)."""
    from superb.data.splits import DEV_TEST, split_of as split_by_qid

    out = pool.astype({"qid": str, "docno": str}).copy()
    out["split"] = out["qid"].map(split_of or split_by_qid)
    order = {split: i for i, split in enumerate(DEV_TEST)}
    return out.sort_values("split", key=lambda s: s.map(order), kind="mergesort").reset_index(drop=True)


def reference_labels(dataset: Any) -> tuple[pd.DataFrame, str]:
    """(qid, docno, final[, rater_*], the name of ``final`` in the reports): the individual ratings and their
    combined label where the data set has them (Chorus: "final"), else its qrels, one label per pair ("qrels")."""
    ratings = dataset.ratings()
    if ratings is not None and "final" in ratings.columns:
        return ratings.astype({"qid": str, "docno": str}), "final"
    qrels = dataset.qrels()[["qid", "docno", "label"]].astype({"qid": str, "docno": str})
    return qrels.rename(columns={"label": "final"}), "qrels"


def check_pool(pool: pd.DataFrame) -> None:
    if not (pool["split"] == "dev").any():
        raise SpecError("queries", "the pool holds no dev-split pair, so no cut points can be fitted; select both "
                                   "splits ([queries] split = \"all\"): dev pairs calibrate, test pairs are reported")


def run_scoring(spec: Any, dataset: Any, llm: Any, pool: pd.DataFrame, out: Path, *, model: str | None,
                dev: tuple[Any, pd.DataFrame] | None = None) -> dict:
    """Score the pool with every scoring variant, calibrate on dev, report on test; write the files of the module
    docstring. Returns what provenance.json records, and each judge's label of every pool pair it scored
    (``pool_labels``: :func:`label_pool`).
    ``dev``: (data set, pool) of ANOTHER collection whose human-labelled pairs fit the cut points ([calibration]
    fit_on); every pair of ``pool`` is then a test pair."""
    from superb.data.splits import DEV_TEST
    from superb.judges.bootstrap import QueryBootstrap
    from superb.judges.studies.calibration_agreement import calibrated_agreement, write_study
    from superb.judges.studies.calibration import KappaCutSearch, WrittenLabels

    ratings, reference = reference_labels(dataset)
    split_of = None
    if dev is None:
        pool = split_pool(pool)
    else:
        dev_dataset, dev_pool = dev
        pool, dev_pool = pool.assign(split="test"), dev_pool.assign(split="dev")
        shared = sorted(set(pool["qid"].astype(str)) & set(dev_pool["qid"].astype(str)))
        if shared:
            raise DataError(f"calibration.fit_on: the collection the cut points are fitted on shares queries "
                            f"{shared[:5]} with this one; fit on another collection's queries")
        dev_labels, _ = reference_labels(dev_dataset)
        ratings = pd.concat([dev_labels, ratings], ignore_index=True)
        split_of = dict([*((q, "dev") for q in dev_pool["qid"].astype(str)),
                         *((q, "test") for q in ratings["qid"].astype(str) if q not in set(dev_pool["qid"]))]).get
        dev_judges, _ = build_scorers(spec.variants, llm=llm, dataset=dev_dataset)
    judges, ensembles = build_scorers(spec.variants, llm=llm, dataset=dataset)
    if dev is None and (ensembles or any(j.output == "score" for j in judges.values())):
        check_pool(pool)  # a score is calibrated on dev pairs: refused before any call when there are none
    scores, info = {}, {}
    every_pool = pool if dev is None else pd.concat([dev_pool, pool], ignore_index=True)
    pairs = every_pool[["qid", "docno"]].drop_duplicates()
    ceilings = {judge.tag: judge.max_calls(len(pairs), pairs["qid"].nunique()) for judge in judges.values()}
    for name, judge in judges.items():
        t = time.perf_counter()
        records = judge.score_records(pool)
        frame = scores_frame(records).merge(pool[["qid", "docno", "split"]].drop_duplicates(["qid", "docno"]),
                                            on=["qid", "docno"], how="left")
        if dev is not None:  # the other collection's pairs: the dev pairs, scored first in the file
            fitted = dev_judges[name].score(dev_pool).merge(
                dev_pool[["qid", "docno", "split"]].drop_duplicates(["qid", "docno"]), on=["qid", "docno"])
            frame = pd.concat([fitted, frame], ignore_index=True)
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        frame[["qid", "docno", "split", "score", "status"]].to_csv(folder / "scores.tsv", sep="\t", index=False)
        if judge.output == "label":  # a label judge's records with its raw answers (superb.judges.records)
            write_jsonl(as_judgments(records, getattr(judge, "default_label", 0)), folder / "judgments.jsonl")
        scores[name] = frame
        info[name] = {"templates": judge.template_ids(), "stats": dict(judge.stats),
                      "seconds": round(time.perf_counter() - t, 2), "ideals": getattr(judge, "ideals", None) or None}
        if judge.plugin is not None:  # a judge of one's own: its file and sha256 (or distribution), in provenance
            info[name]["plugin"] = judge.plugin
    every = pool if dev is None else pd.concat([dev_pool, pool], ignore_index=True)
    keys = every[["qid", "docno"]].drop_duplicates()
    rated = ratings.merge(keys, on=["qid", "docno"])
    if rated.empty:
        raise DataError("no pool pair has a human label: scoring judges are calibrated against one; use [pool] "
                        "source = \"qrels\" (or \"ratings\")")
    cal = spec.calibration
    written = {name: WrittenLabels() for name, judge in judges.items() if judge.output == "label"}
    study = calibrated_agreement(scores, rated, ensembles=ensembles,
                                 make_calibrator=partial(KappaCutSearch, weights=cal.weights),
                                 bootstrap=QueryBootstrap(cal.bootstrap, seed=spec.seed), folds=cal.folds,
                                 seed=spec.seed, fixed=written, reference=reference, split_of=split_of)
    differences = judge_differences(study.labels, rated, QueryBootstrap(cal.bootstrap, seed=spec.seed))
    if len(differences):
        differences.to_csv(out / "judge_differences.csv", index=False)
        (out / "judge_differences.md").write_text(differences_markdown(differences, spec.name), encoding="utf-8")
    record = calibration_record(study, info, ensembles, model=model, weights=cal.weights)
    study.notes[:0] = coverage_notes(record)
    write_study(study, out, title=f"{spec.name}: scoring judges calibrated on dev pairs, reported on test pairs")
    fingerprint = {name: {k: v for k, v in entry.items() if k != "seconds"} for name, entry in record.items()}
    (out / "calibration.json").write_text(json.dumps(fingerprint, indent=2, ensure_ascii=False) + "\n",
                                          encoding="utf-8")  # wall-clock seconds: provenance.json only (they vary)
    mine = set(pool["qid"].astype(str))  # this collection's pairs (not those of a fit_on collection)
    pool_labels = {name: label_pool(scores[name][scores[name]["qid"].astype(str).isin(mine)], study.labels[name],
                                    calibrator)
                   for name, calibrator in study.calibrations.items() if name in scores and name in study.labels}
    for name, frame in pool_labels.items():
        write_qrels(frame, out / name / layout.LLM_QRELS)
    return {"judges": record, "pairs": {s: int((every["split"] == s).sum()) for s in DEV_TEST},
            "pool_labels": pool_labels, "ceilings": ceilings, "study_labels": study.labels, "reference": rated}


def judge_differences(labels: dict[str, pd.DataFrame], reference: pd.DataFrame, bootstrap: Any) -> pd.DataFrame:
    """Every two judges compared on the test pairs both labelled: judge_a's kappa (unweighted, linear, quadratic)
    against the human label minus judge_b's, with a paired query-bootstrap 95% interval and p
    (superb.judges.bootstrap.kappa_difference)."""
    from itertools import combinations

    from superb.judges.bootstrap import KAPPAS, kappa_difference

    human = reference[["qid", "docno", "final"]].astype({"qid": str, "docno": str})
    rows = []
    for a, b in combinations(labels, 2):
        la = labels[a][labels[a]["split"] == "test"][["qid", "docno", "label"]]
        lb = labels[b][labels[b]["split"] == "test"][["qid", "docno", "label"]]
        both = la.merge(lb, on=["qid", "docno"], suffixes=("_a", "_b")).merge(human, on=["qid", "docno"])
        if both["qid"].nunique() < 2:
            continue
        for kappa, weights in KAPPAS.items():
            d = kappa_difference(both["qid"], both["final"], both["label_a"], both["label_b"], bootstrap=bootstrap,
                                 weights=weights)
            rows.append({"judge_a": a, "judge_b": b, "split": "test", "kappa": kappa, **d})
    return pd.DataFrame(rows)


def differences_markdown(table: pd.DataFrame, title: str) -> str:
    """judge_differences.md: every two judges' kappa difference on their common test pairs."""
    lines = [f"# {title}: judges compared on the same pairs", "",
             "Each row: judge A's kappa against the human label minus judge B's, on the test pairs both labelled, with "
             "a 95% interval and a two-sided p from one paired bootstrap over queries (the same resampled queries "
             "for both judges). Exploratory unless a spec declares the comparison.", "",
             "| judge A | judge B | kappa | pairs | queries | A | B | A - B [95% CI] | p |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in table.itertuples(index=False):
        lines.append(f"| {r.judge_a} | {r.judge_b} | {r.kappa} | {r.n:,} | {r.queries} | {r.kappa_a:.3f} | "
                     f"{r.kappa_b:.3f} | {r.difference:+.3f} [{r.difference_low:+.3f}, {r.difference_high:+.3f}] | "
                     f"{r.p:.3g} |")
    return "\n".join(lines) + "\n"


def label_pool(scores: pd.DataFrame, rated: pd.DataFrame, calibrator: Any) -> pd.DataFrame:
    """qid, docno, score, label of every pool pair the judge scored: a human-judged pair keeps the study's label
    (test: the dev-fitted cut points; dev: cross-validated), any other pair gets the dev-fitted cut points'."""
    scored = scores[scores["score"].notna()][["qid", "docno", "score"]].astype({"qid": str, "docno": str})
    known = rated[["qid", "docno", "label"]].astype({"qid": str, "docno": str})
    merged = scored.merge(known, on=["qid", "docno"], how="left")
    rest = merged["label"].isna()
    if rest.any():
        merged.loc[rest, "label"] = calibrator.apply(merged.loc[rest, "score"])
    return merged.astype({"label": int})


def write_qrels(labels: pd.DataFrame, path: Path) -> None:
    """TREC qrels (``qid 0 docno label``), in the frame's order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{r.qid} 0 {r.docno} {int(r.label)}\n" for r in labels.itertuples(index=False)),
                    encoding="utf-8")


def calibration_record(study, info: dict, ensembles: dict, *, model: str | None, weights: str) -> dict:
    """Per judge: its fingerprint (templates, model, cut points, what they were fitted on) and its coverage."""
    from superb.data.splits import DEV_TEST

    coverage = study.coverage.set_index(["judge", "split"]) if len(study.coverage) else None
    record = {}
    names = list(info) + list(ensembles)
    for name in names:
        cov = {}
        for split in DEV_TEST:
            if coverage is not None and (name, split) in coverage.index:
                row = coverage.loc[(name, split)]
                cov[split] = {"pairs": int(row["pairs"]), "scored": int(row["scored"])}
        calibrator = study.calibrations.get(name)
        entry = {"model": model, "coverage": cov, "calibrated": calibrator is not None,
                 "complete": all(c["scored"] == c["pairs"] for c in cov.values()) and len(cov) == 2}
        if name in ensembles:
            ens = ensembles[name]
            entry["ensemble"] = {"members": list(ens.members), "normaliser": ens.normaliser}
            entry["templates"] = {m: info[m]["templates"] for m in ens.members if m in info}
        else:
            entry["templates"] = info[name]["templates"]
            entry["stats"] = info[name]["stats"]
            entry["seconds"] = info[name]["seconds"]
            if "plugin" in info[name]:
                entry["plugin"] = info[name]["plugin"]
        if calibrator is not None:
            entry.update({"cuts": list(calibrator.cuts), "weights": getattr(calibrator, "weights", weights),
                          "dev_n": calibrator.n_dev,
                          "dev_kappa": calibrator.dev_kappa})
            entry["collapsed"] = study.collapsed.get(name) or None  # grades the cut points never assign, and why
        record[name] = entry
    return record


def coverage_notes(record: dict) -> list[str]:
    """One line per judge whose report covers less than every pool pair (the partial-run rule of the docstring)."""
    notes = []
    for name, entry in record.items():
        cov = entry["coverage"]
        test, dev = cov.get("test", {"pairs": 0, "scored": 0}), cov.get("dev", {"pairs": 0, "scored": 0})
        if not entry["calibrated"]:
            notes.append(f"{name}: LEFT OUT: {dev['scored']} of {dev['pairs']} dev pairs scored, too few to fit cut "
                         "points")
            continue
        if test["pairs"] and test["scored"] < test["pairs"]:
            share = 100.0 * test["scored"] / test["pairs"]
            notes.append(f"{name}: PARTIAL: {test['scored']:,} of {test['pairs']:,} test pairs scored ({share:.1f}%); "
                         "its test rows describe those pairs only (the human ceiling beside them is on the same "
                         "pairs)")
        if dev["scored"] < dev["pairs"]:
            notes.append(f"{name}: cut points fitted on {dev['scored']:,} of {dev['pairs']:,} dev pairs")
    return notes
