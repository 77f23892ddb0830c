"""`superb judge SPEC` with scoring judges on real Chorus pairs and a fake model that follows the human grade: cut
points fitted on dev pairs, test pairs reported; --dry-run counts what the cache cannot serve; --from-cache writes a
partial report with each judge's coverage; failed calls exit 3; the pairwise study by probabilities."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from chorus_judge_helpers import MIRROR, GradeModel, chorus_grades
from superb.testing.fakeserver import Fault, FakeServer
from superb.cli import main

QUERIES = ["q002", "q012", "q018", "q001", "q003", "q004"]  # three dev and three test queries


@pytest.fixture(scope="module")
def grades():
    from superb.data import load_dataset

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SUPERB_DATA_MIRROR", str(MIRROR))
        return chorus_grades(load_dataset({"name": "chorus"}))


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(MIRROR))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    return tmp_path


def spec_text(base_url: str, judges: list[str], extra: list[str] = ()) -> str:
    lines = ['name = "chorus_calibrated"', "seed = 0", "[dataset]", 'name = "chorus"',
             "[queries]", f"subset = {json.dumps(QUERIES)}", "[pool]", 'source = "ratings"', "per_query = 8",
             "[llm]", 'model = "fake-model"', f'base_urls = ["{base_url}"]', "max_retries = 0",
             "[judge]", 'fields = ["title"]', "text_tokens = 400"]
    for j in judges:
        lines += ["[[judge.variants]]", f'preset = "{j}"']
    if len(judges) > 1:
        lines += ["[[judge.variants]]", 'name = "ensemble"', 'type = "ensemble"', f"members = {json.dumps(judges)}"]
    lines += ["[calibration]", "bootstrap = 50", "folds = 2", *extra]
    return "\n".join(lines) + "\n"


def pairwise_spec_text(base_url: str, *, n_pairs: int, choices: list[str]) -> str:
    """A pairwise-only judge spec (name "pw") over QUERIES' test split, with the probability curve."""
    return "\n".join([
        'name = "pw"', "[dataset]", 'name = "chorus"', "[queries]", f"subset = {json.dumps(QUERIES)}",
        "[llm]", 'model = "fake-model"', f'base_urls = ["{base_url}"]',
        "[pairwise_study]", 'split = "test"', f"n_pairs = {n_pairs}", "seed = 1", "probability = true",
        f"choices = {json.dumps(choices)}", 'fields = { title = ["title"] }']) + "\n"


def test_scoring_judges_calibrated_on_dev_reported_on_test_then_zero_calls(home, grades, capsys):
    model = GradeModel(grades)
    with FakeServer(responder=model) as srv:
        spec = home / "spec.toml"
        spec.write_text(spec_text(srv.base_url, ["yesno_product", "superb_product"]))
        assert main(["judge", str(spec), "--dry-run", "--out", str(home / "out")]) == 0
        assert srv.requests == 0 and not (home / "out").exists()
        dry = capsys.readouterr().out
        pool = 8 * len(QUERIES)
        assert f"judge:yesno_product" in dry and f"{2 * pool} calls a real run would make" in dry
        assert "time: no estimate (no response cache to take a pace from)" in dry  # the first run makes the cache

        assert main(["judge", str(spec), "--out", str(home / "out")]) == 0
        assert srv.requests == 2 * pool  # one label request per pair and judge; the ensemble asks nothing
        capsys.readouterr()
        assert main(["judge", str(spec), "--dry-run", "--out", str(home / "x")]) == 0
        again = capsys.readouterr().out
        assert "0 calls a real run would make" in again and "time: nothing to send" in again
        assert srv.requests == 2 * pool
    out = home / "out"
    table = pd.read_csv(out / "agreement_calibrated.csv")
    test = table[(table["split"] == "test") & (table["against"] == "final")].set_index("judge")
    assert set(test.index) >= {"yesno_product", "superb_product", "ensemble"}
    # the fake model's scores are monotone in the combined grade: dev cut points recover it on the test pairs
    for judge in ("yesno_product", "superb_product", "ensemble"):
        assert test.loc[judge, "kappa_linear"] > 0.9, judge
        assert test.loc[judge, "kappa_linear_low"] <= test.loc[judge, "kappa_linear"] <= test.loc[judge, "kappa_linear_high"]
    calibration = json.loads((out / "calibration.json").read_text())
    yes = calibration["yesno_product"]
    assert yes["calibrated"] and yes["complete"] and len(yes["cuts"]) == 3
    assert yes["coverage"]["dev"] == {"pairs": 24, "scored": 24} and yes["coverage"]["test"]["scored"] == 24
    assert yes["templates"] and calibration["ensemble"]["ensemble"]["members"] == ["yesno_product", "superb_product"]
    assert "seconds" not in yes  # wall-clock time lives in provenance.json: calibration.json re-derives byte-identical
    assert json.loads((out / "provenance.json").read_text())["variants"]["calibrated"]["judges"]["yesno_product"][
        "seconds"] >= 0
    scores = pd.read_csv(out / "yesno_product" / "scores.tsv", sep="\t")
    assert set(scores["split"]) == {"dev", "test"} and len(scores) == pool
    for f in ("coverage.csv", "agreement_calibrated.md", "responses.jsonl.gz", "provenance.json"):
        assert (out / f).is_file(), f
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["mode"] == "live" and prov["responses"]["rows"] == 2 * pool


