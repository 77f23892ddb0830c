"""stage_scores.csv.gz (superb.stage_scores): each stage's own score of each system's top 10, written by `superb run`
on the tiny local data set (tests/report_helpers.py: PISA BM25 -> shuffle (top_k 3) -> random). Checked against
paths that do not read the file's writer: the TREC run files (which products, in which order), the random reranker's
scores computed again from its seed over its input run file, BM25's run file (first_stage_score); merge's join
writes the same bytes again; the report's payload carries the scores, and a folder without the file still renders.
"""

from __future__ import annotations

import gzip
import json
import shutil

import numpy as np
import pandas as pd
import pytest

from report_helpers import tiny_folder  # noqa: F401 (a fixture)
from superb.trec.runs import read_run
from superb.stage_scores import FILE, read_stage_scores, stage_scores_frame, with_stage_scores, write_stage_scores

RANDOM = "BM25 >> shuffle >> random"


def runs_of(folder) -> dict[str, pd.DataFrame]:
    systems = json.loads((folder / "systems.json").read_text())
    return {name: read_run(folder / rel) for name, rel in systems.items()}


def test_the_file_holds_the_top_10_of_every_run_file_in_its_order(tiny_folder):
    raw = (tiny_folder / FILE).read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0"  # gzip, mtime 0: the same run gives the same bytes
    assert FILE in json.loads((tiny_folder / "provenance.json").read_text())["files"]
    scores = read_stage_scores(tiny_folder)
    assert list(scores.columns[:4]) == ["system", "qid", "docno", "rank"]
    assert all(c.endswith("_score") for c in scores.columns[4:]) and "random_score" in scores.columns
    for name, run in runs_of(tiny_folder).items():
        for qid, group in run.groupby("qid", sort=False):
            top = group.sort_values("rank").head(10)
            mine = scores[(scores["system"] == name) & (scores["qid"] == qid)]
            assert list(mine["docno"]) == list(top["docno"]) and list(mine["rank"]) == list(top["rank"]), (name, qid)
    assert scores.loc[scores["system"] == "BM25", scores.columns[4:]].isna().all().all()  # a first stage: no stage


def test_the_random_rerankers_scores_equal_its_seed_over_its_input(tiny_folder):
    from superb.transformers.controls import query_rng

    scores = read_stage_scores(tiny_folder)
    runs = runs_of(tiny_folder)
    checked = 0
    for qid, group in runs["BM25 >> shuffle"].groupby("qid", sort=False):
        docnos = list(group.sort_values("rank")["docno"])  # the random reranker's input, in its order
        expected = dict(zip(docnos, query_rng(2, qid).random(len(docnos))))  # seed 2 (report_helpers.run_folder)
        mine = scores[(scores["system"] == RANDOM) & (scores["qid"] == qid)]
        assert len(mine) == min(10, len(docnos))
        for docno, value in zip(mine["docno"], mine["random_score"]):
            assert value == expected[docno]  # exact: full precision through the CSV
            checked += 1
        assert list(mine["random_score"]) == sorted(mine["random_score"], reverse=True)  # rank order agrees
    assert checked == int((scores["system"] == RANDOM).sum()) > 0  # every row of the system
    assert "llm_score" not in scores.columns  # each stage writes only its own column, no copy under another name


def test_first_stage_scores_are_the_engines(tiny_folder):
    scores = read_stage_scores(tiny_folder)
    bm25 = runs_of(tiny_folder)["BM25"].set_index(["qid", "docno"])["score"]
    reranked = scores[scores["system"] != "BM25"]
    engine = bm25.loc[list(zip(reranked["qid"], reranked["docno"]))].to_numpy()
    # the run file holds 32-bit floats, lowered a step where tied (superb.trec.runs)
    assert np.allclose(reranked["first_stage_score"].to_numpy(), engine, rtol=1e-5, atol=0)
    assert len(reranked) > 0


def test_merges_join_writes_the_same_bytes(tiny_folder, tmp_path):
    joined = with_stage_scores(runs_of(tiny_folder), tiny_folder)  # what `superb merge` does with a shard folder
    assert write_stage_scores(joined, tmp_path).read_bytes() == (tiny_folder / FILE).read_bytes()
    assert stage_scores_frame({}).columns.tolist() == ["system", "qid", "docno", "rank"]


def test_a_broken_file_is_named(tiny_folder, tmp_path):
    from superb.errors import DataError

    folder = shutil.copytree(tiny_folder, tmp_path / "copy")
    (folder / FILE).write_bytes(gzip.compress(b"system,qid\nBM25,q1\n"))
    with pytest.raises(DataError, match=r"stage_scores.csv.gz .*\['docno', 'rank'\].*superb run"):
        read_stage_scores(folder)


def test_the_pages_payload_carries_the_scores_and_an_old_folder_still_renders(tiny_folder, tmp_path):
    from superb.report.data import collect
    from superb.report.page import render

    payload = collect(tiny_folder)
    assert payload["scores_stored"] and "random_score" in payload["stage_columns"][RANDOM]
    assert payload["stage_columns"]["BM25"] == []
    scores = read_stage_scores(tiny_folder)
    row = scores[scores["system"] == RANDOM].iloc[0]
    qi = [q["qid"] for q in payload["queries"]].index(row["qid"])
    shown = payload["stage_scores"][RANDOM][qi][str(payload["docs"].index(row["docno"]))]
    k = payload["stage_columns"][RANDOM].index("random_score")
    assert shown[k] == float(f"{row['random_score']:.4g}")

    old = shutil.copytree(tiny_folder, tmp_path / "old")
    (old / FILE).unlink()
    payload = collect(old)
    assert not payload["scores_stored"] and payload["stage_scores"] == {}
    assert "scores not stored in this folder" in render(payload)
