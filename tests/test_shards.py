"""`superb run SPEC --shard i/n` and `superb merge` on real Chorus data, real PISA and the fake model over HTTP.

Three shards, each with its own response cache (as on three machines), merged, must give the folder one unsharded run
gives: the same table.csv, perquery.csv, run files, topics and shipped responses, byte for byte. Merge refuses
folders that are not one experiment, and says which queries, keys or files are wrong.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from chorus_specs import QUERIES, chorus_spec
from conftest import DEFAULT_MIRROR
from superb.testing.fakeserver import FakeServer
from superb.cli import main
from superb.run.shards import Shard, spec_digest
from test_batch_rounds import model

SECRET = "sk-live-shardsecret-0123456789"
NAME = "sharded"
COMPARED = ["table.csv", "perquery.csv", "topics.tsv", "qrels.trec", "systems.json", "responses.jsonl.gz",
            "stage_scores.csv.gz"]


def spec_text(base_url: str, cache: Path, *, concurrency: int = 4, top_k: int = 6) -> str:
    return chorus_spec(NAME, base_url, cache, description="shards against one run",
                       evaluation='test = "randomization"\nn_resamples = 500\nviews = ["full", "condensed"]',
                       llm=f"concurrency = {concurrency}\nmax_retries = 0", rerankers=f"""
