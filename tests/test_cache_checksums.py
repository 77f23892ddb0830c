"""Each cached LLM answer carries a checksum checked on every read (superb/llm/cache_checksum.py): one byte changed
inside a stored answer, in the file itself (SQLite's integrity check still passes), is the damaged-answer error naming
the key and `superb responses remove KEY --cache CACHE`, for a lookup, for the rows a run ships and for `superb run`
(exit 2, no call made, nothing written); caches written before checksums open as before: migrated when opened to
write, read unchecked when opened read-only."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from superb.testing.fakeserver import FakeServer, yes
from local_data import data, dataset_table  # noqa: F401 (data: a fixture)
from superb.cli import main
from superb.errors import LLMError
from superb.llm import ChatRequest, Completion, ResponseCache, TokenLogprob, cache_key

ANSWER = "the answer is 7f3c9e"
REQUEST = ChatRequest.chat("sys", "is this a water bottle?", template="pointwise@abc123", max_tokens=8)


def stored(path: Path, answer: str = ANSWER) -> str:
    """A cache at ``path`` holding one answer (closed: every page written into the file); returns its key."""
    with ResponseCache(path) as cache:
        cache.put("m", REQUEST, Completion(text=answer, logprobs=(TokenLogprob("the", -0.1, {"the": -0.1}),),
                                           prompt_tokens=12, completion_tokens=5))
    return cache_key("m", REQUEST)


def damage(path: Path, inside: bytes, at: int = 3) -> None:
    """Change one byte of the file inside the first occurrence of ``inside`` (a stored value), then check that
    SQLite's own integrity check does not see it."""
    data = bytearray(path.read_bytes())
    where = data.find(inside)
    assert where > 0 and data.find(inside, where + 1) == -1, "the damaged value must be stored once"
    data[where + at] ^= 0x01
    path.write_bytes(bytes(data))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def refused_with_the_way_out(info: pytest.ExceptionInfo, path: Path, key: str) -> None:
    message = str(info.value)
    assert key in message and str(path) in message and "checksum does not match" in message
    assert f"superb responses remove {key} --cache {path}" in message


def test_a_byte_changed_inside_a_stored_answer_is_refused_on_lookup(tmp_path):
    path = tmp_path / "cache.sqlite"
    key = stored(path)
    damage(path, ANSWER.encode())
    with ResponseCache(path) as cache, pytest.raises(LLMError) as info:
        cache.get("m", REQUEST)
    refused_with_the_way_out(info, path, key)
    with ResponseCache(path, "read-only") as cache, pytest.raises(LLMError) as info:  # a replay's cache, too
        cache.get("m", REQUEST)
    refused_with_the_way_out(info, path, key)


def test_a_damaged_answer_is_not_shipped(tmp_path):
    path = tmp_path / "cache.sqlite"
    key = stored(path)
    damage(path, b'[["the",')  # inside its logprobs
    with ResponseCache(path, "read-only") as cache, pytest.raises(LLMError) as info:
        list(cache.rows([key]))
    refused_with_the_way_out(info, path, key)


def test_the_way_out_removes_the_answer_and_it_is_asked_again(tmp_path):
    path = tmp_path / "cache.sqlite"
    key = stored(path)
    damage(path, ANSWER.encode())
    assert main(["responses", "remove", key, "--cache", str(path)]) == 0
    with ResponseCache(path) as cache:
        assert cache.get("m", REQUEST) is None  # a miss: the next run asks for it again


def old_cache(path: Path) -> str:
    """A cache as superb wrote it before answers carried checksums (the ten columns of then)."""
    from superb.llm.cache_file import BEFORE_CHECKSUMS

    new = path.with_name("new.sqlite")
    key = stored(new)
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE responses ({', '.join(BEFORE_CHECKSUMS)}, PRIMARY KEY (key))")
        conn.execute(f"ATTACH DATABASE '{new}' AS new")
        conn.execute(f"INSERT INTO responses SELECT {', '.join(BEFORE_CHECKSUMS)} FROM new.responses")
        conn.commit()
    conn.close()
    return key


def columns(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [row[1] for row in conn.execute("PRAGMA table_info(responses)")]


def test_a_cache_written_before_checksums_is_read_read_only_and_migrated_when_written(tmp_path):
    from superb.llm.cache_checksum import answer_checksum

    path = tmp_path / "old.sqlite"
    key = old_cache(path)
    with ResponseCache(path, "read-only") as cache:
        assert cache.get("m", REQUEST).text == ANSWER  # read as before, unchecked: a read-only open writes nothing
    assert "checksum" not in columns(path)
    with ResponseCache(path) as cache:  # opened to write: the column is added and every answer's checksum computed
        assert cache.get("m", REQUEST).text == ANSWER
    assert columns(path)[-1] == "checksum"
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT key, text, logprobs, prompt_tokens, completion_tokens, checksum FROM responses"
                           ).fetchone()
    assert row[0] == key and row[-1] == answer_checksum(*row[:-1])
    damage(path, ANSWER.encode())
    with ResponseCache(path) as cache, pytest.raises(LLMError) as info:
        cache.get("m", REQUEST)
    refused_with_the_way_out(info, path, key)


def test_superb_run_stops_on_a_damaged_cached_answer_and_calls_nothing(data, capsys):
    cache = data / "cache.sqlite"
    spec = data / "spec.toml"
    with FakeServer(responder=yes) as srv:
        spec.write_text(f"""
name = "damaged"
{dataset_table(data)}
[evaluation]
measures = ["nDCG@10"]
[llm]
model = "fake-model"
base_urls = ["{srv.base_url}"]
cache_path = "{cache}"
[[pipelines]]
name = "BM25"
first_stage = {{ engine = "pisa", depth = 5 }}
[[pipelines]]
name = "pointwise"
input = "BM25"
rerank = {{ type = "pointwise", variant = "yesno", top_k = 3, fields = ["title"] }}
""")
        assert main(["run", str(spec), "--out", str(data / "first")]) == 0
        calls = srv.requests
        with sqlite3.connect(cache) as conn:
            key, request, text = conn.execute("SELECT key, request, text FROM responses ORDER BY key").fetchone()
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        assert text == "yes"
        stored_bytes = (request + text).encode()  # a record's values lie side by side: its request, then its answer
        damage(cache, stored_bytes, at=len(stored_bytes) - 2)  # the answer's second byte: "yes" -> "yds"
        capsys.readouterr()
        assert main(["run", str(spec), "--out", str(data / "second")]) == 2
        assert srv.requests == calls  # nothing paid
    err = capsys.readouterr().err
    assert f"the cached answer {key}" in err and f"superb responses remove {key} --cache {cache}" in err
    assert "Traceback" not in err and not (data / "second").exists()
