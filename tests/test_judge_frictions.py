"""Issue 23.10, the judge on outside data: a progress bar on the probability phase too; pairwise.md reads the curve
at the margins the model produces (a small model's margins all stay below 0.05); a pairwise-only spec writes an
agreement.md that points to pairwise.md and `superb show` prints it; experiments/wands_pairwise_judge.toml reads WANDS
from SUPERB_HOME."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from chorus_judge_helpers import GradeModel
from superb.testing.fakeserver import FakeServer
from superb.cli import main
from test_judges_calibrated_run import grades, home, pairwise_spec_text  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[1]


def test_pairwise_only_spec_progress_margins_agreement_and_show(home, grades, capsys, monkeypatch):
    monkeypatch.delenv("SUPERB_PROGRESS", raising=False)  # the bars on
    with FakeServer(responder=GradeModel(grades)) as srv:
        (home / "pw.toml").write_text(pairwise_spec_text(srv.base_url, n_pairs=12, choices=[]))
        assert main(["judge", str(home / "pw.toml"), "--out", str(home / "pw")]) == 0
    err = capsys.readouterr().err
    final = [line for line in err.split("\r") if line.startswith("pairwise probability (title)")]
    assert final and "100%" in final[-1] and "12/12" in final[-1], err[-2000:]
    out = home / "pw"
    md = (out / "pairwise.md").read_text()
    assert "| 50% of the margins |" in md and "| 90% of the margins |" in md
    agreement = (out / "agreement.md").read_text()
    assert "this spec runs the pairwise study, whose results are in pairwise.md" in agreement
    assert main(["show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "pairwise study" in shown and "pw: pairwise judging" in shown


def test_the_table_reads_a_small_models_margins():
    """All margins below 0.04: the fixed 0.05+ thresholds decided nothing; the margin quantiles do."""
    from superb.judges.studies.preference import RULES, at_thresholds, curve

    rng = np.random.default_rng(0)
    human = np.where(rng.random(40) < 0.5, "A", "B")
    lean = np.where(human == "A", 1, -1) * rng.uniform(0.001, 0.035, 40)
    prefs = pd.DataFrame({"p1": 0.5 + lean, "p2": 0.5 + lean * 0.9, "human": human})
    full = pd.concat([curve(prefs, rule).assign(fields="title") for rule in RULES], ignore_index=True)
    table = at_thresholds(full)
    agree = table[table["rule"] == "both orders agree"].set_index("at")
    assert list(agree.index) == ["0", "q25", "q50", "q75", "q90"]
    assert agree.loc["q50", "threshold"] < 0.035 and 0 < agree.loc["q50", "decided"] < 40
    fixed = at_thresholds(full, (0.0, 0.05))
    assert fixed[fixed["threshold"] == 0.05]["decided"].eq(0).all()  # what pairwise.md showed before


def test_wands_spec_reads_superb_home_and_states_a_measured_time(tmp_path, monkeypatch):
    from superb.data import load_dataset
    from superb.judges.commands.spec import parse_judge_spec
    from superb.run.spec import read_toml
    from test_judges_pairwise_study import write_wands

    raw = read_toml(ROOT / "experiments" / "wands_pairwise_judge.toml")
    spec = parse_judge_spec(raw)
    assert "path" not in spec.dataset
    text = (ROOT / "experiments" / "wands_pairwise_judge.toml").read_text()
    assert "~/.cache" not in text.split("[dataset]", 1)[1] and "40 minutes" in text
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "data").mkdir(parents=True)
    write_wands(tmp_path / "home" / "data" / "wands")
    assert len(load_dataset(spec.dataset).topics()) == 3


def _pairs_spec(folder: Path, url: str, extra: str = "") -> Path:
    from test_judges_pairwise_study import write_wands

    if not (folder / "wands").exists():
        write_wands(folder / "wands")
    (folder / "pairs.tsv").write_text("qid\tdocno_a\tdocno_b\n0\tp3\tp1\n0\tp1\tp2\n0\tp1\tp4\n0\tp1\tp9\n"
                                      "2\tp1\tp5\n7\tp1\tp5\n")
    spec = folder / "pairs.toml"
    spec.write_text("\n".join([
        'name = "given_pairs"', "[dataset]", 'name = "wands"', f'path = "{folder / "wands"}"',
        "[llm]", 'model = "fake-model"', f'base_urls = ["{url}"]', 'cache = "off"',
        "[pairwise_study]", f'pairs = "{folder / "pairs.tsv"}"', 'choices = ["forced"]',
        'fields = { name = ["title"] }', extra]) + "\n")
    return spec


def test_the_pairwise_study_asks_a_given_list_of_pairs_in_its_order(tmp_path, monkeypatch, capsys):
    """Before: [pairwise_study] sampled its own pairs (47 of 100 given pairs were asked) and flipped their order."""
    from test_judges_pairwise_study import responder

    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    with FakeServer(responder=responder) as srv:
        assert main(["judge", str(_pairs_spec(tmp_path, srv.base_url)), "--out", str(tmp_path / "out")]) == 0
        assert srv.requests == 3 * 2  # three askable pairs, both orders
    pairs = pd.read_csv(tmp_path / "out" / "pairwise_pairs.tsv", sep="\t", dtype=str)
    assert list(zip(pairs["qid"], pairs["docno_a"], pairs["docno_b"], pairs["human"])) == [
        ("0", "p3", "p1", "B"), ("0", "p1", "p2", "A"), ("2", "p1", "p5", "A")]
    md = (tmp_path / "out" / "pairwise.md").read_text()
    assert "3 of the 6 pairs of" in md and "its docno_a shown first" in md
    assert "left out: 1 outside the selected queries, 1 with a product without" in md and "1 with equal grades" in md


def test_a_seeded_order_is_recorded_and_repeats(tmp_path, monkeypatch, capsys):
    from test_judges_pairwise_study import responder

    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    orders = []
    with FakeServer(responder=responder) as srv:
        for k in range(2):
            spec = _pairs_spec(tmp_path, srv.base_url, 'order = "seeded"\nseed = 3')
            assert main(["judge", str(spec), "--out", str(tmp_path / f"out{k}")]) == 0
            pairs = pd.read_csv(tmp_path / f"out{k}" / "pairwise_pairs.tsv", sep="\t", dtype=str)
            orders.append(list(zip(pairs["docno_a"], pairs["docno_b"])))
    assert orders[0] == orders[1]
    assert {frozenset(p) for p in orders[0]} == {frozenset(("p1", "p3")), frozenset(("p1", "p2")),
                                                 frozenset(("p1", "p5"))}
    prov = json.loads((tmp_path / "out0" / "provenance.json").read_text())
    assert prov["variants"]["pairwise_study"]["sampling"]["order"] == "seeded"
    assert "decided by a coin with seed 3" in (tmp_path / "out0" / "pairwise.md").read_text()


def test_pairs_and_n_pairs_are_exclusive():
    import pytest

    from superb.errors import SpecError
    from superb.judges.commands.spec import parse_judge_spec

    with pytest.raises(SpecError, match=r"pairwise_study\.n_pairs: give either pairs"):
        parse_judge_spec({"name": "x", "dataset": {"name": "wands"},
                          "pairwise_study": {"pairs": "p.tsv", "n_pairs": 5}})
    with pytest.raises(SpecError, match=r"pairwise_study\.order: 'given'"):
        parse_judge_spec({"name": "x", "dataset": {"name": "wands"}, "pairwise_study": {"order": "given"}})


def test_a_generated_judge_shows_its_progress(tmp_path, monkeypatch, capsys):
    """Every phase that calls the model has a bar, the per-product judges too (one step per query)."""
    from test_cli_exit_codes import grade, judge_spec
    from local_data import write_data

    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SUPERB_PROGRESS", raising=False)
    write_data(tmp_path)
    with FakeServer(responder=grade) as srv:
        assert main(["judge", judge_spec(tmp_path, srv.base_url), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert any(part.startswith("judge:pointwise: 100%") and "2/2" in part for part in err.split("\r")), err[-1500:]
