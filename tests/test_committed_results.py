"""Every committed results folder re-derives from its own files by a path independent of superb: ir_measures reads
runs/*.run and qrels.trec (as trec_eval would), scipy tests the per-query values, statsmodels corrects them; the
means, p-values, corrected p-values and family sizes must be table.csv's. Each row of table.csv is recomputed under
its measure's own name, whatever its view column says (the condensed view is written as ir_measures' judged_only
measures), so any evaluator that reads table.csv, the run files and qrels.trec agrees with it; the rows of
table_filled.csv with qrels.trec plus the LLM labels of llm_qrels.trec for unjudged products.

Folders written before ties were broken at the first stage (issue 10) carry first-stage runs with tied scores, whose
rank order is not trec_eval's: their systems are checked only where both run files have strictly decreasing scores,
and test_run_files_have_strictly_decreasing_scores marks them (strict xfail: it fails once they are re-run, so the
mark comes off)."""

from __future__ import annotations

import json
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

RESULTS = Path(__file__).resolve().parents[1] / "results"
# folders with run files (systems.json); a paper's table (`superb table`: results/trec_dl_table) copies the cells
# of such folders, and tests/test_paper_table.py checks them
FOLDERS = sorted(p.parent.name for p in RESULTS.glob("*/table.csv") if (p.parent / "systems.json").is_file())
BEFORE_TIE_RULE = {name for name in FOLDERS
                   if "ties" not in json.loads((RESULTS / name / "provenance.json").read_text())}


@pytest.fixture(autouse=True)
def no_gc_in_statsmodels(monkeypatch):
    monkeypatch.setattr("gc.collect", lambda *args: 0)  # statsmodels' Holm collects garbage on every call


def read_run(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep=r"\s+", header=None, names=["qid", "q0", "docno", "rank", "score", "tag"],
                       dtype={"qid": str, "docno": str})


def strictly_decreasing(run: pd.DataFrame) -> bool:
    """As trec_eval reads scores: 32-bit floats, in rank order."""
    run = run.sort_values(["qid", "rank"], kind="mergesort")
    same = run["qid"].to_numpy()[1:] == run["qid"].to_numpy()[:-1]
    scores = run["score"].to_numpy().astype(np.float32)
    return not (same & (scores[1:] >= scores[:-1])).any()


def folder_data(name: str):
    """table (with a column ``labels``: "human" for table.csv, "filled" for table_filled.csv), runs, qrels per
    labels, topics."""
    folder = RESULTS / name
    table = pd.read_csv(folder / "table.csv").assign(labels="human")
    if "view" not in table.columns:
        table = table.assign(view="full", family=np.where(table["baseline"].notna(), "baseline:" +
                                                          table["baseline"].fillna(""), ""))
    systems = json.loads((folder / "systems.json").read_text())
    human = list(ir_measures.read_trec_qrels(str(folder / "qrels.trec")))
    qrels = {"human": human}
    topics = set(pd.read_csv(folder / "topics.tsv", sep="\t", header=None, dtype=str)[0])
    runs = {s: read_run(folder / f) for s, f in systems.items()}
    if (folder / "table_filled.csv").is_file():  # the "filled" view: human labels, LLM labels where there is none
        judged = {(q.query_id, q.doc_id) for q in human}
        qrels["filled"] = human + [q for q in ir_measures.read_trec_qrels(str(folder / "llm_qrels.trec"))
                                   if (q.query_id, q.doc_id) not in judged]
        table = pd.concat([table, pd.read_csv(folder / "table_filled.csv").assign(labels="filled")],
                          ignore_index=True)
    return table, runs, qrels, topics


def per_query(run: pd.DataFrame, qrels: list, topics: set, measure: str) -> pd.Series:
    m = ir_measures.parse_measure(measure)
    judged = {q.query_id for q in qrels} & topics
    scored = [ir_measures.ScoredDoc(q, d, s) for q, d, s in zip(run["qid"], run["docno"], run["score"])]
    values = {r.query_id: r.value for r in ir_measures.iter_calc([m], qrels, scored) if r.query_id in judged}
    return pd.Series(values).sort_index()


@pytest.mark.parametrize("name", FOLDERS)
def test_table_names_each_view_by_its_measure(name):
    """table.csv: condensed rows carry judged_only in the measure's name, full rows do not; other views elsewhere."""
    table, _, _, _ = folder_data(name)
    human = table[table["labels"] == "human"]
    assert set(human["view"]) <= {"full", "condensed"}
    judged_only = human["measure"].map(lambda m: ir_measures.parse_measure(m).params.get("judged_only", False))
    assert (judged_only == (human["view"] == "condensed")).all()


