"""`superb run` end to end on real Chorus data, real PISA and Terrier, and an LLM reranker on the fake server.

Checks the results folder, the significance bookkeeping (identical system -> NaN, never a rejection), the usage
columns, that a re-run repeats no LLM call, and that no API key reaches any written file.
"""

import json
import re

import pandas as pd
import pytest

from chorus_specs import QUERIES, chorus_spec
from superb.cli import main
from superb.testing.fakeserver import FakeServer, Reply


def reverse_order(request):
    """A listwise answer that reverses the shown candidates: "[n] > ... > [1]"."""
    prompt = request["messages"][-1]["content"]
    n = max(int(x) for x in re.findall(r"^\[(\d+)\]", prompt, flags=re.M))
    return Reply(" > ".join(f"[{i}]" for i in range(n, 0, -1)))


def identity_order(request):
    prompt = request["messages"][-1]["content"]
    n = max(int(x) for x in re.findall(r"^\[(\d+)\]", prompt, flags=re.M))
    return Reply(" > ".join(f"[{i}]" for i in range(1, n + 1)))


def write_spec(path, base_url, cache, *, reranked_model="fake-reverse"):
    path.write_text(chorus_spec(
        "e2e", base_url, cache, description="end-to-end test", evaluation='test = "randomization"\nn_resamples = 1000',
        model=reranked_model, llm=f'prices = {{ "{reranked_model}" = {{ prompt = 1.0, completion = 2.0 }} }}',
        first_stage="PISA BM25", depth=30, rerankers="""
[[pipelines]]
name = "PISA BM25 >> listwise"
input = "PISA BM25"
rerank = [ { type = "listwise", top_k = 10, fields = ["title"] } ]
[[pipelines]]
name = "PISA BM25 >> shuffle"
input = "PISA BM25"
rerank = { type = "shuffle", seed = 3, top_k = 10 }
"""))
    return path


@pytest.fixture()
def home(chorus_run_home):
    return chorus_run_home


