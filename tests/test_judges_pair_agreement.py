"""superb.judges.pair_agreement: every pair of systems tested under two label sets, and the conclusions compared."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ttest_rel

from superb.judges.pair_agreement import pair_agreement, pair_verdicts

COLS = ["system", "qid", "measure", "value"]


def frame(values: dict[str, np.ndarray], measure: str = "nDCG@10") -> pd.DataFrame:
    return pd.DataFrame([(s, f"q{i}", measure, float(v)) for s, vs in values.items() for i, v in enumerate(vs)],
                        columns=COLS)


def noisy_systems(seed: int, n: int = 50):
    """A maker of per-query values: one shared base per query, plus a system's shift and its own small noise."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.6, n)
    return lambda shift: base + shift + rng.normal(0, 0.03, n)


def test_pair_verdicts_are_holm_corrected_paired_t_tests_over_all_pairs():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.6, 40)
    values = {"A": base + 0.2 + rng.normal(0, 0.05, 40), "B": base + rng.normal(0, 0.05, 40),
              "C": base + 0.01 + rng.normal(0, 0.05, 40)}
    got = pair_verdicts(frame(values))
    assert list(zip(got["system"], got["other"])) == [("A", "B"), ("A", "C"), ("B", "C")]
    raw = [ttest_rel(values[s], values[o]).pvalue for s, o in [("A", "B"), ("A", "C"), ("B", "C")]]
    assert got["p"].tolist() == pytest.approx(raw)
    # Holm over the three pairs: the smallest p times 3, the next times 2 (monotone), the largest times 1
    order = np.argsort(raw)
    want = np.minimum(np.maximum.accumulate(np.array(raw)[order] * np.array([3, 2, 1])), 1)
    assert got["p_corrected"].to_numpy()[order] == pytest.approx(want)
    assert got["verdict"].tolist()[:2] == ["better", "better"] and got["verdict"].iloc[2] == "n.s."
    assert got.loc[0, "delta"] == pytest.approx(values["A"].mean() - values["B"].mean())


def test_pair_agreement_counts_confirmed_reversed_and_new_conclusions():
    noisy = noisy_systems(1)
    # human: A > B > C, all significant; D level with C
    human = frame({"A": noisy(0.3), "B": noisy(0.15), "C": noisy(0.0), "D": noisy(0.0)})
    # llm: A > B confirmed, B and C swapped (significantly reversed), D far above C (a pair only the llm separates)
    llm = frame({"A": noisy(0.3), "B": noisy(0.0), "C": noisy(0.15), "D": noisy(0.3)})
    summary, pairs = pair_agreement(human, llm, ("human", "llm"))
    row = summary.iloc[0]
    h = pairs.set_index(["system", "other"])
    sig_h = h["verdict_human"] != "n.s."
    assert row["system_pairs"] == 6 and row["significant_human"] == int(sig_h.sum())
    assert h.loc[("B", "C"), "verdict_human"] == "better" and h.loc[("B", "C"), "verdict_llm"] == "worse"
    assert h.loc[("C", "D"), "verdict_human"] == "n.s." and h.loc[("C", "D"), "verdict_llm"] == "worse"
    assert row["reversed"] >= 1 and row["confirmed"] >= 1 and row["only_llm"] >= 1
    assert row["confirmed"] + row["reversed"] <= row["significant_human"]
    assert row["same_order"] == row["significant_human"] - int(
        (sig_h & (np.sign(h["delta_human"]) != np.sign(h["delta_llm"]))).sum())
    # the same labels twice agree on everything
    same, _ = pair_agreement(human, human, ("human", "llm"))
    s = same.iloc[0]
    assert s["same_order"] == s["confirmed"] == s["significant_human"] == s["significant_llm"]
    assert s["reversed"] == s["only_llm"] == 0


def test_pair_agreement_refuses_different_systems_and_missing_queries():
    a = frame({"A": np.arange(5.0), "B": np.arange(5.0) + 1})
    b = frame({"A": np.arange(5.0), "C": np.arange(5.0) + 1})
    with pytest.raises(ValueError, match="differ in systems"):
        pair_agreement(a, b)
    holes = a[~((a["system"] == "B") & (a["qid"] == "q3"))]
    with pytest.raises(ValueError, match=r"systems \['B'\] lack per-query values"):
        pair_verdicts(holes)


def test_self_preference_counts_one_sided_pairs_and_which_side_the_judge_favours():
    noisy = noisy_systems(2)
    # human: all four level. judge: its own rows L1, L2 far above the non-LLM N1; N2 far above L2 (against itself)
    human = frame({"N1": noisy(0.0), "L1": noisy(0.0), "L2": noisy(0.0), "N2": noisy(0.0)})
    judge = frame({"N1": noisy(0.0), "L1": noisy(0.3), "L2": noisy(0.15), "N2": noisy(0.45)})
    summary, pairs = pair_agreement(human, judge, ("human", "judge"), judge_ranked=["L1", "L2"])
    row = summary.iloc[0]
    h = pairs.set_index(["system", "other"])
    assert row["significant_human"] == 0 and row["only_judge"] == 6  # every pair: only the judge separates it
    # one-sided pairs: (N1,L1) (N1,L2) (L1,N2) (L2,N2); the judge favours its own side in the first two only
    assert row["only_judge_mixed"] == 4 and row["only_judge_self"] == 2
    assert bool(h.loc[("N1", "L1"), "other_judge_ranked"]) and not h.loc[("N1", "L1"), "system_judge_ranked"]
    # without judge_ranked the columns are absent, not zero
    plain, plain_pairs = pair_agreement(human, judge, ("human", "judge"))
    assert "only_judge_mixed" not in plain.columns and "system_judge_ranked" not in plain_pairs.columns
