"""A judge of one's own (issue 49, item 5): a superb.extend.Judge subclass in a user's file, named in a judge spec,
gets what superb's judges get: the response cache, the dry run's count and ceiling, shipped answers, calibration and
agreement, and re-derivation with 0 calls. A bad judge name is a spec error (exit 2) before any request.

The judge is the worked example of docs/extending.md (experiments/plugins/my_judges.py), copied into a folder of the
user's; the fake OpenAI-compatible server answers its three-grade prompt from a marker in each product's title."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from superb.testing.fakeserver import FakeServer, Reply
from local_data import write_data
from superb.cli import main

PLUGINS = Path(__file__).resolve().parents[1] / "experiments" / "plugins"
# queries of both splits (superb.data.splits: qid 4 and 12 are dev, the others test), two to four products each
DOCS = [(f"d{i}", f"g{g} item {i}") for i, g in enumerate([2, 1, 0, 2, 0, 1, 2, 2, 1, 0, 0, 1], 1)]
QUERIES = [("4", "item four"), ("12", "item twelve"), ("1", "item one"), ("2", "item two")]
QRELS = [("4", "d1", 3), ("4", "d2", 1), ("4", "d3", 0), ("12", "d4", 3), ("12", "d5", 0), ("12", "d6", 2),
         ("1", "d7", 3), ("1", "d8", 2), ("1", "d9", 1), ("2", "d10", 0), ("2", "d11", 0), ("2", "d12", 1)]


def three_grades(req: dict) -> Reply:
    prompt = "".join(m["content"] for m in req["messages"])
    grade = prompt.rsplit("<<<", 1)[1].split("g", 1)[1][0]  # the three-grade prompt, or superb's four grades
    top = {g: (-0.1 if g == grade else -3.0) for g in "0123"}
    return Reply(grade, ((grade, top[grade], top),))


@pytest.fixture()
def folder(tmp_path, monkeypatch) -> Path:
    """The user's folder: the data, their judge file and its prompt; the current directory."""
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    monkeypatch.chdir(tmp_path)
    write_data(tmp_path, docs=DOCS, queries=QUERIES, qrels=QRELS)
    for name in ("my_judges.py", "three_grade.j2"):
        shutil.copy(PLUGINS / name, tmp_path / name)
    return tmp_path


def spec(folder: Path, url: str, judge_type: str, cache: str = "normal") -> Path:
    path = folder / "judges.toml"
    path.write_text(f"""name = "my_judge"
seed = 0
[dataset]
name = "local"
docs = "docs.jsonl"
queries = "queries.tsv"
qrels = "qrels.txt"
labels = [0, 1, 2, 3]
rel_threshold = 2
[llm]
model = "fake-model"
base_urls = ["{url}"]
cache = "{cache}"
[judge]
fields = ["title"]
[[judge.variants]]
name = "three_grade"
type = "{judge_type}"
[[judge.variants]]
name = "superb"
preset = "superb_product"
[calibration]
bootstrap = 50
folds = 2
""")
    return path


def test_a_judge_of_ones_own_is_run_cached_shipped_calibrated_and_re_derived_with_no_call(folder, capsys):
    with FakeServer(responder=three_grades) as srv:
        path = spec(folder, srv.base_url, "my_judges.py:ThreeGradeJudge")
        assert main(["judge", str(path), "--dry-run"]) == 0
        dry = capsys.readouterr().out
        assert srv.requests == 0
        assert any(line.split()[:3] == ["judge:three_grade", "12", "12"] for line in dry.splitlines()), dry
        assert main(["judge", str(path), "--out", "out"]) == 0
        live = srv.requests
    assert live == 24  # 12 pairs, two judges, one request each
    table = pd.read_csv(folder / "out" / "agreement_calibrated.csv").set_index(["judge", "split"])
    assert table.loc[("three_grade", "test"), "n"] == 6 and table.loc[("three_grade", "dev-cv"), "n"] == 6
    record = json.loads((folder / "out" / "calibration.json").read_text())["three_grade"]
    assert record["plugin"]["file"] == "my_judges.py"
    assert record["plugin"]["sha256"] == __import__("hashlib").sha256((folder / "my_judges.py").read_bytes()).hexdigest()
    assert record["templates"]["grade"].startswith("three_grade@") and record["calibrated"]
    with gzip.open(folder / "out" / "responses.jsonl.gz", "rt", encoding="utf-8") as shipped:
        rows = [json.loads(line) for line in shipped]
    assert sum(r.get("template", "").startswith("three_grade@") for r in rows) == 12
    # a reader elsewhere: the answers replayed into a fresh cache, the spec run read-only: no request, same files
    fresh = folder / "fresh"
    assert main(["responses", "replay", "out", "--cache", str(fresh / "cache.sqlite")]) == 0
    with FakeServer(responder=three_grades) as srv:
        path = spec(folder, srv.base_url, "my_judges.py:ThreeGradeJudge", cache="read-only")
        text = path.read_text().replace('cache = "read-only"', f'cache = "read-only"\ncache_path = "{fresh / "cache.sqlite"}"')
        path.write_text(text)
        assert main(["judge", str(path), "--out", "again"]) == 0
        assert srv.requests == 0
    for name in ("agreement_calibrated.csv", "calibration.json", "three_grade/scores.tsv", "three_grade/labels.tsv"):
        assert (folder / "again" / name).read_bytes() == (folder / "out" / name).read_bytes(), name