[[pipelines]]
name = "BM25 >> pointwise"
input = "BM25"
rerank = [ {{ type = "pointwise", variant = "yesno", top_k = {top_k}, fields = ["title"] }} ]
[[pipelines]]
name = "BM25 >> sliding"
input = "BM25"
rerank = [ {{ type = "sliding", window = 6, step = 3, top_k = 12, fields = ["title"] }} ]
compare = ["BM25 >> pointwise"]
[[pipelines]]
name = "BM25 >> shuffle"
input = "BM25"
rerank = [ {{ type = "shuffle", top_k = 10 }} ]
""")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """One unsharded run and its three shards (own cache each, own concurrency: placement differs), merged."""
    root = tmp_path_factory.mktemp("shards")
    mirror = Path(os.environ.get("SUPERB_DATA_MIRROR") or DEFAULT_MIRROR).resolve()
    with pytest.MonkeyPatch.context() as mp, FakeServer(responder=model) as srv:
        mp.setenv("SUPERB_HOME", str(root / "home"))
        mp.setenv("SUPERB_TEST_KEY", SECRET)
        mp.setenv("SUPERB_DATA_MIRROR", str(mirror))
        mp.chdir(root)
        spec = root / "whole.toml"
        spec.write_text(spec_text(srv.base_url, root / "whole.sqlite"))
        assert main(["run", str(spec), "--out", str(root / "whole")]) == 0
        whole_requests = srv.requests
        shard_requests = []
        for i in (1, 2, 3):
            part = root / f"part{i}.toml"
            part.write_text(spec_text(srv.base_url, root / f"cache{i}.sqlite", concurrency=i))
            before = srv.requests
            assert main(["run", str(part), "--shard", f"{i}/3"]) == 0  # default folder: results/NAME.shard-i-of-3
            shard_requests.append(srv.requests - before)
        shards = [root / "results" / f"{NAME}.shard-{i}-of-3" for i in (1, 2, 3)]
        assert main(["merge", *map(str, shards), "--out", str(root / "merged")]) == 0
        other = root / "other.toml"  # the same shard 3/3 of a spec that differs in one defining key
        other.write_text(spec_text(srv.base_url, root / "cache3.sqlite", top_k=5))
        assert main(["run", str(other), "--shard", "3/3", "--out", str(root / "other.shard-3-of-3")]) == 0
    return {"root": root, "whole": root / "whole", "merged": root / "merged", "shards": shards,
            "other": root / "other.shard-3-of-3", "whole_requests": whole_requests, "shard_requests": shard_requests}


@pytest.mark.slow
def test_merged_shards_equal_one_unsharded_run_byte_for_byte(folders):
    whole, merged = folders["whole"], folders["merged"]
    for name in COMPARED:
        assert (merged / name).read_bytes() == (whole / name).read_bytes(), name
    runs = sorted(p.name for p in (whole / "runs").iterdir())
    assert runs == sorted(p.name for p in (merged / "runs").iterdir()) and len(runs) == 4
    for run in runs:
        assert (merged / "runs" / run).read_bytes() == (whole / "runs" / run).read_bytes(), run
    assert len((merged / "qrels.trec").read_text().splitlines()) > len(QUERIES)
    table = pd.read_csv(merged / "table.csv")
    assert table["n_queries"].max() == len(QUERIES)  # significance over all queries, not per shard
    assert "head-to-head:BM25 >> sliding" in table["family"].tolist()  # a head-to-head family survives


@pytest.mark.slow
def test_merge_sums_usage_and_records_the_shards(folders):
    whole = pd.read_csv(folders["whole"] / "usage.csv").set_index("system")
    merged = pd.read_csv(folders["merged"] / "usage.csv").set_index("system")
    for column in ("calls", "requests", "prompt_tokens", "completion_tokens", "stat:queries", "stat:reranked"):
        assert merged[column].equals(whole[column]), column
    assert int(merged["calls"].sum()) == sum(folders["shard_requests"]) == folders["whole_requests"]
    provenance = json.loads((folders["merged"] / "provenance.json").read_text())
    record = provenance["sharding"]
    assert [s["shard"] for s in record["merged"]] == ["1/3", "2/3", "3/3"]
    assert sum(s["queries"] for s in record["merged"]) == len(QUERIES)
    assert provenance["responses"]["rows"] == json.loads(
        (folders["whole"] / "provenance.json").read_text())["responses"]["rows"]
    assert provenance["llm"]["usage_total"]["calls"] == folders["whole_requests"]
    assert SECRET not in (folders["merged"] / "provenance.json").read_text()


@pytest.mark.slow
def test_a_shard_folder_records_its_part_and_says_its_table_is_partial(folders):
    shard = folders["shards"][1]
    record = json.loads((shard / "provenance.json").read_text())["sharding"]
    assert record["shard"] == "2/3" and record["selection"] and set(record["qids"]) < set(record["selection"])
    assert record["qids"] == Shard(2, 3).qids(record["selection"])
    assert set(pd.read_csv(shard / "topics.tsv", sep="\t", header=None, dtype=str)[0]) == set(record["qids"])
    assert "Shard 2/3: 2 of the 6 selected queries" in (shard / "table.md").read_text()
    digests = {json.loads((s / "provenance.json").read_text())["sharding"]["spec_digest"] for s in folders["shards"]}
    assert len(digests) == 1  # cache_path and concurrency differ between the shards: placement, not definition


def merge_fails(capsys, *folders, out) -> str:
    assert main(["merge", *map(str, folders), "--out", str(out)]) == 2
    assert not (Path(out) / "table.csv").exists()
    return capsys.readouterr().err


@pytest.mark.slow
def test_merge_names_missing_and_duplicate_queries(folders, capsys, tmp_path):
    s1, s2, s3 = folders["shards"]
    err = merge_fails(capsys, s1, s2, out=tmp_path / "m")
    missing = json.loads((s3 / "provenance.json").read_text())["sharding"]["qids"]
    assert "2 of the 6 queries are in no shard folder given" in err and "missing shard(s) 3/3" in err
    assert all(q in err for q in missing)
    again = tmp_path / "again.shard-2-of-3"
    shutil.copytree(s2, again)
    err = merge_fails(capsys, s1, s2, s3, again, out=tmp_path / "m")
    twice = json.loads((s2 / "provenance.json").read_text())["sharding"]["qids"]
    assert "2 queries are in more than one shard folder" in err and all(q in err for q in twice)
    assert str(again) in err


@pytest.mark.slow
def test_merge_names_what_differs_between_specs_and_data(folders, capsys, tmp_path):
    s1, s2, _ = folders["shards"]
    err = merge_fails(capsys, s1, s2, folders["other"], out=tmp_path / "m")
    assert "comes from a different spec" in err and "pipelines[1].rerank[0].top_k: 6 vs 5" in err

    tampered = tmp_path / "data.shard-3-of-3"
    shutil.copytree(folders["shards"][2], tampered)
    provenance = json.loads((tampered / "provenance.json").read_text())
    changed = provenance["dataset"]["files"][0]
    changed["sha256"] = "0" * 64
    (tampered / "provenance.json").write_text(json.dumps(provenance))
    err = merge_fails(capsys, s1, s2, tampered, out=tmp_path / "m")
    assert f"different data" in err and f"file {changed['name']}" in err

    err = merge_fails(capsys, s1, s2, folders["whole"], out=tmp_path / "m")
    assert "the folder of an unsharded run, not a shard" in err
    err = merge_fails(capsys, s1, s2, folders["merged"], out=tmp_path / "m")
    assert "a merged folder, not a shard" in err


def test_shard_rule_is_balanced_disjoint_and_covering():
    selection = [f"q{k}" for k in (7, 3, 11, 1, 5, 9, 2)]
    parts = [Shard(i, 3).qids(selection) for i in (1, 2, 3)]
    assert sorted(q for p in parts for q in p) == sorted(selection)
    assert [len(p) for p in parts] == [3, 2, 2]
    assert parts[0] == ["q3", "q1", "q9"]  # sorted: q1 q11 q2 q3 q5 q7 q9 -> positions 0, 3, 6; selection order
    for text in ("0/3", "4/3", "2", "a/b", "2/0"):
        with pytest.raises(ValueError):
            Shard.parse(text)


def test_spec_digest_ignores_where_a_shard_ran_and_nothing_else():
    raw = {"name": "x", "dataset": {"name": "chorus"}, "llm": {"model": "m", "base_urls": ["http://a/v1"],
                                                               "concurrency": 2, "cache_path": "/tmp/a"},
           "pipelines": [{"name": "BM25"}]}
    moved = json.loads(json.dumps(raw))
    moved["llm"].update(base_urls=["http://b/v1"], concurrency=16, cache_path="/tmp/b", api_key_env="OTHER")
    assert spec_digest(raw) == spec_digest(moved)
    changed = json.loads(json.dumps(raw))
    changed["llm"]["model"] = "other-model"
    assert spec_digest(raw) != spec_digest(changed)


def test_run_refuses_a_bad_shard_argument_and_an_empty_shard(tmp_path, capsys, monkeypatch, chorus_mirror):
    with pytest.raises(SystemExit) as exc:
        main(["run", "x.toml", "--shard", "4/3"])
    assert exc.value.code == 2 and "i must be between 1 and n" in capsys.readouterr().err
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    spec = tmp_path / "s.toml"
    spec.write_text(f"""
