"""Batch export on the runner's shared prefixes: two systems read one reranked prefix (``BM25 >> pointwise``).

A query whose pointwise answers are not in yet is pending in the prefix AND in both systems reading it, so no
sliding-window or listwise request is ever built on a ranking that lacks an answer; a query whose prefix is answered
goes on to the next stage while the others wait. Export evaluates nothing. After the last round, `superb run` makes
0 calls and gives the table of a live run against the same fake model.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from chorus_specs import QUERIES, chorus_spec
from superb.testing.fakeserver import FakeServer, Fault, answer_batch_file
from superb.batch.collect import run_round
from superb.cli import main
from superb.run.spec import load_spec
from test_batch_cli import SECRET
from test_batch_rounds import model

PREFIX, SLIDING, LISTWISE = "BM25 >> pointwise", "BM25 >> pointwise >> sliding", "BM25 >> pointwise >> listwise"


def spec_text(name: str, base_url: str, cache) -> str:
    return chorus_spec(name, base_url, cache, queries=QUERIES[:4], rerankers=f"""
[[pipelines]]
name = "{PREFIX}"
input = "BM25"
rerank = [ {{ type = "pointwise", variant = "yesno", top_k = 8, fields = ["title"] }} ]
[[pipelines]]
name = "{SLIDING}"
input = "{PREFIX}"
rerank = [ {{ type = "sliding", window = 4, step = 2, top_k = 8, fields = ["title"] }} ]
[[pipelines]]
name = "{LISTWISE}"
input = "{PREFIX}"
rerank = [ {{ type = "listwise", top_k = 6, fields = ["title"] }} ]
""")


def requests_of(path) -> list[tuple[str, str]]:
    """(kind, query) of every request of a batch file: "pointwise" (one product) or "list" (numbered products)."""
    out = []
    for line in path.read_text().splitlines():
        prompt = "".join(m["content"] for m in json.loads(line)["body"]["messages"])
        query = re.search(r"^(?:Search query|Query): (.*)$", prompt, re.M)[1]
        out.append(("list" if re.search(r"^\[1\] <<<", prompt, re.M) else "pointwise", query))
    return out


def keep_queries(src, dst, queries: set[str]) -> int:
    """The lines of batch file ``src`` whose requests are for ``queries`` (a partial answer file's input)."""
    lines = [line for line, (_, q) in zip(src.read_text().splitlines(), requests_of(src)) if q in queries]
    dst.write_text("".join(line + "\n" for line in lines))
    return len(lines)


@pytest.fixture()
def home(tmp_path, monkeypatch, chorus_mirror):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_TEST_KEY", SECRET)
    return tmp_path


def no_evaluation(monkeypatch):
    """Export must not evaluate: every way into an evaluation raises while it runs."""
    import pyterrier as pt

    import superb.eval.evaluate as evaluate

    def refuse(*args, **kwargs):
        raise AssertionError("a batch export evaluated")

    for target, name in ((evaluate, "per_query"), (evaluate, "significance"), (pt, "Experiment")):
        monkeypatch.setattr(target, name, refuse)


@pytest.mark.slow
def test_a_query_pending_in_a_shared_prefix_is_pending_in_every_system_reading_it(home, monkeypatch, capsys):
    with FakeServer(responder=model) as srv:
        live = home / "live.toml"
        live.write_text(spec_text("prefix", srv.base_url, home / "live.sqlite"))
        assert main(["run", str(live), "--out", str(home / "live")]) == 0
        want = pd.read_csv(home / "live" / "table.csv")
    cache = home / "batch.sqlite"
    path = home / "prefix.toml"
    path.write_text(spec_text("prefix", "http://127.0.0.1:9/v1", cache))
    answerer = FakeServer(responder=model)  # not started: answers batch files offline, like `vllm run-batch`
    with monkeypatch.context() as m:
        no_evaluation(m)
        first = run_round(load_spec(path), home / "r1.jsonl")
        asked = requests_of(home / "r1.jsonl")
        queries = sorted({q for _, q in asked})
        assert {k for k, _ in asked} == {"pointwise"} and len(queries) == 4  # nothing built on a missing answer
        everyone = first.pending[PREFIX]
        assert len(everyone) == 4 and first.pending[SLIDING] == everyone and first.pending[LISTWISE] == everyone

        answered = set(queries[:2])  # half the queries' pointwise answers come back
        kept = keep_queries(home / "r1.jsonl", home / "r1.part.jsonl", answered)
        assert 0 < kept < len(asked)  # up to 8 per query (two products with one title make one request)
        answer_batch_file(answerer, home / "r1.part.jsonl", home / "r1.out.jsonl", style="vllm")
        assert main(["batch", "import", str(home / "r1.out.jsonl"), "--cache", str(cache)]) == 0

        second = run_round(load_spec(path), home / "r2.jsonl")
        asked = requests_of(home / "r2.jsonl")
        waiting = set(queries) - answered
        assert {q for k, q in asked if k == "pointwise"} == waiting  # the rest of the prefix's requests
        assert {q for k, q in asked if k == "list"} == answered  # next stage only where the prefix is complete
        assert len(second.pending[PREFIX]) == 2
        for system in (SLIDING, LISTWISE):  # pending in the prefix => pending in every system reading it
            assert set(second.pending[PREFIX]) <= set(second.pending[system]) and len(second.pending[system]) == 4

        rounds = 2
        batch = home / "r2.jsonl"
        while True:
            out = batch.with_suffix(".out.jsonl")
            answer_batch_file(answerer, batch, out, style="openai")
            assert main(["batch", "import", str(out), "--cache", str(cache)]) == 0
            rounds += 1
            batch = home / f"r{rounds}.jsonl"
            found = run_round(load_spec(path), batch)
            if found.done:
                break
            assert rounds < 12, "export keeps finding requests"
        assert all(not q for q in found.pending.values())
    capsys.readouterr()
    pd.testing.assert_frame_equal(run_refusing(home, cache), want)


def run_refusing(home, cache) -> pd.DataFrame:
    """The final `superb run` against a server that fails every request (so: 0 calls, every answer cached)."""
    with FakeServer(faults=[Fault.error(500)] * 1000) as refusing:
        spec = home / "final.toml"
        spec.write_text(spec_text("prefix", refusing.base_url, cache))
        assert main(["run", str(spec), "--out", str(home / "final")]) == 0
        assert refusing.requests == 0
    return pd.read_csv(home / "final" / "table.csv")
