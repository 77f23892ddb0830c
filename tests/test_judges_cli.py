"""`superb judge SPEC`: spec validation, a full run against the fake server, and the human ceiling on Chorus."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from superb.testing.fakeserver import FakeServer
from superb.cli import main
from superb.errors import SpecError
from superb.judges.commands.spec import parse_judge_spec

MIRROR = Path(os.environ.get("SUPERB_DATA_MIRROR") or Path(__file__).parents[2] / "shared" / "data")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    return tmp_path


def write_local(folder: Path) -> dict:
    folder.mkdir()
    titles = {"d1": "g3 laptop", "d2": "g0 laptop sleeve", "d3": "g2 notebook", "d4": "g1 laptop charger"}
    (folder / "docs.jsonl").write_text("".join(json.dumps({"docno": d, "title": t}) + "\n" for d, t in titles.items()))
    (folder / "queries.tsv").write_text("q1\tlaptop\nq2\tnotebook\n")
    # human labels: the judge (which reads the g-marker) agrees on 6 of 8 pairs
    (folder / "qrels.trec").write_text("q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 2\nq1 0 d4 1\n"
                                       "q2 0 d1 3\nq2 0 d2 1\nq2 0 d3 3\nq2 0 d4 1\n")
    return {"name": "local", "docs": str(folder / "docs.jsonl"), "queries": str(folder / "queries.tsv"),
            "qrels": str(folder / "qrels.trec"), "labels": [0, 1, 2, 3], "rel_threshold": 2}


def responder(req: dict) -> str:
    prompt = "".join(m["content"] for m in req["messages"])
    if "Product:" not in prompt:
        return "- a laptop"
    return re.search(r"\bg([0-3])\b", prompt.rsplit("Product:", 1)[1]).group(1)


def toml_value(v) -> str:
    return json.dumps(v) if not isinstance(v, list) else "[" + ", ".join(json.dumps(x) for x in v) + "]"


def test_judge_command_writes_results(home, capsys):
    dataset = write_local(home / "data")
    with FakeServer(responder=responder) as srv:
        spec = home / "spec.toml"
        spec.write_text("\n".join([
            'name = "tiny_judges"', "[dataset]", *[f"{k} = {toml_value(v)}" for k, v in dataset.items()],
            "[llm]", 'model = "fake-model"', f'base_urls = ["{srv.base_url}"]', 'cache = "off"',
            "[judge]", 'fields = ["title"]', 'reading = "grade"',
            "[[judge.variants]]", 'name = "pointwise"', 'type = "pointwise"', 'template = "pointwise_best_product"',
            "[[judge.variants]]", 'name = "delib"', 'type = "deliberated"',
        ]) + "\n")
        code = main(["judge", str(spec), "--out", str(home / "out")])
    assert code == 0
    out = home / "out"
    for f in ("agreement.md", "agreement_calibrated.md", "agreement_calibrated.csv", "provenance.json", "pool.tsv",
              "pointwise/llm_qrels.trec", "pointwise/judgments.jsonl", "pointwise/confusion_final.png",
              "delib/llm_qrels.trec", "delib/confusion_final.png", "judge_differences.csv"):
        assert (out / f).is_file(), f
    # both queries are of the test split; the written grades are the labels (nothing fitted)
    table = pd.read_csv(out / "agreement_calibrated.csv").set_index(["judge", "split"])
    # judge labels 3,0,2,1 | 3,0,2,1 vs human 3,0,2,1 | 3,1,3,1 -> 6 of 8 agree
    assert table.loc[("pointwise", "test"), "n"] == 8
    assert table.loc[("pointwise", "test"), "agreement"] == pytest.approx(6 / 8)
    assert table.loc[("delib", "test"), "agreement"] == pytest.approx(6 / 8)
    assert table.loc[("pointwise", "test"), "cuts"] == "written grade"
    per_label = pd.read_csv(out / "pointwise" / "per_label.csv").set_index("label")
    # human label 3 (q1 d1, q2 d1, q2 d3): judge says 3, 3, 2 -> recall 2/3; judge 3 twice, both right -> precision 1
    assert per_label.loc[3, "recall"] == pytest.approx(2 / 3) and per_label.loc[3, "precision"] == pytest.approx(1.0)
    assert (out / "pointwise" / "llm_qrels.trec").read_text().splitlines()[0] == "q1 0 d1 3"
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["variants"]["calibrated"]["judges"]["delib"]["templates"]["ideal"].startswith("deliberated_attributes@")
    assert prov["counts"]["queries"] == 2 and prov["counts"]["pairs"] == 8
    assert "tiny_judges" in capsys.readouterr().out


def test_a_judge_run_stopped_by_ctrl_c_leaves_the_earlier_folder_whole(home, monkeypatch):
    """An interrupted `superb judge` must not leave a half-written folder nor delete the earlier one (superb.atomic)."""
    import hashlib

    import superb.judges.studies.calibration_agreement

    dataset = write_local(home / "data")
    out = home / "out"

    def snapshot() -> dict[str, str]:
        return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(out.rglob("*")) if p.is_file()}

    with FakeServer(responder=responder) as srv:
        spec = home / "spec.toml"
        spec.write_text("\n".join([
            'name = "tiny_judges"', "[dataset]", *[f"{k} = {toml_value(v)}" for k, v in dataset.items()],
            "[llm]", 'model = "fake-model"', f'base_urls = ["{srv.base_url}"]', 'cache = "off"',
            "[judge]", 'fields = ["title"]', "[[judge.variants]]", 'type = "pointwise"',
            'template = "pointwise_best_product"', 'reading = "grade"',
        ]) + "\n")
        assert main(["judge", str(spec), "--out", str(out)]) == 0
        before = snapshot()
        written = []

        def ctrl_c(*args, **kw):  # after the judge's scores and judgments are written
            written.extend(sorted(p.name for p in (out.parent.glob(".out.*/pointwise/*"))))
            raise KeyboardInterrupt

        monkeypatch.setattr(superb.judges.studies.calibration_agreement, "confusion_heatmap", ctrl_c)
        assert main(["judge", str(spec), "--out", str(out)]) == 130  # superb's exit code for an interrupted run
    assert "scores.tsv" in written and "judgments.jsonl" in written  # stopped midway, not before writing
    assert snapshot() == before
    assert sorted(p.name for p in home.iterdir() if p.name.startswith(".out.")) == []


def test_spec_errors_name_key_paths():
    base = {"name": "x", "dataset": {"name": "chorus"}, "judge": {"preset": "superb"}}
    with pytest.raises(SpecError, match=r"^colour: unknown key"):
        parse_judge_spec({**base, "colour": 1})
    with pytest.raises(SpecError, match=r"pool\.source: 'web'"):
        parse_judge_spec({**base, "pool": {"source": "web"}})
    with pytest.raises(SpecError, match=r"pool\.first_stage"):
        parse_judge_spec({**base, "pool": {"source": "first_stage"}})
    with pytest.raises(SpecError, match=r"pool\.per_query: expected an integer >= 1"):
        parse_judge_spec({**base, "pool": {"per_query": 0}})
    with pytest.raises(SpecError, match=r"judge\.variants\[1\]\.name: 'a' is used twice"):
        parse_judge_spec({**base, "judge": {"preset": "superb", "variants": [{"name": "a"}, {"name": "a"}]}})
    with pytest.raises(SpecError, match=r"judge\.type: required"):
        parse_judge_spec({**base, "judge": {"fields": ["title"]}})
    with pytest.raises(SpecError, match=r"agreement\.label_map\.x"):
        parse_judge_spec({**base, "agreement": {"label_map": {"x": 1}}})
    spec = parse_judge_spec({**base, "agreement": {"label_map": {"3": 2}, "rel": 1}})
    assert spec.label_map == {3: 2} and spec.rel == 1 and spec.variants == (("superb", {"preset": "superb"}),)


@pytest.mark.slow
def test_human_ceiling_on_chorus_without_llm(home, monkeypatch):
    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(MIRROR))
    spec = home / "humans.toml"
    spec.write_text('name = "chorus_humans"\n[dataset]\nname = "chorus"\n')
    assert main(["judge", str(spec), "--out", str(home / "humans")]) == 0
    table = pd.read_csv(home / "humans" / "agreement.csv")
    fleiss = table[table["a"] == "all raters vs Fleiss"].iloc[0]
    # SOURCE.md: 3,188 pairs rated by three annotators, all three agree on 2,278
    assert fleiss["n"] == 3188 and fleiss["agreement"] == pytest.approx(2278 / 3188)
    assert len(table) == 7 and (home / "humans" / "humans" / "rater_1_vs_others.png").is_file()
    assert not (home / "humans" / "humans" / "rater_1_vs_final.png").exists()  # no rater vs a label including it


def test_pairwise_study_from_a_spec_on_wands(home):
    from test_judges_pairwise_study import responder as pair_responder
    from test_judges_pairwise_study import write_wands

    write_wands(home / "wands")
    with FakeServer(responder=pair_responder) as srv:
        spec = home / "wands.toml"
        spec.write_text("\n".join([
            'name = "wands_pairs"', "[dataset]", 'name = "wands"', f'path = "{home / "wands"}"',
            "[llm]", 'model = "fake-model"', f'base_urls = ["{srv.base_url}"]', 'cache = "off"',
            "[pairwise_study]", "n_pairs = 4", "seed = 1", 'choices = ["forced"]',
            'fields = { name = ["title"], class = ["class"] }',
        ]) + "\n")
        assert main(["judge", str(spec), "--out", str(home / "out")]) == 0
        calls = srv.requests
    table = pd.read_csv(home / "out" / "pairwise.csv").set_index(["fields", "choice", "orders"])
    assert calls == 2 * 4 * 2  # field sets x pairs x orders
    assert table.loc[("name", "forced", "one"), "precision"] == 1.0  # the title shows the grade: always right
    assert table.loc[("name", "forced", "both"), "recall"] == 1.0
    assert table.loc[("class", "forced", "both"), "decided"] == 0  # "LHS" in both orders never agrees
    assert (home / "out" / "pairwise.md").read_text().count("| forced |") == 4


@pytest.mark.parametrize("flag", [["--depth", "3"], ["--judge", "yesno_product"], ["--scope", "unjudged"],
                                  ["--dev-sample", "4"]])
def test_fill_options_without_fill_are_refused(home, capsys, flag):
    spec = Path(__file__).parents[1] / "experiments" / "judges_chorus.toml"
    assert main(["judge", str(spec), *flag, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert f"{flag[0]} only apply with --fill results/NAME" in err and "Traceback" not in err
    assert not (home / "home").exists()  # refused before the spec's data or model is touched


def test_label_study_n_resamples_is_read_and_checked():
    base = {"name": "x", "dataset": {"name": "chorus"}, "judge": {"preset": "superb"}}
    spec = parse_judge_spec({**base, "label_study": {"runs": "results/r", "test": "randomization",
                                                     "n_resamples": 500}})
    assert spec.label_study.n_resamples == 500
    assert parse_judge_spec({**base, "label_study": {"runs": "results/r"}}).label_study.n_resamples == 10_000
    with pytest.raises(SpecError, match=r"label_study\.n_resamples: expected an integer of at least 100"):
        parse_judge_spec({**base, "label_study": {"runs": "results/r", "n_resamples": 10}})