@pytest.mark.parametrize("name", FOLDERS)
def test_table_re_derives_from_the_run_files(name):
    table, runs, qrels, topics = folder_data(name)
    strict = {s for s, r in runs.items() if strictly_decreasing(r)}
    if name not in BEFORE_TIE_RULE:
        assert strict == set(runs)
    evaluation = json.loads((RESULTS / name / "provenance.json").read_text())["spec"].get("evaluation", {})
    test, correction = evaluation.get("test", "t"), evaluation.get("correction", "holm")
    checked = 0
    for (labels, view, measure), rows in table.groupby(["labels", "view", "measure"]):
        values = {s: per_query(runs[s], qrels[labels], topics, measure) for s in strict}
        for r in rows.itertuples():
            if r.system not in strict:
                continue
            assert r.mean == pytest.approx(values[r.system].mean(), abs=1e-12), (r.system, view, measure)
            assert r.n_queries == len(values[r.system])
            checked += 1
            if not isinstance(r.baseline, str) or r.baseline not in strict:
                continue
            x, y = values[r.system], values[r.baseline]
            if (x == y).all():
                assert np.isnan(r.p) and r.verdict in ("untested", "identical", "by construction")
            elif test == "t":
                assert r.p == pytest.approx(stats.ttest_rel(x, y).pvalue, rel=1e-9), (r.system, view, measure)
            if "ci_low" in table.columns and evaluation.get("interval", "t") == "t" and not (x == y).all():
                d = x - y  # the paired t interval of the mean difference, independently
                low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
                assert (r.delta, r.ci_low, r.ci_high) == (pytest.approx(d.mean(), abs=1e-12),
                                                          pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
        if "role" not in rows.columns:  # written before [[hypotheses]]: families per view and measure
            families_checked(rows, strict, evaluation, correction)
    if "role" in table.columns:  # declared families span measures and views; default ones are per view and measure
        confirmatory = table[table["role"] == "confirmatory"]
        families_checked(confirmatory, strict, evaluation, correction)
        corrected = table[table["role"] == "corrected"]
        for _, rows in corrected.groupby(["labels", "view", "measure"]):
            families_checked(rows, strict, evaluation, correction)
        explored = table[table["role"] == "exploratory"]
        assert explored["p_corrected"].isna().all() and not explored["reject"].astype(bool).any()
        assert set(explored["verdict"]) <= {"exploratory", "identical", "by construction"}
    assert checked > 0


def families_checked(rows: pd.DataFrame, strict: set, evaluation: dict, correction: str) -> None:
    """Each family of ``rows``: its size is its number of tests with a p-value, and statsmodels' correction of
    those p-values gives the table's corrected p-values and rejections."""
    for family, group in rows[rows["family"].fillna("") != ""].groupby("family"):
        if not set(group["system"]) | set(group["baseline"]) <= strict:
            continue
        tested = group.dropna(subset=["p"])
        assert (tested["family_size"] == len(tested)).all(), family
        if len(tested) and correction != "none":
            reject, corrected, _, _ = multipletests(tested["p"], alpha=evaluation.get("alpha", 0.05),
                                                    method=correction)
            np.testing.assert_allclose(tested["p_corrected"], corrected, rtol=1e-9)
            assert tested["reject"].tolist() == list(reject)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(
    strict=True, reason="written before first-stage ties were broken (issue 10); the lead re-runs it"))
    if n in BEFORE_TIE_RULE else n for n in FOLDERS])
def test_run_files_have_strictly_decreasing_scores(name):
    _, runs, _, _ = folder_data(name)
    assert [s for s, r in runs.items() if not strictly_decreasing(r)] == []


def test_setwise_position_bias_stated_in_the_readme_is_the_shipped_responses():
    """results/chorus_dev_comparative/README.md explains setwise's failure by the letter the 1.5B prefers; those
    counts are recomputed here from the answers the folder ships (responses.jsonl.gz), not typed."""
    import gzip
    import math

    folder = RESULTS / "chorus_dev_comparative"
    best, mass, n = {"A": 0, "B": 0, "C": 0}, {"A": 0.0, "B": 0.0, "C": 0.0}, 0
    with gzip.open(folder / "responses.jsonl.gz", "rt") as f:
        for line in f:
            row = json.loads(line)
            if not row["template"].startswith("setwise"):
                continue
            top = row["logprobs"][0][2]
            labels = {k: math.exp(v) for k, v in top.items() if k in best}
            if len(labels) < 3:  # a set of two at the heap's edge
                continue
            n += 1
            best[max(labels, key=labels.get)] += 1
            for k, v in labels.items():
                mass[k] += v / sum(labels.values())
    readme = (folder / "README.md").read_text()
    assert f"Over the {n} setwise requests" in readme
    assert f'"A" {best["A"]} times ("B" once, "C" {best["C"]} times)' in readme and best["B"] == 1
    assert "distribution over A/B/C was " + " / ".join(f"{mass[k] / n:.3f}" for k in "ABC") in readme
