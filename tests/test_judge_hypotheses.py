"""Declared hypotheses of a judge spec (issue 49, item 6: DL20's confirmatory tests): parsed strictly, tested one-sided
by the query bootstrap, Holm over the family. Synthetic labels whose answers are known by construction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from superb.errors import SpecError
from superb.judges.bootstrap import QueryBootstrap
from superb.judges.studies.hypotheses import parse_hypotheses, evaluate_hypotheses


def _labels(seed: int, noise: float) -> tuple[dict, pd.DataFrame]:
    """30 queries x 10 pairs; judge "good" copies the human label except a share ``noise`` of pairs, "bad" is
    random: good's kappa is far above bad's."""
    rng = np.random.default_rng(seed)
    rows = [(f"q{q}", f"d{q}_{i}", int(rng.integers(0, 4))) for q in range(30) for i in range(10)]
    reference = pd.DataFrame(rows, columns=["qid", "docno", "final"])
    good = reference["final"].where(rng.random(len(reference)) > noise, rng.integers(0, 4, len(reference)))
    bad = pd.Series(rng.integers(0, 4, len(reference)))
    frame = reference[["qid", "docno"]].assign(split="test")
    return {"good": frame.assign(label=good.to_numpy()), "bad": frame.assign(label=bad.to_numpy())}, reference


def test_a_clear_difference_is_confirmed_and_a_false_claim_is_not():
    labels, reference = _labels(0, 0.2)
    hypotheses = parse_hypotheses([
        {"name": "H1", "statistic": "kappa_linear", "judge": "good", "against": "bad", "evidence": "dev"},
        {"name": "H2", "statistic": "kappa_linear", "judge": "bad", "against": "good"},
        {"name": "H3", "statistic": "kappa", "judge": "good", "above": 0.5},
    ])
    table = evaluate_hypotheses(hypotheses, labels, reference, {}, bootstrap=QueryBootstrap(500, seed=0))
    by = table.set_index("name")
    assert by.loc["H1", "verdict"] == "confirmed" and by.loc["H1", "observed"] > 0.5
    assert by.loc["H2", "verdict"] == "not confirmed" and by.loc["H2", "p"] == 1.0
    assert by.loc["H3", "verdict"] == "confirmed" and by.loc["H3", "n"] == 300 and by.loc["H3", "queries"] == 30
    # Holm: the smallest p is multiplied by the family's size (3), capped at 1
    assert by.loc["H1", "p_holm"] == pytest.approx(min(1.0, 3 * by.loc["H1", "p"]))


def test_orderings_above_a_level_use_the_orderings_bootstrap():
    rng = np.random.default_rng(1)
    systems = [f"s{i}" for i in range(6)]
    rows = [(s, f"q{q}", "nDCG@10", i / 10 + rng.normal(0, 0.05)) for i, s in enumerate(systems) for q in range(20)]
    human = pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])
    judge = human.assign(value=human["value"] + rng.normal(0, 0.02, len(human)))
    hypotheses = parse_hypotheses([{"name": "T", "statistic": "tau", "judge": "j", "labels": "llm", "above": 0.5}])
    table = evaluate_hypotheses(hypotheses, {}, pd.DataFrame(columns=["qid", "docno", "final"]),
                            {("j", "llm"): (human, judge)}, bootstrap=QueryBootstrap(300, seed=0))
    assert table.loc[0, "observed"] == pytest.approx(1.0) and table.loc[0, "verdict"] == "confirmed"


@pytest.mark.parametrize("table, message", [
    ([{"name": "H", "statistic": "f1", "judge": "j", "above": 0.1}], r"hypotheses\[0\]\.statistic"),
    ([{"name": "H", "statistic": "kappa", "judge": "j"}], r"exactly one of against .* or above"),
    ([{"name": "H", "statistic": "tau", "judge": "j", "against": "k"}], r"hypotheses\[0\]\.against"),
    ([{"name": "H", "statistic": "tau", "judge": "j", "above": 0.1, "labels": "mine"}], r"hypotheses\[0\]\.labels"),
    ([{"name": "H", "statistic": "kappa", "judge": "j", "above": 0.1, "colour": 1}], r"hypotheses\[0\]\.colour"),
    ([{"name": "H", "statistic": "kappa", "judge": "j", "above": 0.1}] * 2, r"hypotheses\[1\]\.name: 'H' is used"),
])
def test_bad_hypotheses_are_refused_with_their_key(table, message):
    with pytest.raises(SpecError, match=message):
        parse_hypotheses(table)


def test_one_query_is_not_testable():
    labels, reference = _labels(2, 0.2)
    one = {k: v[v["qid"] == "q0"] for k, v in labels.items()}
    table = evaluate_hypotheses(parse_hypotheses([{"name": "H", "statistic": "kappa", "judge": "good", "against": "bad"}]),
                            one, reference, {}, bootstrap=QueryBootstrap(100))
    assert table.loc[0, "verdict"] == "not testable (< 2 queries)"
