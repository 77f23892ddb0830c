"""Query expansion (transformers/expansion.py) on the fake server: the prompt, the requests per sample, parsing the
answer, the rewritten frame (query_0, query, expansion), counted fallbacks, the restore stage and the spec options.
The `superb run` path (first_stage.expand, rerank chains) on real Chorus data is at the end."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from chorus_specs import chorus_spec
from superb.testing.fakeserver import FakeServer, Fault, Reply
from reranker_helpers import client, prompt_of
from superb.errors import SpecError
from superb.llm.types import Completion
from superb.transformers import BuildContext, build_reranker
from superb.transformers.expansion import QueryExpansion, RestoreQuery, expanded_query, read_expansion

# Characters Terrier's query parser rejects or reads as operators, as a model writes them in a product title.
NASTY = "Men's 15.6\" laptop/notebook: 8GB & 512GB SSD +fast -slow ^2 ~3 (black) [2023]"


def query_of(req: dict) -> str:
    return re.search(r"^Query: (.*)$", prompt_of(req), re.M).group(1)


def catalogue(req: dict) -> Reply:
    """A fake model writing a catalogue entry of the query (labels included, as the real model often does)."""
    q = query_of(req)
    return Reply(f"Product title: {q.title()} Pro 2000\nDescription: a great {q} with warranty")


def topics(*queries: str) -> pd.DataFrame:
    return pd.DataFrame({"qid": [f"q{i}" for i in range(len(queries))], "query": list(queries)})


# ---- pure parsing ---------------------------------------------------------------------------------------------------

def test_read_expansion_strips_labels_and_joins_lines():
    comp = Completion(text="Product Title: AA Battery 8-pack\n\n- Description - long-lasting alkaline cells\n")
    assert read_expansion(comp) == "AA Battery 8-pack long-lasting alkaline cells"
    assert read_expansion(Completion(text="  \n ")) is None
    assert read_expansion(Completion.failure("boom")) is None


def test_expanded_query_repeats_and_sanitises_what_terrier_would_reject():
    q = expanded_query("laptop", [NASTY], repeat=2)
    assert q.startswith("laptop laptop Men s 15 6 laptop notebook 8GB")
    assert not re.search(r"[^\w ]", q)  # word characters and spaces only: nothing for Terrier's parser to misread
    assert expanded_query("laptop", [NASTY], repeat=0).startswith("Men s")  # HyDE's query: the text alone
    assert expanded_query("laptop", [], repeat=0) == "laptop"  # no text: the original query, never empty
    assert expanded_query("laptop", ["a/b"], repeat=1, sanitise=False) == "laptop a/b"


# ---- the transformer ------------------------------------------------------------------------------------------------

def test_one_greedy_call_per_distinct_query_and_pt_rewrite_columns():
    with FakeServer(responder=catalogue) as srv, client(srv) as llm:
        expand = QueryExpansion(llm, repeat=2, template="expansion_product", max_tokens=80)
        res = pd.DataFrame({"qid": ["q1", "q1", "q2"], "query": ["aa battery"] * 2 + ["hdmi cable"],
                            "docno": ["d1", "d2", "d3"], "score": [2.0, 1.0, 1.0]})
        out = expand(res)
        assert srv.requests == 2  # a results frame's rows share their query's answer
        req = srv.received[0]
        assert req["temperature"] == 0 and req["seed"] == 0 and req["max_tokens"] == 80
        assert "catalogue entry" in prompt_of(req) and query_of(req) in ("aa battery", "hdmi cable")
    assert list(out["query_0"]) == list(res["query"])
    assert out["query"].iloc[0] == "aa battery aa battery Aa Battery Pro 2000 a great aa battery with warranty"
    assert out["expansion"].iloc[2] == "Hdmi Cable Pro 2000 a great hdmi cable with warranty"
    assert list(out["docno"]) == ["d1", "d2", "d3"]
    assert expand.stats["calls"] == 2 and expand.stats["queries"] == 2


def test_default_request_is_the_deliberated_ideal_product_request():
    """Sample 0 of the default stage IS the deliberated reranker's (and judge's) first request, so their cached
    answers serve the expansion with no call (the tag is not part of the cache key)."""
    from dataclasses import replace

    from superb.llm import ideal

    stage = QueryExpansion(None, samples=2)
    first, sampled = stage.requests("aa battery")
    assert replace(first, tag="") == replace(ideal.attributes_request("aa battery"), tag="")
    assert (sampled.temperature, sampled.seed) == (0.7, 1)


def test_samples_are_greedy_then_seeded_and_merged():
    with FakeServer(responder=lambda r: Reply(f"text{r['seed']}")) as srv, client(srv) as llm:
        out = QueryExpansion(llm, repeat=1, samples=3, temperature=0.5)(topics("tablet"))
        params = sorted((r["seed"], r["temperature"]) for r in srv.received)
    assert params == [(0, 0.0), (1, 0.5), (2, 0.5)]
    assert out["query"].iloc[0] == "tablet text0 text1 text2"


def test_failed_and_empty_answers_are_counted_fallbacks():
    def responder(req):
        return Reply("" if query_of(req) == "monitor" else "Monitor 27 inch")

    with FakeServer(responder=responder, faults=[Fault.error(500)] * 4) as srv, \
            client(srv, max_retries=0) as llm:
        expand = QueryExpansion(llm, repeat=0)
        out = expand(topics("laptop", "monitor", "mouse"))
    assert expand.stats["failures"] >= 1
    stats = expand.stats
    assert stats["fallback_failed_call"] + stats["fallback_empty_answer"] == 3 - (out["expansion"] != "").sum()
    assert stats["fallback_no_expansion"] == (out["expansion"] == "").sum() >= 1
    for q0, q, text in zip(out["query_0"], out["query"], out["expansion"]):
        assert q == (q0 if text == "" else "Monitor 27 inch")  # no text: the original query, even with repeat 0


def test_empty_frame_makes_no_call_and_has_the_columns():
    with FakeServer() as srv, client(srv) as llm:
        out = QueryExpansion(llm)(topics().astype(str))
        assert srv.requests == 0
    assert {"qid", "query", "query_0", "expansion"} <= set(out.columns)


def test_restore_query_puts_the_original_back_and_keeps_the_expansion():
    with FakeServer(responder=catalogue) as srv, client(srv) as llm:
        out = (QueryExpansion(llm) >> RestoreQuery())(topics("laptop"))
    assert out["query"].iloc[0] == "laptop" and "query_0" not in out.columns
    assert out["expansion"].iloc[0].startswith("Laptop Pro 2000")
    with pytest.raises(ValueError, match="no 'query_0' column.*QueryExpansion"):
        RestoreQuery()(topics("laptop"))


def test_from_spec_is_strict():
    context = BuildContext(llm=object())
    stage = build_reranker({"type": "expand", "repeat": 3, "samples": 2}, context=context, path="p.rerank[0]")
    assert (stage.repeat, stage.samples, stage.template.name) == (3, 2, "deliberated_attributes")
    with pytest.raises(SpecError, match=r"p\.rerank\[0\]\.k: unknown option.*repeat"):
        build_reranker({"type": "expand", "k": 3}, context=context, path="p.rerank[0]")
    with pytest.raises(SpecError, match=r"\.template: expected the name of a prompt template"):
        build_reranker({"type": "expand", "template": "nope"}, context=context, path="p.rerank[0]")
    with pytest.raises(SpecError, match=r"\.sanitise: expected true or false"):
        build_reranker({"type": "expand", "sanitise": "yes"}, context=context, path="p.rerank[0]")
    with pytest.raises(SpecError, match=r"needs an LLM"):
        build_reranker({"type": "expand"}, context=BuildContext(), path="p.rerank[0]")


# ---- inside `superb run`: Terrier first stage with expand, rescoring, HyDE (real Chorus data, fake model) -----------

PIPELINES = """
[[pipelines]]
name = "Q2D"
first_stage = { engine = "terrier", model = "bm25", depth = 20, expand = { repeat = 2 } }
baseline = "PISA BM25"
[[pipelines]]
name = "PISA BM25 >> expanded-bm25"
input = "PISA BM25"
rerank = [ { type = "expand", repeat = 2 }, { type = "bm25", top_k = 20 }, { type = "reset" },
           { type = "fuse", weights = { first_stage = 0.5, bm25 = 0.5 } } ]
