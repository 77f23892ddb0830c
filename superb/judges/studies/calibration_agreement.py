"""Dev-calibrated agreement of scoring judges with human raters, with query-bootstrap intervals.

For each judge (and each ensemble of judges), from its per-pair scores (superb.judges.scoring) and the individual
human ratings (qid, docno, rater_1..rater_m, final):

1. split the rated pairs by query (superb.data.splits.split_of: dev / test); pairs without a score (unparseable,
   failed, not in the cache) are left out and counted (``unscored``);
2. calibration (default superb.judges.studies.calibration.KappaCutSearch: linear-weighted kappa against the
   COMBINED label ``final``) is fitted on the dev pairs and applied unchanged to the test pairs;
3. on the test pairs: exact agreement and Cohen's kappa (unweighted, linear, quadratic), each with a 95% interval
   from resampling test queries (superb.judges.bootstrap), against the combined label and against each rater;
   per-label precision/recall and confusion tables for each of those;
4. an honest dev estimate too (rows with split "dev-cv"): ``folds``-fold cross-validation over dev QUERIES (cut
   points fitted on the other folds' pairs, applied to the held-out fold's), useful while the test pairs are not
   scored yet; its intervals resample dev queries;
5. the human ceiling on the same pairs: each rater against the consensus of the OTHER raters (leave-one-out,
   superb.judges.agreement.others_consensus; never against the combined label, which includes the rater), every
   rater pair, Fleiss' kappa of all raters, with the same intervals, per split, on all rated pairs of the split and, where a judge scored only
   part of them (e.g. a cache still filling), on exactly the pairs that judge was measured on.

Every row carries per-grade precision and recall (``precision_L``, ``recall_L``, ``predicted_L`` for each label L,
the row's first label column being the reference) next to its kappas, and the labels it never gives
(``never_given``). A calibrated judge whose dev cut points leave a grade without any dev score (equal cut points, or
none between them) has that grade COLLAPSED: the study names it with the reason and the dev kappa of the best fit that
keeps every grade (``KappaCutSearch(reachable=True)``) in ``collapsed`` and in the notes.

Ensembles (``Ensemble``) are fitted on the dev pairs every member scored, then calibrated like a judge.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from superb.judges.agreement import LABELS, OTHERS, confusion_matrix, others_consensus, per_label
from superb.judges.agreement_report import confusion_heatmap
from superb.judges.bootstrap import QueryBootstrap, agreement_intervals, fleiss_intervals
from superb.judges.studies.calibration import Ensemble, KappaCutSearch

STATS = ("agreement", "kappa", "kappa_linear", "kappa_quadratic")
FINAL = "final"


@dataclass
class CalibratedStudy:
    table: pd.DataFrame  # judge, split, against, n, queries, STATS with _low/_high, cuts, dev_n, dev_kappa_linear
    labels: dict[str, pd.DataFrame]  # judge -> qid, docno, split, score, label (test: dev-calibrated; dev: CV)
    per_label: dict[str, pd.DataFrame]  # judge -> against, label, support, predicted, precision, recall (test)
    confusion: dict[str, dict[str, pd.DataFrame]]  # judge -> against -> confusion (rows human, columns judge; test)
    calibrations: dict[str, object]  # judge -> the calibrator fitted on all dev pairs
    coverage: pd.DataFrame  # judge, split, pairs, scored, and one column per status
    collapsed: dict[str, dict] = field(default_factory=dict)  # judge -> grades, why, reachable_cuts, reachable_dev_kappa
    notes: list[str] = field(default_factory=list)


def _raters(ratings: pd.DataFrame) -> list[str]:
    """The rater_* columns beside the reference label ``final`` (none for a collection with one label per pair)."""
    raters = [c for c in ratings.columns if c.startswith("rater_")]
    if FINAL not in ratings.columns:
        raise ValueError(f"ratings need a {FINAL!r} column (the reference label) and optional rater_* columns; "
                         f"found {list(ratings.columns)}")
    return raters


def _folds(qids: pd.Series, folds: int, seed: int) -> pd.Series:
    """Fold of each pair: its query's position in a seeded shuffle of the sorted qids, modulo ``folds``."""
    keys = np.array(sorted(set(qids)))
    rng = np.random.default_rng(seed)
    fold_of = dict(zip(keys[rng.permutation(len(keys))], np.arange(len(keys)) % folds))
    return qids.map(fold_of)


