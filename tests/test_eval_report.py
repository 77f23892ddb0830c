"""The significance table through pt.Experiment, checked against an independent path (ir_measures per-query values,
scipy's paired t-test, statsmodels' Holm), and its markdown: markers from corrected decisions, families per
measure, head-to-head sections, views, footnote family sizes; CSV and side by side."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

import ir_measures
from superb.eval.evaluate import View, make_views, per_query, significance
from superb.eval.families import families
from superb.eval.table_markdown import family_sizes, format_markdown, format_side_by_side, side_by_side
from superb.eval.table_files import read_table_files, write_tables
from superb.eval.stats import PairedTest

N = 30
QIDS = [f"q{i:02d}" for i in range(N)]
BASE = np.random.default_rng(1).integers(1, 11, N)  # rank of the relevant document per query


def moved_up(k: int, seed: int) -> np.ndarray:
    """BASE with the relevant document moved up on k queries (seeded): raw p chosen by the seed."""
    rng = np.random.default_rng(seed)
    pos = BASE.copy()
    idx = rng.choice(N, k, replace=False)
    pos[idx] = np.maximum(1, pos[idx] - rng.integers(1, 6, k))
    return pos


POSITIONS = {"BM25": BASE, "BM25 >> A": moved_up(6, 19), "BM25 >> B": moved_up(6, 28),
             "BM25 >> C": moved_up(2, 0), "RM3": np.minimum(10, BASE + 1), "RM3 >> D": np.full(N, 10),
             "RM3 >> same": np.minimum(10, BASE + 1)}
BASELINES = {"BM25": None, "BM25 >> A": "BM25", "BM25 >> B": "BM25", "BM25 >> C": "BM25", "RM3": None,
             "RM3 >> D": "RM3", "RM3 >> same": "RM3"}
ORDER = list(POSITIONS)
# each query: "rel" (label 1), nine judged non-relevant documents, and "unjudged" in place of the last one
QRELS = pd.DataFrame([(q, d, 1 if d == "rel" else 0) for q in QIDS for d in ["rel", *[f"n{j}" for j in range(8)]]],
                     columns=["qid", "docno", "label"])
TOPICS = pd.DataFrame({"qid": QIDS, "query": "x"})
MEASURES = [ir_measures.parse_measure("RR"), ir_measures.parse_measure("P@3")]
INFO = {"test": "t", "correction": "holm", "alpha": 0.05}


def run_of(positions: np.ndarray) -> pd.DataFrame:
    rows = []
    for q, pos in zip(QIDS, positions):
        others = iter([*[f"n{j}" for j in range(8)], "unjudged"])
        docs = ["rel" if r == pos else next(others) for r in range(1, 11)]
        rows += [(q, d, 10.0 - r) for r, d in enumerate(docs)]
    return pd.DataFrame(rows, columns=["qid", "docno", "score"])


RUNS = {s: run_of(p) for s, p in POSITIONS.items()}


def table_for(correction="holm", comparisons=None, views=("full",), test="t"):
    return significance(RUNS, TOPICS, make_views(list(views), QRELS), MEASURES, families(BASELINES, comparisons),
                        test=PairedTest(test), correction=correction, alpha=0.05)


def row(table, system, measure="RR", view="full", family=None):
    hit = table[(table.system == system) & (table.measure == measure) & (table.view == view)]
    if family is not None:
        hit = hit[hit.family == family]
    return hit.iloc[0]


def cells(markdown: str) -> dict:
    """First-column label -> list of cell strings, from the markdown table rows."""
    out = {}
    for line in markdown.splitlines():
        if line.startswith("| ") and not line.startswith(("| System", "| Head-to-head")):
            parts = [c.strip() for c in line.strip("|").split("|")]
            out[parts[0].replace("\u21b3", "").strip()] = parts[1:]
    return out


def test_table_equals_scipy_and_statsmodels_on_ir_measures_values():
    table = table_for()
    assert len(table) == len(ORDER) * len(MEASURES)
    rr = {s: 1.0 / POSITIONS[s] for s in ORDER}  # RR by hand
    a = row(table, "BM25 >> A")
    assert a["mean"] == pytest.approx(rr["BM25 >> A"].mean()) and a["n_queries"] == N
    assert a["delta"] == pytest.approx(rr["BM25 >> A"].mean() - rr["BM25"].mean())
    assert a["p"] == pytest.approx(sps.ttest_rel(rr["BM25 >> A"], rr["BM25"]).pvalue, rel=1e-9)
    assert a["family"] == "baseline:BM25" and a["baseline"] == "BM25"
    family = [row(table, s) for s in ("BM25 >> A", "BM25 >> B", "BM25 >> C")]
    assert all(r["p"] < 0.05 for r in family[:2])  # raw p below alpha...
    rej, adj, _, _ = multipletests([r["p"] for r in family], alpha=0.05, method="holm")
    np.testing.assert_allclose([r["p_corrected"] for r in family], adj)
    assert [bool(r["reject"]) for r in family] == list(rej) == [False, False, False]  # ...but not after Holm
    assert all(r["family_size"] == 3 for r in family)
    d = row(table, "RM3 >> D")  # the RM3 family: D tested, "same" untested (NaN) -> m = 1
    assert d["family_size"] == 1 and d["p_corrected"] == pytest.approx(d["p"]) and d["verdict"] == "worse"
    same = row(table, "RM3 >> same")
    assert np.isnan(same["p"]) and not same["reject"] and same["verdict"] == "identical" and same["delta"] == 0
    first = row(table, "BM25")
    assert np.isnan(first["p"]) and first["verdict"] == "" and first["family_size"] == 0 and first["family"] == ""


def test_pt_experiment_holm_counts_the_identical_system_and_superb_does_not():
    """The reason for superb's correction: statsmodels (pt.Experiment's correction) counts a NaN p in m and, when
    every other p of the family is rejected, rejects the NaN row too."""
    import pyterrier as pt

    result = pt.Experiment([RUNS["RM3"], RUNS["RM3 >> D"], RUNS["RM3 >> same"]], TOPICS, QRELS, MEASURES,
                           names=["RM3", "RM3 >> D", "RM3 >> same"], baseline=0, correction="holm", verbose=False)
    assert bool(result["RR reject"].iloc[2])  # pt.Experiment marks the identical system significant
    table = table_for()
    assert not row(table, "RM3 >> same")["reject"] and row(table, "RM3 >> D")["family_size"] == 1


def test_markers_follow_corrected_not_raw_pvalues():
    got = cells(format_markdown(table_for(), ["RR", "P@3"], ORDER, INFO))
    assert got["BM25 >> A"][0] == f"{(1 / POSITIONS['BM25 >> A']).mean():.4f}"  # raw p < 0.05, Holm p > 0.05
    assert got["RM3 >> D"][0].endswith("\u2021")  # significantly worse: its own marker
    assert got["RM3 >> same"][0] == f"{(1 / POSITIONS['RM3']).mean():.4f} (=)"  # identical: no test
    got = cells(format_markdown(table_for("none"), ["RR", "P@3"], ORDER, {**INFO, "correction": "none"}))
    assert got["BM25 >> A"][0].endswith("\u2020") and got["BM25 >> B"][0].endswith("\u2020")
    assert not got["BM25 >> C"][0].endswith("\u2020")


def test_markdown_groups_rows_under_baselines_with_footnote_and_extra_columns():
    extra = pd.DataFrame({"system": ["BM25 >> A", "BM25"], "judged@10": [0.8123456, 0.75], "requests": [20, 0]})
    text = format_markdown(table_for(), ["RR"], ORDER, {**INFO, "notes": ["Dataset: toy."]}, extra=extra)
    lines = [line for line in text.split("\n\n")[0].splitlines() if line.startswith("| ")]
    assert lines[0] == "| System | RR | judged@10 | requests |"
    names = [line.split("|")[1].strip() for line in lines[1:]]
    assert names == ["BM25", "\u21b3 BM25 >> A", "\u21b3 BM25 >> B", "\u21b3 BM25 >> C", "RM3",
                     "\u21b3 RM3 >> D", "\u21b3 RM3 >> same"]
    got = cells(text.split("\n\n")[0])
    assert got["BM25 >> A"][1:] == ["0.8123", "20"]
    assert got["BM25 >> B"][1:] == ["\u2013", "\u2013"]  # no extra data: a dash, not a made-up value
    footnote = text.split("\n\n", 1)[1]
    for fragment in ("paired t-test", "Holm-Bonferroni", "each measure", "\u03b1 = 0.05", f"n = {N} queries",
                     "\u2020", "\u2021", "baseline:BM25: 3", "baseline:RM3: 1", "Dataset: toy.",
                     "no comparison is confirmatory"):
        assert fragment in footnote, fragment


def test_footnote_gives_the_family_size_of_every_measure():
    # P@3: B and C put the relevant document in the top 3 exactly where BM25 does -> untested on P@3
    table = table_for()
    sizes = table[table.family == "baseline:BM25"].groupby("measure")["family_size"].max().to_dict()
    assert sizes["RR"] == 3 and sizes["P@3"] < 3
    text = family_sizes(table)["baseline:BM25"]
    assert text.startswith("3") and f"({sizes['P@3']} on P@3)" in text
    assert f"baseline:BM25: {text}" in format_markdown(table, ["RR", "P@3"], ORDER, INFO)


def test_head_to_head_list_is_one_family_and_its_own_section():
    """One pipeline's compare list is one family per measure (not one family per compared system, which corrects
    nothing)."""
    table = table_for(comparisons={"BM25 >> C": ["BM25 >> A", "BM25 >> B"]})
    h2h = table[table.family == "head-to-head:BM25 >> C"]
    assert set(h2h.baseline) == {"BM25 >> A", "BM25 >> B"} and len(h2h) == 2 * len(MEASURES)
    assert set(h2h.kind) == {"head-to-head"} and set(h2h.role) == {"corrected"}
    c = h2h[(h2h.baseline == "BM25 >> A") & (h2h.measure == "RR")].iloc[0]
    rr_a, rr_c = 1 / POSITIONS["BM25 >> A"], 1 / POSITIONS["BM25 >> C"]
    assert c["system"] == "BM25 >> C" and c["delta"] == pytest.approx(rr_c.mean() - rr_a.mean())
    assert c["p"] == pytest.approx(sps.ttest_rel(rr_c, rr_a).pvalue, rel=1e-9)
    assert c["family_size"] == 2  # C against A and B, per measure; the baseline family is unchanged
    assert row(table, "BM25 >> A", family="baseline:BM25")["family_size"] == 3
    text = format_markdown(table, ["RR", "P@3"], ORDER, INFO)
    assert "## Comparisons" in text and "| BM25 >> C vs BM25 >> A | head-to-head |" in text
    main = text.split("## Comparisons")[0]
    assert main.count("BM25 >> C vs") == 0  # the comparison rows are not in the main table


def test_condensed_view_beside_full_with_its_own_families():
    table = table_for(views=("full", "condensed"))
    assert set(table.view) == {"full", "condensed"} and len(table) == 2 * len(ORDER) * len(MEASURES)
    # "unjudged" is the last document that is not "rel": removing it moves rel up only where rel is 10th
    # (RM3 >> D everywhere): RR 1/10 in full, 1/9 on the condensed list
    assert row(table, "RM3 >> D", view="condensed")["mean"] == pytest.approx(1 / 9)
    assert row(table, "RM3 >> D", view="full")["mean"] == pytest.approx(1 / 10)
    header = format_markdown(table, ["RR"], ORDER, {**INFO, "views": ["full", "condensed"]}).splitlines()[0]
    assert header == "| System | RR [full] | RR [condensed] |"
    pq = per_query(RUNS, TOPICS, View("condensed", QRELS, True), MEASURES)
    assert set(pq.view) == {"condensed"} and set(pq.measure) == {"RR", "P@3"}


def test_footnote_names_other_tests_and_corrections():
    table = table_for("bonferroni", test="wilcoxon")
    footnote = format_markdown(table, ["RR"], ORDER, {"test": "wilcoxon", "correction": "bonferroni",
                                                         "alpha": 0.01}).split("\n\n", 1)[1]
    assert "Wilcoxon" in footnote and "Bonferroni correction" in footnote and "\u03b1 = 0.01" in footnote
    footnote = format_markdown(table, ["RR"], ORDER, {**INFO, "rel": 2, "views": ["condensed"],
                                                         "dataset": "chorus"})
    assert "labels \u2265 2 as relevant" in footnote and "condensed lists" in footnote and "Dataset: chorus" in footnote
    with pytest.raises(ValueError, match="allowed"):
        format_markdown(table, ["RR"], ORDER, {**INFO, "colour": "red"})
    with pytest.raises(ValueError, match="not in the table"):
        format_markdown(table, ["nDCG@20"], ORDER, INFO)


def test_table_files_keep_raw_and_corrected_pvalues_and_name_condensed_measures_as_ir_measures(tmp_path):
    table = table_for(views=("full", "condensed"))
    paths = write_tables(table, tmp_path / "out")
    assert [p.name for p in paths] == ["table.csv"]  # full and condensed both come from qrels.trec alone
    back = pd.read_csv(paths[0])
    assert {"view", "mean", "p", "p_corrected", "reject", "family", "family_size", "baseline"} <= set(back.columns)
    a = back[(back.system == "BM25 >> A") & (back.measure == "RR") & (back.view == "full")].iloc[0]
    assert a["p"] < 0.05 < a["p_corrected"] and not a["reject"]
    assert set(back[back.view == "condensed"]["measure"]) == {"RR(judged_only=True)", "P(judged_only=True)@3"}
    again = read_table_files(paths)  # spec names again, every row and value as written
    assert set(again["measure"]) == set(table["measure"]) and len(again) == len(table)
    merged = again.merge(table, on=["system", "view", "measure", "family"], suffixes=("", "_mem"))
    assert len(merged) == len(table) and (merged["mean"] == merged["mean_mem"]).all()


def test_a_view_with_labels_of_its_own_goes_to_its_own_file(tmp_path):
    full = table_for()
    paths = write_tables(pd.concat([full, full.assign(view="filled")]), tmp_path / "out")
    assert [p.name for p in paths] == ["table.csv", "table_filled.csv"]
    assert set(pd.read_csv(paths[0])["view"]) == {"full"} and set(pd.read_csv(paths[1])["view"]) == {"filled"}
    assert set(read_table_files(paths)["view"]) == {"full", "filled"}


def test_side_by_side_means_and_difference():
    a = table_for()
    b = a.assign(mean=a["mean"] + 0.01)
    b = b[b.system != "RM3 >> same"]
    both = side_by_side(a, b, ["old", "new"])
    r = both[(both.system == "BM25") & (both.measure == "RR")].iloc[0]
    assert r["mean_new"] - r["mean_old"] == pytest.approx(0.01) and r["difference"] == pytest.approx(0.01)
    gone = both[both.system == "RM3 >> same"]
    assert len(gone) == 2 and gone["mean_new"].isna().all()  # kept, not dropped
    only = side_by_side(a, b, ["old", "new"], measures=["RR"])
    assert set(only["measure"]) == {"RR"} and len(only) == len(ORDER)
    with pytest.raises(ValueError, match="neither table"):
        side_by_side(a, b, ["old", "new"], measures=["ERR"])
    text = format_side_by_side(both, ["old", "new"])
    assert "(+0.0100)" in text and "old \u2192 new" in text
    # a table written before views and families (no such columns) still compares, as the "full" view
    legacy = a.drop(columns=["view", "family"])[a.view == "full"]
    assert side_by_side(legacy, a, ["legacy", "now"])["difference"].abs().max() == 0
