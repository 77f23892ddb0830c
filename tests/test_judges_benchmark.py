"""Benchmark construction end to end on a tiny local catalogue: real PISA first stage, LLM via the fake server,
and the output folder loaded back with the "local" data set loader."""

from __future__ import annotations

import json
import re

import pytest

from fakeserver import FakeServer, Fault
from superb.data import load_dataset
from superb.judges.benchmark import build_benchmark, clean_rewrite, load_config
from superb.llm import LLMClient, LLMConfig, Usage

PRODUCTS = {
    "p1": "g3 trail running shoes waterproof", "p2": "g1 running shoe laces", "p3": "g2 running shoes road",
    "p4": "g0 coffee grinder", "p5": "g3 espresso machine", "p6": "g1 coffee mug", "p7": "g0 hdmi cable",
}


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.fixture
def source(home):
    folder = home / "src"
    folder.mkdir()
    (folder / "docs.jsonl").write_text("".join(json.dumps({"docno": d, "title": t}) + "\n" for d, t in PRODUCTS.items()))
    (folder / "queries.tsv").write_text("q1\trunning shoes\nq2\tcoffee\nq3\tzzz unknown words\n")
    (folder / "qrels.trec").write_text("q1 0 p1 1\nq2 0 p5 1\nq3 0 p7 0\n")
    config = {"name": "local", "docs": str(folder / "docs.jsonl"), "queries": str(folder / "queries.tsv"),
              "qrels": str(folder / "qrels.trec")}
    return config, load_dataset(config)


def responder(req: dict) -> str:
    prompt = "".join(m["content"] for m in req["messages"])
    if "Rewrite an online shop search" in prompt:
        query = prompt.rsplit("Search:", 1)[1].split("\n")[0].strip()
        return {"running shoes": '"best running shoes for trails"', "coffee": "coffee -> best coffee for mornings"}.get(
            query, "")
    if "Product:" not in prompt:  # deliberated: ideal attributes
        return "- sturdy\n- good value"
    m = re.search(r"\bg([0-3])\b", prompt.rsplit("Product:", 1)[1])
    return m.group(1) if m else "?"


def test_clean_rewrite():
    assert clean_rewrite('"best shoes for trail running"', "trail shoes") == "best shoes for trail running"
    assert clean_rewrite("\nSearch: best tv for gaming\nmore", "tv") == "best tv for gaming"
    assert clean_rewrite("tv -> best tv for a bright room", "tv") == "best tv for a bright room"
    assert clean_rewrite("", "tv") is None and clean_rewrite("x" * 200, "tv") is None


def test_build_benchmark_writes_a_loadable_dataset(source, home):
    config, ds = source
    with FakeServer(responder=responder) as srv:
        llm = LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,)), cache=None, usage=Usage())
        result = build_benchmark(ds, llm, home / "bench", depth=3, engine="pisa", dataset_config=config)
    out = home / "bench"
    for name in ("queries.tsv", "qrels.trec", "docs.jsonl", "rewrites.tsv", "judgments.jsonl", "provenance.json"):
        assert (out / name).is_file(), name
    rewrites = (out / "rewrites.tsv").read_text().splitlines()
    assert "q1-best\tq1\trunning shoes\tbest running shoes for trails\tok" in rewrites
    assert "q2-best\tq2\tcoffee\tbest coffee for mornings\tok" in rewrites
    assert "q3-best\tq3\tzzz unknown words\tbest zzz unknown words\tfallback" in rewrites
    assert result["stats"]["rewrite_fallback"] == 1
    bench = load_dataset(load_config(out))
    topics = bench.topics().set_index("qid")["query"].to_dict()
    # q3's words match no product: no candidates, so the query is left out (and counted)
    assert topics == {"q1-best": "best running shoes for trails", "q2-best": "best coffee for mornings"}
    assert result["stats"]["queries_without_candidates"] == 1
    qrels = bench.qrels()
    labels = {(q, d): l for q, d, l in qrels.itertuples(index=False)}
    # BM25 top 3 for "running shoes": p1, p3, p2 (all contain "running"); for "coffee": p4, p6 only
    assert set(labels) == {("q1-best", "p1"), ("q1-best", "p2"), ("q1-best", "p3"), ("q2-best", "p4"),
                           ("q2-best", "p6")}
    assert labels[("q1-best", "p1")] == 3 and labels[("q1-best", "p2")] == 1 and labels[("q2-best", "p4")] == 0
    assert bench.doc("p1")["title"] == PRODUCTS["p1"] and bench.stats["qrels_docno_not_in_corpus"] == 0
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["model"] == "fake-model" and prov["templates"]["rewrite"].startswith("judge_superlative@")
    assert prov["templates"]["grade"].startswith("deliberated_label@")
    assert prov["counts"]["judgments"] == 5 and prov["counts"]["status"] == {"ok": 5, "default": 0, "failed": 0}
    assert prov["source_dataset"]["config"] == config and prov["pool"]["engine"] == "pisa"


def test_failed_rewrite_call_falls_back_and_is_counted(source, home):
    config, ds = source
    with FakeServer(responder=responder, faults=[Fault.error(500)]) as srv:
        llm = LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,), max_retries=0, concurrency=1),
                        cache=None, usage=Usage())
        result = build_benchmark(ds, llm, home / "bench2", depth=2, engine="pisa",
                                 topics=ds.topics().iloc[:1], judge_options={"type": "pointwise"})
    assert result["stats"]["rewrite_failed_calls"] == 1
    assert "q1-best\tq1\trunning shoes\tbest running shoes\tfallback" in (home / "bench2" / "rewrites.tsv").read_text()