def cross_validated_labels(frame: pd.DataFrame, make_calibrator: Callable[[], object], folds: int = 5,
                           seed: int = 0) -> np.ndarray:
    """Out-of-fold labels of ``frame`` (qid, score, final): each query's pairs labelled by cut points fitted on the
    other folds' pairs (folds of queries, see ``_folds``)."""
    fold = _folds(frame["qid"], min(folds, frame["qid"].nunique()), seed).to_numpy()
    out = np.empty(len(frame), dtype=int)
    for f in np.unique(fold):
        train, held = frame[fold != f], frame[fold == f]
        if train.empty:
            raise ValueError("cross-validation needs at least two dev queries")
        calibrator = make_calibrator().fit(train["score"], train[FINAL])
        out[fold == f] = calibrator.apply(held["score"])
    return out


def per_grade(truth, predicted, labels=LABELS) -> dict:
    """precision_L, recall_L, predicted_L for every label L (NaN precision for a label never given, NaN recall for
    one never true), and never_given: the labels ``predicted`` never holds, e.g. "2" (empty string: none)."""
    table = per_label(list(truth), list(predicted), labels)
    out: dict = {}
    for r in table.itertuples(index=False):
        out.update({f"precision_{r.label}": r.precision, f"recall_{r.label}": r.recall,
                    f"predicted_{r.label}": int(r.predicted)})
    out["never_given"] = ", ".join(str(r.label) for r in table.itertuples(index=False) if r.predicted == 0)
    return out


def _rows(judge: str, split: str, frame: pd.DataFrame, predicted: np.ndarray, raters: list[str],
          bootstrap: QueryBootstrap, labels, extra: dict, reference: str = FINAL) -> list[dict]:
    rows = []
    for against in [FINAL] + raters:
        stats = agreement_intervals(frame["qid"].tolist(), frame[against].tolist(), predicted.tolist(), labels,
                                    bootstrap)
        rows.append({"judge": judge, "split": split, "against": reference if against == FINAL else against, **stats,
                     **per_grade(frame[against], predicted, labels), **extra})
    return rows


def collapsed_grades(calibrator, dev: pd.DataFrame, make_calibrator: Callable[..., object], labels=LABELS) -> dict:
    """The grades the fitted cut points leave without any dev score, why, and what keeping them costs on dev (the
    best fit with every grade reachable); {} when every grade keeps a dev score."""
    cuts = getattr(calibrator, "cuts", None)
    if cuts is None:
        return {}
    given = set(np.asarray(calibrator.apply(dev["score"])).tolist())
    bounds = [-np.inf, *cuts, np.inf]
    grades, why = [], []
    for j, label in enumerate(labels):
        if label in given:
            continue
        grades.append(int(label))
        low, high = bounds[j], bounds[j + 1]
        if low == high:
            why.append(f"grade {label}: cut points {j} and {j + 1} are equal ({low:.4g}), so no score maps to it")
        else:
            why.append(f"grade {label}: no dev score lies in [{low:.4g}, {high:.4g})")
    if not grades:
        return {}
    out = {"grades": grades, "why": "; ".join(why),
           "fit": f"the cut points maximise {getattr(calibrator, 'weights', '')}-weighted kappa against the combined "
                  f"label on the dev pairs, and that optimum gives {'this grade' if len(grades) == 1 else 'these grades'}"
                  " no score range"}
    try:
        alt = make_calibrator(reachable=True).fit(dev["score"], dev[FINAL])
    except (TypeError, ValueError) as e:  # a calibrator without the option, or too few distinct dev scores
        out["reachable"] = f"no reachable fit: {e}"
        return out
    held = np.asarray(alt.apply(dev["score"]))
    out.update(reachable_cuts=[float(c) for c in alt.cuts], reachable_dev_kappa=float(alt.dev_kappa),
               dev_kappa=float(getattr(calibrator, "dev_kappa", np.nan)),
               reachable_dev_pairs={str(g): int((held == g).sum()) for g in grades})
    return out


