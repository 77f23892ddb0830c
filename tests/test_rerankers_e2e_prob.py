"""End to end on the REAL embedded 0.5B model: the rerankers that read label probabilities (pairwise_prob, setwise,
listwise and sliding by likelihood, permutation self-consistency, the deliberated yes/no and checklist labels) on
one Chorus query, PISA BM25 top 7, k = 5.

Checks that the whole path works with a real model and real data (not that the 0.5B is good): docnos preserved, calls
as the strategy says, llama.cpp's logprobs read (no fallback), letters found in the top logprobs. One server, one index
and one response cache (a temporary file) for the module, so that the deliberated attributes are generated once.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.model, pytest.mark.slow]

DEPTH, K = 7, 5


def _mirror() -> Path:
    value = os.environ.get("SUPERB_DATA_MIRROR")
    return Path(value) if value else Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="module")
def llm(tmp_path_factory):
    from superb.errors import DataError, MissingDependencyError
    from superb.llm import LLMClient, LLMConfig
    from superb.llm.cache import ResponseCache
    from superb.llm.model import MODELS, resolve_model
    from superb.llm.server import EmbeddedServer

    try:
        path = resolve_model("0.5b", download=False)
    except (DataError, MissingDependencyError, FileNotFoundError) as e:
        pytest.skip(f"the 0.5B model is not available offline: {e}")
    cache = ResponseCache(tmp_path_factory.mktemp("llm-cache") / "cache.sqlite")
    with EmbeddedServer(path, alias=MODELS["0.5b"].alias, n_ctx=2048) as srv:
        client = LLMClient(LLMConfig(model=srv.alias, base_urls=(srv.base_url,)), cache=cache)
        yield client
        client.close()
    cache.close()


@pytest.fixture(scope="module")
def chorus_run(tmp_path_factory):
    mirror = _mirror()
    if not (mirror / "chorus-icecat" / "1.json.zip").is_file():
        pytest.skip(f"Chorus mirror not found at {mirror}; set SUPERB_DATA_MIRROR")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SUPERB_HOME", str(tmp_path_factory.mktemp("superb-home")))
        mp.setenv("SUPERB_DATA_MIRROR", str(mirror))
        from superb.data import load_dataset
        from superb.pipelines import first_stage

        ds = load_dataset({"name": "chorus"})
        topics = ds.topics()
        run = first_stage(ds, engine="pisa", depth=DEPTH)(topics[topics["query"] == "aa battery"])
        yield ds, run


def build(options, chorus_run, llm):
    from superb.transformers import BuildContext, build_reranker

    ds, run = chorus_run
    rr = build_reranker({**options, "top_k": K}, context=BuildContext(dataset=ds, llm=llm),
                        path=f"e2e.{options['type']}")
    out = rr(run)
    assert sorted(out["docno"]) == sorted(run["docno"])
    assert sorted(out["rank"]) == list(range(len(run)))
    assert rr.stats["failures"] == 0
    assert sum(v for k, v in rr.stats.items() if k.startswith("fallback_")) == 0  # logprobs with letters, every time
    return rr, out


def test_pairwise_prob(llm, chorus_run):
    rr, out = build({"type": "pairwise_prob", "strategy": "allpairs"}, chorus_run, llm)
    assert rr.stats["calls"] == 2 * 10 == rr.stats["pref_answered_logprobs"]
    head = out.sort_values("rank").head(K)
    assert head["llm_score"].sum() == pytest.approx(10.0) and head["llm_score"].nunique() > 1


def test_setwise_heap_debiased(llm, chorus_run):
    rr, out = build({"type": "setwise", "strategy": "heap", "set_size": 3, "select": 3, "debias": True},
                    chorus_run, llm)
    asked = rr.stats["comparisons"] - rr.stats["comparisons_memo"]
    assert rr.stats["calls"] == 2 * asked == rr.stats["answered_logprobs"] > 0
    assert out["setwise_score"].notna().sum() == K


def test_listwise_likelihood_with_self_consistency(llm, chorus_run):
    rr, out = build({"type": "listwise", "method": "likelihood", "shuffles": 2}, chorus_run, llm)
    assert rr.stats["calls"] == 2 == rr.stats["consistency_rankings"] == rr.stats["answered_logprobs"]
    assert rr.stats["likelihood_absent"] <= 2 * K


def test_sliding_likelihood(llm, chorus_run):
    rr, _ = build({"type": "sliding", "method": "likelihood", "window": 3, "step": 2}, chorus_run, llm)
    assert rr.stats["calls"] == rr.stats["windows"] == 2


@pytest.mark.parametrize("label", ["yesno", "checklist"])
def test_deliberated_labels(llm, chorus_run, label):
    rr, out = build({"type": "deliberated", "label": label, "attribute_tokens": 64}, chorus_run, llm)
    assert rr.stats["calls"] == K + 1  # the attributes (a response-cache hit for the second label) + one per product
    scores = out["deliberated_score"].dropna()
    assert len(scores) == K and scores.between(0, 1).all() and scores.nunique() > 1
