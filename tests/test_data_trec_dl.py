"""The trec-dl data set (superb/data/trec_dl.py) on the real pinned files, from the data mirror.

What the papers' tables rest on: 43 / 54 judged queries, the candidate passages, NIST's qrels as SOURCE.md counts
them, and BM25 read from the run file scoring what Anserini publishes (nDCG@10 0.5058 / 0.4796), here checked with
pytrec_eval directly (not superb's evaluation) and through `superb run`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from superb.data import load_dataset
from superb.errors import DataError, SpecError

MIRROR = os.environ.get("SUPERB_DATA_MIRROR")
pytestmark = pytest.mark.skipif(not MIRROR or not (Path(MIRROR) / "trec-dl").is_dir(),
                                reason="needs SUPERB_DATA_MIRROR with trec-dl/ (SUPERB_DATA_MIRROR=../shared/data)")


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    return tmp_path


@pytest.mark.parametrize("year, queries, judgments, docs", [(2019, 43, 9260, 4300), (2020, 54, 11386, 5400)])
def test_a_year_has_its_judged_queries_candidates_and_qrels(home, year, queries, judgments, docs):
    ds = load_dataset({"name": "trec-dl", "year": year})
    topics, qrels = ds.topics(), ds.qrels()
    assert len(topics) == queries and set(topics["qid"]) <= set(qrels["qid"])
    assert len(qrels) == judgments
    assert len(ds.docs_store()) <= docs and len(ds.docs_store()) > 0.95 * docs  # a passage twice is one document
    assert ds.rel_threshold == 2 and ds.labels == (0, 1, 2, 3)
    assert ds.text_kind == "passage" and ds.fields == ("text",)
    doc = next(iter(ds.docs_iter()))
    assert set(doc) == {"docno", "text"} and 100 < len(doc["text"]) < 2000
    assert ds.stats["qrels_docno_not_in_corpus"] > 0  # judged passages BM25 did not retrieve stay judged


def test_dl19_label_counts_are_those_of_source_md(home):
    counts = load_dataset({"name": "trec-dl", "year": 2019}).qrels()["label"].value_counts().to_dict()
    assert counts == {0: 5158, 1: 1601, 2: 1804, 3: 697}


def test_bm25_from_the_run_file_scores_the_published_numbers_under_pytrec_eval(home):
    import pytrec_eval

    from superb.trec.run_files import read_run_file

    for year, expected in ((2019, (0.5058, 0.4116)), (2020, (0.4796, 0.3500))):
        ds = load_dataset({"name": "trec-dl", "year": year})
        run = read_run_file(ds.run_file("bm25")).rows
        qrels = ds.qrels()
        qrel_dict: dict = {}
        for q, d, label in qrels.itertuples(index=False):
            qrel_dict.setdefault(q, {})[d] = int(label)
        run_dict: dict = {}
        for q, d, _rank, score in run.itertuples(index=False):
            run_dict.setdefault(q, {})[d] = float(score)
        ndcg = pytrec_eval.RelevanceEvaluator(qrel_dict, {"ndcg_cut.10"}).evaluate(run_dict)
        binary = {q: {d: int(label >= 2) for d, label in docs.items()} for q, docs in qrel_dict.items()}
        prec = pytrec_eval.RelevanceEvaluator(binary, {"P.10"}).evaluate(run_dict)
        means = (sum(v["ndcg_cut_10"] for v in ndcg.values()) / len(ndcg),
                 sum(v["P_10"] for v in prec.values()) / len(prec))
        assert round(means[0], 4) == expected[0] and round(means[1], 4) == expected[1]


def test_superb_run_of_the_run_file_gives_the_published_bm25(home):
    from superb.cli import main

    spec = home / "dl.toml"
    spec.write_text("""
name = "dl19_bm25"
[dataset]
name = "trec-dl"
year = 2019
[evaluation]
measures = ["nDCG@10", "P@10"]
views = ["full"]
[[pipelines]]
name = "BM25"
first_stage = { run = "dataset:bm25" }
[[pipelines]]
name = "BM25 candidates"
first_stage = { run = "dataset:bm25-candidates", depth = 100 }
""")
    assert main(["run", str(spec), "--out", str(home / "out")]) == 0
    import pandas as pd

    table = pd.read_csv(home / "out" / "table.csv")
    full = table[(table["view"] == "full")].set_index(["system", "measure"])["mean"]
    assert round(full[("BM25", "nDCG@10")], 4) == 0.5058
    assert round(full[("BM25 candidates", "nDCG@10")], 4) == 0.5058
    assert round(full[("BM25", "P(rel=2)@10")], 4) == 0.4116


def test_a_wrong_year_or_key_is_refused_with_its_path(home):
    with pytest.raises(SpecError, match=r"dataset\.year: expected one of \[2019, 2020\]"):
        load_dataset({"name": "trec-dl", "year": 2021})
    with pytest.raises(SpecError, match=r"dataset\.split: unknown option"):
        load_dataset({"name": "trec-dl", "year": 2019, "split": "dev"})
    with pytest.raises(SpecError, match=r"first_stage\.run: data set 'trec-dl' provides the runs"):
        load_dataset({"name": "trec-dl", "year": 2019}).run_file("splade")


def test_an_edited_mirror_file_is_refused_naming_it(home, monkeypatch):
    mirror = home / "mirror"
    shutil.copytree(Path(MIRROR) / "trec-dl", mirror / "trec-dl")
    qrels = mirror / "trec-dl" / "qrels.dl19-passage.txt"
    qrels.chmod(0o644)
    qrels.write_text(qrels.read_text().replace(" 3\n", " 2\n", 1))
    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(mirror))
    with pytest.raises(DataError, match=r"checksum mismatch for data file 'qrels\.dl19-passage\.txt'"):
        load_dataset({"name": "trec-dl", "year": 2019}).qrels()
