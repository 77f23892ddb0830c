"""Queries without a relevant document are counted at each measure's own relevance level (issue 34): a query whose
best label is 1 has a relevant document for nDCG (any positive label gains) but none for P(rel=2)@k, so table.csv's
n_no_relevant differs by measure and the footnote says so."""

from __future__ import annotations

import pandas as pd

from local_data import data, dataset_table, write_data  # noqa: F401 (data: a fixture)
from superb.cli import main


def test_each_measure_counts_at_its_own_level(data):
    write_data(data, qrels=[("1", "d1", 2), ("1", "d3", 1), ("2", "d5", 1), ("2", "d6", 1)])  # query 2: best label 1
    spec = data / "s.toml"
    spec.write_text(f"""
name = "levels"
{dataset_table(data)}
[evaluation]
measures = ["nDCG@5", "P(rel=2)@5"]
[[pipelines]]
name = "BM25"
first_stage = {{ engine = "pisa", model = "bm25", depth = 5 }}
[[pipelines]]
name = "RM3"
first_stage = {{ engine = "pisa", model = "rm3", depth = 5, fb_docs = 2 }}
baseline = "BM25"
""")
    assert main(["run", str(spec), "--out", str(data / "out")]) == 0
    table = pd.read_csv(data / "out" / "table.csv")
    by_measure = table.drop_duplicates("measure").set_index("measure")["n_no_relevant"].to_dict()
    assert by_measure == {"nDCG@5": 0, "P(rel=2)@5": 1}
    text = (data / "out" / "table.md").read_text()
    assert "at a measure's own relevance level: 1 for P(rel=2)@5" in text