@pytest.mark.parametrize("judge_type, message", [
    ("my_judges.py:Nope", r"plug-in module 'my_judges.py' has no attribute 'Nope'"),
    ("missing.py:Judge", r"plug-in file 'missing.py' not found"),
    ("superb.extend:LabelQuestion", r"is the class LabelQuestion, not a judge"),
    ("my_judges.py:PROMPT", r"is an instance of str, not a judge"),
    ("no_such_judge", r"unknown judge type 'no_such_judge'"),
])
def test_a_bad_judge_plugin_is_refused_with_exit_2_and_no_request(folder, capsys, judge_type, message):
    import re

    with FakeServer(responder=three_grades) as srv:
        path = spec(folder, srv.base_url, judge_type)
        for args in (["judge", str(path), "--dry-run"], ["judge", str(path), "--out", "out"]):
            assert main(args) == 2
            err = capsys.readouterr().err
            assert re.search(message, err), err
            assert "judge.variants[0].type" in err and "Traceback" not in err
        assert srv.requests == 0
    assert not (folder / "out").exists()


def test_the_guides_judge_example_its_prompt_and_spec_are_the_committed_files():
    page = (PLUGINS.parents[1] / "docs" / "extending.md").read_text(encoding="utf-8")
    block = page[page.index("<!-- extending-judge-example -->"):]
    start = block.index("```python") + len("```python")
    code = block[start:block.index("```", start)]
    assert code.strip() == (PLUGINS / "my_judges.py").read_text(encoding="utf-8").strip()
    start = page.index("```jinja") + len("```jinja")  # shown once, with the reranker that asks the same
    prompt = page[start:page.index("```", start)]
    assert prompt.strip() == (PLUGINS / "three_grade.j2").read_text(encoding="utf-8").strip()
    start = block.index("```toml\nname = ") + len("```toml")
    spec = block[start:block.index("```", start)]
    assert spec.strip() == (PLUGINS.parents[1] / "experiments" / "my_judges_chorus.toml").read_text().strip()


