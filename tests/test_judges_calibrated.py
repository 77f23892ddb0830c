"""The dev-calibrated agreement study on synthetic ratings: cut points come from dev pairs only, test rows use them
unchanged, unscored pairs are counted, the human ceiling is on the same pairs, and the files are written."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from superb.judges.agreement import agreement_summary, fleiss_kappa
from superb.judges.bootstrap import QueryBootstrap
from superb.judges.studies.calibration_agreement import (calibrated_agreement, cross_validated_labels, format_markdown,
                                                        write_study)
from superb.judges.studies.calibration import Ensemble, KappaCutSearch


def split_by_name(qid: str) -> str:
    return "dev" if qid.startswith("d") else "test"


def ratings_and_scores(seed: int = 0):
    """12 dev and 20 test queries of 15 pairs; three raters around a true grade; two judges whose scores follow
    the true grade (one on a 0..3 scale, one in 0..1) with noise."""
    rng = np.random.default_rng(seed)
    qids = [f"d{i}" for i in range(12)] + [f"t{i}" for i in range(20)]
    rows = []
    for q in qids:
        for n in range(15):
            true = int(rng.integers(0, 4))
            raters = [int(np.clip(true + rng.choice([-1, 0, 0, 0, 1]), 0, 3)) for _ in range(3)]
            final = int(np.bincount(raters, minlength=4).argmax()) if len(set(raters)) < 3 else raters[1]
            rows.append((q, f"{q}-p{n}", *raters, final, true))
    ratings = pd.DataFrame(rows, columns=["qid", "docno", "rater_1", "rater_2", "rater_3", "final", "true"])
    grade = ratings[["qid", "docno"]].assign(score=np.clip(ratings["true"] + rng.normal(0, 0.6, len(ratings)), 0, 3),
                                              status="ok")
    yes = ratings[["qid", "docno"]].assign(score=1 / (1 + np.exp(-(ratings["true"] - 1.5) * 1.5
                                                                 + rng.normal(0, 0.8, len(ratings)))), status="ok")
    return ratings.drop(columns="true"), {"grade": grade, "yes": yes}


def study(ratings, scores, **kw):
    return calibrated_agreement(scores, ratings, split_of=split_by_name, bootstrap=QueryBootstrap(200), **kw)


def test_test_rows_use_cut_points_fitted_on_dev_pairs_only():
    ratings, scores = ratings_and_scores()
    result = study(ratings, scores)
    dev = ratings[ratings.qid.str.startswith("d")].merge(scores["grade"], on=["qid", "docno"])
    test = ratings[ratings.qid.str.startswith("t")].merge(scores["grade"], on=["qid", "docno"])
    fitted = KappaCutSearch().fit(dev["score"], dev["final"])
    assert result.calibrations["grade"].cuts == fitted.cuts
    row = result.table.query("judge == 'grade' and split == 'test' and against == 'final'").iloc[0]
    plain = agreement_summary(test["final"], fitted.apply(test["score"]))
    for stat in ("agreement", "kappa", "kappa_linear", "kappa_quadratic"):
        assert row[stat] == pytest.approx(plain[stat])
        assert row[f"{stat}_low"] <= row[stat] <= row[f"{stat}_high"]
    assert (row["n"], row["queries"], row["dev_n"]) == (300, 20, 180)
    assert row["kappa_linear"] > 0.5  # the synthetic judge carries real signal
    # test labels do not influence the cut points; dev labels do
    flipped = ratings.copy()
    is_test = flipped.qid.str.startswith("t")
    flipped.loc[is_test, "final"] = 3 - flipped.loc[is_test, "final"]
    assert study(flipped, scores).calibrations["grade"].cuts == fitted.cuts
    flipped.loc[~is_test, "final"] = 3 - flipped.loc[~is_test, "final"]
    assert study(flipped, scores).calibrations["grade"].cuts != fitted.cuts
    # one row per judge x split x (combined label + each rater)
    against = result.table.query("judge == 'yes' and split == 'test'")["against"].tolist()
    assert against == ["final", "rater_1", "rater_2", "rater_3"]
    per_label = result.per_label["grade"]
    assert set(per_label["against"]) == {"final", "rater_1", "rater_2", "rater_3"}
    assert int(result.confusion["grade"]["final"].to_numpy().sum()) == 300


def test_unscored_pairs_are_left_out_and_counted_and_the_ceiling_is_on_the_same_pairs():
    ratings, scores = ratings_and_scores(1)
    partial = scores["yes"].copy()
    gone = partial.qid.isin(["t0", "t1"]) | (partial.docno == "d0-p0")
    partial.loc[gone, "score"] = np.nan
    partial.loc[gone, "status"] = "missing"
    result = study(ratings, {"yes": partial})
    row = result.table.query("judge == 'yes' and split == 'test' and against == 'final'").iloc[0]
    assert row["n"] == 270 and row["unscored"] == 30 and row["queries"] == 18
    cov = result.coverage.set_index(["judge", "split"])
    assert cov.loc[("yes", "test"), "missing"] == 30 and cov.loc[("yes", "dev"), "scored"] == 179
    assert cov.loc[("yes", "dev"), "missing"] == 1 and cov.loc[("yes", "test"), "ok"] == 270
    assert all(str(cov[c].dtype).startswith("int") for c in ("pairs", "scored", "ok", "missing"))  # counts, not floats
    same = result.table[result.table["scope"].eq("the pairs yes scored") & result.table["split"].eq("test")]
    kept = ratings[ratings.qid.str.startswith("t") & ~ratings.qid.isin(["t0", "t1"])]
    r1 = same.query("judge == 'human rater_1' and against == 'rater_2'").iloc[0]
    assert r1["n"] == 270 and r1["kappa"] == pytest.approx(agreement_summary(kept["rater_2"], kept["rater_1"])["kappa"])
    loo = same.query("judge == 'human rater_1' and against == \"others' consensus\"").iloc[0]
    consensus = np.floor((kept["rater_2"] + kept["rater_3"]) / 2.0)  # mean of the others, ties to the lower grade
    assert loo["n"] == 270 and loo["kappa_linear"] == pytest.approx(
        agreement_summary(consensus.astype(int), kept["rater_1"])["kappa_linear"])
    assert not (same["against"] == "final").any()  # no rater against a combined label that includes the rater
    fleiss = same.query("judge == 'humans (Fleiss)'").iloc[0]
    assert fleiss["kappa"] == pytest.approx(fleiss_kappa(kept[["rater_1", "rater_2", "rater_3"]].to_numpy()))
    everything = result.table[result.table["scope"].eq("all rated test pairs")]
    assert set(everything["n"]) == {300}


def test_dev_cross_validation_rows_and_a_judge_without_test_scores():
    ratings, scores = ratings_and_scores(2)
    dev_only = scores["grade"].copy()
    dev_only.loc[dev_only.qid.str.startswith("t"), ["score", "status"]] = [np.nan, "missing"]
    result = study(ratings, {"grade": dev_only})
    assert set(result.table.query("judge == 'grade'")["split"]) == {"dev-cv"}
    assert any("no test pair scored yet" in n for n in result.notes)
    dev = ratings[ratings.qid.str.startswith("d")].merge(dev_only, on=["qid", "docno"])
    cv = cross_validated_labels(dev, KappaCutSearch, folds=5, seed=0)
    row = result.table.query("judge == 'grade' and against == 'final'").iloc[0]
    assert row["kappa_linear"] == pytest.approx(agreement_summary(dev["final"], cv)["kappa_linear"])
    assert row["n"] == 180 and row["queries"] == 12


def test_ensemble_is_calibrated_like_a_judge_and_files_are_written(tmp_path):
    ratings, scores = ratings_and_scores(3)
    ens = Ensemble(["grade", "yes"])
    result = study(ratings, scores, ensembles={ens.name: ens})
    rows = result.table.query("judge == @ens.name and split == 'test'")
    assert len(rows) == 4 and rows.iloc[0]["n"] == 300
    assert ens.fitted_["grade"].sorted_.size == 180  # normalisers fitted on the dev pairs only
    write_study(result, tmp_path, title="synthetic")
    md = (tmp_path / "agreement_calibrated.md").read_text()
    assert md.startswith("# synthetic") and "| grade | test | final | 300 | 20 |" in md
    assert "## Coverage" in md and format_markdown(result) in md
    for name in ("grade", "yes", "mean_grade__yes__rank_"):
        folder = tmp_path / name
        assert (folder / "labels.tsv").is_file() and (folder / "per_label.csv").is_file()
        assert (folder / "confusion_final.png").stat().st_size > 1000
        assert (folder / "confusion_rater_3.png").is_file()
    labels = pd.read_csv(tmp_path / "grade" / "labels.tsv", sep="\t")
    assert set(labels["split"]) == {"dev", "test"} and len(labels) == 480


def test_bad_inputs_are_named():
    ratings, scores = ratings_and_scores(4)
    twice = pd.concat([scores["grade"], scores["grade"].iloc[:1]])
    with pytest.raises(ValueError, match=r"scores of 'grade' hold 1 repeated \(qid, docno\) pairs"):
        study(ratings, {"grade": twice})
    with pytest.raises(ValueError, match=r"scores of 'grade' lack columns \['status'\]"):
        study(ratings, {"grade": scores["grade"].drop(columns="status")})
    with pytest.raises(ValueError, match="ratings need a 'final' column"):
        study(ratings.drop(columns="final"), scores)
    with pytest.raises(ValueError, match=r"ensemble 'e': member 'nope' has no scores"):
        study(ratings, scores, ensembles={"e": Ensemble(["grade", "nope"])})


def test_per_grade_precision_recall_sit_beside_kappa():
    ratings, scores = ratings_and_scores(5)
    result = study(ratings, scores)
    row = result.table.query("judge == 'grade' and split == 'test' and against == 'final'").iloc[0]
    test = ratings[ratings.qid.str.startswith("t")].merge(scores["grade"], on=["qid", "docno"])
    predicted = result.calibrations["grade"].apply(test["score"])
    for grade in range(4):
        given, true = predicted == grade, test["final"].to_numpy() == grade
        assert row[f"predicted_{grade}"] == given.sum()
        assert row[f"precision_{grade}"] == pytest.approx((given & true).sum() / given.sum())
        assert row[f"recall_{grade}"] == pytest.approx((given & true).sum() / true.sum())
    assert "precision / recall per grade (0, 1, 2, 3)" in format_markdown(result)


def test_a_collapsed_grade_is_named_with_why_and_the_reachable_fit():
    """Scores that cannot tell grades 1 and 2 apart: the kappa optimum gives one of them no score range; the study
    names it, says why, and reports what the best fit keeping every grade scores on dev."""
    ratings, _ = ratings_and_scores(6)
    coarse = np.where(ratings["final"] == 0, 0.1, np.where(ratings["final"] == 3, 0.9, 0.5))
    coarse[(ratings["final"] == 3).to_numpy() & (np.arange(len(ratings)) % 20 == 0)] = 0.95  # a 4th score value
    scores = {"flat": ratings[["qid", "docno"]].assign(score=coarse, status="ok")}
    result = study(ratings, scores)
    lost = result.collapsed["flat"]
    assert lost["grades"] and set(lost["grades"]) <= {1, 2}
    assert lost["reachable_dev_kappa"] <= lost["dev_kappa"]
    assert len(set(lost["reachable_cuts"])) == 3
    note = next(n for n in result.notes if n.startswith("flat: COLLAPSED"))
    assert "never assigned" in note and "best fit that keeps every grade" in note
    row = result.table.query("judge == 'flat' and split == 'test' and against == 'final'").iloc[0]
    assert str(lost["grades"][0]) in row["never_given"]
    assert all(row[f"predicted_{g}"] == 0 for g in lost["grades"])
    reachable = KappaCutSearch(reachable=True).fit(
        scores["flat"].merge(ratings)[lambda f: f.qid.str.startswith("d")]["score"],
        ratings[ratings.qid.str.startswith("d")]["final"])
    assert reachable.cuts == tuple(lost["reachable_cuts"])
