"""A user's folder for plug-in tests, with no index to build: a local data set (``n`` queries over six products), a
first-stage run file, specs whose pipelines read it and ask the fake OpenAI server (superb/testing/fakeserver.py), and
`superb` run as a child process (for faults that end or hang a process) or in this one.

``lab(tmp_path, monkeypatch)`` makes the folder the current one and sets SUPERB_HOME under it, the fake server's key
and SUPERB_PROGRESS=0; ``spec(...)`` writes a spec; ``superb(...)`` runs the command in a child process with a timeout.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

PRODUCTS = [("d1", "trail running shoes"), ("d2", "road running shoes"), ("d3", "running socks"),
            ("d4", "leather office shoes"), ("d5", "coffee mug"), ("d6", "tea mug with lid")]
KEY_ENV = "SUPERB_TEST_KEY"


def lab(folder: Path, monkeypatch, queries: int = 2) -> Path:
    """``folder`` holding docs.jsonl, queries.tsv (``queries`` queries), qrels.txt and first.run, made the current
    folder."""
    (folder / "docs.jsonl").write_text("".join(json.dumps({"docno": d, "title": t}) + "\n" for d, t in PRODUCTS),
                                       encoding="utf-8")
    (folder / "queries.tsv").write_text("".join(f"{q}\tshoes or mugs {q}\n" for q in range(1, queries + 1)),
                                        encoding="utf-8")
    (folder / "qrels.txt").write_text("".join(f"{q} 0 d{1 + q % 6} 2\n{q} 0 d{1 + (q + 1) % 6} 1\n"
                                              for q in range(1, queries + 1)), encoding="utf-8")
    (folder / "first.run").write_text("".join(f"{q} Q0 {d} {r} {10 - r} bm25\n" for q in range(1, queries + 1)
                                              for r, (d, _) in enumerate(PRODUCTS, 1)), encoding="utf-8")
    monkeypatch.chdir(folder)
    monkeypatch.setenv("SUPERB_HOME", str(folder / "home"))
    monkeypatch.setenv(KEY_ENV, "fake-key-testsecret-0123456789")
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    return folder


def spec(folder: Path, name: str, stages: list[str], *, base_url: str = "http://127.0.0.1:9", llm: str = "",
         first: str = '{ run = "first.run" }') -> Path:
    """``name``.toml in ``folder``: the run file as pipeline "R", then one pipeline "R >> i" per rerank table in
    ``stages`` (TOML inline tables), the fake server at ``base_url`` with a response cache in the folder."""
    rows = "".join(f'[[pipelines]]\nname = "R >> {i}"\ninput = "R"\nrerank = {table}\n\n'
                   for i, table in enumerate(stages))
    path = folder / f"{name}.toml"
    path.write_text(f"""name = "{name}"
[dataset]
name = "local"
docs = "docs.jsonl"
queries = "queries.tsv"
qrels = "qrels.txt"
[evaluation]
measures = ["nDCG@10"]
n_resamples = 200
[llm]
model = "fake-model"
base_urls = ["{base_url}"]
api_key_env = "{KEY_ENV}"
cache_path = "{folder / 'cache.sqlite'}"
max_retries = 0
{llm}
[[pipelines]]
name = "R"
first_stage = {first}

{rows}""", encoding="utf-8")
    return path


def superb(*args: str, timeout: float = 90, env: dict | None = None) -> subprocess.CompletedProcess:
    """``superb ARGS`` in a child process in the current folder; TimeoutExpired if it does not end in ``timeout``."""
    return subprocess.run([sys.executable, "-m", "superb.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def cached_answers(cache: Path) -> int:
    """How many answers the response cache holds."""
    if not cache.is_file():
        return 0
    with sqlite3.connect(cache) as db:
        return db.execute("select count(*) from responses").fetchone()[0]
