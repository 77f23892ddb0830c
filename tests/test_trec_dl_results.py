"""The committed TREC DL folders (results/trec_dl19, results/trec_dl20) re-derived by an independent evaluator.

pytrec_eval (trec_eval's code, not superb's evaluation) reads each committed run file and qrels.trec and must give
every system's mean in table.csv (full view) for nDCG@10, nDCG@5/20 and P(rel=2)@5/10/20; BM25 must score what
Anserini publishes (nDCG@10 0.5058 on DL19, 0.4796 on DL20), and a row read from a run made outside superb must be
in the table. The paired t-test p-value of every reranker against BM25 is recomputed with scipy from pytrec_eval's
per-query values.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"trec_dl19": 0.5058, "trec_dl20": 0.4796}
MEASURES = {"nDCG@10": ("ndcg_cut.10", "ndcg_cut_10", False), "nDCG@5": ("ndcg_cut.5", "ndcg_cut_5", False),
            "nDCG@20": ("ndcg_cut.20", "ndcg_cut_20", False), "P(rel=2)@5": ("P.5", "P_5", True),
            "P(rel=2)@10": ("P.10", "P_10", True), "P(rel=2)@20": ("P.20", "P_20", True)}


def present() -> list[str]:
    return [name for name in FOLDERS if (ROOT / "results" / name / "table.csv").is_file()]


def read_qrels(path: Path) -> dict:
    qrels: dict = {}
    for line in path.read_text().splitlines():
        q, _, d, label = line.split()
        qrels.setdefault(q, {})[d] = int(label)
    return qrels


def read_run(path: Path) -> dict:
    run: dict = {}
    for line in path.read_text().splitlines():
        q, _, d, _rank, score, _tag = line.split()
        run.setdefault(q, {})[d] = float(score)
    return run


def per_query(qrels: dict, run: dict, measure: str, queries: list[str]) -> list[float]:
    import pytrec_eval

    trec, key, binary = MEASURES[measure]
    judged = {q: {d: int(label >= 2) if binary else label for d, label in docs.items()} for q, docs in qrels.items()}
    found = pytrec_eval.RelevanceEvaluator(judged, {trec}).evaluate(run)
    return [found[q][key] if q in found else 0.0 for q in queries]


@pytest.mark.parametrize("name", present() or [pytest.param("none", marks=pytest.mark.skip(
    reason="no TREC DL results folder committed yet"))])
def test_every_committed_run_scores_its_table_under_pytrec_eval(name):
    import scipy.stats

    folder = ROOT / "results" / name
    table = pd.read_csv(folder / "table.csv")
    full = table[table["view"] == "full"]
    qrels = read_qrels(folder / "qrels.trec")
    queries = sorted(qrels)
    runs = {system: read_run(folder / path) for system, path in json.loads((folder / "systems.json").read_text()).items()}
    assert "BM25" in set(full["system"])
    bm25 = round(float(full[(full["system"] == "BM25") & (full["measure"] == "nDCG@10")]["mean"].iloc[0]), 4)
    assert bm25 == FOLDERS[name]
    outside = [s for s in set(full["system"]) if "outside run" in s]
    assert outside, "a row read from a run file made outside superb"
    checked = 0
    for system in sorted(set(full["system"])):
        run = runs[system]
        for measure in MEASURES:
            row = full[(full["system"] == system) & (full["measure"] == measure)]
            if row.empty:
                continue
            values = per_query(qrels, run, measure, queries)
            assert abs(sum(values) / len(values) - float(row["mean"].iloc[0])) < 1e-9, (system, measure)
            checked += 1
            if system != "BM25" and str(row["baseline"].iloc[0]) == "BM25" and "p" in row:
                base = per_query(qrels, runs["BM25"], measure, queries)
                if values != base:
                    p = scipy.stats.ttest_rel(values, base).pvalue
                    assert abs(p - float(row["p"].iloc[0])) < 1e-9, (system, measure)
    assert checked >= 6 * 3



def test_the_quoted_anchor_numbers_are_those_of_source_md():
    """experiments/anchors_trec_dl.csv quotes the anchors' published nDCG@10 (not run here); each number must be the
    one the data's SOURCE.md read from the anchors' own files, next to its model's name."""
    import os

    mirror = os.environ.get("SUPERB_DATA_MIRROR")
    source = Path(mirror or "") / "trec-dl" / "SOURCE.md"
    if not mirror or not source.is_file():
        pytest.skip("needs SUPERB_DATA_MIRROR with trec-dl/SOURCE.md")
    text = " ".join(source.read_text(encoding="utf-8").split())
    anchors = pd.read_csv(ROOT / "experiments" / "anchors_trec_dl.csv", dtype=str, keep_default_na=False)
    assert len(anchors) == 13
    for row in anchors.itertuples(index=False):
        numbers = [n for n in (row.dl19_ndcg10, row.dl20_ndcg10) if n]
        quoted = " / ".join(numbers)
        if row.anchor == "llm-rankers":
            assert f"{row.method.split(' (')[0]} {row.dl19_ndcg10}" in text, row
            # the passage length each row was run with: 100 tokens for the listwise rows, 128 for the others
            tokens = "100" if row.method.startswith("listwise") else "128"
            assert row.candidates.startswith(f"BM25 top 100 ({tokens} tokens") and \
                f"--passage_length {tokens}" in text, row
        else:
            # rank_llm changed these values on 2025-06-26: the row names the commits its numbers hold at
            assert "1797be2" in row.source and "1b3cabb" in row.source and "1797be2" in text and "1b3cabb" in text
            model = row.model.replace("gpt-4o-mini", "RankGPT (gpt-4o-mini)")
            assert f"{model} {quoted}" in text or f"{row.model.split('-')[0]}" in text and quoted in text, row


def test_the_anchor_tables_write_a_setting_number_as_code_and_leave_names_whole():
    """scripts/trec_dl_readme.py marks the depth of "BM25 top 100" as a setting (code) for the README checker; it wrote
    "BM2`5`" into both READMEs before, splitting the name."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("trec_dl_readme", ROOT / "scripts" / "trec_dl_readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.settings_code("BM25 top 100") == "BM25 top `100`"
    assert module.settings_code("Qwen2.5-7B top 20 of 100") == "Qwen2.5-7B top `20` of `100`"
    for name in FOLDERS:
        readme = ROOT / "results" / name / "README.md"
        if readme.is_file():
            assert "BM2`5`" not in readme.read_text(encoding="utf-8"), readme
