"""The cache recovery recipe of docs/cache.md run on a real cache (`superb responses recover`, superb/llm/recover.py),
a 0-byte cache file named and never written by a dry run, and a dry run that creates or modifies no file at all.

The cache is the one a `superb run` on the local data set with the fake OpenAI server fills (SUPERB_HOME/llm-cache
.sqlite); damage is a page overwritten in the middle of a copy, as a bad disk or an interrupted copy leaves it."""

from __future__ import annotations

import logging
import os
import re
import shutil
from pathlib import Path

from superb.testing.fakeserver import FakeServer, yes
from local_data import data, dataset_table  # noqa: F401 (data: a fixture)
from superb.cli import main

ROOT = Path(__file__).resolve().parents[1]


def write_spec(folder: Path, url: str) -> Path:
    path = folder / "spec.toml"
    path.write_text(f"""
name = "recover"
{dataset_table(folder)}
[evaluation]
measures = ["nDCG@10"]
[llm]
model = "fake-model"
base_urls = ["{url}"]
max_retries = 0
[[pipelines]]
name = "BM25"
first_stage = {{ engine = "pisa", depth = 6 }}
[[pipelines]]
name = "pointwise"
input = "BM25"
rerank = {{ type = "pointwise", variant = "yesno", top_k = 6, fields = ["title"] }}
""")
    return path


def run(data: Path, *extra: str) -> tuple[int, int]:
    with FakeServer(responder=yes) as srv:
        code = main(["run", str(write_spec(data, srv.base_url)), "--out", str(data / "out"), *extra])
        return code, srv.requests


def cache_of(data: Path) -> Path:
    return data / "home" / "llm-cache.sqlite"


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()}


def test_the_documented_recipe_recovers_a_real_cache(data, capsys):
    code, paid = run(data)
    assert code == 0 and paid == 6  # BM25 retrieves 4 + 2 candidates
    cache = cache_of(data)
    docs = (ROOT / "docs" / "cache.md").read_text()
    recipe = re.search(r"`superb responses recover (\S+) --cache (\S+)`", docs)
    assert recipe and recipe.groups() == ("CACHE.corrupt", "CACHE") and "sqlite3 CACHE.corrupt .recover" not in docs
    os.rename(cache, f"{cache}.corrupt")  # the recipe's first step: move it aside
    assert main(["responses", "recover", f"{cache}.corrupt", "--cache", str(cache)]) == 0
    assert "recovered 6 answers" in capsys.readouterr().out
    shutil.rmtree(data / "out")
    assert run(data) == (0, 0)  # nothing paid again


def test_a_damaged_page_costs_only_its_rows(data, capsys, tmp_path):
    from superb.llm.cache import ResponseCache
    from superb.llm.types import ChatRequest, Completion

    cache = tmp_path / "big.sqlite"
    with ResponseCache(cache) as filled:
        for i in range(300):
            filled.put("m", ChatRequest(messages=(("user", f"question {i} " + "x" * 500),)), Completion(text=f"a{i}"))
    damaged = tmp_path / "big.sqlite.corrupt"
    shutil.copy(cache, damaged)
    pages = damaged.stat().st_size // 4096
    with open(damaged, "r+b") as handle:  # a page of rows in the middle: overwritten with garbage
        handle.seek((pages // 2) * 4096)
        handle.write(os.urandom(4096))
    assert main(["responses", "recover", str(damaged), "--cache", str(tmp_path / "new.sqlite")]) == 0
    line = capsys.readouterr().out
    read = int(re.search(r"recovered (\d+) answers", line).group(1))
    lost = int(re.search(r"(\d+) rows could not be read", line).group(1))
    refused = int(re.search(r"(\d+) were refused", line).group(1))
    assert 250 <= read < 300 and read + lost + refused >= 295
    with ResponseCache(tmp_path / "new.sqlite", "read-only") as new:
        assert len(new) == read


def test_recover_refuses_to_write_into_the_damaged_file(data, capsys):
    cache = cache_of(data)
    cache.parent.mkdir(parents=True)
    cache.write_bytes(b"x")
    assert main(["responses", "recover", str(cache), "--cache", str(cache)]) == 2
    assert "is the damaged file itself" in capsys.readouterr().err


def test_a_dry_run_creates_and_modifies_no_file(data):
    """(The first stage's index, a derived cache under SUPERB_HOME/indexes, is built by whichever run comes first.)"""
    assert run(data)[0] == 0
    home, before = cache_of(data).parent, snapshot(cache_of(data).parent)
    out = snapshot(data / "out")
    assert run(data, "--dry-run") == (0, 0)
    assert snapshot(home) == before and snapshot(data / "out") == out


def test_a_zero_byte_cache_is_named_and_a_dry_run_leaves_it_empty(data, caplog, capsys):
    caplog.set_level(logging.WARNING)
    cache = cache_of(data)
    cache.parent.mkdir(parents=True)
    cache.touch()
    assert run(data, "--dry-run") == (0, 0)
    assert cache.stat().st_size == 0 and sorted(p.name for p in cache.parent.glob("llm-cache*")) == [cache.name]
    assert f"the LLM response cache {cache} is an empty file (0 bytes)" in caplog.text
    assert "6 calls the real run would make" in capsys.readouterr().out
    caplog.clear()
    assert run(data) == (0, 6)  # a real run takes it as a new cache, and says so
    assert "is an empty file (0 bytes): it is taken as a new cache" in caplog.text


def test_a_read_only_cache_of_zero_bytes_is_refused(tmp_path):
    import pytest

    from superb.errors import LLMError
    from superb.llm.cache import ResponseCache

    (tmp_path / "c.sqlite").touch()
    with pytest.raises(LLMError, match=r"is an empty file \(0 bytes\), and cache mode is read-only"):
        ResponseCache(tmp_path / "c.sqlite", "read-only")
    assert (tmp_path / "c.sqlite").stat().st_size == 0