def test_from_cache_reports_a_partial_run_with_coverage_and_failed_calls_exit_3(home, grades, capsys):
    model = GradeModel(grades)
    pool = 8 * len(QUERIES)
    with FakeServer(responder=model) as srv:
        (home / "one.toml").write_text(spec_text(srv.base_url, ["yesno_product"]))
        assert main(["judge", str(home / "one.toml"), "--out", str(home / "one")]) == 0
        # superb_product's answers are not cached: --from-cache asks nothing and leaves it out with a note
        (home / "two.toml").write_text(spec_text(srv.base_url, ["yesno_product", "superb_product"]))
        before = srv.requests
        assert main(["judge", str(home / "two.toml"), "--from-cache", "--out", str(home / "two")]) == 0
        assert srv.requests == before
        md = (home / "two" / "agreement_calibrated.md").read_text()
        assert "superb_product: LEFT OUT" in md
        cal = json.loads((home / "two" / "calibration.json").read_text())
        assert cal["superb_product"]["calibrated"] is False and cal["yesno_product"]["complete"] is True
        assert json.loads((home / "two" / "provenance.json").read_text())["mode"] == "from_cache"

        # live, with the first three new calls failing (no retries): exit 3, the failures counted on stderr
        srv.faults.extend([Fault.error(500)] * 3)
        capsys.readouterr()
        assert main(["judge", str(home / "two.toml"), "--out", str(home / "three")]) == 3
        err = capsys.readouterr().err
        assert "3 failed" in err and "max_failure_share" in err
    cal = json.loads((home / "three" / "calibration.json").read_text())
    cov = cal["superb_product"]["coverage"]
    assert cov["dev"]["scored"] + cov["test"]["scored"] == pool - 3 and not cal["superb_product"]["complete"]
    md = (home / "three" / "agreement_calibrated.md").read_text()
    assert "superb_product: PARTIAL" in md or "superb_product: cut points fitted on" in md


def test_pairwise_probability_curve_and_generated_points(home, grades):
    model = GradeModel(grades)
    with FakeServer(responder=model) as srv:
        (home / "pw.toml").write_text(pairwise_spec_text(srv.base_url, n_pairs=20, choices=["forced"]))
        assert main(["judge", str(home / "pw.toml"), "--out", str(home / "pw")]) == 0
        assert srv.requests == 20 * 2 + 20 * 2  # probability: 2 per pair; forced: 2 per pair
    out = home / "pw"
    pairs = pd.read_csv(out / "pairwise_pairs.tsv", sep="\t", dtype=str)
    assert len(pairs) == 20 and set(pairs["qid"]) <= {"q001", "q003", "q004"}  # the test-split queries only
    readings = pd.read_csv(out / "pairwise_probability.csv")
    assert readings[["p1", "p2"]].notna().all().all()
    curve = pd.read_csv(out / "pairwise_curve.csv")
    agree = curve[curve["rule"] == "both orders agree"].sort_values("threshold")
    # every pair has different combined grades and the fake model prefers the higher one in both orders
    assert agree.iloc[0]["recall"] == 1.0 and agree.iloc[0]["precision"] == 1.0
    assert agree["recall"].is_monotonic_decreasing and agree.iloc[-1]["decided"] == 0
    md = (out / "pairwise.md").read_text()
    assert "| title | forced | both (swapped-order check) |" in md and "Calls per pair" in md
    assert (out / "pairwise_pr.png").stat().st_size > 1000
