"""`superb responses replay` checks every row completely before storing it (issue 23.3): text, logprobs (a list of
[token, logprob, {alternative: logprob}] with strings and finite numbers), model, template and token counts. A row
that still cannot be loaded from the cache (written there by other means) is reported with its key and the command
that removes it, never a traceback; removing it makes the next run call that one request again."""

from __future__ import annotations

import gzip
import json
import sqlite3

import pytest

from superb.testing.fakeserver import FakeServer
from local_data import data  # noqa: F401 (a fixture)
from superb.cli import main
from superb.llm.cache_rows import CachedRow
from superb.llm.ship import write_lines
from test_cli_exit_codes import spec, yes

MALFORMED = {"garbage": "garbage", "pair without alternatives": [["yes", -0.1]],
             "null members": [[None, None, None]], "string logprob": [["yes", "-0.1", {"yes": -0.1}]],
             "alternatives not a table": [["yes", -0.1, ["no", -2.3]]]}


def run(folder, srv, cache) -> int:
    return main(["run", spec(folder, srv.base_url, cache="normal", cache_path=str(cache)), "--out",
                 str(folder / "out")])


def shipped_rows(folder) -> list[dict]:
    with gzip.open(folder / "out" / "responses.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f]


def test_replay_refuses_malformed_logprobs_and_the_next_run_calls_only_those(data, capsys):
    with FakeServer(responder=yes) as srv:
        assert run(data, srv, data / "a.sqlite") == 0
        rows = shipped_rows(data)
        assert len(rows) == 5 and srv.requests == 5
        for row, bad in zip(rows, MALFORMED.values()):
            row["logprobs"] = bad  # the key is the request's: still "valid" for a check of keys only
        write_lines(data / "out" / "responses.jsonl.gz",
                    (json.dumps(r, sort_keys=True, separators=(",", ":")) for r in rows))
        capsys.readouterr()
        assert main(["responses", "replay", str(data / "out"), "--cache", str(data / "b.sqlite")]) == 2
        out, err = capsys.readouterr()
        assert "stored 0" in out and "refused 5" in out and "logprobs" in out
        assert "5 rows refused" in err and "keys do not match" not in err  # the reason is the rows' content

        before = srv.requests
        assert run(data, srv, data / "b.sqlite") == 0  # nothing malformed was stored: no traceback, 5 calls again
        assert srv.requests - before == 5


@pytest.mark.parametrize("field,value,reason", [
    ("text", None, "text"), ("text", 3, "text"), ("model", 7, "model"), ("template", None, "template"),
    ("prompt_tokens", -1, "prompt_tokens"), ("completion_tokens", "many", "completion_tokens"),
    ("prompt_tokens", True, "prompt_tokens")])
def test_each_field_is_checked(field, value, reason):
    material = {"v": 1, "model": "m", "template": "t", "messages": [["user", "q"]]}
    from superb.llm.cache_rows import canonical_json, key_of_canonical

    row = {"key": key_of_canonical(canonical_json(material)), "model": "m", "template": "t", "request": material,
           "text": "yes", "logprobs": [["yes", -0.1, {"yes": -0.1, "no": -2.4}]], "prompt_tokens": 3,
           "completion_tokens": 1}
    assert CachedRow.from_dict(row).text == "yes"
    row[field] = value
    if field in ("model", "template"):
        material[field] = value
        row["key"] = key_of_canonical(canonical_json(material))
    with pytest.raises(ValueError, match=reason):
        CachedRow.from_dict(row)


def test_a_row_the_cache_cannot_load_is_named_with_the_command_that_removes_it(data, capsys):
    cache = data / "a.sqlite"
    with FakeServer(responder=yes) as srv:
        assert run(data, srv, cache) == 0
        with sqlite3.connect(cache) as conn:  # damaged by other means than replay (an old superb, a hand edit)
            key = conn.execute("SELECT key FROM responses ORDER BY key LIMIT 1").fetchone()[0]
            conn.execute("UPDATE responses SET logprobs = '\"garbage\"' WHERE key = ?", (key,))
        capsys.readouterr()
        assert run(data, srv, cache) == 2
        err = capsys.readouterr().err
        assert key in err and "cannot be loaded" in err
        command = f"superb responses remove {key} --cache {cache}"
        assert command in err and "Traceback" not in err
        assert main(command.split()[1:]) == 0
        assert "removed 1" in capsys.readouterr().out
        before = srv.requests
        assert run(data, srv, cache) == 0
        assert srv.requests - before == 1  # only the removed answer is asked again


def test_removing_from_a_cache_that_does_not_exist_names_it_and_creates_nothing(tmp_path, capsys):
    cache = tmp_path / "typo.sqlite"
    assert main(["responses", "remove", "a" * 64, "--cache", str(cache)]) == 2
    assert f"the LLM response cache {cache} does not exist" in capsys.readouterr().err
    assert not cache.exists()


def test_shipping_a_row_whose_logprobs_are_not_json_names_it(tmp_path):
    from superb.errors import LLMError
    from superb.llm import ChatRequest, Completion, ResponseCache
    from superb.llm.ship import ResponseLog, write_shipped

    path = tmp_path / "cache.sqlite"
    with ResponseCache(path) as cache:
        cache.put("m", ChatRequest.chat(None, "q"), Completion(text="yes"))
        key = cache.used_keys()[0]
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE responses SET logprobs = 'not json' WHERE key = ?", (key,))
    with pytest.raises(LLMError, match=f"superb responses remove {key} --cache {path}"):
        write_shipped(ResponseLog(path, (key,)), tmp_path / "responses.jsonl.gz")
