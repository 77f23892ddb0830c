"""`[dataset] name = "irds"` (superb/data/irds.py) on collections registered in ir_datasets from local files, offline.

A small collection the test writes (TSV documents and queries, TREC qrels) is registered under a test id and read
through ir_datasets' own formats; a collection whose download cannot happen (its URL is a closed port on this machine)
fails with an error naming the file ir_datasets wants, where it expects it and the URL, not a traceback; and an
experiment runs over the local collection end to end (PISA BM25, evaluated).
"""

from __future__ import annotations

import uuid

import pytest

from superb.data import load_dataset
from superb.errors import DataError, SpecError

DOCS = [("d1", "trail running shoes for rocky paths"), ("d2", "road running shoes"), ("d3", "coffee mug"),
        ("d4", "tea mug with a lid")]
QUERIES = [("1", "running shoes"), ("2", "mug")]
QRELS = [("1", "d1", 2), ("1", "d2", 1), ("2", "d3", 2), ("2", "d4", 1), ("2", "zz", 1)]


def register(folder, *, docs_url: str | None = None) -> str:
    """Registers a collection over files in ``folder`` under a fresh id; ``docs_url``: its documents are a download
    from that URL instead (cached under ``folder``/cache)."""
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload
    from ir_datasets.util.download import Download, RequestsDownload

    (folder / "docs.tsv").write_text("".join(f"{d}\t{t}\n" for d, t in DOCS))
    (folder / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES))
    (folder / "qrels.txt").write_text("".join(f"{q} 0 {d} {l}\n" for q, d, l in QRELS))
    docs = (Download([RequestsDownload(docs_url, tries=1)], cache_path=str(folder / "cache" / "docs.tsv"))
            if docs_url else LocalDownload(folder / "docs.tsv"))
    irds_id = f"superb-test/{uuid.uuid4().hex[:8]}"
    ir_datasets.registry.register(irds_id, Dataset(TsvDocs(docs), TsvQueries(LocalDownload(folder / "queries.tsv")),
                                                   TrecQrels(LocalDownload(folder / "qrels.txt"),
                                                             {0: "no", 1: "partly", 2: "yes"})))
    return irds_id


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds_home"))
    return tmp_path


def test_a_registered_collection_reads_through_ir_datasets(home):
    ds = load_dataset({"name": "irds", "id": register(home), "rel_threshold": 2})
    assert len(ds.docs_store()) == 4 and ds.doc("d1")["text"] == "trail running shoes for rocky paths"
    assert ds.topics().values.tolist() == [["1", "running shoes"], ["2", "mug"]]
    assert len(ds.qrels()) == 5 and ds.labels == (0, 1, 2) and ds.rel_threshold == 2
    assert ds.stats["qrels_docno_not_in_corpus"] == 1  # "zz": judged, not in the corpus, kept
    assert ds.text_kind == "passage" and ds.prompt_fields == ("text",)


def test_options_are_checked_with_their_path(home):
    irds_id = register(home)
    with pytest.raises(SpecError, match=r"dataset\.id: ir_datasets has no data set 'superb-test/none'; ids starting "
                                        r"alike"):
        load_dataset({"name": "irds", "id": "superb-test/none"})
    with pytest.raises(SpecError, match=r"dataset\.fields: \['title'\] are not fields"):
        load_dataset({"name": "irds", "id": irds_id, "fields": ["title"]})
    with pytest.raises(SpecError, match=r"dataset\.query_field: 'body' is not a field"):
        load_dataset({"name": "irds", "id": irds_id, "query_field": "body"})
    with pytest.raises(SpecError, match=r"dataset\.text_kind: expected one of \['passage', 'product'\]"):
        load_dataset({"name": "irds", "id": irds_id, "text_kind": "poem"})
    with pytest.raises(SpecError, match=r"dataset\.colour: unknown option"):
        load_dataset({"name": "irds", "id": irds_id, "colour": "red"})


def test_a_download_that_cannot_happen_names_the_file_and_the_fix(home):
    # port 9 (discard) on this machine: nothing listens, the connection is refused at once; no real host is asked
    url = "http://127.0.0.1:9/docs.tsv"
    ds = load_dataset({"name": "irds", "id": register(home, docs_url=url)})
    with pytest.raises(DataError) as caught:
        ds.docs_store()
    text = str(caught.value)
    assert "ir_datasets needs a file for the documents" in text
    assert url in text and str(home / "cache" / "docs.tsv") in text and "IR_DATASETS_HOME" in text
    assert ds.topics()["qid"].tolist() == ["1", "2"]  # the parts that are there still read


def test_an_experiment_runs_over_it(home):
    import pandas as pd

    from superb.cli import main

    spec = home / "s.toml"
    spec.write_text(f"""
name = "irds_run"
[dataset]
name = "irds"
id = "{register(home)}"
[evaluation]
measures = ["nDCG@10", "P@1"]
[[pipelines]]
name = "BM25"
first_stage = {{ engine = "pisa", model = "bm25", depth = 10 }}
""")
    assert main(["run", str(spec), "--out", str(home / "out")]) == 0
    table = pd.read_csv(home / "out" / "table.csv")
    assert table[(table["measure"] == "P@1")]["mean"].iloc[0] == 1.0  # each query's first hit is relevant