def test_the_guides_judge_spec_runs_as_shown(chorus_mirror, tmp_path, monkeypatch, capsys):
    """`superb judge experiments/my_judges_chorus.toml --dry-run`, as docs/extending.md shows it, from the project's
    folder: the plug-in is imported, both judges are counted, nothing is called or written."""
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(PLUGINS.parents[1])
    assert main(["judge", "experiments/my_judges_chorus.toml", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "three_grade" in out and "yesno_product" in out, out
    assert not (PLUGINS.parents[1] / "results" / "my_judges_chorus").exists()


def _install_judge(site: Path, package: str, version: str, entries: str) -> None:
    """A distribution ``package`` in ``site`` registering ``entries`` in the entry-point group superb.judges; its
    module re-exports the worked example's judge."""
    module = site / package.replace("-", "_")
    module.mkdir(parents=True)
    (module / "__init__.py").write_text(f"import importlib.util\nspec = importlib.util.spec_from_file_location("
                                        f"'ex_{package.replace('-', '_')}', {str(PLUGINS / 'my_judges.py')!r})\n"
                                        "m = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(m)\n"
                                        "ThreeGradeJudge = m.ThreeGradeJudge\n", encoding="utf-8")
    info = site / f"{package.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[superb.judges]\n{entries}\n", encoding="utf-8")


def test_a_judge_registered_by_a_package_is_named_by_its_short_name_and_a_name_claimed_twice_is_refused(
        folder, capsys, monkeypatch):
    site = folder / "site"
    _install_judge(site, "grade-judges", "1.0", "three = grade_judges:ThreeGradeJudge")
    monkeypatch.syspath_prepend(str(site))
    with FakeServer(responder=three_grades) as srv:
        assert main(["judge", str(spec(folder, srv.base_url, "three")), "--out", "out"]) == 0
        record = json.loads((folder / "out" / "calibration.json").read_text())["three_grade"]
        assert record["plugin"]["distribution"] == "grade-judges" and record["plugin"]["version"] == "1.0"
        _install_judge(folder / "site2", "other-judges", "2.0", "three = other_judges:ThreeGradeJudge\n"
                                                                "pointwise = other_judges:ThreeGradeJudge")
        monkeypatch.syspath_prepend(str(folder / "site2"))  # a new path: the registrations are read again
        before = srv.requests
        assert main(["judge", str(spec(folder, srv.base_url, "three")), "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert "type 'three' is registered by several installed packages: " in err
        assert "grade-judges 1.0" in err and "other-judges 2.0" in err and "Traceback" not in err
        assert main(["judge", str(spec(folder, srv.base_url, "pointwise")), "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert "type 'pointwise' is superb's own (superb.judges.pointwise:PointwiseJudge) and is also registered " \
               "by other-judges 2.0" in err
        assert srv.requests == before


def test_superb_table_writes_the_judging_table_from_judge_folders_with_quoted_rows(folder, capsys):
    """`superb table` on `superb judge` folders: kappa per judge and collection with intervals, quoted rows, the
    three files; a hand-edited cell of a folder is refused, and read with --unverified the output says so."""
    with FakeServer(responder=three_grades) as srv:
        assert main(["judge", str(spec(folder, srv.base_url, "my_judges.py:ThreeGradeJudge")), "--out", "a"]) == 0
    shutil.copytree(folder / "a", folder / "b")
    (folder / "anchors.csv").write_text("method,model,source,x_kappa_linear,y_kappa_linear\n"
                                        "UMBRELA,gpt-4o,a paper (Table 2),0.5,\n", encoding="utf-8")
    assert main(["table", "a", "b", "--names", "X,Y", "--anchors", "anchors.csv", "--out", "tbl"]) == 0
    table = pd.read_csv(folder / "tbl" / "table.csv")
    mine = table[(table["judge"] == "three_grade") & (table["statistic"] == "kappa_linear")]
    expected = pd.read_csv(folder / "a" / "agreement_calibrated.csv").set_index(["judge", "split", "against"])
    assert mine.set_index("collection").loc["X", "value"] == pytest.approx(
        expected.loc[("three_grade", "test", "qrels"), "kappa_linear"])
    quoted = table[table["kind"] == "quoted"]
    assert quoted[["judge", "model", "collection", "value"]].values.tolist() == [["UMBRELA", "gpt-4o", "X", 0.5]]
    md = (folder / "tbl" / "table.md").read_text()
    assert "| UMBRELA | gpt-4o | 0.500 | – |" in md and "*quoted from their sources, not run here*" in md
    assert "\\begin{tabular}" in (folder / "tbl" / "table.tex").read_text()
    prov = json.loads((folder / "tbl" / "provenance.json").read_text())
    assert [c["name"] for c in prov["collections"]] == ["X", "Y"] and prov["inputs"][0]["verified"]
    # the table's folder is not a collection, and an edited cell of a judge folder is refused
    assert main(["table", "tbl", "--out", "tbl2"]) == 2
    capsys.readouterr()
    path = folder / "b" / "agreement_calibrated.csv"
    path.write_text(path.read_text().replace("three_grade,test", "three_grade,test", 1).replace(",6,", ",7,", 1))
    assert main(["table", "a", "b", "--names", "X,Y", "--out", "tbl3"]) == 2
    assert "agreement_calibrated.csv" in capsys.readouterr().err
    assert main(["table", "a", "b", "--names", "X,Y", "--out", "tbl3", "--unverified"]) == 0
    assert "unverified" in json.loads((folder / "tbl3" / "provenance.json").read_text())


def test_a_missing_anchors_file_names_itself_and_the_columns_it_needs(tmp_path):
    from superb.errors import SuperbError
    from superb.eval.judge_table import anchor_rows

    with pytest.raises(SuperbError, match=r"--anchors .*nope\.csv: no such file .*method, model, source.*"
                                          r"dl19_kappa_linear"):
        anchor_rows(tmp_path / "nope.csv", ["DL19"])
