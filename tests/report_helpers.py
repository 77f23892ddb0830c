"""A real results folder for the report tests: `superb run` on the tiny local data set (tests/local_data.py), PISA
BM25 and two non-LLM rerankers chained (BM25 -> shuffle -> random), so no model and no JVM are needed. Made once per
test module (``tiny_folder``); a test that changes the folder works on a copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from local_data import DOCS, QRELS, QUERIES, dataset_table

SPEC = """
name = "tiny_report"
description = "BM25 and two chained non-LLM rerankers on the tiny local data set"
{dataset}
[evaluation]
measures = ["P@5", "nDCG@10"]
[[pipelines]]
name = "BM25"
first_stage = {{ engine = "pisa", model = "bm25", depth = 10 }}
[[pipelines]]
name = "BM25 >> shuffle"
input = "BM25"
rerank = {{ type = "shuffle", seed = 1, top_k = 3 }}
[[pipelines]]
name = "BM25 >> shuffle >> random"
input = "BM25 >> shuffle"
rerank = {{ type = "random", seed = 2 }}
"""


def run_folder(data: Path) -> Path:
    """Runs the spec with `superb run` (which writes report.html at its end); returns the results folder."""
    from superb.cli import main

    spec = data / "tiny_report.toml"
    spec.write_text(SPEC.format(dataset=dataset_table(data)))
    out = data / "results" / "tiny_report"
    assert main(["run", str(spec), "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    """The results folder of SPEC, run once per module (the data set as tests/local_data.py's ``data`` writes it)."""
    root = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SUPERB_HOME", str(root / "home"))
        mp.setenv("SUPERB_PROGRESS", "0")
        (root / "docs.jsonl").write_text("".join(json.dumps({"docno": d, "title": t}) + "\n" for d, t in DOCS))
        (root / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES))
        (root / "qrels.txt").write_text("".join(f"{q} 0 {d} {l}\n" for q, d, l in QRELS))
        yield run_folder(root)
