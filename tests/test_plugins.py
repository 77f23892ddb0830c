"""Methods of one's own in a spec, beside superb's (issue 44): a Reranker subclass in a user's file or module, a
short name an installed package registers (entry points), and any pt.Transformer, through `superb run` on the fake
server; and every bad plug-in name refused before anything is opened or asked."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from chorus_specs import QUERIES, chorus_spec
from superb.testing.fakeserver import FakeServer, Reply
from superb.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "experiments" / "plugins"


def grader(request):
    """Label requests: grade "2" (the three-grade prompt) or "yes", with probabilities that differ by product."""
    prompt = "".join(m["content"] for m in request["messages"])
    p = 0.2 + (sum(map(ord, prompt[-200:])) % 60) / 100.0
    if "Grade:" in prompt:
        top = {"2": math.log(p), "1": math.log((1 - p) / 2), "0": math.log((1 - p) / 2)}
        return Reply("2", (("2", top["2"], top),))
    top = {"yes": math.log(p), "no": math.log(1 - p)}
    return Reply("yes", (("yes", top["yes"], top),))


@pytest.fixture()
def lab(chorus_run_home, monkeypatch):
    """A user's folder with the example methods as module ``lab_methods`` (their own file and prompt), the
    current folder."""
    folder = chorus_run_home / "lab"
    folder.mkdir()
    shutil.copy(EXAMPLE / "my_methods.py", folder / "lab_methods.py")
    shutil.copy(EXAMPLE / "three_grade.j2", folder / "three_grade.j2")
    monkeypatch.chdir(folder)
    yield chorus_run_home
    for name in [m for m in sys.modules if m.startswith(("lab_methods", "ep_methods"))]:
        del sys.modules[name]


def spec_text(home: Path, name: str, base_url: str, rerank: str, *, llm: str = "max_retries = 0") -> Path:
    pipelines = f"""
[[pipelines]]
name = "PISA BM25 >> pointwise"
input = "PISA BM25"
rerank = {{ type = "pointwise", variant = "yesno", top_k = 5 }}
[[pipelines]]
name = "PISA BM25 >> mine"
input = "PISA BM25"
rerank = {rerank}
"""
    spec = home / f"{name}.toml"
    spec.write_text(chorus_spec(name, base_url, home / "cache.sqlite", pipelines, first_stage="PISA BM25",
                                llm=llm), encoding="utf-8")
    return spec


def shipped_templates(folder: Path) -> list[str]:
    with gzip.open(folder / "responses.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line)["request"]["template"] for line in f if line.strip()]


@pytest.mark.slow
def test_a_plugin_reranker_in_a_users_module_is_run_cached_shipped_and_rederived_with_no_call(lab):
    home = lab
    with FakeServer(responder=grader) as srv:
        spec = spec_text(home, "plug", srv.base_url, '{ type = "lab_methods:ThreeGrade", top_k = 5 }')
        assert main(["run", str(spec), "--out", str(home / "plug")]) == 0
        asked = srv.requests
        table = pd.read_csv(home / "plug" / "table.csv")
        assert "PISA BM25 >> mine" in set(table["system"]) and "PISA BM25 >> pointwise" in set(table["system"])
        templates = shipped_templates(home / "plug")
        assert sum(t.startswith("three_grade@") for t in templates) >= len(QUERIES)  # named by its template's id
        usage = pd.read_csv(home / "plug" / "usage.csv").set_index("system")
        shipped = sum(t.startswith("three_grade@") for t in templates)  # distinct requests; a repeat is asked once
        assert shipped <= usage.loc["PISA BM25 >> mine", "requests"] <= shipped + usage.loc["PISA BM25 >> mine",
                                                                                           "coalesced"]
        assert usage.loc["PISA BM25 >> mine", "fallbacks"] == 0
        plugin = json.loads((home / "plug" / "provenance.json").read_text())["plugins"]["pipelines[2].rerank[0]"]
        assert plugin["module"] == "lab_methods" and plugin["attr"] == "ThreeGrade"
        assert plugin["sha256"] == hashlib.sha256((home / "lab" / "lab_methods.py").read_bytes()).hexdigest()
        run = pd.read_csv(home / "plug" / "perquery.csv")
        assert len(run)

        again = spec_text(home, "plug_again", srv.base_url, '{ type = "lab_methods:ThreeGrade", top_k = 5 }',
                          llm='max_retries = 0\ncache = "read-only"')
        assert main(["run", str(again), "--out", str(home / "plug_again")]) == 0
        assert srv.requests == asked  # re-derived from the cache: 0 calls
    for name in json.loads((home / "plug" / "provenance.json").read_text())["systems"].values():
        assert (home / "plug" / name).read_bytes() == (home / "plug_again" / name).read_bytes()


@pytest.mark.slow
def test_a_short_name_registered_by_an_installed_package_and_a_pyterrier_transformer(lab, monkeypatch):
    home = lab
    site = home / "site"
    (site / "ep_methods").mkdir(parents=True)
    shutil.copy(home / "lab" / "lab_methods.py", site / "ep_methods" / "__init__.py")
    dist = site / "ep_methods-0.3.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-methods\nVersion: 0.3\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[superb.rerankers]\nlength_first = ep_methods:title_length\n",
                                           encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    with FakeServer(responder=grader) as srv:
        spec = spec_text(home, "ep", srv.base_url, '{ type = "length_first", top_k = 10, fields = ["title"] }')
        spec.write_text(spec.read_text() + """
