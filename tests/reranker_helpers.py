"""Helpers shared by the reranker tests: an LLMClient on the fake server, the prompt text of a request, and the real
0.5B model and a PISA BM25 run on Chorus queries for the end-to-end tests (skipped when the model file or the Chorus
mirror is not on this machine)."""

from __future__ import annotations

import math
import os
import re
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest

from superb.testing.fakeserver import Reply
from superb.llm import LLMClient, LLMConfig, Usage

# read at collection, before any test points SUPERB_HOME at a tmp dir: the real-model tests reuse the shared,
# verified model file of the default (or configured) SUPERB_HOME
_HOME_AT_IMPORT = os.environ.get("SUPERB_HOME")


class Docs:
    """A data set of titles for ProductText (fields = ("title",)): docno -> title."""

    fields = ("title",)

    def __init__(self, titles: dict[str, str]):
        self.titles = titles

    def doc(self, docno: str) -> dict:
        return {"title": self.titles[docno]}


def client(srv, **kw) -> LLMClient:
    """A client on the fake server ``srv``: fast retries, no cache, its own usage counter."""
    kw.setdefault("backoff_s", 0.01)
    return LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,), **kw), cache=None, usage=Usage())


def lp(dist: dict[str, float], text: str | None = None) -> Reply:
    """A one-token reply whose top alternatives carry ``dist`` (probabilities); the text is the most probable."""
    best = text if text is not None else max(dist, key=dist.get)
    top = {t: math.log(p) for t, p in dist.items()}
    return Reply(best, ((best, top.get(best, -20.0), top),))


def prompt_of(req: dict) -> str:
    """All message contents of a chat request received by the fake server, concatenated."""
    return "".join(m["content"] for m in req["messages"])


def run_of_sizes(sizes: list[int], text: str = "p") -> pd.DataFrame:
    """A first-stage run with ``sizes[k]`` documents for query ``q<k>`` (docno ``q<k>-d<i>``, text ``<text><i>``)."""
    rows = [(f"q{k}", "query", f"q{k}-d{i}", float(-i), i, f"{text}{i}") for k, n in enumerate(sizes) for i in range(n)]
    return pd.DataFrame(rows, columns=["qid", "query", "docno", "score", "rank", "text"])


def assert_docnos_preserved(inp: pd.DataFrame, out: pd.DataFrame) -> None:
    """Every query of ``inp`` comes back with the same docnos and ranks 0..n-1."""
    assert len(out) == len(inp)
    for qid, group in inp.groupby("qid"):
        got = out[out.qid == qid]
        assert sorted(got["docno"]) == sorted(group["docno"])
        assert sorted(got["rank"]) == list(range(len(group)))


def _mirror() -> Path:
    """The Chorus mirror: SUPERB_DATA_MIRROR, else shared/data beside the checkout."""
    value = os.environ.get("SUPERB_DATA_MIRROR")
    return Path(value) if value else Path(__file__).resolve().parents[2] / "shared" / "data"


def _small_model_and_chorus(monkeypatch) -> Path:
    """The shared 0.5B model file, with SUPERB_DATA_MIRROR set to the Chorus mirror; skips when either is missing."""
    mirror = _mirror()
    if not (mirror / "chorus-icecat").is_dir():
        pytest.skip(f"Chorus mirror not found at {mirror}; set SUPERB_DATA_MIRROR")
    model = small_model()
    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(mirror))
    return model


def small_model() -> Path:
    """The shared 0.5B model file (looked up in the SUPERB_HOME of before the tests); skips when it is missing."""
    from superb.errors import DataError, MissingDependencyError
    from superb.llm.model import resolve_model

    try:
        with pytest.MonkeyPatch.context() as mp:
            if _HOME_AT_IMPORT is None:
                mp.delenv("SUPERB_HOME", raising=False)
            else:
                mp.setenv("SUPERB_HOME", _HOME_AT_IMPORT)
            return resolve_model("0.5b", download=False)
    except (DataError, MissingDependencyError, FileNotFoundError) as e:
        pytest.skip(f"the 0.5B model is not available offline: {e}")