def collapsed_note(name: str, lost: dict) -> str:
    """The study's note on a judge whose cut points collapse grades (``lost``: :func:`collapsed_grades`)."""
    many = len(lost["grades"]) > 1
    s, those = ("s", "those grades") if many else ("", "that grade")
    if "reachable_cuts" in lost:
        held = ", ".join(f"grade {g}: {n}" for g, n in lost["reachable_dev_pairs"].items())
        cuts = ", ".join(f"{c:.6g}" for c in lost["reachable_cuts"])
        keep = (f"; the best fit that keeps every grade (cuts {cuts}; dev pairs given the collapsed grade{s}: {held}) "
                f"has dev-fit kappa {lost['reachable_dev_kappa']:.4f} instead of {lost['dev_kappa']:.4f}: the score "
                f"does not separate {those} from its neighbours")
    else:
        keep = f"; {lost.get('reachable', '')}"
    return (f"{name}: COLLAPSED grade{s} {', '.join(map(str, lost['grades']))} (never assigned): {lost['why']}. "
            f"Why: {lost['fit']}{keep}. Its rows show no precision for {those}.")


def ceiling_rows(ratings: pd.DataFrame, split: str, scope: str, bootstrap: QueryBootstrap,
                 labels=LABELS) -> list[dict]:
    """The human ceiling on ``ratings`` (one split's pairs): each rater vs the consensus of the OTHER raters
    (leave-one-out, superb.judges.agreement.others_consensus), every rater pair, Fleiss; never a rater against the
    combined label, which includes that rater."""
    raters = _raters(ratings)
    if ratings.empty or len(raters) < 2:  # one label per pair: no human ceiling to compute
        return []
    qids = ratings["qid"].tolist()
    rows = []
    references = {r: others_consensus(ratings, r, raters, labels) for r in raters} if len(raters) > 2 else {}
    for a, b in [(r, OTHERS) for r in references] + list(itertools.combinations(raters, 2)):
        reference = references[a] if b == OTHERS else ratings[b].to_numpy()
        stats = agreement_intervals(qids, reference.tolist(), ratings[a].tolist(), labels, bootstrap)
        rows.append({"judge": f"human {a}", "split": split, "against": b, "scope": scope, **stats,
                     **per_grade(reference, ratings[a], labels)})
    fleiss = fleiss_intervals(qids, ratings[raters].to_numpy(), labels, bootstrap)
    rows.append({"judge": "humans (Fleiss)", "split": split, "against": "all raters", "scope": scope,
                 "n": fleiss["n"], "queries": fleiss["queries"], "agreement": fleiss["agreement"],
                 "agreement_low": fleiss["agreement_low"], "agreement_high": fleiss["agreement_high"],
                 "kappa": fleiss["kappa"], "kappa_low": fleiss["kappa_low"], "kappa_high": fleiss["kappa_high"]})
    return rows