"""


def nasty(req: dict) -> Reply:
    return Reply(f"{query_of(req)} {NASTY}")


@pytest.mark.slow
def test_superb_run_with_expansion_on_terrier(chorus_run_home):
    from superb.cli import main

    home, out = chorus_run_home, chorus_run_home / "out"
    queries = ["laptop", "aa battery", "hdmi cable"]
    with FakeServer(responder=nasty) as srv:
        spec = home / "expansion.toml"
        spec.write_text(chorus_spec("expansion", srv.base_url, home / "cache.sqlite", PIPELINES, queries=queries,
                                    first_stage="PISA BM25"))
        assert main(["run", str(spec), "--out", str(out)]) == 0
        assert srv.requests == len(queries)  # both systems read the same cached answer of each query
    usage = pd.read_csv(out / "usage.csv").set_index("system")
    assert usage.loc["Q2D", "calls"] == len(queries) and usage.loc["Q2D", "fallbacks"] == 0
    assert usage.loc["PISA BM25 >> expanded-bm25", "cache_hits"] == len(queries)
    systems = json.loads((out / "systems.json").read_text())
    for name in ("Q2D", "PISA BM25 >> expanded-bm25"):
        run = pd.read_csv(out / systems[name], sep=" ", header=None, names=["qid", "q0", "docno", "rank", "score", "t"])
        assert run.groupby("qid").size().min() > 0, name
    from superb.run.experiment import run_experiment
    from superb.run.spec import load_spec

    bad = PIPELINES.replace("expand = { repeat = 2 }", "expand = { k = 2 }")
    spec.write_text(chorus_spec("bad", srv.base_url, home / "cache.sqlite", bad, queries=queries,
                                first_stage="PISA BM25"))
    with pytest.raises(SpecError, match=r"pipelines\[1\]\.first_stage\.expand\.k: unknown option"):
        run_experiment(load_spec(spec), dry_run=True, progress=False)