name = "tiny"
[dataset]
name = "chorus"
[queries]
subset = ["laptop", "monitor"]
[[pipelines]]
name = "BM25"
first_stage = {{ engine = "pisa", model = "bm25", depth = 10 }}
""")
    assert main(["run", str(spec), "--shard", "3/3", "--out", str(tmp_path / "o")]) == 2
    assert "shard 3/3 of spec 'tiny' has no query: the spec selects 2 queries" in capsys.readouterr().err


ROOT = Path(__file__).resolve().parents[1]
CHORUS_POINTWISE = ROOT / "results" / "chorus_pointwise"


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.skipif(not (CHORUS_POINTWISE / "responses.jsonl.gz").is_file(),
                    reason="results/chorus_pointwise/responses.jsonl.gz is not committed yet (it comes with the "
                           "re-run of chorus_pointwise on the current runner); this test needs its shipped answers")
def test_chorus_pointwise_in_three_shards_from_its_shipped_responses_equals_one_run(tmp_path, monkeypatch, capsys,
                                                                                    chorus_mirror):
    """The issue's case: all Chorus test-split queries, BM25 + pointwise (1.5B) + bi-encoder, every LLM answer
    served from the folder's shipped responses (replayed into a fresh cache, read-only: the model never starts)."""
    cache = tmp_path / "chorus_pointwise.sqlite"
    assert main(["responses", "replay", str(CHORUS_POINTWISE), "--cache", str(cache)]) == 0
    text = (ROOT / "experiments" / "chorus_pointwise.toml").read_text(encoding="utf-8")
    assert "\n[llm]\n" in text
    spec = tmp_path / "chorus_pointwise.toml"
    spec.write_text(text.replace("\n[llm]\n", f'\n[llm]\ncache = "read-only"\ncache_path = "{cache}"\n'))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    assert main(["run", str(spec), "--out", str(tmp_path / "whole")]) == 0
    shards = []
    for i in (1, 2, 3):
        assert main(["run", str(spec), "--shard", f"{i}/3"]) == 0
        shards.append(tmp_path / "results" / f"chorus_pointwise.shard-{i}-of-3")
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "merged")]) == 0
    capsys.readouterr()
    whole, merged = tmp_path / "whole", tmp_path / "merged"
    for name in [*COMPARED, *(f"runs/{p.name}" for p in (whole / "runs").iterdir())]:
        assert (merged / name).read_bytes() == (whole / name).read_bytes(), name
    usage = pd.read_csv(merged / "usage.csv").set_index("system")
    assert usage["calls"].sum() == 0 and usage.loc["BM25 >> pointwise", "cache_hits"] > 0  # all from the cache
    assert pd.read_csv(merged / "table.csv")["n_queries"].max() == len(pd.read_csv(whole / "topics.tsv", sep="\t",
                                                                                  header=None))


def tampered(folders, tmp_path, index: int = 1) -> Path:
    """A copy of shard ``index`` of 3, to damage (the fixture's folders stay as written)."""
    copy = tmp_path / f"copy.shard-{index}-of-3"
    shutil.copytree(folders["shards"][index - 1], copy)
    return copy