def calibrated_agreement(scores: Mapping[str, pd.DataFrame], ratings: pd.DataFrame, *,
                         split_of: Callable[[str], str] | None = None,
                         ensembles: Mapping[str, Ensemble] | None = None,
                         make_calibrator: Callable[[], object] = KappaCutSearch,
                         bootstrap: QueryBootstrap | None = None, labels=LABELS, folds: int = 5,
                         seed: int = 0, fixed: Mapping[str, object] | None = None,
                         reference: str = FINAL) -> CalibratedStudy:
    """The study of the module docstring. ``scores``: judge name -> frame qid, docno, score, status. ``fixed``:
    judge name -> a calibration that is not fitted (superb.judges.studies.calibration.WrittenLabels: the judge's
    written grade is its label), used on dev (its dev-cv rows) and test alike. ``reference``: the ``against`` value
    of the rows against the ``final`` column ("final": Chorus' combined label; "qrels": a collection's one label)."""
    from superb.data.splits import DEV_TEST, split_of as split_by_qid

    bootstrap = bootstrap or QueryBootstrap(seed=seed)
    raters = _raters(ratings)
    rated = ratings.astype({"qid": str, "docno": str}).copy()
    rated["split"] = rated["qid"].map(split_of or split_by_qid)
    unknown = sorted(set(rated["split"]) - set(DEV_TEST))
    if unknown:
        raise ValueError(f"split_of returned {unknown}; expected 'dev' or 'test'")
    merged: dict[str, pd.DataFrame] = {}
    coverage = []
    for name, frame in scores.items():
        missing = [c for c in ("qid", "docno", "score", "status") if c not in frame.columns]
        if missing:
            raise ValueError(f"scores of {name!r} lack columns {missing}; found {list(frame.columns)}")
        frame = frame.astype({"qid": str, "docno": str})
        dup = frame.duplicated(["qid", "docno"])
        if dup.any():
            raise ValueError(f"scores of {name!r} hold {int(dup.sum())} repeated (qid, docno) pairs, e.g. "
                             f"{frame.loc[dup, ['qid', 'docno']].iloc[0].tolist()}; keep one score per pair")
        m = rated.merge(frame[["qid", "docno", "score", "status"]],
                        on=["qid", "docno"], how="left")
        m["status"] = m["status"].fillna("not scored")
        merged[name] = m
        for split, part in m.groupby("split"):
            coverage.append({"judge": name, "split": split, "pairs": len(part),
                             "scored": int(part["score"].notna().sum()), **part["status"].value_counts().to_dict()})
    for name, ens in (ensembles or {}).items():
        wide = rated.copy()
        for member in ens.members:
            if member not in merged:
                raise ValueError(f"ensemble {name!r}: member {member!r} has no scores; scored: {sorted(merged)}")
            wide[member] = merged[member]["score"].to_numpy()
        ok = wide[list(ens.members)].notna().all(axis=1)
        dev = wide[ok & (wide["split"] == "dev")]
        m = rated.copy()
        m["score"], m["status"] = np.nan, np.where(ok, "ok", "member unscored")
        if len(dev):
            ens.fit(dev[list(ens.members)])
            m.loc[ok.to_numpy(), "score"] = ens.apply(wide.loc[ok, list(ens.members)])
        merged[name] = m
        for split, part in m.groupby("split"):
            coverage.append({"judge": name, "split": split, "pairs": len(part),
                             "scored": int(part["score"].notna().sum()), **part["status"].value_counts().to_dict()})
    rows, out_labels, per_labels, confusions, calibrations, notes, collapsed = [], {}, {}, {}, {}, [], {}
    for name, m in merged.items():
        scored = m[m["score"].notna()]
        dev, test = scored[scored["split"] == "dev"], scored[scored["split"] == "test"]
        own = fixed.get(name) if fixed else None
        if own is None and dev["qid"].nunique() < 2:
            notes.append(f"{name}: not calibrated ({len(dev)} dev pairs scored, from {dev['qid'].nunique()} queries)")
            continue
        make = make_calibrator if own is None else (lambda **_: own)
        calibrator = make().fit(dev["score"], dev[FINAL])
        calibrations[name] = calibrator
        lost = collapsed_grades(calibrator, dev, make, labels) if own is None else {}
        if lost:
            collapsed[name] = lost
            notes.append(collapsed_note(name, lost))
        extra = {"cuts": calibrator.describe(), "dev_n": len(dev), "dev_queries": dev["qid"].nunique(),
                 "dev_fit_kappa_linear": getattr(calibrator, "dev_kappa", np.nan),
                 "unscored": int((m["split"] == "test").sum() - len(test))}
        parts = []
        if dev["qid"].nunique() >= 2 or (own is not None and len(dev)):
            # a written grade is its label on dev as on test: its "dev" rows; a fitted score: out-of-fold labels
            cv = cross_validated_labels(dev, make, folds, seed) if own is None else calibrator.apply(dev["score"])
            rows += _rows(name, "dev-cv" if own is None else "dev", dev, cv, raters, bootstrap, labels,
                          {**extra, "unscored": int((m["split"] == "dev").sum() - len(dev))}, reference)
            parts.append(dev[["qid", "docno", "split", "score"]].assign(label=cv))
        if len(test):
            predicted = calibrator.apply(test["score"])
            rows += _rows(name, "test", test, predicted, raters, bootstrap, labels, extra, reference)
            parts.append(test[["qid", "docno", "split", "score"]].assign(label=predicted))
            per_labels[name] = pd.concat([per_label(test[a], predicted, labels).assign(against=a)
                                          for a in [FINAL] + raters], ignore_index=True)
            confusions[name] = {a: confusion_matrix(test[a], predicted, labels) for a in [FINAL] + raters}
        else:
            notes.append(f"{name}: no test pair scored yet; only the dev cross-validation rows")
        if own is not None and len(dev) and len(test):  # nothing fitted: every scored pair measures it alike
            every = pd.concat([dev, test], ignore_index=True)
            rows += _rows(name, "all", every, calibrator.apply(every["score"]), raters, bootstrap, labels,
                          {**extra, "unscored": int(len(m) - len(every))}, reference)
        if parts:
            out_labels[name] = pd.concat(parts, ignore_index=True)
    for split in DEV_TEST:
        part = rated[rated["split"] == split]
        if part.empty:
            continue
        evaluated: dict[frozenset, list[str]] = {}  # the pair set each calibrated judge was measured on, in this split
        for name in calibrations:
            m = merged[name]
            keep = m.loc[(m["split"] == split) & m["score"].notna()]
            if len(keep) and len(keep) < len(part):
                evaluated.setdefault(frozenset(zip(keep["qid"], keep["docno"])), []).append(name)
        for pairs, names in evaluated.items():
            same = part[[pair in pairs for pair in zip(part["qid"], part["docno"])]]
            rows += ceiling_rows(same, split, f"the pairs {', '.join(names)} scored", bootstrap, labels)
        rows += ceiling_rows(part, split, f"all rated {split} pairs", bootstrap, labels)
    table = pd.DataFrame(rows)
    return CalibratedStudy(table=table, labels=out_labels, per_label=per_labels, confusion=confusions,
                           calibrations=calibrations, collapsed=collapsed, coverage=_counts(coverage), notes=notes)