[[pipelines]]
name = "PISA BM25 >> Tf"
input = "PISA BM25"
rerank = { type = "pyterrier.text:scorer", body_attr = "text", wmodel = "Tf", top_k = 10 }
""", encoding="utf-8")
        assert main(["run", str(spec), "--out", str(home / "ep")]) == 0
        only_pointwise = srv.requests
    assert 0 < only_pointwise <= 5 * len(QUERIES)  # the two plug-ins call no model
    provenance = json.loads((home / "ep" / "provenance.json").read_text())
    assert provenance["plugins"]["pipelines[2].rerank[0]"]["version"] == "0.3"
    runs = {name: pd.read_csv(home / "ep" / f, sep=r"\s+", header=None, names=["qid", "q0", "docno", "rank",
                                                                                   "score", "tag"], dtype=str)
            for name, f in provenance["systems"].items()}
    base = runs["PISA BM25"]
    for name in ("PISA BM25 >> mine", "PISA BM25 >> Tf"):
        run = runs[name]
        assert sorted(zip(run.qid, run.docno)) == sorted(zip(base.qid, base.docno))  # only its input's documents
        assert list(run.qid + run.docno) != list(base.qid + base.docno)  # and reordered
    scores = pd.read_csv(home / "ep" / "stage_scores.csv.gz")
    assert "length_first_score" in scores.columns  # named by its entry point


BAD = {
    '{ type = "no_such_module:X" }': "plug-in module 'no_such_module' not found",
    '{ type = "lab_methods:Nope" }': "has no attribute 'Nope'",
    '{ type = "lab_methods:PROMPT" }': "is an instance of str, not a stage",
    '{ type = "broken_methods:X" }': "failed to import: ZeroDivisionError",
    '{ type = "lab_methods.py:Nope" }': "has no attribute 'Nope'",
    '{ type = "missing.py:X" }': "plug-in file 'missing.py' not found",
    '{ type = "lab_methods:ThreeGrade", colour = "red" }': "colour: unknown option",
    '{ type = "lab_methods:ThreeGrade", top_k = "5" }': "top_k: expected an integer",
    '{ type = "lab_methods:title_length", wmodel = "Tf" }': "wmodel: unknown option",
    '{ type = "not_a_transformer:make" }': "returned dict, not a pt.Transformer",
    '{ type = "pointwize" }': "unknown reranker type 'pointwize'",
}


@pytest.mark.parametrize("rerank", sorted(BAD))
def test_each_bad_plugin_is_a_spec_error_with_exit_2_and_no_request(lab, capsys, rerank):
    home = lab
    (home / "lab" / "broken_methods.py").write_text("X = 1 / 0\n", encoding="utf-8")
    (home / "lab" / "not_a_transformer.py").write_text("import pyterrier as pt\n\n\ndef make() -> pt.Transformer:\n"
                                                       "    return {}\n", encoding="utf-8")
    with FakeServer(responder=grader) as srv:
        spec = spec_text(home, "bad", srv.base_url, rerank)
        assert main(["run", str(spec), "--out", str(home / "bad")]) == 2
        assert main(["run", str(spec), "--dry-run"]) == 2
        assert srv.requests == 0
    err = capsys.readouterr().err
    assert "pipelines[2].rerank[0]" in err and BAD[rerank] in err, err
    assert "Traceback" not in err and not (home / "bad").exists()


@pytest.mark.slow
def test_a_plugin_whose_score_raises_is_named_with_its_stage(lab, capsys):
    home = lab
    (home / "lab" / "raising_methods.py").write_text(
        "from superb.extend import Reranker\n\n"
        "class Raises(Reranker):\n"
        "    calls_llm = False\n"
        "    async def score(self, cands):\n"
        "        raise KeyError('no such field')\n", encoding="utf-8")
    with FakeServer(responder=grader) as srv:
        spec = spec_text(home, "raises", srv.base_url, '{ type = "raising_methods:Raises" }')
        assert main(["run", str(spec), "--out", str(home / "raises")]) == 2
    err = capsys.readouterr().err
    assert "pipelines[2].rerank[0] (type 'raises', Raises.score) raised KeyError" in err, err
    assert "Traceback" not in err


def test_the_guides_example_shows_every_file_it_needs_as_committed():
    """docs/extending.md shows my_methods.py (without its docstring), the prompt it reads and the whole spec that runs
    it, each as committed: a reader who copies the three files has a spec that runs as shown."""
    page = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    block = page[page.index("<!-- extending-example -->"):]

    def fenced(language: str, after: int = 0) -> str:
        start = block.index(f"```{language}\n", after) + len(language) + 4
        return block[start:block.index("```", start)]

    committed = (EXAMPLE / "my_methods.py").read_text(encoding="utf-8")
    assert fenced("python").strip() == committed[committed.index('"""', 3) + 3:].strip()
    assert fenced("jinja").strip() == (EXAMPLE / "three_grade.j2").read_text(encoding="utf-8").strip()
    assert fenced("toml").strip() == (ROOT / "experiments" / "chorus_dev_plugins.toml").read_text().strip()
    reranker = committed[committed.index("class ThreeGrade"):committed.index("def title_length")]
    assert len([x for x in reranker.splitlines() if x.strip()]) <= 20  # "An LLM reranker in 20 lines"


def test_the_committed_folder_has_a_row_from_a_users_file_and_one_from_a_pyterrier_transformer():
    folder = ROOT / "results" / "chorus_dev_plugins"
    table = pd.read_csv(folder / "table.csv")
    assert {"BM25 >> three_grade", "BM25 >> Tf text scorer", "BM25 >> title_length"} <= set(table["system"])
    provenance = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
    plugins = {record["attr"]: record for record in provenance["plugins"].values()}
    mine = (EXAMPLE / "my_methods.py").read_bytes()
    assert plugins["ThreeGrade"]["sha256"] == hashlib.sha256(mine).hexdigest()  # the committed file wrote it
    assert plugins["scorer"]["module"] == "pyterrier.text" and plugins["scorer"]["version"]
    assert any(t.startswith("three_grade@") for t in shipped_templates(folder))