def others(folders, index: int = 1) -> list[Path]:
    return [s for i, s in enumerate(folders["shards"], 1) if i != index]


@pytest.mark.slow
def test_merge_refuses_a_run_file_missing_one_querys_rows(folders, capsys, tmp_path):
    """Issue 23.2: with one query's rows deleted from one shard's runs/BM25.run, merge used to exit 0 and BM25
    nDCG@10 fell from 0.8478 to 0.7033 (below the LLM row). Now refused, naming the shard, the file and the qid."""
    copy = tampered(folders, tmp_path)
    run = copy / "runs" / "BM25.run"
    lines = run.read_text().splitlines(keepends=True)
    gone = lines[0].split()[0]
    run.write_text("".join(line for line in lines if line.split()[0] != gone))
    err = merge_fails(capsys, copy, *others(folders), out=tmp_path / "m")
    assert str(copy) in err and "runs/BM25.run" in err and gone in err and "no rows" in err


@pytest.mark.slow
def test_merge_refuses_a_run_file_cut_mid_line(folders, capsys, tmp_path):
    copy = tampered(folders, tmp_path, 2)
    run = copy / "runs" / "BM25__pointwise.run"
    text = run.read_text()
    run.write_text(text[: len(text) - 20])  # the last line loses its score's end and its tag
    n = len(text.splitlines())
    err = merge_fails(capsys, copy, *others(folders, 2), out=tmp_path / "m")
    assert str(copy) in err and "runs/BM25__pointwise.run" in err and f"line {n}" in err


@pytest.mark.slow
def test_merge_refuses_a_file_changed_after_the_shard_was_written(folders, capsys, tmp_path):
    """Same qids, same number of rows, well-formed lines, a different ranking: only the recorded sha256 sees it."""
    copy = tampered(folders, tmp_path)
    run = copy / "runs" / "BM25__shuffle.run"
    lines = run.read_text().splitlines(keepends=True)
    a, b = lines[0].split(), lines[1].split()
    a[2], b[2] = b[2], a[2]  # two products swap places
    run.write_text(" ".join(a) + "\n" + " ".join(b) + "\n" + "".join(lines[2:]))
    err = merge_fails(capsys, copy, *others(folders), out=tmp_path / "m")
    assert str(copy) in err and "runs/BM25__shuffle.run" in err and "sha256" in err and "changed" in err
    assert "--unverified" in err  # the way out is named


@pytest.mark.slow
def test_merge_unverified_merges_a_changed_file_and_marks_the_merged_folder(folders, capsys, tmp_path):
    """`superb merge --unverified`: the changed run file is merged as it now is, and the merged folder says which
    shard file was not as recorded (provenance.json and table.md), so the table cannot pass for a verified one."""
    copy = tampered(folders, tmp_path)
    run = copy / "runs" / "BM25__shuffle.run"
    lines = run.read_text().splitlines(keepends=True)
    a, b = lines[0].split(), lines[1].split()
    a[2], b[2] = b[2], a[2]
    run.write_text(" ".join(a) + "\n" + " ".join(b) + "\n" + "".join(lines[2:]))
    out = tmp_path / "merged"
    assert main(["merge", str(copy), *map(str, others(folders)), "--out", str(out), "--unverified"]) == 0
    said = capsys.readouterr()
    record = json.loads((out / "provenance.json").read_text())
    marked = json.dumps(record)
    assert "runs/BM25__shuffle.run" in marked and "unverified" in marked, marked[:2000]
    merged_run = (out / "runs" / "BM25__shuffle.run").read_text()
    assert " ".join(a) in merged_run  # the file as it now is, not as recorded
    assert "unverified" in (said.out + said.err).lower()
    table = (out / "table.md").read_text()
    assert "**Unverified**" in table and "runs/BM25__shuffle.run" in table


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["cut", "not an object", "no sharding keys"])
def test_merge_names_a_damaged_provenance_json(folders, capsys, tmp_path, damage):
    copy = tampered(folders, tmp_path, 3)
    prov = copy / "provenance.json"
    text = prov.read_text()
    if damage == "cut":
        prov.write_text(text[: len(text) // 2])
    elif damage == "not an object":
        prov.write_text("[1, 2, 3]")
    else:
        data = json.loads(text)
        data["sharding"] = {"shard": "3/3"}
        prov.write_text(json.dumps(data))
    err = merge_fails(capsys, *others(folders, 3), copy, out=tmp_path / "m")
    assert str(prov) in err and "run the shard again" in err and "Traceback" not in err
