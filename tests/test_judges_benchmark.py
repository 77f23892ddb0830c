"""Benchmark construction end to end on a tiny local catalogue: real PISA first stage, LLM via the fake server,
and the output folder loaded back with the "local" data set loader."""

from __future__ import annotations

import json
import re

import pytest

from superb.testing.fakeserver import FakeServer, Fault
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


def test_benchmark_spec_errors_name_key_paths():
    from superb.errors import SpecError
    from superb.judges.commands.spec import parse_judge_spec

    base = {"name": "b", "dataset": {"name": "chorus"}}
    cases = [({"colour": 1}, r"^benchmark\.colour: unknown key"), ({"depth": 0}, r"^benchmark\.depth: expected an "
             r"integer >= 1"), ({"engine": "solr"}, r"^benchmark\.engine: 'solr' is not one of"),
             ({"docs": "all"}, r"^benchmark\.docs"), ({"judge": {"fields": ["title"]}}, r"^benchmark\.judge: .*type")]
    for table, pattern in cases:
        with pytest.raises(SpecError, match=pattern):
            parse_judge_spec({**base, "benchmark": table})
    with pytest.raises(SpecError, match=r"^judge: \[judge\] is not allowed beside \[benchmark\]"):
        parse_judge_spec({**base, "benchmark": {}, "judge": {"type": "pointwise"}})
    spec = parse_judge_spec({**base, "benchmark": {}})
    assert spec.benchmark.judge == {"type": "deliberated"} and spec.benchmark.docs == "reference"


def test_benchmark_spec_references_products_and_materializes_them(source, home, capsys):
    from superb.cli import main
    from superb.errors import DataError
    from superb.judges.benchmark import materialize_docs

    config, _ = source
    with FakeServer(responder=responder) as srv:
        spec = home / "bench.toml"
        spec.write_text("\n".join([
            'name = "tiny_bench"', "[dataset]", *[f"{k} = {json.dumps(v)}" for k, v in config.items()],
            "[queries]", 'subset = ["q1", "q2"]', "[llm]", 'model = "fake-model"', f'base_urls = ["{srv.base_url}"]',
            'cache = "off"', "[benchmark]", "depth = 2", 'judge = { type = "pointwise" }']) + "\n")
        assert main(["judge", str(spec), "--out", str(home / "out")]) == 0
        calls = srv.requests
    out = home / "out"
    assert calls == 2 + 4  # two rewrites, 2 queries x 2 pooled products graded
    assert not (out / "docs.jsonl").exists()
    # BM25 top 2: "running shoes" -> p2, p3 (both match "running" and "shoe(s)" in 4 words; p1 has 5 words, so
    # a lower BM25 score); "coffee" -> p4, p6 (the only matches)
    assert sorted((out / "docnos.txt").read_text().split()) == ["p2", "p3", "p4", "p6"]
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["docs"] == "reference" and prov["spec"]["benchmark"]["depth"] == 2
    assert prov["llm"]["model"] == "fake-model"
    assert prov["counts"]["labels"] == {"0": 1, "1": 2, "2": 1, "3": 0} and prov["pool"]["engine"] == "pisa"
    assert "tiny_bench: benchmark of 2 queries, 4 judged pairs" in capsys.readouterr().out
    with pytest.raises(DataError, match="materialize_docs"):
        load_config(out)
    materialize_docs(out)
    bench = load_dataset(load_config(out))
    assert bench.doc("p3")["title"] == PRODUCTS["p3"] and len(list(bench.docs_iter())) == 4


def test_a_benchmark_ships_its_answers_and_re_derives_from_them_with_no_call(source, home):
    from superb.cli import main

    config, _ = source

    def spec_text(server: str, cache: str, mode: str) -> str:
        return "\n".join([
            'name = "tiny_bench"', "[dataset]", *[f"{k} = {json.dumps(v)}" for k, v in config.items()],
            "[queries]", 'subset = ["q1", "q2"]', "[llm]", 'model = "fake-model"', f'base_urls = ["{server}"]',
            f'cache = "{mode}"', f'cache_path = "{cache}"', "[benchmark]", "depth = 2",
            'judge = { type = "pointwise" }']) + "\n"

    spec = home / "bench.toml"
    with FakeServer(responder=responder) as srv:
        spec.write_text(spec_text(srv.base_url, home / "live.sqlite", "normal"))
        assert main(["judge", str(spec), "--out", str(home / "live")]) == 0
        assert srv.requests == 6
    prov = json.loads((home / "live" / "provenance.json").read_text())
    assert prov["responses"]["rows"] == 6 and prov["responses"]["missing_from_cache"] == 0
    assert main(["responses", "replay", str(home / "live"), "--cache", str(home / "fresh.sqlite")]) == 0
    with FakeServer(responder=lambda req: "never asked") as srv:
        spec.write_text(spec_text(srv.base_url, home / "fresh.sqlite", "read-only"))
        assert main(["judge", str(spec), "--out", str(home / "again")]) == 0
        assert srv.requests == 0
    for name in ("qrels.trec", "rewrites.tsv", "judgments.jsonl", "responses.jsonl.gz"):
        assert (home / "again" / name).read_bytes() == (home / "live" / name).read_bytes(), name


@pytest.mark.slow
def test_chorus_superlative_spec_with_the_fake_server(home, monkeypatch):
    """experiments/chorus_superlative.toml as committed, answered by the fake server: 5 queries x 5 products."""
    import os
    from pathlib import Path

    from superb.judges.commands.run import run_judge_spec
    from superb.judges.commands.spec import load_judge_spec

    mirror = os.environ.get("SUPERB_DATA_MIRROR") or Path(__file__).parents[2] / "shared" / "data"
    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(mirror))
    spec = load_judge_spec(Path(__file__).parents[1] / "experiments" / "chorus_superlative.toml")

    def chorus_responder(req: dict) -> str:
        prompt = "".join(m["content"] for m in req["messages"])
        if "Rewrite an online shop search" in prompt:
            return "best " + prompt.rsplit("Search:", 1)[1].split("\n")[0].strip() + " for everyday use"
        return "- good value" if "Product:" not in prompt else "2"

    with FakeServer(responder=chorus_responder) as srv:
        llm = LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,)), cache=None, usage=Usage())
        result = run_judge_spec(spec, home / "superlative", llm=llm)
        calls = srv.requests
    out = home / "superlative"
    assert calls == 5 + 5 + 25  # rewrites, ideal attributes per query, grades
    assert result["counts"]["queries"] == 5 and result["counts"]["judgments"] == 25
    rewrites = (out / "rewrites.tsv").read_text().splitlines()[1:]
    assert len(rewrites) == 5 and all("\tbest " in r and r.endswith("for everyday use\tok") for r in rewrites)
    assert set((out / "qrels.trec").read_text().split()[3::4]) == {"2"}
    assert len((out / "docnos.txt").read_text().split()) == result["counts"]["docs"]
    assert not (out / "docs.jsonl").exists()
    ideals = json.loads((out / "provenance.json").read_text())["judge"]["ideals"]
    assert len(ideals) == 5 and set(ideals.values()) == {"- good value"}  # the deliberated judge's first step
