"""Loaders on real-format files that are wrong (issue 12.8): a loader's error reaches the user through both index
builders (PISA used to end in a bare StopIteration), bytes that are not UTF-8 name the file, line and column, and
dropped or ignored queries are printed and written to the provenance that results folders store."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pandas as pd
import pytest

from local_data import dataset_table
from superb.data import load_dataset
from superb.errors import DataError
from superb.pipelines import first_stage
from superb.pipelines.index_cache import index_key
from test_data_loaders import _write_esci, _write_local, _write_wands

QUERY = pd.DataFrame({"qid": ["1"], "query": ["bed"]})


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


def local(folder) -> dict:
    return {"name": "local", "docs": str(folder / "docs.jsonl"), "queries": str(folder / "queries.tsv"),
            "qrels": str(folder / "qrels.txt")}


# ---- a loader's error through the index builders ------------------------------------------------------------------
def test_pisa_reports_a_missing_column_not_stop_iteration(tmp_path):
    folder = _write_wands(tmp_path / "wands")
    (folder / "product.csv").write_text("product_id\tproduct_name\n0\tsolid wood bed\n")
    ds = load_dataset({"name": "wands", "path": str(folder)})
    with pytest.raises(DataError, match=r"product\.csv: missing columns \['product_class'"):
        first_stage(ds, engine="pisa")(QUERY)
    assert not list((tmp_path / "home").rglob("*.tmp-*"))  # the failed build left nothing behind


def test_pisa_reports_bad_bytes_with_file_and_line(tmp_path):
    folder = _write_wands(tmp_path / "wands")
    product = folder / "product.csv"
    lines = product.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b"slow cooker", b"slow cook\xe9r")  # latin-1 e-acute
    product.write_bytes(b"\n".join(lines))
    ds = load_dataset({"name": "wands", "path": str(folder)})
    with pytest.raises(DataError, match=r"product\.csv:3: not UTF-8 text: byte\(s\) b'\\xe9' at column \d+"):
        first_stage(ds, engine="pisa")(QUERY)


def test_pisa_reports_an_esci_products_file_without_its_columns(tmp_path):
    folder = _write_esci(tmp_path / "esci")
    pd.DataFrame({"product_id": ["B01"], "product_locale": ["us"]}).to_parquet(
        folder / "shopping_queries_dataset_products.parquet")
    ds = load_dataset({"name": "esci", "path": str(folder)})
    with pytest.raises(DataError, match=r"shopping_queries_dataset_products\.parquet: cannot read columns"):
        first_stage(ds, engine="pisa")(pd.DataFrame({"qid": ["10"], "query": ["usb cable"]}))


def test_an_esci_file_that_is_not_parquet_is_named(tmp_path):
    folder = _write_esci(tmp_path / "esci")
    (folder / "shopping_queries_dataset_examples.parquet").write_bytes(b"\x00\xff not parquet" * 50)
    with pytest.raises(DataError, match=r"examples\.parquet: cannot read columns.*Parquet magic bytes"):
        load_dataset({"name": "esci", "path": str(folder)}).topics()


def test_an_empty_corpus_is_a_data_error(tmp_path):
    folder = _write_local(tmp_path / "local")
    (folder / "docs.jsonl").write_text("")
    ds = load_dataset(local(folder))
    with pytest.raises(DataError, match=r"data set 'local' has no documents to index"):
        first_stage(ds, engine="pisa")(QUERY)


@pytest.mark.java
def test_terrier_reports_the_loaders_error_too(tmp_path):
    folder = _write_wands(tmp_path / "wands")
    (folder / "product.csv").write_text("product_id\tproduct_name\n0\tsolid wood bed\n")
    ds = load_dataset({"name": "wands", "path": str(folder)})
    with pytest.raises(DataError, match=r"product\.csv: missing columns"):
        first_stage(ds, engine="terrier")(QUERY)


# ---- bytes that are not UTF-8 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, line", [("docs.jsonl", 2), ("queries.tsv", 3), ("qrels.txt", 4)])
def test_local_files_that_are_not_utf8_name_file_line_and_column(tmp_path, name, line):
    folder = _write_local(tmp_path / "local")
    rows = (folder / name).read_bytes().split(b"\n")
    rows[line - 1] = rows[line - 1][:3] + b"\x96" + rows[line - 1][3:]  # a cp1252 dash
    (folder / name).write_bytes(b"\n".join(rows))
    with pytest.raises(DataError) as info:
        ds = load_dataset(local(folder))
        ds.topics(), ds.qrels()
    msg = str(info.value)
    assert msg.startswith(f"{folder / name}:{line}: not UTF-8 text: byte(s) b'\\x96' at column 4")
    assert "Save the file as UTF-8" in msg


def test_wands_query_file_that_is_not_utf8(tmp_path):
    folder = _write_wands(tmp_path / "wands")
    (folder / "query.csv").write_bytes(b"query_id\tquery\tquery_class\n0\tsalon chair\tChairs\n1\tcaf\xe9 table\tTables\n")
    with pytest.raises(DataError, match=r"query\.csv:3: not UTF-8 text"):
        load_dataset({"name": "wands", "path": str(folder)}).topics()


# ---- dropped and ignored queries: printed and in the provenance ----------------------------------------------------
def test_empty_queries_and_qids_only_in_qrels_are_logged_and_in_provenance(tmp_path, caplog):
    folder = _write_local(tmp_path / "local")  # query "2" is blank; add qrels for a qid "9" that has no query
    with open(folder / "qrels.txt", "a") as handle:
        handle.write("9 0 d1 1\n9 0 d2 0\n")
    ds = load_dataset(local(folder))
    key_before = index_key(ds, "pisa", ("text",), {})[0]
    with caplog.at_level(logging.WARNING, logger="superb.data.base"):
        ds.topics()
    messages = [r.getMessage() for r in caplog.records]
    assert "data set 'local': 1 queries with empty text dropped (qids 2), with their 1 qrels" in messages
    assert ("data set 'local': 1 qids have qrels but no query text (qids 9; 2 qrels): no run can retrieve for them, "
            "so they are ignored") in messages
    checks = ds.provenance()["checks"]
    assert checks == {"queries_dropped_empty": 1, "qrels_dropped_empty_query": 1, "qids_only_in_qrels": 1,
                      "qrels_qid_not_in_topics": 2}
    assert index_key(ds, "pisa", ("text",), {})[0] == key_before  # the counts are not part of the index key


def test_superb_run_prints_them_and_stores_them_in_provenance_json(tmp_path):
    folder = _write_local(tmp_path / "local")
    with open(folder / "qrels.txt", "a") as handle:
        handle.write("9 0 d1 1\n")
    spec = tmp_path / "spec.toml"
    spec.write_text(f"""
name = "checks"
{dataset_table(folder)}
[evaluation]
measures = ["nDCG@10"]
[[pipelines]]
name = "BM25"
first_stage = {{ engine = "pisa", model = "bm25", depth = 10 }}
""")
    # a subprocess, as a user runs it: pytest's own log capture would hide what the CLI prints on stderr
    done = subprocess.run([sys.executable, "-m", "superb.cli", "run", str(spec), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert "1 queries with empty text dropped (qids 2)" in err and "1 qids have qrels but no query text (qids 9" in err
    checks = json.loads((tmp_path / "out" / "provenance.json").read_text())["dataset"]["checks"]
    assert checks["queries_dropped_empty"] == 1 and checks["qids_only_in_qrels"] == 1
    assert checks["docs_empty_text"] == 1  # d3 has no text: kept, counted