@pytest.mark.slow
def test_run_writes_results_and_rerun_repeats_no_call(home, capsys):
    out = home / "out"
    with FakeServer(responder=reverse_order) as srv:
        spec = write_spec(home / "e2e.toml", srv.base_url, home / "cache.sqlite")
        assert main(["run", str(spec), "--out", str(out)]) == 0
        first_calls = srv.requests
        assert first_calls == len(QUERIES)  # one listwise window of 10 per query
        assert main(["run", str(spec), "--out", str(out)]) == 0
        assert srv.requests == first_calls, "the re-run must be served from the response cache"
        capsys.readouterr()
        # the dry run consults the same cache: every request is served, none would be a call, nothing is written
        assert main(["run", str(spec), "--out", str(home / "dry"), "--dry-run"]) == 0
        printed = capsys.readouterr().out
        assert f"dry run: 0 calls the real run would make (prompt tokens estimated), {len(QUERIES)} requests " \
               f"served by the response cache {home / 'cache.sqlite'}" in printed
        assert srv.requests == first_calls and not (home / "dry").exists()

    for name in ["table.md", "table.csv", "perquery.csv", "usage.csv", "qrels.trec", "topics.tsv",
                 "provenance.json", "systems.json", "cost.png"]:
        assert (out / name).is_file(), name
    systems = json.loads((out / "systems.json").read_text())
    assert set(systems) == {"PISA BM25", "PISA BM25 >> listwise", "PISA BM25 >> shuffle"}
    run = pd.read_csv(out / systems["PISA BM25 >> listwise"], sep=" ", header=None,
                      names=["qid", "q0", "docno", "rank", "score", "tag"], dtype={"qid": str, "docno": str})
    base = pd.read_csv(out / systems["PISA BM25"], sep=" ", header=None,
                       names=["qid", "q0", "docno", "rank", "score", "tag"], dtype={"qid": str, "docno": str})
    for qid, group in base.groupby("qid"):
        top = group.sort_values("rank")["docno"].tolist()[:10]
        reranked = run[run["qid"] == qid].sort_values("rank")["docno"].tolist()
        assert reranked[:10] == top[::-1]  # the fake model reversed the top 10
        assert sorted(reranked) == sorted(group["docno"])  # nothing dropped or invented
    assert len(pd.read_csv(out / "topics.tsv", sep="\t", header=None)) == len(QUERIES)

    usage = pd.read_csv(out / "usage.csv").set_index("system")
    assert usage.loc["PISA BM25 >> listwise", "requests"] == len(QUERIES)
    assert usage.loc["PISA BM25 >> listwise", "cache_hits"] == len(QUERIES)  # second run: all hits
    assert usage.loc["PISA BM25 >> listwise", "calls"] == 0
    assert usage.loc["PISA BM25", "requests"] == 0
    listwise = usage.loc["PISA BM25 >> listwise"]
    assert listwise["est_cost_usd"] == 0  # the second run made no call
    expected = (listwise["saved_prompt_tokens"] * 1.0 + 0) / 1e6  # what the method costs uncached, at $1/1M prompt
    assert listwise["est_cost_uncached_usd"] >= expected > 0
    assert "cost $" in (out / "table.md").read_text()

    table = pd.read_csv(out / "table.csv")
    assert set(table["baseline"].dropna()) == {"PISA BM25"} and set(table["view"]) == {"full"}
    assert set(table["family"].dropna()) == {"baseline:PISA BM25"}
    assert (table.dropna(subset=["baseline"])["family_size"] == 2).all()
    md = (out / "table.md").read_text()
    assert "paired randomization (sign-flip) test, 1,000 resamples" in md  # the spec's n_resamples arrived
    assert "Family sizes (tests corrected together): baseline:PISA BM25: 2." in md
    # the BM25 run that both rerankers read was retrieved once (its first stage saw each query once)
    assert usage.loc["PISA BM25", "stat:queries"] == len(QUERIES)
    # every run file: scores strictly decreasing in rank order; the evaluation any tool makes of it is the table's
    for name, path in systems.items():
        frame = pd.read_csv(out / path, sep=" ", header=None, names=["qid", "q0", "docno", "rank", "score", "tag"],
                            dtype={"qid": str, "docno": str}).sort_values(["qid", "rank"])
        for _, g in frame.groupby("qid"):
            assert (g["score"].diff().dropna() < 0).all(), name
    provenance = json.loads((out / "provenance.json").read_text())
    assert "docno descending" in provenance["ties"]
    assert {"table.csv", "runs/PISA_BM25.run", "provenance.json"} <= set(provenance["files"])
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in {".md", ".csv", ".json", ".run", ".tsv", ".trec"}:
            assert "fake-key-testsecret" not in path.read_text(), path
    assert b"fake-key-testsecret" not in (home / "cache.sqlite").read_bytes()


@pytest.mark.slow
def test_identical_system_gets_nan_p_and_no_marker(home):
    out = home / "out"
    with FakeServer(responder=identity_order) as srv:
        spec = write_spec(home / "e2e.toml", srv.base_url, home / "cache.sqlite", reranked_model="fake-identity")
        assert main(["run", str(spec), "--out", str(out)]) == 0
    table = pd.read_csv(out / "table.csv")
    same = table[table["system"] == "PISA BM25 >> listwise"]
    assert same["p"].isna().all() and not same["reject"].any()
    assert (same["delta"] == 0).all()


def test_bad_spec_exits_2_with_key_path(tmp_path, capsys):
    spec = tmp_path / "bad.toml"
    spec.write_text('name = "x"\n[dataset]\nname = "chorus"\n[[pipelines]]\nname = "a"\n'
                    'first_stage = { engine = "lucene" }\n')
    assert main(["run", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "pipelines[0].first_stage.engine" in err


def test_help_lists_subcommands(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for command in ["run", "show", "compare", "llm", "judge"]:
        assert command in text


def test_repairs_count_answers_not_kinds_and_fallbacks_apart():
    from superb.run.results import repairs_and_fallbacks

    # one listwise answer with two missing ids: 1 repaired answer, not 3
    assert repairs_and_fallbacks({"repair_missing": 2, "repaired_answers": 1, "calls": 6}) == (1, 0)
    # a component without a per-answer count: the per-kind counts; fallbacks and default labels counted apart
    assert repairs_and_fallbacks({"repair_weight": 2, "fallback_failed_call": 1, "default_labels": 4}) == (2, 5)