@contextmanager
def small_model_on_chorus(monkeypatch, query: str, depth: int, n_ctx: int):
    """Yields (Chorus dataset, PISA BM25 run of the Chorus query ``query`` to ``depth``, an LLMClient on the embedded
    0.5B server with ``n_ctx``); the server stops on exit. Skips the test when the model or the mirror is missing."""
    from superb.data import load_dataset
    from superb.llm.model import MODELS
    from superb.llm.server import EmbeddedServer
    from superb.pipelines import first_stage

    model = _small_model_and_chorus(monkeypatch)
    ds = load_dataset({"name": "chorus"})
    topics = ds.topics()
    run = first_stage(ds, engine="pisa", depth=depth)(topics[topics["query"] == query])
    with EmbeddedServer(model, alias=MODELS["0.5b"].alias, n_ctx=n_ctx) as srv, \
            LLMClient(LLMConfig(model=srv.alias, base_urls=(srv.base_url,), cache="off"), cache=None) as llm:
        yield ds, run, llm


@contextmanager
def small_model_client(n_ctx: int, cache_path: Path | None = None):
    """Yields an LLMClient on the embedded 0.5B server with ``n_ctx`` (a response cache at ``cache_path``, if given),
    for a module-scoped fixture; the server stops on exit. The model file is resolved from the SUPERB_HOME in force;
    skips the tests when it is not on this machine."""
    from superb.errors import DataError, MissingDependencyError
    from superb.llm.cache import ResponseCache
    from superb.llm.model import MODELS, resolve_model
    from superb.llm.server import EmbeddedServer

    try:
        path = resolve_model("0.5b", download=False)
    except (DataError, MissingDependencyError, FileNotFoundError) as e:
        pytest.skip(f"the 0.5B model is not available offline: {e}")
    cache = ResponseCache(cache_path) if cache_path is not None else None
    with EmbeddedServer(path, alias=MODELS["0.5b"].alias, n_ctx=n_ctx) as srv:
        client = LLMClient(LLMConfig(model=srv.alias, base_urls=(srv.base_url,)), cache=cache)
        yield client
        client.close()
    if cache is not None:
        cache.close()


@contextmanager
def chorus_bm25_run(tmp_path_factory, depth: int, select):
    """Yields (Chorus dataset, PISA BM25 run to ``depth`` of the Chorus topics that ``select(topics)`` keeps), with
    SUPERB_HOME a fresh temporary folder until exit, for a module-scoped fixture; skips the tests when the Chorus
    mirror is missing."""
    mirror = _mirror()
    if not (mirror / "chorus-icecat" / "1.json.zip").is_file():
        pytest.skip(f"Chorus mirror not found at {mirror}; set SUPERB_DATA_MIRROR")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SUPERB_HOME", str(tmp_path_factory.mktemp("superb-home")))
        mp.setenv("SUPERB_DATA_MIRROR", str(mirror))
        from superb.data import load_dataset
        from superb.pipelines import first_stage

        ds = load_dataset({"name": "chorus"})
        run = first_stage(ds, engine="pisa", depth=depth)(select(ds.topics()))
        yield ds, run


# ---- lettered prompts (pairwise_prob, setwise, listwise by likelihood): a fake model reading label probabilities ---

_LETTERED = re.compile(r"^Product ([A-T]): <<< (.*) >>>$", re.M)


def lettered(req: dict) -> list[tuple[str, str]]:
    """The (letter, product text) pairs a request shows as "Product X: <<< text >>>" lines, in order."""
    return _LETTERED.findall(prompt_of(req))


def relevance_responder(relevance, *, bias: float = 0.0, mass: float = 0.9, logprobs: bool = True, top_n: int = 20):
    """A fake model over lettered prompts: P(letter) = softmax(relevance[text] + ``bias`` for the first-shown product),
    times ``mass`` (the rest on the token "The"); the reply text is the most probable letter. Only the ``top_n`` most
    probable tokens are returned (as the API does), so with many products some letters are absent. Without
    ``logprobs`` the reply is the letter alone. ``relevance`` is a dict or a function of the product text."""
    score = relevance if callable(relevance) else relevance.__getitem__

    def responder(req: dict) -> Reply:
        shown = lettered(req)
        logits = [score(text) + (bias if k == 0 else 0.0) for k, (_, text) in enumerate(shown)]
        top = max(logits)
        weights = [math.exp(x - top) for x in logits]
        total = sum(weights)
        probs = {letter: mass * w / total for (letter, _), w in zip(shown, weights)}
        if mass < 1.0:
            probs["The"] = 1.0 - mass
        best = max(probs, key=probs.get)
        if not logprobs:
            return Reply(best)
        kept = dict(sorted(probs.items(), key=lambda kv: -kv[1])[:top_n])
        alts = {t: math.log(p) if p > 0 else -1e4 for t, p in kept.items()}
        return Reply(best, ((best, alts[best], alts),))

    return responder
