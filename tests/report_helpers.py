"""A real results folder for the report tests: `superb run` on the tiny local data set (tests/local_data.py), PISA
BM25 and two non-LLM rerankers chained (BM25 -> shuffle -> random), so no model and no JVM are needed."""

from __future__ import annotations

from pathlib import Path

from local_data import dataset_table

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
