"""Confirmatory and exploratory comparisons, effect sizes with intervals, MDE, identical-by-construction rows and the
queries without a relevant document; each checked against an independent computation (scipy, statsmodels)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from superb.errors import SpecError
from superb.eval.effects import mde, mde_normal, paired_interval, power_summary, t_power
from superb.eval.evaluate import View, make_views, no_relevant_queries, significance
from superb.eval.families import Hypothesis, by_construction, families
from superb.eval.measures import parse_measures
from superb.eval.table_markdown import CONFIRMED, EXPLORED, format_markdown
from superb.eval.stats import PairedTest
from superb.run.spec import parse_spec
from test_eval_report import BASELINES, INFO, MEASURES, ORDER, POSITIONS, QRELS, RUNS, TOPICS

KEYS = ["system", "baseline", "view", "measure"]
CONFIRMATORY_COLUMNS = ["mean", "baseline_mean", "delta", "ci_low", "ci_high", "p", "p_corrected", "reject",
                        "family_size", "verdict", "family"]
HYPOTHESES = (Hypothesis("BM25 >> A", "BM25", ("RR", "P@3"), ("full", "condensed"), "main"),
              Hypothesis("BM25 >> B", "BM25", ("RR",), ("full",), "main"))


def table(systems, comparisons=None, hypotheses=HYPOTHESES, views=("full", "condensed"), **kw):
    runs = {s: RUNS[s] for s in systems}
    baselines = {s: BASELINES[s] for s in systems}
    return significance(runs, TOPICS, make_views(list(views), QRELS), MEASURES, families(baselines, comparisons),
                        test=PairedTest("t"), hypotheses=hypotheses, **kw)


def confirmatory(t: pd.DataFrame) -> pd.DataFrame:
    return t[t.role == "confirmatory"].set_index(KEYS)[CONFIRMATORY_COLUMNS].sort_index()


def test_adding_exploratory_rows_never_changes_a_confirmatory_p_or_mark():
    small = table(["BM25", "BM25 >> A", "BM25 >> B"])
    large = table(ORDER, comparisons={"BM25 >> C": ["BM25 >> A", "RM3 >> D"]})
    assert len(large) > len(small)
    pd.testing.assert_frame_equal(confirmatory(small), confirmatory(large))
    # the declared family: 2 measures x 2 views for A, 1 for B: m = 5 across measures and views
    c = confirmatory(large)
    assert (c["family_size"] == 5).all() and set(c["family"]) == {"confirmatory:main"}
    _, adjusted, _, _ = multipletests(c["p"], method="holm")
    np.testing.assert_allclose(c["p_corrected"], adjusted, rtol=1e-12)
    # and the marks in table.md: the confirmatory cells of both tables are the same strings
    def marks(t, systems):
        md = format_markdown(t, ["RR", "P@3"], systems, {**INFO, "hypotheses": list(HYPOTHESES)}).split("\n\n")[0]
        return {line.split("|")[1].strip(" \u21b3"): line.split("|")[2:6] for line in md.splitlines()[2:]}
    for system in ("BM25 >> A", "BM25 >> B"):
        assert marks(small, ["BM25", "BM25 >> A", "BM25 >> B"])[system] == marks(large, ORDER)[system]


def test_exploratory_rows_have_effect_interval_and_raw_p_but_no_correction_or_mark():
    t = table(ORDER, comparisons={"BM25 >> C": ["BM25 >> A"]})
    explored = t[t.role == "exploratory"]
    assert len(explored) and (explored.family == "").all() and explored.p_corrected.isna().all()
    assert not explored.reject.any() and set(explored.verdict) <= {"exploratory", "identical", "by construction"}
    tested = explored[explored.verdict == "exploratory"]
    assert tested[["delta", "ci_low", "ci_high", "p", "sd_diff"]].notna().all().all()
    # B on P@3 is exploratory (the hypothesis names RR only): raw p from scipy, no family
    b = t[(t.system == "BM25 >> B") & (t.measure == "P@3") & (t.view == "full")].iloc[0]
    assert b.role == "exploratory"
    md = format_markdown(t, ["RR", "P@3"], ORDER, {**INFO, "hypotheses": list(HYPOTHESES)})
    main = md.split("\n\n")[0]
    for line in main.splitlines()[2:]:
        name = line.split("|")[1].strip(" \u21b3\u2003")
        if name == "BM25 >> C":  # tested against BM25, declared nowhere: exploratory in every cell
            assert all(c.strip().endswith(EXPLORED) for c in line.split("|")[2:6] if "(=)" not in c)
            assert "\u2020" not in line and "\u2021" not in line
        if name == "BM25 >> A":
            assert all(CONFIRMED in c for c in line.split("|")[2:6])
    assert "## Confirmatory hypotheses" in md and "## Comparisons" in md and "## What this table can detect" in md


def test_a_declared_pair_takes_its_direction_and_no_row_is_tested_twice():
    """B is compared with A by C's... here A's compare list names C; the hypothesis declares C against A on RR."""
    hyp = (Hypothesis("BM25 >> C", "BM25 >> A", ("RR",), ("full",), "h2h"),)
    t = table(ORDER, comparisons={"BM25 >> A": ["BM25 >> C"]}, hypotheses=hyp, views=("full",))
    pair = t[t.kind == "head-to-head"]
    rr = pair[pair.measure == "RR"].iloc[0]
    assert (rr.system, rr.baseline, rr.role) == ("BM25 >> C", "BM25 >> A", "confirmatory")
    p3 = pair[pair.measure == "P@3"].iloc[0]
    assert (p3.system, p3.baseline, p3.role) == ("BM25 >> A", "BM25 >> C", "exploratory")
    assert len(pair) == 2
    rr_a, rr_c = 1 / POSITIONS["BM25 >> A"], 1 / POSITIONS["BM25 >> C"]
    assert rr.delta == pytest.approx(rr_c.mean() - rr_a.mean())
    assert rr.p == pytest.approx(sps.ttest_rel(rr_c, rr_a).pvalue, rel=1e-9) and rr.family_size == 1
    # a declared pair that is in no list is a row of its own
    hyp = (Hypothesis("RM3 >> D", "BM25 >> A", ("RR",), ("full",)),)
    t = table(ORDER, hypotheses=hyp, views=("full",))
    own = t[t.kind == "hypothesis"]
    assert len(own) == 1 and own.iloc[0].system == "RM3 >> D" and own.iloc[0].role == "confirmatory"


def test_views_sentence_keeps_two_hypotheses_of_one_system_apart():
    from superb.eval.view_verdicts import verdict_changes, views_sentence

    hyp = (Hypothesis("BM25 >> A", "BM25", ("RR",), None, "main"), Hypothesis("BM25 >> A", "BM25 >> C", ("RR",), None,
                                                                               "main"))
    t = table(ORDER, hypotheses=hyp)
    changes = verdict_changes(t)
    assert len(changes) == 2 and set(changes.baseline) == {"BM25", "BM25 >> C"}  # exploratory rows are not in it
    assert "each of the 2 tested comparisons" in views_sentence(t)


def test_without_hypotheses_every_comparison_is_corrected_in_its_default_family():
    t = table(ORDER, comparisons={"BM25 >> C": ["BM25 >> A", "BM25 >> B"]}, hypotheses=())
    tested = t[t.baseline.notna()]
    assert set(tested.role) == {"corrected"} and (tested.family != "").all()
    h2h = tested[(tested.kind == "head-to-head") & (tested.measure == "RR") & (tested.view == "full")]
    assert set(h2h.family) == {"head-to-head:BM25 >> C"} and (h2h.family_size == 2).all()
    _, adjusted, _, _ = multipletests(h2h["p"], method="holm")
    np.testing.assert_allclose(h2h["p_corrected"], adjusted, rtol=1e-12)


def test_interval_is_the_paired_t_interval_and_the_bootstrap_is_seeded():
    t = table(ORDER, hypotheses=(), views=("full",))
    a = t[(t.system == "BM25 >> A") & (t.measure == "RR")].iloc[0]
    d = 1 / POSITIONS["BM25 >> A"] - 1 / POSITIONS["BM25"]
    low, high = sps.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=sps.sem(d))
    assert (a.ci_low, a.ci_high) == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))
    assert a.sd_diff == pytest.approx(np.std(d, ddof=1))
    boot = paired_interval(d, "bootstrap", n_resamples=2000, seed=3)
    assert boot == paired_interval(d, "bootstrap", n_resamples=2000, seed=3)  # reproducible
    assert boot[0] < d.mean() < boot[1] and boot != paired_interval(d, "bootstrap", n_resamples=2000, seed=4)
    tb = table(ORDER, hypotheses=(), views=("full",), interval="bootstrap", n_resamples=2000, seed=3)
    ab = tb[(tb.system == "BM25 >> A") & (tb.measure == "RR")].iloc[0]
    assert (ab.ci_low, ab.ci_high) == boot and ab.p == a.p  # the interval changes, the test does not
    assert paired_interval(np.zeros(5)) == (0.0, 0.0)


def test_mde_is_statsmodels_power_of_the_paired_t_test():
    for sd, n, alpha in [(0.14, 95, 0.05), (0.14, 95, 0.05 / 18), (0.3, 20, 0.01)]:
        effect = TTestPower().solve_power(nobs=n, alpha=alpha, power=0.8, alternative="two-sided")
        assert mde(sd, n, alpha) == pytest.approx(abs(effect) * sd, rel=1e-5)
        assert t_power(mde(sd, n, alpha), sd, n, alpha) == pytest.approx(0.8, abs=1e-8)
        if n >= 40:  # the normal approximation the module doc states
            assert mde_normal(sd, n, alpha) == pytest.approx(mde(sd, n, alpha), rel=0.03)
    assert np.isnan(mde(0.0, 95, 0.05))


def test_power_summary_per_view_and_measure():
    t = table(ORDER, hypotheses=(), views=("full",))
    power = power_summary(t, 0.05, "holm").set_index("measure")
    rr = t[(t.measure == "RR") & t.p.notna()]
    assert power.loc["RR", "n_comparisons"] == len(rr)
    assert power.loc["RR", "sd_median"] == pytest.approx(rr.sd_diff.median())
    assert power.loc["RR", "m"] == 3  # the largest family on RR: three systems against BM25
    assert power.loc["RR", "mde_strictest"] == pytest.approx(mde(rr.sd_diff.median(), 30, 0.05 / 3))
    assert power.loc["RR", "mde_strictest"] > power.loc["RR", "mde"]


def test_identical_rows_are_not_tested_and_named_by_construction_when_known():
    constructed = {("RM3 >> same", "RM3", "RR")}
    t = table(ORDER, hypotheses=(), views=("full",), identical_by_construction=constructed)
    same = t[t.system == "RM3 >> same"].set_index("measure")
    assert same.loc["RR", "verdict"] == "by construction" and same.loc["P@3", "verdict"] == "identical"
    assert same.p.isna().all() and (same.family_size == 0).all() and not same.reject.any()
    md = format_markdown(t, ["RR", "P@3"], ORDER, INFO)
    assert "= by construction" in md and "= identical" in md


def test_by_construction_follows_the_input_chain_and_top_k():
    spec = parse_spec({"name": "t", "dataset": {"name": "chorus"},
                       "evaluation": {"measures": ["P@10", "P@20", "nDCG@20", "R@100"]},
                       "pipelines": [
        {"name": "BM25", "first_stage": {"engine": "terrier", "model": "bm25"}},
        {"name": "BM25 >> p", "input": "BM25", "rerank": {"type": "pointwise", "top_k": 20}},
        {"name": "BM25 >> p >> q", "input": "BM25 >> p", "rerank": {"type": "shuffle", "top_k": 10}},
        {"name": "BM25 >> bi", "input": "BM25", "rerank": {"type": "biencoder", "top_k": 100}},
        {"name": "fuse", "input": "BM25 >> p", "baseline": "BM25", "rerank": {"type": "fuse", "weights": {"first_stage": 0.5, "pointwise": 0.5}}}]})
    got = by_construction(spec.pipelines, parse_measures(list(spec.evaluation.measures), rel=1))
    assert ("BM25 >> p", "BM25", "P@20") in got and ("BM25 >> p", "BM25", "P@10") not in got
    assert ("BM25 >> p >> q", "BM25", "P@20") in got and ("BM25 >> p >> q", "BM25 >> p", "P@10") in got
    assert ("BM25 >> p", "BM25 >> bi", "R@100") in got and ("BM25 >> p", "BM25 >> bi", "P@20") not in got
    assert not any(a == "fuse" or b == "fuse" for a, b, m in got if m != "R@100")  # fuse: no top_k
    assert not any(m == "nDCG@20" for _, _, m in got)


def test_queries_without_a_relevant_document_are_counted_and_kept_or_dropped():
    empty = ["q00", "q01", "q02"]
    qrels = QRELS.assign(label=np.where(QRELS.qid.isin(empty), 0, QRELS.label))
    assert no_relevant_queries(qrels, TOPICS) == empty
    views = [View("full", qrels)]
    kept = significance(RUNS, TOPICS, views, MEASURES, families(BASELINES), test=PairedTest("t"))
    assert (kept.n_no_relevant == 3).all() and (kept.n_queries == 30).all()
    dropped = significance(RUNS, TOPICS, [View("full", qrels[~qrels.qid.isin(empty)])], MEASURES,
                           families(BASELINES), test=PairedTest("t"), no_relevant={"full": 3})
    assert (dropped.n_queries == 27).all() and (dropped.n_no_relevant == 3).all()
    text = format_markdown(kept, ["RR"], ORDER, {**INFO, "n_no_relevant": {"full": 3}})
    assert "3 of them without a relevant document" in text and "kept" in text and "without them n = 27" in text
    text = format_markdown(dropped, ["RR"], ORDER, {**INFO, "n_no_relevant": {"full": 3}, "no_relevant": "drop"})
    assert "are dropped" in text


def _spec(**over):
    raw = {"name": "t", "dataset": {"name": "chorus"},
           "evaluation": {"measures": ["P@10", "nDCG@10"], "views": ["full", "condensed"]},
           "pipelines": [{"name": "BM25", "first_stage": {"engine": "terrier", "model": "bm25"}},
                         {"name": "BM25 >> p", "input": "BM25", "rerank": {"type": "shuffle", "top_k": 20}},
                         {"name": "BM25 >> q", "input": "BM25", "rerank": {"type": "random", "top_k": 20}}]}
    raw.update(over)
    return raw


def test_hypotheses_parse_with_defaults():
    spec = parse_spec(_spec(hypotheses=[{"system": "BM25 >> p", "against": "BM25", "measures": ["nDCG@10"],
                                         "evidence": "dev"}, {"system": "BM25 >> q", "against": "BM25 >> p",
                                                              "family": "h2h"}],
                            evaluation={"measures": ["P@10", "nDCG@10"], "views": ["full", "condensed"],
                                        "interval": "bootstrap", "no_relevant": "drop"}))
    first, second = spec.hypotheses
    assert (first.measures, first.views, first.family, first.evidence) == (("nDCG@10",), ("full", "condensed"),
                                                                          "confirmatory", "dev")
    assert second.measures == ("P@10", "nDCG@10") and second.family == "h2h"
    assert (spec.evaluation.interval, spec.evaluation.no_relevant) == ("bootstrap", "drop")
    assert parse_spec(_spec()).hypotheses == () and parse_spec(_spec()).evaluation.no_relevant == "keep"


@pytest.mark.parametrize("hyp, path, words", [
    ({"system": "BM25 >> x", "against": "BM25"}, "hypotheses[0].system", "names no pipeline"),
    ({"system": "BM25", "against": "BM25"}, "hypotheses[0].against", "against itself"),
    ({"system": "BM25", "against": "BM25 >> p"}, "hypotheses[0]", "write system = 'BM25 >> p'"),
    ({"system": "BM25 >> p", "against": "BM25", "measures": ["P@5"]}, "hypotheses[0].measures", "[evaluation]"),
    ({"system": "BM25 >> p", "against": "BM25", "views": ["filled"]}, "hypotheses[0].views", "[evaluation] views"),
    ({"system": "BM25 >> p", "against": "BM25", "colour": 1}, "hypotheses[0].colour", "unknown key"),
])
def test_hypothesis_errors_name_the_key(hyp, path, words):
    with pytest.raises(SpecError) as info:
        parse_spec(_spec(hypotheses=[hyp]))
    assert info.value.path == path and words in str(info.value)


def test_a_test_is_declared_once():
    twice = [{"system": "BM25 >> q", "against": "BM25 >> p", "measures": ["P@10"]},
             {"system": "BM25 >> p", "against": "BM25 >> q", "measures": ["P@10"], "family": "other"}]
    with pytest.raises(SpecError, match="already declared by hypotheses\\[0\\]"):
        parse_spec(_spec(hypotheses=twice))