def _counts(coverage: list[dict]) -> pd.DataFrame:
    """The coverage rows as a table of whole counts (a status a judge never had is 0, not a missing float)."""
    table = pd.DataFrame(coverage)
    counts = [c for c in table.columns if c not in ("judge", "split")]
    return table.fillna({c: 0 for c in counts}).astype({c: int for c in counts})


# --- output --------------------------------------------------------------------------------------------------------
_INTERVALS = "Intervals: 95% percentile bootstrap over queries (superb.judges.bootstrap). "
_GRADES = ("Precision / recall per grade: of the pairs the row's labeller (judge column) gives that grade, the share "
           "the reference (against column) also gives it / of the pairs the reference gives it, the share the "
           "labeller finds; '-' = the grade is never given (no precision) or never in the reference. ")
NOTES_RATED = (_INTERVALS + "test rows: labels from cut points fitted on ALL scored dev pairs (linear-weighted kappa "
               "against the combined label), applied unchanged. dev-cv rows: out-of-fold labels, cut points fitted on "
               "the other dev queries' pairs (the cut points column shows those fitted on ALL dev pairs, which the "
               "test rows use). " + _GRADES +
               "Human rows: the rater (judge column) against the consensus of the OTHER raters (their mean label "
               "rounded, ties to the lower grade: a leave-one-out ceiling; never a combined label that includes the "
               "rater) or against another rater, on the scope in the cut points column; Fleiss: kappa = Fleiss' "
               "kappa, agreement = share of unanimous pairs. A judge's row against the combined label compares it "
               "with all three raters' label; its rows against one rater are the like-for-like comparison with the "
               "rater-against-rater rows.")
NOTES_ONE_LABEL = (_INTERVALS + "The reference is the collection's one human label per pair (against: qrels). test "
                   "rows: labels from cut points fitted on ALL scored dev pairs (the [calibration] weights' kappa "
                   "against that label), applied unchanged. dev-cv rows: out-of-fold labels, cut points fitted on the "
                   "other dev queries' pairs (the cut points column shows those fitted on ALL dev pairs, which the "
                   "test rows use). " + _GRADES + "No human ceiling: with one label per pair there are no raters to "
                   "compare with each other.")
def _cell(row: pd.Series, stat: str) -> str:
    value = row.get(stat)
    if value is None or pd.isna(value):
        return ""
    low, high = row.get(f"{stat}_low"), row.get(f"{stat}_high")
    if low is None or pd.isna(low):
        return f"{value:.3f}"
    return f"{value:.3f} [{low:.2f}, {high:.2f}]"


