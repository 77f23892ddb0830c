"""results/chorus_expansion_test's declared family (experiments/chorus_expansion_test.declared.toml: two systems x
{BM25 >> bi-encoder, BM25} x {condensed, filled} on nDCG@10, one family, Holm over all eight) recomputed from the
folder's run files and labels by pytrec_eval, scipy and a hand-written Holm (none of superb's code): the raw and
corrected p-values equal declared_family.csv, and only the filled view against BM25 survives (issue 34)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "results" / "chorus_expansion_test"


def labels(*files: Path) -> dict:
    out: dict = {}
    for file in files:  # earlier files win: human labels before the LLM's
        for line in file.read_text().splitlines():
            q, _, d, label = line.split()
            out.setdefault(q, {}).setdefault(d, int(label))
    return out


def run_of(path: Path) -> dict:
    out: dict = {}
    for line in path.read_text().splitlines():
        q, _, d, _, score, _ = line.split()
        out.setdefault(q, {})[d] = float(score)
    return out


def ndcg10(qrels: dict, run: dict, queries: list[str]) -> list[float]:
    import pytrec_eval

    found = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return [found[q]["ndcg_cut_10"] if q in found else 0.0 for q in queries]


def holm(p: list[float]) -> list[float]:
    m, order = len(p), sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def test_the_declared_family_recomputed_independently():
    from scipy import stats

    human = labels(FOLDER / "qrels.trec")
    filled = labels(FOLDER / "qrels.trec", FOLDER / "llm_qrels.trec")
    queries = [line.split("\t")[0] for line in (FOLDER / "topics.tsv").read_text().splitlines()]
    systems = json.loads((FOLDER / "systems.json").read_text())
    runs = {name: run_of(FOLDER / path) for name, path in systems.items()}

    def values(system: str, view: str) -> list[float]:
        run = runs[system]
        if view == "condensed":  # unjudged documents removed before scoring
            run = {q: {d: s for d, s in docs.items() if d in human.get(q, {})} for q, docs in run.items()}
            return ndcg10(human, run, queries)
        return ndcg10(filled, run, queries)

    declared = tomllib.loads((ROOT / "experiments" / "chorus_expansion_test.declared.toml").read_text())["hypotheses"]
    tests = [(h["system"], h["against"], v) for h in declared for v in h["views"]]
    raw = [stats.ttest_rel(values(s, v), values(a, v)).pvalue for s, a, v in tests]
    corrected = holm(raw)
    table = pd.read_csv(FOLDER / "declared_family.csv")
    assert len(table) == len(tests) == 8
    for (s, a, v), p, ph in zip(tests, raw, corrected):
        row = table[(table["system"] == s) & (table["against"] == a) & (table["view"] == v)].iloc[0]
        assert row["p"] == pytest.approx(p, abs=1e-9) and row["p_holm"] == pytest.approx(ph, abs=1e-9), (s, a, v)
        assert bool(row["reject"]) == (ph <= 0.05)
    survivors = table[table["reject"]]
    assert set(zip(survivors["against"], survivors["view"])) == {("BM25", "filled")}
