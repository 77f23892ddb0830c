"""Code runs only where the user asked for it (issue 50): what a spec's ``type`` names is called only when it says it
makes a stage (nothing else is called, dry run or not), and a spec read out of a results folder (`superb merge`,
`superb judge --fill`) imports no plug-in unless the user passes --allow-plugins."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from chorus_specs import chorus_spec
from superb.testing.fakeserver import FakeServer
from plugin_lab import lab, spec
from superb.cli import main

PLUGIN = textwrap.dedent('''
    from __future__ import annotations

    from pathlib import Path

    import pyterrier as pt

    Path("IMPORTED").touch()  # the test reads whether the module ran


    def by_length() -> pt.Transformer:  # a string annotation (the __future__ import): resolved, never evaluated
        return pt.apply.doc_score(lambda row: -float(len(row["text"])))


    def unmarked():
        Path("CALLED").touch()
        return pt.apply.doc_score(lambda row: 1.0)


    def sneaky() -> "__import__('pathlib').Path('CALLED').touch() or pt.Transformer":
        Path("CALLED").touch()
        return pt.apply.doc_score(lambda row: 1.0)


    shortest = lambda: pt.apply.doc_score(lambda row: 0.0)  # noqa: E731
''')


MARKED = textwrap.dedent('''
    import pyterrier as pt

    from superb.extend import stage_factory


    @stage_factory
    def marked():
        return pt.apply.doc_score(lambda row: float(len(row["text"])))
''')


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    lab(tmp_path, monkeypatch, queries=6)
    (tmp_path / "mine.py").write_text(PLUGIN, encoding="utf-8")
    (tmp_path / "marked.py").write_text(MARKED, encoding="utf-8")
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("superb_plugin_mine_")]:
        del sys.modules[name]  # the next import of mine.py runs it again (it marks IMPORTED)


@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "run"])
def test_os_system_and_shutil_rmtree_named_in_a_spec_are_never_called(folder, capsys, dry):
    victim = folder / "victim"
    (victim / "inside").mkdir(parents=True)
    path = spec(folder, "hostile", ['{ type = "os:system", command = "touch PWNED" }',
                                    f'{{ type = "shutil:rmtree", path = "{victim}" }}'])
    assert main(["run", str(path), "--out", str(folder / "out"), *(["--dry-run"] if dry else [])]) == 2
    err = capsys.readouterr().err
    assert not (folder / "PWNED").exists() and (victim / "inside").is_dir()  # neither was called
    assert "pipelines[1].rerank[0].type: 'os:system' is the built-in system, not a stage" in err, err
    assert "pipelines[2].rerank[0].type: 'shutil:rmtree' is the function rmtree, which does not declare" in err
    assert "nothing was called" in err and "Traceback" not in err


REFUSED = {
    "superb.cli:main": "is the function main, which does not declare that it makes a stage",
    "builtins:print": "is the built-in print, not a stage",
    "collections:Counter": "is the class Counter, which is not a pt.Transformer",
    "mine.py:unmarked": "is the function unmarked, which does not declare that it makes a stage",
    "mine.py:sneaky": "is the function sneaky, which does not declare that it makes a stage",
    "mine.py:shortest": "is a lambda, which cannot declare that it makes a stage",
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_what_does_not_say_it_makes_a_stage_is_a_spec_error_and_is_not_called(folder, capsys, kind):
    path = spec(folder, "refused", [f'{{ type = "{kind}" }}'])
    assert main(["run", str(path), "--out", str(folder / "out"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert f"pipelines[1].rerank[0].type: '{kind}' {REFUSED[kind]}" in err, err
    assert not (folder / "CALLED").exists() and "Traceback" not in err


def test_a_function_annotated_to_return_a_transformer_or_marked_is_a_stage(folder):
    path = spec(folder, "declared", ['{ type = "mine.py:by_length" }', '{ type = "marked.py:marked" }'])
    assert main(["run", str(path), "--out", str(folder / "out")]) == 0
    systems = json.loads((folder / "out" / "systems.json").read_text(encoding="utf-8"))
    first, second = ((folder / "out" / systems[f"R >> {i}"]).read_text().splitlines() for i in (0, 1))
    assert first != second and sorted(first) != first  # reordered, each its own way


def plugin_shards(folder) -> list[str]:
    """Two shard folders of a spec with a plug-in row; the plug-in's import mark removed afterwards."""
    path = spec(folder, "sharded", ['{ type = "mine.py:by_length" }'])
    for i in (1, 2):
        assert main(["run", str(path), "--shard", f"{i}/2", "--out", str(folder / f"shard{i}")]) == 0
    (folder / "IMPORTED").unlink()
    for name in [m for m in sys.modules if m.startswith("superb_plugin_mine_")]:
        del sys.modules[name]
    return [str(folder / "shard1"), str(folder / "shard2")]


def test_merge_imports_no_plugin_of_the_shards_spec_without_allow_plugins(folder, capsys):
    shards = plugin_shards(folder)
    capsys.readouterr()
    assert main(["merge", *shards, "--out", str(folder / "merged")]) == 2
    err = capsys.readouterr().err
    assert "names code from outside superb (pipelines[1].rerank[0].type = 'mine.py:by_length')" in err, err
    assert "--allow-plugins" in err and not (folder / "IMPORTED").exists() and not (folder / "merged").exists()
    assert main(["merge", *shards, "--out", str(folder / "merged"), "--allow-plugins"]) == 0
    assert (folder / "IMPORTED").exists() and (folder / "merged" / "table.md").is_file()


@pytest.mark.slow
def test_judge_fill_imports_no_plugin_of_the_folders_spec_without_allow_plugins(folder, chorus_mirror, capsys):
    with FakeServer() as srv:
        (folder / "chorus.toml").write_text(chorus_spec(
            "fill_plug", srv.base_url, folder / "cache.sqlite", '[[pipelines]]\nname = "BM25 >> mine"\n'
            'input = "BM25"\nrerank = { type = "mine.py:by_length", top_k = 10, fields = ["title"] }\n',
            queries=["laptop", "monitor", "tablet", "hdmi cable"]), encoding="utf-8")
        assert main(["run", str(folder / "chorus.toml"), "--out", str(folder / "fill_plug")]) == 0
        (folder / "IMPORTED").unlink()
        for name in [m for m in sys.modules if m.startswith("superb_plugin_mine_")]:
            del sys.modules[name]
        capsys.readouterr()
        fill = ["judge", "--fill", str(folder / "fill_plug"), "--dry-run", "--depth", "3", "--dev-sample", "2"]
        assert main(fill) == 2
        err = capsys.readouterr().err
        assert "names code from outside superb (pipelines[1].rerank[0].type = 'mine.py:by_length')" in err, err
        assert "--allow-plugins" in err and not (folder / "IMPORTED").exists()
        assert main([*fill, "--allow-plugins"]) == 0
        assert (folder / "IMPORTED").exists() and srv.requests == 0
