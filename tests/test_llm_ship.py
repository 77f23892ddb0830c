"""Responses shipped with results (superb/llm/ship.py): written from the keys a run used, deterministic, verified on
replay; and end to end: run, wipe the cache, replay, run again against a server that refuses everything."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from chorus_specs import QUERIES, chorus_spec
from superb.testing.fakeserver import FakeServer, Fault, Reply
from superb.cli import main
from superb.llm import ChatRequest, Completion, LLMClient, LLMConfig, ResponseCache, TokenLogprob, Usage
from superb.llm.ship import SHIPPED_FILE, ResponseLog, replay, response_log, write_shipped
from test_experiment import reverse_order


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


def req(text: str, template: str = "t@1") -> ChatRequest:
    return ChatRequest.label(f"Is {text} relevant?", template=template)


def answer(text: str) -> Completion:
    lp = (TokenLogprob("yes", -0.2, {"yes": -0.2, "no": -1.7}),)
    return Completion(text=text, logprobs=lp, prompt_tokens=11, completion_tokens=1, latency_s=0.3)


def filled(path, n=5) -> ResponseCache:
    cache = ResponseCache(path)
    for i in range(n):
        cache.put("m", req(f"p{i}"), answer("yes" if i % 2 else "no"))
    return cache


def test_the_cache_remembers_the_keys_it_served_or_wrote(tmp_path):
    with filled(tmp_path / "a.sqlite", 3) as cache:
        wrote = set(cache.used)
    with ResponseCache(tmp_path / "a.sqlite") as cache:
        assert cache.used == set()
        cache.get("m", req("p1"))
        cache.get("m", req("not cached"))
        log = response_log(type("Client", (), {"cache": cache})())
    assert len(wrote) == 3
    assert len(log.keys) == 1 and log.keys[0] in wrote  # the hit only: a miss used no cached answer


def test_shipped_file_is_sorted_deterministic_and_holds_no_timing(tmp_path):
    with filled(tmp_path / "a.sqlite") as cache:
        log = ResponseLog(cache.path, tuple(cache.used_keys()))
    first = write_shipped(log, tmp_path / "one.jsonl.gz")
    second = write_shipped(log, tmp_path / "two.jsonl.gz")
    assert (tmp_path / "one.jsonl.gz").read_bytes() == (tmp_path / "two.jsonl.gz").read_bytes()
    assert first["sha256"] == second["sha256"] and first["rows"] == 5 and first["missing_from_cache"] == 0
    rows = [json.loads(line) for line in gzip.open(tmp_path / "one.jsonl.gz", "rt")]
    assert [r["key"] for r in rows] == sorted(r["key"] for r in rows)
    assert set(rows[0]) == {"key", "model", "template", "request", "text", "logprobs", "prompt_tokens",
                            "completion_tokens"}
    assert rows[0]["request"]["messages"][0][0] == "user" and rows[0]["logprobs"][0][0] == "yes"
    assert first["sources"] == {"live": 5}


def test_replay_stores_verified_rows_and_refuses_tampered_ones(tmp_path):
    with filled(tmp_path / "a.sqlite") as cache:
        log = ResponseLog(cache.path, tuple(cache.used_keys()))
    folder = tmp_path / "results" / "demo"
    folder.mkdir(parents=True)
    write_shipped(log, folder / SHIPPED_FILE)
    rows = [json.loads(line) for line in gzip.open(folder / SHIPPED_FILE, "rt")]
    rows[1]["request"]["messages"][0][1] = "Is something else relevant?"  # the key no longer matches
    rows[2]["key"] = "0" * 64
    tampered = tmp_path / "tampered.jsonl.gz"
    with gzip.open(tampered, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)

    with ResponseCache(tmp_path / "fresh.sqlite") as fresh:
        report = replay(tampered, fresh)
        assert (report.rows, report.invalid, report.counts.stored) == (5, 2, 3)
        assert all("sha256" in e for e in report.examples)
        assert len(fresh) == 3
        again = replay(folder, fresh)  # the untampered folder: 3 already there, 2 new
        assert (again.counts.identical, again.counts.stored, again.invalid) == (3, 2, 0)
        assert again.source == "shipped:demo"
        hit = fresh.get("m", req("p3"))
        assert hit.text == "yes" and hit.logprobs[0].top == {"yes": -0.2, "no": -1.7} and hit.prompt_tokens == 11
        assert fresh.source_counts(log.keys) == {"shipped:tampered.jsonl.gz": 3, "shipped:demo": 2}


def test_replay_command_exits_2_when_it_refuses_rows(tmp_path, capsys):
    from superb.cli import main

    with filled(tmp_path / "a.sqlite") as cache:
        log = ResponseLog(cache.path, tuple(cache.used_keys()))
    write_shipped(log, tmp_path / SHIPPED_FILE)
    rows = [json.loads(line) for line in gzip.open(tmp_path / SHIPPED_FILE, "rt")]
    rows[0]["key"] = "0" * 64
    with gzip.open(tmp_path / "tampered.jsonl.gz", "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    good, bad = tmp_path / SHIPPED_FILE, tmp_path / "tampered.jsonl.gz"
    assert main(["responses", "replay", str(good), "--cache", str(tmp_path / "b.sqlite")]) == 0
    assert main(["responses", "replay", str(bad), "--cache", str(tmp_path / "c.sqlite")]) == 2
    assert "1 rows refused" in capsys.readouterr().err


def test_replay_keeps_a_conflicting_cached_answer_unless_replace(tmp_path):
    with filled(tmp_path / "a.sqlite", 2) as cache:
        log = ResponseLog(cache.path, tuple(cache.used_keys()))
    write_shipped(log, tmp_path / SHIPPED_FILE)
    with ResponseCache(tmp_path / "other.sqlite") as other:
        other.put("m", req("p0"), answer("maybe"))
        kept = replay(tmp_path / SHIPPED_FILE, other)
        assert (kept.counts.conflicts, kept.counts.replaced, kept.counts.stored) == (1, 0, 1)
        assert other.get("m", req("p0")).text == "maybe"
        replaced = replay(tmp_path / SHIPPED_FILE, other, replace=True)
        assert replaced.counts.replaced == 1 and other.get("m", req("p0")).text == "no"


LISTWISE = """
[[pipelines]]
name = "BM25 >> listwise"
input = "BM25"
rerank = [ { type = "listwise", top_k = 8, fields = ["title"] } ]
"""


def spec_text(base_url: str, cache: str) -> str:
    return chorus_spec("shipped", base_url, cache, model="fake-reverse", rerankers=LISTWISE)


@pytest.mark.slow
def test_run_wipe_replay_run_again_makes_no_call(tmp_path, monkeypatch, chorus_mirror):
    monkeypatch.setenv("SUPERB_TEST_KEY", "fake-key-shipsecret-0123456789")
    cache = tmp_path / "cache.sqlite"
    out, again = tmp_path / "out", tmp_path / "again"
    spec = tmp_path / "shipped.toml"
    with FakeServer(responder=reverse_order) as srv:
        spec.write_text(spec_text(srv.base_url, cache))
        assert main(["run", str(spec), "--out", str(out)]) == 0
        assert srv.requests == len(QUERIES)
    shipped = out / SHIPPED_FILE
    rows = [json.loads(line) for line in gzip.open(shipped, "rt")]
    assert len(rows) == len(QUERIES)
    raw = gzip.decompress(shipped.read_bytes()).decode()
    assert "fake-key-shipsecret" not in raw and "127.0.0.1" not in raw
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["responses"]["rows"] == len(QUERIES) and provenance["responses"]["sources"] == {
        "live": len(QUERIES)}

    cache.unlink()  # a fresh machine: no response cache
    for extra in ("-wal", "-shm"):
        cache.with_name(cache.name + extra).unlink(missing_ok=True)
    assert main(["responses", "replay", str(out), "--spec", str(spec)]) == 0
    with FakeServer(faults=[Fault.error(500)] * 100) as refusing:  # every request would fail
        spec.write_text(spec_text(refusing.base_url, cache))
        assert main(["run", str(spec), "--out", str(again)]) == 0
        assert refusing.requests == 0
    pd.testing.assert_frame_equal(pd.read_csv(out / "table.csv"), pd.read_csv(again / "table.csv"))
    usage = pd.read_csv(again / "usage.csv").set_index("system")
    assert usage.loc["BM25 >> listwise", "calls"] == 0 and usage.loc["BM25 >> listwise", "failures"] == 0
    assert (again / SHIPPED_FILE).read_bytes() == shipped.read_bytes()  # the same responses, the same bytes
    provenance = json.loads((again / "provenance.json").read_text())
    assert provenance["responses"]["sources"] == {"shipped:out": len(QUERIES)}


def test_a_run_without_a_cache_ships_nothing(tmp_path):
    with FakeServer(responder=lambda r: Reply("ok")) as srv:
        client = LLMClient(LLMConfig(model="m", base_urls=(srv.base_url,)), cache=None, usage=Usage())
        assert response_log(client) is None
        client.close()


@pytest.mark.slow
def test_replayed_answers_of_the_embedded_model_need_no_model_file(tmp_path, monkeypatch, chorus_mirror):
    """A fresh machine reproducing an embedded-model result: the answers (keyed by the embedded model's id) are
    replayed, and the run neither resolves, downloads nor starts the model."""
    import superb.llm.model as model_module
    from superb.llm.model import MODELS

    alias = MODELS["0.5b"].alias
    cache = tmp_path / "cache.sqlite"
    out, again = tmp_path / "out", tmp_path / "again"
    spec = tmp_path / "embedded.toml"
    with FakeServer(responder=reverse_order) as srv:  # plays the embedded model, under its id
        spec.write_text(spec_text(srv.base_url, cache).replace('model = "fake-reverse"', f'model = "{alias}"'))
        assert main(["run", str(spec), "--out", str(out)]) == 0
    cache.unlink()
    for extra in ("-wal", "-shm"):
        cache.with_name(cache.name + extra).unlink(missing_ok=True)
    assert main(["responses", "replay", str(out), "--cache", str(cache)]) == 0

    def no_model(*args, **kwargs):
        raise AssertionError("the model file was resolved although every answer is cached")

    monkeypatch.setattr(model_module, "resolve_model", no_model)
    monkeypatch.setattr("superb.llm.connect.resolve_model", no_model)  # where the embedded starter calls it
    embedded = "\n".join(line for line in spec.read_text().splitlines()
                         if not line.startswith(("model =", "base_urls =", "api_key_env =")))
    spec.write_text(embedded.replace("[llm]", '[llm]\nembedded_model = "0.5b"'))
    assert main(["run", str(spec), "--out", str(again)]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(out / "table.csv"), pd.read_csv(again / "table.csv"))
    llm = json.loads((again / "provenance.json").read_text())["llm"]
    assert llm["embedded"] is True and llm["server_started"] is False and llm["model"] == alias


@pytest.mark.slow
def test_save_ships_a_cut_short_run_so_another_machine_continues_it(tmp_path, monkeypatch, chorus_mirror):
    """`superb responses save SPEC`: the cached answers of a run not yet done (here: half of its queries answered),
    written without any call; replayed into an empty cache, only the other half is called."""
    monkeypatch.setenv("SUPERB_TEST_KEY", "fake-key-shipsecret-0123456789")
    cache, spec = tmp_path / "cache.sqlite", tmp_path / "spec.toml"
    half = tmp_path / "half.toml"
    with FakeServer(responder=reverse_order) as srv:
        half.write_text(chorus_spec("half", srv.base_url, cache, LISTWISE, queries=QUERIES[:2], model="fake-reverse"))
        assert main(["run", str(half), "--out", str(tmp_path / "half")]) == 0
        assert srv.requests == 2
    with FakeServer(faults=[Fault.error(500)] * 100) as refusing:
        spec.write_text(chorus_spec("whole", refusing.base_url, cache, LISTWISE, model="fake-reverse"))
        assert main(["responses", "save", str(spec), "--out", str(tmp_path / "partial.jsonl.gz")]) == 0
        assert refusing.requests == 0
    rows = [json.loads(line) for line in gzip.open(tmp_path / "partial.jsonl.gz", "rt")]
    assert len(rows) == 2 and "fake-key-shipsecret" not in json.dumps(rows)

    fresh = tmp_path / "fresh.sqlite"  # another machine
    assert main(["responses", "replay", str(tmp_path / "partial.jsonl.gz"), "--cache", str(fresh)]) == 0
    with FakeServer(responder=reverse_order) as srv:
        spec.write_text(chorus_spec("whole", srv.base_url, fresh, LISTWISE, model="fake-reverse"))
        assert main(["run", str(spec), "--out", str(tmp_path / "whole")]) == 0
        assert srv.requests == len(QUERIES) - 2
    assert main(["responses", "save", str(spec), "--out", str(tmp_path / "partial.json")]) == 2


def test_a_large_shipped_file_is_written_in_parts_that_replay_and_hash_as_one(tmp_path, monkeypatch):
    from superb.llm import ship

    with filled(tmp_path / "a.sqlite") as cache:
        log = ResponseLog(cache.path, tuple(cache.used_keys()))
    (tmp_path / "whole").mkdir()
    whole = write_shipped(log, tmp_path / "whole" / SHIPPED_FILE)
    folder = tmp_path / "results" / "parts"
    folder.mkdir(parents=True)
    monkeypatch.setattr(ship, "PART_BYTES", 1)  # every part holds one row (at least one is always written)
    parted = write_shipped(log, folder / SHIPPED_FILE)
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["responses.2.jsonl.gz", "responses.3.jsonl.gz", "responses.4.jsonl.gz",
                     "responses.5.jsonl.gz", "responses.jsonl.gz"]
    assert parted["rows"] == 5
    lines = [line for _, _, line in ship.read_lines(folder / SHIPPED_FILE)]
    assert lines == gzip.open(tmp_path / "whole" / SHIPPED_FILE, "rt").read().splitlines()  # the same sorted rows
    assert parted["sha256"] != whole["sha256"]  # the hash covers the parts' bytes, not the rows
    with ResponseCache(tmp_path / "fresh.sqlite") as fresh:
        report = replay(folder, fresh)
        assert (report.rows, report.counts.stored, report.invalid) == (5, 5, 0)
        assert fresh.get("m", req("p4")).text == "no"
    monkeypatch.setattr(ship, "PART_BYTES", 4_000_000)
    again = write_shipped(log, folder / SHIPPED_FILE)  # a shorter write removes the parts it no longer needs
    assert sorted(p.name for p in folder.iterdir()) == ["responses.jsonl.gz"]
    assert again["sha256"] == whole["sha256"] and again["rows"] == 5
