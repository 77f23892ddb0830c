"""Helpers shared by the reranker tests: an LLMClient on the fake server, the prompt text of a request, and the real
0.5B model on one Chorus query for the end-to-end tests (skipped when the model file or the Chorus mirror is not on
this machine)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest

from superb.llm import LLMClient, LLMConfig, Usage

# read at collection, before any test points SUPERB_HOME at a tmp dir: the real-model tests reuse the shared,
# verified model file of the default (or configured) SUPERB_HOME
_HOME_AT_IMPORT = os.environ.get("SUPERB_HOME")


def client(srv, **kw) -> LLMClient:
    """A client on the fake server ``srv``: fast retries, no cache, its own usage counter."""
    kw.setdefault("backoff_s", 0.01)
    return LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,), **kw), cache=None, usage=Usage())


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


def _small_model_and_chorus(monkeypatch) -> Path:
    """The shared 0.5B model file, with SUPERB_DATA_MIRROR set to the Chorus mirror; skips when either is missing."""
    from superb.errors import DataError, MissingDependencyError
    from superb.llm.model import resolve_model

    mirror = Path(os.environ.get("SUPERB_DATA_MIRROR") or Path(__file__).resolve().parents[2] / "shared" / "data")
    if not (mirror / "chorus-icecat").is_dir():
        pytest.skip(f"Chorus mirror not found at {mirror}; set SUPERB_DATA_MIRROR")
    try:
        with pytest.MonkeyPatch.context() as mp:
            if _HOME_AT_IMPORT is None:
                mp.delenv("SUPERB_HOME", raising=False)
            else:
                mp.setenv("SUPERB_HOME", _HOME_AT_IMPORT)
            model = resolve_model("0.5b", download=False)
    except (DataError, MissingDependencyError, FileNotFoundError) as e:
        pytest.skip(f"the 0.5B model is not available offline: {e}")
    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(mirror))
    return model


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
