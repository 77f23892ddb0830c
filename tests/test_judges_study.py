"""Label study: the same runs under two qrels sets; Kendall's tau and verdict flips worked out by hand."""

import pandas as pd
import pytest

from superb.judges.studies.label import label_study, ranking_agreement, verdict_flips

QIDS = [f"q{i:02d}" for i in range(1, 13)]


def run_ranking(first: str) -> pd.DataFrame:
    """A run that ranks `first` on top and the other two documents below, for every query."""
    rows = []
    for q in QIDS:
        docs = [first] + [d for d in ("d1", "d2", "d3") if d != first]
        rows += [(q, d, 3.0 - r, r) for r, d in enumerate(docs)]
    return pd.DataFrame(rows, columns=["qid", "docno", "score", "rank"])


def qrels_relevant(doc: str, noisy_q: str | None = None) -> pd.DataFrame:
    rows = [(q, doc, 1) for q in QIDS]
    if noisy_q:  # one query where d3 is relevant instead: per-query values vary, so the t-test is defined
        rows = [(q, "d3" if q == noisy_q else d, l) for q, d, l in rows]
    return pd.DataFrame(rows, columns=["qid", "docno", "label"])


def test_label_study_tau_and_flips_by_hand():
    runs = {"S1": run_ranking("d1"), "S2": run_ranking("d2"), "S3": run_ranking("d3")}
    human, judge = qrels_relevant("d1", "q12"), qrels_relevant("d2", "q12")
    study = label_study(runs, human, judge, ["P@1"], {"S1": "S3", "S2": "S3", "S3": None}, alpha=0.05)
    # P@1 means: human S1 = 11/12, S2 = 0, S3 = 1/12; judge S1 = 0, S2 = 11/12, S3 = 1/12
    tau = study.tau.set_index("measure").loc["P@1"]
    # pairs: (S1,S2), (S1,S3) and (S2,S3) are all ordered the other way round -> tau = -1
    assert tau["tau"] == pytest.approx(-1.0)
    assert tau["discordant_pairs"] == 3
    assert tau["order_human"] == "S1 > S3 > S2" and tau["order_judge"] == "S2 > S3 > S1"
    flips = study.flips.set_index("system")
    # S1 vs S3 under human: 11 queries +1, one -1 (t = 5.0, p < 0.001) -> better; under judge: 11 ties, one -1 -> n.s.
    # S2 vs S3 is the mirror image: n.s. under human, better under judge. Both verdicts flip.
    assert flips.loc["S1", "verdict_human"] == "better" and flips.loc["S1", "verdict_judge"] == "n.s."
    assert flips.loc["S2", "verdict_human"] == "n.s." and flips.loc["S2", "verdict_judge"] == "better"
    assert study.queries == QIDS and set(study.perquery["labels"]) == {"human", "judge"}


def test_ranking_agreement_ties_give_tau_b():
    a = pd.DataFrame({"system": ["S1", "S2", "S3"], "qid": "q", "measure": "m", "value": [1.0, 0.0, 0.0]})
    b = pd.DataFrame({"system": ["S1", "S2", "S3"], "qid": "q", "measure": "m", "value": [0.0, 1.0, 0.0]})
    # C = 0, D = 1 (S1,S2); one tie in each ordering -> tau_b = -1 / sqrt(2 * 2)
    row = ranking_agreement(a, b).iloc[0]
    assert row["tau"] == pytest.approx(-0.5) and row["discordant_pairs"] == 1


def test_verdict_flips_keeps_only_changed_tested_rows():
    cols = ["system", "measure", "baseline", "verdict", "p_corrected", "delta"]
    a = pd.DataFrame([["B", "m", None, "", None, None], ["X", "m", "B", "better", 0.01, 0.1],
                      ["Y", "m", "B", "n.s.", 0.5, 0.0]], columns=cols)
    b = a.copy()
    b.loc[2, "verdict"] = "better"
    flips = verdict_flips(a, b)
    assert flips["system"].tolist() == ["Y"] and flips.loc[0, "verdict_b"] == "better"
    assert len(verdict_flips(a, b, only_flips=False)) == 2
    with pytest.raises(ValueError, match="differ in"):
        verdict_flips(a, b.iloc[:2])


def test_label_study_rows_follow_the_callers_measure_order():
    runs = {"S1": run_ranking("d1"), "S2": run_ranking("d2"), "S3": run_ranking("d3")}
    human, judge = qrels_relevant("d1", "q12"), qrels_relevant("d2", "q12")
    for measures in (["P@1", "nDCG@3", "P@2"], ["nDCG@3", "P@2", "P@1"]):
        study = label_study(runs, human, judge, measures, {"S1": "S3", "S2": "S3", "S3": None})
        assert study.tau["measure"].tolist() == measures


def test_n_resamples_reaches_the_baseline_and_the_pair_tests():
    from superb.eval.stats import paired_pvalue

    runs = {"S1": run_ranking("d1"), "S2": run_ranking("d2"), "S3": run_ranking("d3")}
    human, judge = qrels_relevant("d1", "q12"), qrels_relevant("d2", "q12")
    baselines = {"S1": "S3", "S2": "S3", "S3": None}
    exact = label_study(runs, human, judge, ["P@1"], baselines, test="randomization")  # 2**12 <= 10,000: exact
    drawn = label_study(runs, human, judge, ["P@1"], baselines, test="randomization", n_resamples=100, seed=3)
    pq = drawn.perquery[drawn.perquery["labels"] == "human"].pivot_table(index="qid", columns="system",
                                                                           values="value")
    want = paired_pvalue(pq["S1"].to_numpy(), pq["S3"].to_numpy(), "randomization", n_resamples=100, seed=3)
    row = drawn.tables["human"].set_index("system").loc["S1"]
    assert row["p"] == pytest.approx(want) and want * 101 == pytest.approx(round(want * 101))  # (count + 1) / 101
    assert row["p"] != exact.tables["human"].set_index("system").loc["S1", "p"]
    pair = drawn.pairs[(drawn.pairs["system"] == "S1") & (drawn.pairs["other"] == "S3")].iloc[0]
    assert pair["p_human"] == pytest.approx(want)
