"""One cache opener (issue 23.4): every command that reads the response cache -- `superb run`, `run --dry-run`,
`responses save`, `batch export`, `responses replay`, `batch import` -- refuses the same damage the same way, before
anything is called: garbage bytes, a copy cut short, pages overwritten behind an intact header, a valid SQLite file
with another schema, a directory at the cache path. Damage found mid-run (a lookup in a dry run, shipping the
responses) stops cleanly with the same error, never a sqlite3 traceback and never a dry run that plans to pay for
everything."""

from __future__ import annotations

import sqlite3

import pytest

from superb.testing.fakeserver import FakeServer
from local_data import data  # noqa: F401 (a fixture)
from superb.cli import main
from superb.errors import LLMError
from superb.llm import Completion, LLMConfig, ResponseCache
from superb.llm.dryrun import DryRunClient
from test_cli_exit_codes import spec, yes
from test_llm_cache_corrupt import damaged_while_open, filled, requests


def garbage(path):
    path.write_bytes(b"this is not a database, it is an old log file\n" * 200)


def truncated(path):
    data = filled(path)
    path.write_bytes(data[: len(data) // 2])


def pages_overwritten(path, refill: bool = True):
    """Header and first half intact: opening and the first rows read fine; the second half of the pages is noise."""
    data = bytearray(filled(path) if refill else path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    start = (len(data) // page // 2) * page
    data[start:] = b"\xab" * (len(data) - start)
    path.write_bytes(bytes(data))


def other_schema(path):
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE responses (id INTEGER PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO responses (body) VALUES ('someone else''s data')")


def other_tables(path):
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (day TEXT, note TEXT)")
        conn.execute("INSERT INTO notes VALUES ('monday', 'keep me')")


def directory(path):
    path.mkdir()
    (path / "something").write_text("x")


DAMAGE = {garbage: "corrupt", truncated: "corrupt", pages_overwritten: "corrupt",
          other_schema: "not a superb response cache", other_tables: "not a superb response cache",
          directory: "is a directory"}
COMMANDS = {
    "run": lambda s, d: ["run", s, "--out", str(d / "out")],
    "dry-run": lambda s, d: ["run", s, "--dry-run"],
    "responses save": lambda s, d: ["responses", "save", s, "--out", str(d / "saved.jsonl.gz")],
    "batch export": lambda s, d: ["batch", "export", s, "--out", str(d / "batch.jsonl")],
    "responses replay": lambda s, d: ["responses", "replay", str(d / "no-such-folder"), "--spec", s],
    "batch import": lambda s, d: ["batch", "import", str(d / "no-such-results.jsonl"), "--spec", s],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("damage", list(DAMAGE), ids=[d.__name__ for d in DAMAGE])
def test_every_command_refuses_every_kind_of_damage_before_any_call(data, capsys, damage, command):
    cache = data / "cache.sqlite"
    damage(cache)
    before = cache.read_bytes() if cache.is_file() else None
    with FakeServer(responder=yes) as srv:
        code = main(COMMANDS[command](spec(data, srv.base_url, cache="normal", cache_path=str(cache)), data))
        calls = srv.requests
    err = capsys.readouterr().err
    assert code == 2 and calls == 0, err
    assert err.startswith("superb: error: ") and str(cache) in err and DAMAGE[damage] in err
    assert "check the disk" not in err.lower()
    assert not (data / "out").exists() and not (data / "saved.jsonl.gz").exists() and not (data / "batch.jsonl").exists()
    if before is not None:
        assert cache.read_bytes() == before  # refused: nothing written into a file superb does not own


def test_a_dry_run_whose_cache_is_damaged_mid_run_stops_instead_of_counting_calls(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = damaged_while_open(path)
    try:
        client = DryRunClient(LLMConfig(model="m", base_urls=("http://unused/v1",)), cache=cache)
        with pytest.raises(LLMError, match="is corrupt"):
            client.complete_many(requests(400))
        client.close()
    finally:
        cache.close()


def test_damage_found_while_shipping_the_responses_stops_cleanly(data, capsys, monkeypatch):
    """The run's calls are made and cached; then the cache file is damaged before the results writer ships the
    responses it used: rc 2 with the corrupt-cache error, no results folder, no sqlite3 traceback."""
    import superb.llm.ship as ship

    cache = data / "cache.sqlite"
    filled(cache)
    original = ship.write_shipped

    def damage_then_ship(log, path):
        pages_overwritten(cache, refill=False)  # the header is intact: only reading the rows finds the damage
        return original(log, path)

    monkeypatch.setattr(ship, "write_shipped", damage_then_ship)
    with FakeServer(responder=yes) as srv:
        code = main(["run", spec(data, srv.base_url, cache="normal", cache_path=str(cache)), "--out",
                     str(data / "out")])
    err = capsys.readouterr().err
    assert code == 2 and f"the LLM response cache {cache} is corrupt" in err
    assert not (data / "out").exists()


def test_rows_counts_and_sources_read_from_a_damaged_cache_are_the_named_error(tmp_path):
    path = tmp_path / "cache.sqlite"
    with ResponseCache(filled_path := path) as cache:
        for request in requests(400):
            cache.put("m", request, Completion(text="answer"))
        keys = cache.used_keys()
    cache = damaged_while_open(filled_path)
    try:
        for read in (lambda: len(cache), lambda: list(cache.rows(keys)), lambda: cache.source_counts(keys)):
            with pytest.raises(LLMError, match="is corrupt"):
                read()
    finally:
        cache.close()


@pytest.mark.parametrize("dry_run", [True, False], ids=["judge --dry-run", "judge"])
@pytest.mark.parametrize("damage", list(DAMAGE), ids=[d.__name__ for d in DAMAGE])
def test_judge_refuses_every_kind_of_damage_before_any_call(tmp_path, monkeypatch, capsys, damage, dry_run):
    from test_judges_cli import responder, toml_value, write_local

    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    dataset = write_local(tmp_path / "data")
    cache = tmp_path / "cache.sqlite"
    damage(cache)
    with FakeServer(responder=responder) as srv:
        spec = tmp_path / "judge.toml"
        spec.write_text("\n".join([
            'name = "damaged_cache_judges"', "[dataset]", *[f"{k} = {toml_value(v)}" for k, v in dataset.items()],
            "[llm]", 'model = "fake-model"', f'base_urls = ["{srv.base_url}"]', f'cache_path = "{cache}"',
            "[judge]", 'fields = ["title"]', "[[judge.variants]]", 'type = "pointwise"', 'template = "pointwise_best_product"']) + "\n")
        code = main(["judge", str(spec), "--out", str(tmp_path / "out"), *(["--dry-run"] if dry_run else [])])
        calls = srv.requests
    err = capsys.readouterr().err
    assert code == 2 and calls == 0, err
    assert str(cache) in err and DAMAGE[damage] in err and not (tmp_path / "out").exists()
