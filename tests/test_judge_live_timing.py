"""scripts/judge_live_timing.py: the live seconds of a judge folder's shipped answers, per template, read from the
cache that received them: stretches cut at pauses, imported answers (latency 0) not counted, keys the folder did not
ship ignored."""

from __future__ import annotations

import csv
import gzip
import importlib.util
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from superb.llm.cache_open import SCHEMA

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("judge_live_timing", ROOT / "scripts" / "judge_live_timing.py")
jlt = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("judge_live_timing", jlt)
_spec.loader.exec_module(jlt)


def folder_and_cache(tmp_path: Path, answers: list[tuple[str, str, float, float, int]]) -> tuple[Path, Path]:
    """answers: (key, template, created, latency_s, prompt_tokens); keys starting with 'x' are not shipped."""
    folder = tmp_path / "judges"
    folder.mkdir()
    with gzip.open(folder / "responses.jsonl.gz", "wt", encoding="utf-8") as f:
        for key, template, *_ in answers:
            if not key.startswith("x"):
                f.write(json.dumps({"key": key, "template": template}) + "\n")
    cache = tmp_path / "cache.sqlite"
    conn = sqlite3.connect(cache)
    conn.executescript(SCHEMA)
    conn.executemany("INSERT INTO responses VALUES (?, 'm', ?, '{}', '', NULL, ?, 1, ?, ?, NULL)",
                     [(k, t, tok, lat, created) for k, t, created, lat, tok in answers])
    conn.commit()
    conn.close()
    return folder, cache


def test_stretches_per_template_imported_and_unshipped_answers_left_out(tmp_path, monkeypatch, capsys):
    folder, cache = folder_and_cache(tmp_path, [
        ("a1", "umbrela", 1000.0, 4.0, 400), ("a2", "umbrela", 1004.0, 4.0, 400),  # stretch 1: 996..1004 = 8 s
        ("a3", "umbrela", 5000.0, 2.0, 400), ("a4", "umbrela", 5002.0, 2.0, 400),  # after a pause: 4998..5002 = 4 s
        ("b1", "yesno", 6001.0, 1.0, 100), ("b2", "yesno", 6002.0, 1.0, 100),      # 6000..6002 = 2 s
        ("b3", "yesno", 0.0, 0.0, 100),                                            # imported: not live
        ("x1", "yesno", 6003.0, 50.0, 100),                                        # not shipped by the folder
    ])
    out = tmp_path / "bench" / "t.csv"
    monkeypatch.setattr(sys, "argv", ["judge_live_timing.py", str(folder), "--cache", str(cache), "--out", str(out)])
    assert jlt.main() == 0
    rows = {r["template"]: r for r in csv.DictReader(out.open())}
    assert (rows["umbrela"]["answers"], rows["umbrela"]["live_answers"], rows["umbrela"]["stretches"],
            rows["umbrela"]["seconds"], rows["umbrela"]["seconds_per_answer"]) == ("4", "4", "2", "12", "3.00")
    assert (rows["yesno"]["answers"], rows["yesno"]["live_answers"], rows["yesno"]["seconds"]) == ("3", "2", "2")
    assert (rows["all"]["answers"], rows["all"]["live_answers"], rows["all"]["stretches"], rows["all"]["seconds"]) \
        == ("7", "6", "3", "14")
    assert rows["yesno"]["prompt_tokens_per_answer"] == "100"
    assert json.loads((out.parent / "provenance.json").read_text())


def test_answers_another_folder_ships_are_left_out(tmp_path, monkeypatch):
    folder, cache = folder_and_cache(tmp_path, [
        ("a1", "umbrela", 1000.0, 4.0, 400), ("a2", "umbrela", 1004.0, 4.0, 400),  # the fit-on year's: 8 s
        ("a3", "umbrela", 5000.0, 2.0, 400), ("a4", "umbrela", 5002.0, 2.0, 400),  # this year's: 4 s
    ])
    other = tmp_path / "dev_year"
    other.mkdir()
    with gzip.open(other / "responses.jsonl.gz", "wt", encoding="utf-8") as f:
        for key in ("a1", "a2", "zz"):
            f.write(json.dumps({"key": key, "template": "umbrela"}) + "\n")
    out = tmp_path / "bench" / "t.csv"
    monkeypatch.setattr(sys, "argv", ["judge_live_timing.py", str(folder), "--cache", str(cache), "--out", str(out),
                                      "--without", str(other)])
    assert jlt.main() == 0
    rows = {r["template"]: r for r in csv.DictReader(out.open())}
    assert (rows["umbrela"]["answers"], rows["umbrela"]["live_answers"], rows["umbrela"]["stretches"],
            rows["umbrela"]["seconds"]) == ("2", "2", "1", "4")


def test_a_folder_without_responses_is_refused_by_name(tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    monkeypatch.setattr(sys, "argv", ["judge_live_timing.py", str(tmp_path / "empty"), "--cache", "c", "--out", "o"])
    with pytest.raises(SystemExit, match="does not exist: give a results folder"):
        jlt.main()