def _grades(row: pd.Series, grades: list[str]) -> str:
    def f(v) -> str:
        return "-" if v is None or pd.isna(v) else f"{v:.2f}"
    if all(pd.isna(row.get(f"precision_{g}")) and pd.isna(row.get(f"recall_{g}")) for g in grades):
        return ""  # e.g. Fleiss' kappa: no labeller against a reference
    return " · ".join(f"{g}: {f(row.get(f'precision_{g}'))}/{f(row.get(f'recall_{g}'))}" for g in grades)


def format_markdown(study: CalibratedStudy) -> str:
    t = study.table
    grades = [c[len("precision_"):] for c in t.columns if c.startswith("precision_")]
    lines = ["| judge | split | against | n | queries | exact agreement | kappa | linear kappa | quadratic kappa | "
             f"precision / recall per grade ({', '.join(grades)}) | never given | cut points (dev) | unscored |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---|---:|"]
    for _, r in t.iterrows():
        cuts = r.get("cuts") if isinstance(r.get("cuts"), str) else (r.get("scope") or "")
        unscored = r.get("unscored")
        never = r.get("never_given")
        lines.append(f"| {r['judge']} | {r['split']} | {r['against']} | {int(r['n'])} | {int(r['queries'])} | "
                     + " | ".join(_cell(r, s) for s in STATS)
                     + f" | {_grades(r, grades)} | {never if isinstance(never, str) else ''}"
                     + f" | {cuts} | {'' if unscored is None or pd.isna(unscored) else int(unscored)} |")
    cov = ["| judge | split | pairs | scored | statuses |", "|---|---|---:|---:|---|"]
    status_cols = [c for c in study.coverage.columns if c not in ("judge", "split", "pairs", "scored")]
    for _, r in study.coverage.iterrows():
        statuses = ", ".join(f"{c} {int(r[c])}" for c in status_cols if r[c])
        cov.append(f"| {r['judge']} | {r['split']} | {int(r['pairs'])} | {int(r['scored'])} | {statuses} |")
    rated = "judge" in t.columns and t["judge"].astype(str).str.startswith("human").any()
    notes = NOTES_RATED if rated else NOTES_ONE_LABEL
    if "cuts" in t.columns and (t["cuts"] == "written grade").any():
        notes += (" Rows whose cut points say 'written grade': the judge's own written grade is its label (nothing "
                  "fitted: UMBRELA's reading, or a listwise or pairwise judge's grade), so its dev, test and all rows "
                  "(every pair it scored) measure the same rule.")
    extra = "".join(f"- {n}\n" for n in study.notes)
    return ("\n".join(lines) + "\n\n" + notes + "\n\n## Coverage\n\n" + "\n".join(cov) + "\n"
            + (f"\n## Notes\n\n{extra}" if extra else ""))


def write_study(study: CalibratedStudy, out_dir: str | Path, title: str = "calibrated judges") -> Path:
    """agreement_calibrated.md / .csv, coverage.csv, and per judge NAME/labels.tsv, per_label.csv, confusion_*.png."""

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    study.table.to_csv(out / "agreement_calibrated.csv", index=False)
    study.coverage.to_csv(out / "coverage.csv", index=False)
    (out / "agreement_calibrated.md").write_text(f"# {title}\n\n" + format_markdown(study), encoding="utf-8")
    for name, frame in study.labels.items():
        folder = out / _safe(name)
        folder.mkdir(exist_ok=True)
        frame.to_csv(folder / "labels.tsv", sep="\t", index=False)
        if name in study.per_label:
            study.per_label[name].to_csv(folder / "per_label.csv", index=False)
            for against, cm in study.confusion[name].items():
                counts = cm.to_numpy()
                human = np.repeat(cm.index.to_numpy(), counts.sum(axis=1))
                judge = np.concatenate([np.repeat(cm.columns.to_numpy(), row) for row in counts])
                confusion_heatmap(human, judge, list(cm.index), folder / f"confusion_{against}.png",
                                  f"{name}, test (n={counts.sum()})", axes=(f"human ({against})", "judge label"))
    return out


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
