"""More first stages over TREC DL (issue 49, item 2): trec-dl's `first_stages`, gzipped candidates in a mirror and as
a `candidates` file, and a candidates data set with more files. Real files from the data mirror; the nDCG@10 values
are the ones the mirror's first-stages/SOURCE.md gives (equal to Anserini's published values), computed here with
ir_measures on the data set's own run files."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import ir_measures
import pytest

from superb.data import load_dataset
from superb.data.trec_dl_files import first_stage_files
from superb.digest import sha256_file
from superb.errors import DataError, SpecError
from superb.trec.run_files import read_run_file

MIRROR = os.environ.get("SUPERB_DATA_MIRROR")
pytestmark = pytest.mark.skipif(not MIRROR or not (Path(MIRROR) / "trec-dl" / "first-stages").is_dir(),
                                reason="needs SUPERB_DATA_MIRROR with trec-dl/first-stages/")


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    return tmp_path


def _ndcg10(run_path: Path, qrels) -> float:
    run = read_run_file(run_path).rows.rename(columns={"qid": "query_id", "docno": "doc_id"})
    q = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    return ir_measures.calc_aggregate([ir_measures.nDCG @ 10], q, run)[ir_measures.nDCG @ 10]


@pytest.mark.parametrize("year, passages, judged_with_text, ndcg", [
    (2019, 10852, 3834, {"bm25_rm3": 0.5216, "splade_pp_ed": 0.7308, "tasb": 0.7210, "ada2": 0.7035}),
    (2020, 14091, 5004, {"bm25_rm3": 0.4896, "splade_pp_ed": 0.7197, "tasb": 0.6854, "ada2": 0.6759}),
])
def test_all_first_stages_join_their_passages_and_score_what_anserini_publishes(home, year, passages, judged_with_text,
                                                                                ndcg):
    ds = load_dataset({"name": "trec-dl", "year": year, "first_stages": "all"})
    docs = ds.docs_store()
    assert len(docs) == passages
    qrels = ds.qrels()
    # judged pairs whose passage the data set holds: SOURCE.md's 3,831 / 4,999 in each query's own top 100, plus 3 / 5
    # judged for one query and retrieved only for another (the text is the passage's, whichever query retrieved it)
    assert int(qrels["docno"].isin(set(docs)).sum()) == judged_with_text
    assert ds.run_names() == ["bm25", "bm25-candidates", "bm25_rm3", "splade_pp_ed", "tasb", "ada2"]
    for name, expected in ndcg.items():
        assert round(_ndcg10(ds.run_file(name), qrels), 4) == expected
    # the fetched candidates are the upstream JSON (the mirror holds it gzipped): its sha256 is the pinned one
    pinned = first_stage_files("tasb", year)["candidates"]
    local = Path(os.environ["SUPERB_HOME"]) / "data" / "trec-dl" / pinned.name
    assert local.is_file() and sha256_file(local) == pinned.sha256 and local.stat().st_size == pinned.size
    assert {f["role"] for f in ds.provenance()["files"]} >= {"tasb candidates", "tasb run"}


def test_without_first_stages_the_year_is_as_before(home):
    ds = load_dataset({"name": "trec-dl", "year": 2019})
    assert len(ds.docs_store()) == 4297 and ds.run_names() == ["bm25", "bm25-candidates"]
    with pytest.raises(SpecError, match=r"provides the runs \['bm25', 'bm25-candidates'\], not 'tasb'.*first_stages"):
        ds.run_file("tasb")


@pytest.mark.parametrize("value, message", [
    ("some", r"dataset\.first_stages: expected \"all\" or a list"),
    (["tasb", "tasb"], r"at most once"),
    (["colbert"], r"\['colbert'\]"),
])
def test_bad_first_stages_are_spec_errors(home, value, message):
    with pytest.raises(SpecError, match=message):
        load_dataset({"name": "trec-dl", "year": 2019, "first_stages": value})


def test_a_damaged_gzip_in_the_mirror_is_a_data_error_naming_it(home, tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    src = Path(MIRROR) / "trec-dl"
    shutil.copytree(src, mirror / "trec-dl", ignore=shutil.ignore_patterns("first-stages"))
    folder = mirror / "trec-dl" / "first-stages" / "D_BERT_KD_TASB"
    folder.mkdir(parents=True)
    data = (src / "first-stages" / "D_BERT_KD_TASB" / "retrieve_results_dl19.json.gz").read_bytes()
    (folder / "retrieve_results_dl19.json.gz").write_bytes(data[: len(data) // 2])  # truncated in transfer
    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(mirror))
    ds = load_dataset({"name": "trec-dl", "year": 2019, "first_stages": ["tasb"]})
    with pytest.raises(DataError, match=r"retrieve_results_dl19\.json\.gz"):
        ds.docs_store()
    assert not list((tmp_path / "home").rglob("*.part"))  # nothing half-written left behind


def _gzip_copy(src: Path, dst: Path) -> Path:
    dst.write_bytes(gzip.compress(src.read_bytes()))
    return dst


def test_a_candidates_file_may_be_gzipped_and_take_more_files(home, tmp_path):
    stages = Path(MIRROR) / "trec-dl"
    plain = stages / "retrieve_results_dl19.json"
    gz = _gzip_copy(plain, tmp_path / "bm25.json.gz")
    qrels = stages / "qrels.dl19-passage.txt"
    a = load_dataset({"name": "candidates", "file": str(plain), "qrels": str(qrels), "rel_threshold": 2})
    b = load_dataset({"name": "candidates", "file": str(gz), "qrels": str(qrels), "rel_threshold": 2})
    assert dict(a.docs_store()) == dict(b.docs_store())
    assert read_run_file(b.run_file("candidates")).rows.equals(read_run_file(a.run_file("candidates")).rows)
    splade = stages / "first-stages" / "SPLADE_P_P_ENSEMBLE_DISTIL" / "retrieve_results_dl19.json.gz"
    c = load_dataset({"name": "candidates", "file": str(gz), "qrels": str(qrels), "rel_threshold": 2,
                      "more_files": [str(splade)]})
    assert c.run_names() == ["candidates", "retrieve_results_dl19"]
    assert set(c.docs_store()) > set(b.docs_store())
    assert round(_ndcg10(c.run_file("retrieve_results_dl19"), c.qrels()), 4) == 0.7308
    with pytest.raises(SpecError, match=r"more_files\[1\].*second run named 'retrieve_results_dl19'"):
        load_dataset({"name": "candidates", "file": str(gz), "qrels": str(qrels),
                      "more_files": [str(splade), str(splade)]})
