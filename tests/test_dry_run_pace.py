"""The dry run's time estimate: prompt tokens over the pace the response cache recorded for the model's live answers
(superb.llm.pace), cut into stretches of work at pauses; imported answers and other models' answers do not count."""

from __future__ import annotations

import sqlite3

import pytest

from superb.llm import ChatRequest, Completion, ResponseCache
from superb.llm.cache_rows import CachedRow, canonical, key_of_canonical
from superb.llm.pace import duration, pace_of, recorded_pace, time_line


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


def test_a_pause_between_runs_is_not_counted_as_work():
    # stretch 1: answers arrive at 100 (after 10 s), 110, 120: from 90 to 120, 30 s, 300 tokens
    # stretch 2, 1,080 s later: answers at 1200 (after 5 s) and 1205: from 1195 to 1205, 10 s, 200 tokens
    rows = [(100.0, 10.0, 100, "a@1"), (110.0, 9.0, 100, "a@1"), (120.0, 9.5, 100, "b@2"),
            (1200.0, 5.0, 120, "b@2"), (1205.0, 4.0, 80, "b@2")]
    pace = pace_of(rows, gap_s=120)
    assert (pace.answers, pace.prompt_tokens, pace.seconds, pace.stretches) == (5, 500, 40.0, 2)
    assert pace.tokens_per_s == 12.5
    assert pace.templates == (("b@2", 3), ("a@1", 2))
    # with no pause long enough to cut, the 1,080 s between them would count: the pace falls to 500 / 1,115 s
    assert pace_of(rows, gap_s=2000).seconds == 1115.0


def test_too_few_answers_give_no_pace():
    assert pace_of([]) is None
    assert pace_of([(100.0, 2.0, 50, "a")]) is None  # one answer is no pace to plan hours by
    assert pace_of([(100.0, 2.0, 50, "a"), (101.0, 1.0, 50, "a")]).seconds == 3.0  # two are: from 98 to 101


def _put(cache: ResponseCache, model: str, i: int, tokens: int) -> str:
    request = ChatRequest.chat(None, f"question {i}", tag="t")
    cache.put(model, request, Completion(text="yes", prompt_tokens=tokens, completion_tokens=1, latency_s=1.0))
    return key_of_canonical(canonical(model, request))


def test_recorded_pace_reads_only_the_models_live_answers(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    live = [_put(cache, "m", i, 100) for i in range(4)]
    other = _put(cache, "other-model", 9, 5000)
    request = ChatRequest.chat(None, "shipped", tag="t")
    material = canonical("m", request)
    cache.store_rows([CachedRow(key_of_canonical(material), "m", request.template, material, "no", None, 7000, 1)],
                     source="shipped.jsonl.gz")
    cache.close()
    with sqlite3.connect(path) as conn:  # the live answers arrived 1 s apart, the first after its 1 s latency
        for i, key in enumerate(live):
            conn.execute("UPDATE responses SET created = ? WHERE key = ?", (1000.0 + i, key))
        conn.execute("UPDATE responses SET created = 1001.5 WHERE key = ?", (other,))
    pace = recorded_pace(path, "m")
    assert (pace.answers, pace.prompt_tokens, pace.seconds) == (4, 400, 4.0)  # from 999 to 1003
    assert recorded_pace(path, "never-asked") is None
    with pytest.raises(sqlite3.Error):
        recorded_pace(tmp_path / "missing.sqlite", "m")
    gone = time_line(100, {"model": "m", "cache": {"path": str(tmp_path / "missing.sqlite")}})
    assert gone.startswith(f"time: no estimate (the response cache {tmp_path / 'missing.sqlite'} could not be read")


def test_the_dry_run_line_states_the_time_and_where_its_pace_comes_from(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    keys = [_put(cache, "m", i, 250) for i in range(10)]
    cache.close()
    with sqlite3.connect(path) as conn:  # 10 answers of 250 tokens over 100 s (the first took 10 s): 25 tokens/s
        for i, key in enumerate(keys):
            conn.execute("UPDATE responses SET created = ?, latency_s = 10.0 WHERE key = ?", (2000.0 + 10 * i, key))
    info = {"model": "m", "cache": {"path": str(path)}}
    line = time_line(90_000, info)  # 90,000 / 25 = 3,600 s
    assert line.startswith("time: about 1 h 00 min for 90,000 prompt tokens at 25 prompt tokens/s")
    assert "last 10 live answers (1 stretch(es) of work, 2 min" in line
    assert time_line(0, info) == "time: nothing to send"
    no_cache = time_line(100, {"model": "m", "cache": None})
    assert no_cache == "time: no estimate (no response cache to take a pace from)"
    assert "no live answers of m2" in time_line(100, {"model": "m2", "cache": {"path": str(path)}})


def test_durations_read_as_a_person_writes_them():
    assert [duration(s) for s in (40, 59.6, 90, 3599, 3600, 11_160)] == \
        ["40 s", "1 min", "2 min", "1 h 00 min", "1 h 00 min", "3 h 06 min"]
