"""`superb run --dry-run` says which counts are exact and which are estimates.

A setwise heap asks its next set from the answers; a dry run has none, so its count is the path its failed answers
take, which real answers may shorten or lengthen (it was called a lower bound until the live TREC DL19 run made 861
setwise calls where the dry run counted 1,591: the 1.5B picks the first passage of most sets, ending every sift).
Pointwise asks one question per product whatever the answers: its count is exact. Both are checked against real runs
on the fake server: a consistent model that prefers a hidden score per product (sifts go deeper than the dry run's)
and a model that always picks the first item (sifts stop at once: fewer calls than the dry run counted)."""

import math
import re
import zlib

import pandas as pd
import pytest

from chorus_specs import QUERIES, chorus_spec
from superb.testing.fakeserver import FakeServer, Reply
from superb.cli import main

RERANKERS = """
[[pipelines]]
name = "PISA BM25 >> setwise"
input = "PISA BM25"
rerank = { type = "setwise", strategy = "heap", set_size = 3, select = 5, top_k = 10 }
[[pipelines]]
name = "PISA BM25 >> pointwise"
input = "PISA BM25"
rerank = { type = "pointwise", variant = "yesno", top_k = 10 }
"""


def consistent_model(request):
    """Lettered sets: the product with the highest hidden score, with logprobs; yes/no questions: yes (0.7)."""
    prompt = "".join(m["content"] for m in request["messages"])
    shown = re.findall(r"^Product ([A-T]): <<< (.*) >>>$", prompt, re.M)
    if shown:
        logits = {x: (zlib.crc32(text.encode()) % 1000) / 250.0 for x, text in shown}
        total = math.log(sum(math.exp(v) for v in logits.values()))
        top = {x: v - total for x, v in logits.items()}
        best = max(top, key=top.get)
        return Reply(best, ((best, top[best], top),))
    return Reply("yes", (("yes", math.log(0.7), {"yes": math.log(0.7), "no": math.log(0.3)}),))


@pytest.fixture()
def home(chorus_run_home):
    return chorus_run_home


def dry_counts(printed: str) -> dict[str, tuple[int, str, int | None]]:
    """system -> (calls, count, at most) from the dry run's table."""
    out = {}
    for name in ("PISA BM25 >> setwise", "PISA BM25 >> pointwise"):
        line = next(x for x in printed.splitlines() if x.strip().startswith(name))
        fields = line.strip()[len(name):].split()
        out[name] = (int(fields[0]), fields[3], int(fields[4]) if len(fields) > 4 else None)
    return out


def dry_then_live(home, capsys, responder, name: str) -> tuple[str, dict, pd.DataFrame]:
    """One spec on the fake server answering with ``responder``: the dry run's printout and counts (no request may
    reach the server), then the live run's usage.csv."""
    with FakeServer(responder=responder) as srv:
        spec = home / f"{name}.toml"
        spec.write_text(chorus_spec(name, srv.base_url, home / "cache.sqlite", RERANKERS, first_stage="PISA BM25"))
        assert main(["run", str(spec), "--out", str(home / f"{name}_dry"), "--dry-run"]) == 0
        printed = capsys.readouterr().out
        assert srv.requests == 0 and not (home / f"{name}_dry").exists()
        assert main(["run", str(spec), "--out", str(home / name)]) == 0
    return printed, dry_counts(printed), pd.read_csv(home / name / "usage.csv").set_index("system")


@pytest.mark.slow
def test_dry_run_marks_answer_dependent_counts_as_estimates(home, capsys):
    printed, dry, usage = dry_then_live(home, capsys, consistent_model, "bounds")
    assert dry["PISA BM25 >> setwise"][1] == "estimate"
    assert dry["PISA BM25 >> pointwise"][1] == "exact"
    # one question per product of the top 10; a product text shown twice is asked once (the cache answers)
    assert 0 < dry["PISA BM25 >> pointwise"][0] <= 10 * len(QUERIES)
    assert re.search(r"dry run: about \d+ calls the real run would make", printed)
    assert f"{dry['PISA BM25 >> setwise'][0]} of them are an estimate" in printed
    assert usage.loc["PISA BM25 >> pointwise", "calls"] == dry["PISA BM25 >> pointwise"][0]
    # the answers send the heap's sifts deeper than the dry run's missing answers did, never past the ceiling
    assert usage.loc["PISA BM25 >> setwise", "calls"] > dry["PISA BM25 >> setwise"][0]
    assert usage.loc["PISA BM25 >> setwise", "requests"] <= dry["PISA BM25 >> setwise"][2]
    assert dry["PISA BM25 >> pointwise"][2] is None  # exact counts need no ceiling
    assert f"those systems make at most {dry['PISA BM25 >> setwise'][2]} requests" in printed


def first_item_model(request):
    """Lettered sets: always the first letter, as the 1.5B answered most DL19 sets; yes/no questions: yes (0.7)."""
    prompt = "".join(m["content"] for m in request["messages"])
    if re.search(r"^Product A: <<< ", prompt, re.M):
        return Reply("A", (("A", math.log(0.9), {"A": math.log(0.9), "B": math.log(0.05), "C": math.log(0.05)}),))
    return Reply("yes", (("yes", math.log(0.7), {"yes": math.log(0.7), "no": math.log(0.3)}),))


@pytest.mark.slow
def test_a_model_that_always_picks_the_first_item_makes_fewer_calls_than_the_dry_run_counted(home, capsys):
    """Why the count is no lower bound: the parent of every sift wins, so each sift stops after one set."""
    _, dry, usage = dry_then_live(home, capsys, first_item_model, "first")
    assert 0 < usage.loc["PISA BM25 >> setwise", "calls"] < dry["PISA BM25 >> setwise"][0]
    assert usage.loc["PISA BM25 >> pointwise", "calls"] == dry["PISA BM25 >> pointwise"][0]
