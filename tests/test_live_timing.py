"""scripts/live_timing.py: the live seconds of each pipeline from `superb run` logs (tqdm bars), the longest bar of
several logs, the calls made from each run's usage.csv, and --update keeping the rows no log has."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("live_timing", ROOT / "scripts" / "live_timing.py")
lt = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("live_timing", lt)
_spec.loader.exec_module(lt)

NAMES = ["A >> x", "A >> y"]


def bar(name: str, done: int, total: int, elapsed: str) -> str:
    return f"{name}:  {100 * done // total}%|##        | {done}/{total} [{elapsed}<00:10,  2.00s/query]\r"


def usage(path: Path, rows: list[tuple[str, int, int]]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["system", "calls", "cache_hits", "requests"])
        w.writerows([(s, c, h, c + h) for s, c, h in rows])
    return path


def test_the_last_bar_of_each_pipeline_in_a_log(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(bar("A >> x", 1, 4, "00:10") + bar("A >> x", 4, 4, "01:02:03") + bar("A >> y", 2, 4, "05:00"))
    assert lt.bars(log, NAMES) == {"A >> x": (4, 4, 3723), "A >> y": (2, 4, 300)}


def test_a_re_derivation_does_not_replace_the_live_time_and_calls_come_with_their_run(tmp_path):
    live = tmp_path / "live.log"
    live.write_text(bar("A >> x", 4, 4, "40:00") + bar("A >> y", 0, 4, "00:00"))  # y stopped before a query ended
    resumed = tmp_path / "resumed.log"
    resumed.write_text(bar("A >> x", 4, 4, "00:01") + bar("A >> y", 4, 4, "10:00"))
    used = usage(tmp_path / "usage.csv", [("A >> x", 0, 80), ("A >> y", 7, 5)])
    rows = lt.timed_rows([live, resumed], [None, used], NAMES)
    assert (rows["A >> x"]["seconds"], rows["A >> x"]["calls_made"]) == (2400, "")  # the live run, no usage given
    assert (rows["A >> y"]["seconds"], rows["A >> y"]["calls_made"], rows["A >> y"]["from_cache"]) == (600, 7, 5)
    assert rows["A >> y"]["complete"] is True


def test_update_keeps_the_rows_no_log_has_and_usage_must_pair_with_logs(tmp_path, monkeypatch):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\n[dataset]\nname = "chorus"\n[[pipelines]]\nname = "A"\nfirst_stage = { engine = '
                    '"pisa", model = "bm25" }\n' + "".join(
                        f'[[pipelines]]\nname = "{n}"\ninput = "A"\nrerank = {{ type = "random", top_k = 5 }}\n'
                        for n in NAMES))
    out = tmp_path / "bench" / "t.csv"
    out.parent.mkdir()
    out.write_text("system,queries,seconds,seconds_per_query,complete\nA >> x,4,99,24.8,True\n")
    log = tmp_path / "y.log"
    log.write_text(bar("A >> x", 4, 4, "00:02") + bar("A >> y", 4, 4, "00:08"))  # x: a re-derivation, 2 s
    monkeypatch.setattr(sys, "argv", ["live_timing.py", str(log), "--spec", str(spec), "--out", str(out), "--update"])
    lt.main()
    with out.open() as f:
        got = {r["system"]: r for r in csv.DictReader(f)}
    assert (got["A >> x"]["seconds"], got["A >> y"]["seconds"], got["A >> y"]["calls_made"]) == ("99", "8", "")
    monkeypatch.setattr(sys, "argv", ["live_timing.py", str(log), "--spec", str(spec), "--out", str(out),
                                      "--usage", "-", "-"])
    with pytest.raises(SystemExit):
        lt.main()
