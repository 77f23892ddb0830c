"""`superb batch export/import/status/submit` on a real spec (Chorus, PISA BM25, pointwise and sliding-window
rerankers on the fake model): rounds of batch files end in the same table as a live run, with 0 live calls."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from chorus_specs import QUERIES, chorus_spec
from superb.testing.fakeserver import FakeServer, Fault, answer_batch_file
from superb.cli import main
from test_batch_rounds import model

SECRET = "sk-live-clisecret-0123456789"


def spec_text(name: str, base_url: str, cache) -> str:
    prices = 'prices = { "fake-model" = { prompt = 2.0, completion = 8.0 } }'
    return chorus_spec(name, base_url, cache, queries=QUERIES[:4], llm=f"max_retries = 0\n{prices}", rerankers="""
[[pipelines]]
name = "BM25 >> pointwise"
input = "BM25"
rerank = [ { type = "pointwise", variant = "yesno", top_k = 6, fields = ["title"] } ]
[[pipelines]]
name = "BM25 >> sliding"
input = "BM25"
rerank = [ { type = "sliding", window = 6, step = 3, top_k = 12, fields = ["title"] } ]
""")


@pytest.fixture()
def home(tmp_path, monkeypatch, chorus_mirror):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_TEST_KEY", SECRET)
    return tmp_path


def live_table(home, name):
    with FakeServer(responder=model) as srv:
        spec = home / f"{name}-live.toml"
        spec.write_text(spec_text(name, srv.base_url, home / "live.sqlite"))
        assert main(["run", str(spec), "--out", str(home / "live")]) == 0
        # distinct requests: two products with the same title make one batch line, but two live calls
        return pd.read_csv(home / "live" / "table.csv"), len({json.dumps(b, sort_keys=True) for b in srv.received})


def run_refusing(home, name, cache, out):
    """`superb run` against a server that fails every request: passes only when the cache answers everything."""
    with FakeServer(faults=[Fault.error(500)] * 1000) as refusing:
        spec = home / f"{name}.toml"
        spec.write_text(spec_text(name, refusing.base_url, cache))
        assert main(["run", str(spec), "--out", str(out)]) == 0
        assert refusing.requests == 0
    return pd.read_csv(out / "table.csv")


@pytest.mark.slow
def test_export_import_rounds_then_run_makes_no_call(home, capsys):
    want, live_calls = live_table(home, "viabatch")
    cache = home / "batch.sqlite"
    spec = home / "viabatch.toml"
    spec.write_text(spec_text("viabatch", "http://127.0.0.1:9/v1", cache))
    answerer = FakeServer(responder=model)  # not started: plays `vllm run-batch -i FILE -o OUT`
    sizes = []
    for r in range(10):
        batch, out = home / f"r{r}.jsonl", home / f"r{r}.out.jsonl"
        assert main(["batch", "export", str(spec), "--out", str(batch)]) == 0
        printed = capsys.readouterr().out
        if "nothing left" in printed:
            break
        sizes.append(sum(1 for _ in batch.open()))
        assert SECRET not in batch.read_text()
        if r == 0:
            assert "queries pending" in printed and "template pointwise_yesno@" in printed
        answer_batch_file(answerer, batch, out, style="vllm")
        assert main(["batch", "import", str(out), "--spec", str(spec)]) == 0
        assert f"stored {sizes[-1]}" in capsys.readouterr().out
    assert sum(sizes) == live_calls and len(sizes) == 3  # sliding: 3 windows per query, in sequence
    assert main(["batch", "status", str(spec)]) == 0
    assert "nothing left" in capsys.readouterr().out
    got = run_refusing(home, "viabatch", cache, home / "out")
    pd.testing.assert_frame_equal(got, want)
    provenance = json.loads((home / "out" / "provenance.json").read_text())
    sources = provenance["responses"]["sources"]
    assert set(sources) == {f"batch:r{r}.out.jsonl" for r in range(len(sizes))}
    assert sum(sources.values()) == live_calls


@pytest.mark.slow
def test_submit_dry_run_then_rounds_against_the_batch_api(home, capsys):
    want, live_calls = live_table(home, "viasubmit")
    cache = home / "submit.sqlite"
    with FakeServer(responder=model, batch_polls=1) as srv:
        spec = home / "viasubmit.toml"
        spec.write_text(spec_text("viasubmit", srv.base_url, cache))
        assert main(["batch", "submit", str(spec), "--dry-run"]) == 0
        dry = capsys.readouterr().out
        assert "requests needed now" in dry and "estimated cost of this round at batch prices (50%" in dry
        assert srv.files_created == 0 and srv.requests == 0
        assert main(["batch", "submit", str(spec), "--poll-s", "0.01", "--max-poll-s", "0.02"]) == 0
        assert "done" in capsys.readouterr().out
        assert srv.requests == 0 and srv.batch_lines == live_calls and srv.batches_created == 3
        assert all(SECRET.encode() not in f["content"] for f in srv.files.values())
        assert main(["batch", "status", str(spec)]) == 0
        status = capsys.readouterr().out
        assert "nothing left" in status and "submitted round 3" in status and "imported" in status
    got = run_refusing(home, "viasubmit", cache, home / "out")
    pd.testing.assert_frame_equal(got, want)


def result_line(custom_id: str, *, status: int = 200, error=None) -> dict:
    body = {"choices": [{"message": {"content": "yes"}}], "usage": {}} if status == 200 else None
    return {"id": "x", "custom_id": custom_id, "response": {"status_code": status, "request_id": "r", "body": body},
            "error": error}


def test_import_exit_codes_failed_requests_3_unusable_lines_2(tmp_path, monkeypatch, capsys):
    """README's scheme: 3 when the batch held failed requests (they are exported again), 2 when a line cannot be
    used at all (unknown custom_id, malformed); 2 wins."""
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    cache = str(tmp_path / "c.sqlite")

    def imported(name, lines) -> int:
        path = tmp_path / name
        path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
        return main(["batch", "import", str(path), "--cache", cache])

    assert imported("empty.jsonl", []) == 0
    failed = result_line("b" * 64, status=400, error="maximum context length exceeded")  # vllm run-batch's form
    assert imported("failed.jsonl", [failed]) == 3
    out = capsys.readouterr()
    assert "error lines 1 (400 x1)" in out.out and "1 requests failed in the batch" in out.err
    assert imported("unknown.jsonl", [result_line("a" * 64), failed]) == 2
    assert "unknown custom_id 1" in capsys.readouterr().out
    assert imported("malformed.jsonl", ["{not json"]) == 2
    assert "malformed 1" in capsys.readouterr().out


def test_export_refuses_a_spec_without_an_llm_or_with_the_cache_off(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    spec = tmp_path / "s.toml"
    spec.write_text(spec_text("off", "http://127.0.0.1:9/v1", tmp_path / "c.sqlite").replace(
        'max_retries = 0', 'max_retries = 0\ncache = "off"'))
    assert main(["batch", "export", str(spec), "--out", str(tmp_path / "b.jsonl")]) == 2
    assert "llm.cache" in capsys.readouterr().err
