"""Comparison tables: tests per baseline, Holm families, markers from corrected decisions, CSV and side by side."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from superb.eval.report import compare, format_markdown, format_side_by_side, side_by_side, write_csv

N = 30
Z = np.arange(N) - (N - 1) / 2
Z = Z / Z.std(ddof=1)  # fixed pattern: mean 0, sample sd 1
BASE = 0.4 + 0.01 * ((np.arange(N) * 7) % 11)


def shifted(p_two_sided: float, sd: float = 0.1, sign: int = 1) -> np.ndarray:
    """Values whose paired t-test against BASE gives exactly the requested two-sided p."""
    t = sps.t.isf(p_two_sided / 2, N - 1)
    return BASE + sign * t * sd / np.sqrt(N) + sd * Z


SYSTEMS = {
    "BM25": BASE,
    "RM3": BASE[::-1].copy(),
    "BM25 >> A": shifted(0.03),   # raw p < 0.05, Holm over 3 -> 0.09: not significant
    "BM25 >> B": shifted(0.04),
    "BM25 >> C": shifted(0.5),
    "RM3 >> D": None,             # filled below: significantly worse than RM3
    "RM3 >> same": BASE[::-1].copy(),  # identical to its baseline: untested
}
SYSTEMS["RM3 >> D"] = SYSTEMS["RM3"] - 0.05 - 0.01 * Z
BASELINES = {"BM25": None, "RM3": None, "BM25 >> A": "BM25", "BM25 >> B": "BM25", "BM25 >> C": "BM25",
             "RM3 >> D": "RM3", "RM3 >> same": "RM3"}
ORDER = ["BM25", "RM3", "BM25 >> A", "BM25 >> B", "BM25 >> C", "RM3 >> D", "RM3 >> same"]


@pytest.fixture(scope="module")
def perquery() -> pd.DataFrame:
    rows = [(s, f"q{i}", m, v * (1 if m == "nDCG@10" else 0.5))
            for s, values in SYSTEMS.items() for i, v in enumerate(values) for m in ("nDCG@10", "P(rel=2)@5")]
    return pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])


def row(table, system, measure="nDCG@10"):
    return table[(table.system == system) & (table.measure == measure)].iloc[0]


def cells(markdown: str) -> dict:
    """System name -> list of cell strings, from the markdown table body."""
    out = {}
    for line in markdown.splitlines():
        if line.startswith("| ") and not line.startswith("| System"):
            parts = [c.strip() for c in line.strip("|").split("|")]
            out[parts[0].replace("\u21b3", "").strip()] = parts[1:]
    return out


def test_compare_means_pvalues_and_holm_families(perquery):
    table = compare(perquery, BASELINES, test="t", correction="holm", alpha=0.05, order=ORDER)
    assert len(table) == len(ORDER) * 2
    a = row(table, "BM25 >> A")
    assert a["mean"] == pytest.approx(SYSTEMS["BM25 >> A"].mean())
    assert a["delta"] == pytest.approx(SYSTEMS["BM25 >> A"].mean() - BASE.mean())
    assert a["p"] == pytest.approx(0.03, rel=1e-6)
    assert a["p"] == pytest.approx(sps.ttest_rel(SYSTEMS["BM25 >> A"], BASE).pvalue, rel=1e-9)
    family = [row(table, s) for s in ("BM25 >> A", "BM25 >> B", "BM25 >> C")]
    rej, adj, _, _ = multipletests([r["p"] for r in family], alpha=0.05, method="holm")
    np.testing.assert_allclose([r["p_corrected"] for r in family], adj)
    assert [bool(r["reject"]) for r in family] == list(rej) == [False, False, False]
    assert all(r["family_size"] == 3 for r in family)
    d = row(table, "RM3 >> D")  # the RM3 family: D tested, "same" untested (NaN) -> m = 1
    assert d["family_size"] == 1 and d["p_corrected"] == pytest.approx(d["p"]) and d["verdict"] == "worse"
    same = row(table, "RM3 >> same")
    assert np.isnan(same["p"]) and not same["reject"] and same["verdict"] == "untested"
    first = row(table, "BM25")
    assert np.isnan(first["p"]) and first["verdict"] == "" and first["family_size"] == 0


def test_markers_follow_corrected_not_raw_pvalues(perquery):
    holm = compare(perquery, BASELINES, test="t", correction="holm", alpha=0.05, order=ORDER)
    text = format_markdown(holm, ["P(rel=2)@5", "nDCG@10"], ORDER, {})
    got = cells(text)
    assert got["BM25 >> A"][1] == f"{SYSTEMS['BM25 >> A'].mean():.4f}"  # raw p = 0.03 but Holm p = 0.09: no marker
    assert "\u2020" not in got["BM25 >> B"][1]
    assert got["RM3 >> D"][1].endswith("\u2021")  # significant drop: its own marker
    assert got["RM3 >> same"][1] == f"{SYSTEMS['RM3'].mean():.4f}"
    none = compare(perquery, BASELINES, test="t", correction="none", alpha=0.05, order=ORDER)
    got = cells(format_markdown(none, ["P(rel=2)@5", "nDCG@10"], ORDER, {}))
    assert got["BM25 >> A"][1].endswith("\u2020") and got["BM25 >> B"][1].endswith("\u2020")
    assert not got["BM25 >> C"][1].endswith("\u2020")


def test_markdown_groups_rows_under_baselines_with_footnote_and_extra_columns(perquery):
    table = compare(perquery, BASELINES, test="t", correction="holm", alpha=0.05, order=ORDER)
    extra = pd.DataFrame({"system": ["BM25 >> A", "BM25"], "Judged@10": [0.8123456, 0.75],
                          "LLM calls/query": [20, 0]})
    text = format_markdown(table, ["nDCG@10"], ORDER, {"notes": ["Dataset: toy."]}, extra=extra)
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    assert lines[0] == "| System | nDCG@10 | Judged@10 | LLM calls/query |"
    names = [line.split("|")[1].strip() for line in lines[1:]]
    assert names == ["BM25", "\u21b3 BM25 >> A", "\u21b3 BM25 >> B", "\u21b3 BM25 >> C", "RM3",
                     "\u21b3 RM3 >> D", "\u21b3 RM3 >> same"]
    got = cells(text)
    assert got["BM25 >> A"][1:] == ["0.8123", "20"]
    assert got["BM25 >> B"][1:] == ["\u2013", "\u2013"]  # no extra data: a dash, not a made-up value
    footnote = text.split("\n\n", 1)[1]
    for fragment in ("paired t-test", "Holm-Bonferroni", "same baseline", "each measure", "\u03b1 = 0.05",
                     f"n = {N} queries", "\u2020", "\u2021", "BM25 3", "RM3 1", "Dataset: toy."):
        assert fragment in footnote


def test_footnote_names_other_tests_and_corrections(perquery):
    table = compare(perquery, BASELINES, test="wilcoxon", correction="bonferroni", alpha=0.01, order=ORDER)
    footnote = format_markdown(table, ["nDCG@10"], ORDER, {}).split("\n\n", 1)[1]
    assert "Wilcoxon" in footnote and "Bonferroni correction" in footnote and "\u03b1 = 0.01" in footnote
    footnote = format_markdown(table, ["nDCG@10"], ORDER, {"rel": 2, "condensed": True, "dataset": "chorus"})
    assert "labels \u2265 2 as relevant" in footnote and "condensed lists" in footnote and "Dataset: chorus" in footnote
    with pytest.raises(ValueError, match="allowed"):
        format_markdown(table, ["nDCG@10"], ORDER, {"colour": "red"})
    with pytest.raises(ValueError, match="not in the table"):
        format_markdown(table, ["nDCG@20"], ORDER, {})


def test_write_csv_keeps_raw_and_corrected_pvalues(perquery, tmp_path):
    table = compare(perquery, BASELINES, test="t", correction="holm", alpha=0.05, order=ORDER)
    path = write_csv(table, tmp_path / "out" / "table.csv")
    back = pd.read_csv(path)
    assert {"mean", "p", "p_corrected", "reject", "family_size", "baseline"} <= set(back.columns)
    a = back[(back.system == "BM25 >> A") & (back.measure == "nDCG@10")].iloc[0]
    assert a["p"] == pytest.approx(0.03, rel=1e-6) and a["p_corrected"] == pytest.approx(0.09, rel=1e-6)
    assert not a["reject"]


def test_side_by_side_means_and_difference(perquery):
    a = compare(perquery, BASELINES, order=ORDER)
    b = a.assign(mean=a["mean"] + 0.01)
    b = b[b.system != "RM3 >> same"]
    both = side_by_side(a, b, ["old", "new"])
    r = both[(both.system == "BM25") & (both.measure == "nDCG@10")].iloc[0]
    assert r["mean_new"] - r["mean_old"] == pytest.approx(0.01) and r["difference"] == pytest.approx(0.01)
    gone = both[both.system == "RM3 >> same"]
    assert len(gone) == 2 and gone["mean_new"].isna().all()  # kept, not dropped
    only = side_by_side(a, b, ["old", "new"], measures=["nDCG@10"])
    assert set(only["measure"]) == {"nDCG@10"} and len(only) == len(ORDER)
    with pytest.raises(ValueError, match="neither table"):
        side_by_side(a, b, ["old", "new"], measures=["ERR@10"])
    text = format_side_by_side(both, ["old", "new"])
    assert "(+0.0100)" in text and "old \u2192 new" in text


def test_compare_rejects_inconsistent_input(perquery):
    with pytest.raises(ValueError, match="no entry for system"):
        compare(perquery, {k: v for k, v in BASELINES.items() if k != "RM3 >> D"}, order=ORDER)
    with pytest.raises(ValueError, match="has no per-query values"):
        compare(perquery, {**BASELINES, "RM3 >> D": "BM42"}, order=ORDER)
    with pytest.raises(ValueError, match="no per-query values"):
        compare(perquery, {**BASELINES, "BM25 >> ghost": "BM25"}, order=ORDER)
    with pytest.raises(ValueError, match="exactly once"):
        compare(perquery, BASELINES, order=ORDER[:-1])
    with pytest.raises(ValueError, match="not on the same queries"):
        compare(perquery[~((perquery.system == "BM25 >> A") & (perquery.qid == "q3"))], BASELINES, order=ORDER)
    with pytest.raises(ValueError, match="unknown test"):
        compare(perquery, BASELINES, test="z", order=ORDER)
