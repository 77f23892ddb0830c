"""Writes a TREC DL run made OUTSIDE superb, so that a spec can put another tool's output in its table as a row.

Plain PyTerrier, no superb import: Terrier's DPH (a parameter-free divergence-from-randomness model) rescores each
query's 100 BM25 candidates from rank_llm's candidates file, using only those passages' text (pt.text.scorer builds a
small in-memory index per query, so term statistics come from the candidates, not from MS MARCO). The run is written
in TREC format with the tag `pyterrier-dph`; experiments/runs/ holds the committed output, read by
experiments/trec_dl19.toml and trec_dl20.toml as `first_stage = { run = "experiments/runs/..." }`.

    python scripts/outside_run.py ../shared/data/trec-dl/retrieve_results_dl19.json experiments/runs/dl19_pyterrier_dph.run
"""

from __future__ import annotations

import json
import sys

import pandas as pd
import pyterrier as pt


def main(candidates: str, out: str) -> None:
    entries = json.loads(open(candidates, encoding="utf-8").read())
    rows = [{"qid": str(hit["qid"]), "query": entry["query"], "docno": str(hit["docid"]), "text": hit["content"],
             "score": float(hit["score"]), "rank": int(hit["rank"]) - 1}
            for entry in entries for hit in entry["hits"]]
    frame = pd.DataFrame(rows)
    frame["query"] = frame["query"].str.replace(r"[^\w\s]", " ", regex=True)  # Terrier's query parser wants words
    scorer = pt.text.scorer(body_attr="text", wmodel="DPH")
    scored = scorer.transform(frame)
    scored = scored.sort_values(["qid", "score", "docno"], ascending=[True, False, False], kind="mergesort")
    scored["rank"] = scored.groupby("qid").cumcount() + 1
    pt.io.write_results(scored[["qid", "docno", "rank", "score"]], out, format="trec", run_name="pyterrier-dph")
    print(f"{out}: {scored['qid'].nunique()} queries, {len(scored)} lines")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python scripts/outside_run.py CANDIDATES.json OUT.run")
    main(sys.argv[1], sys.argv[2])
