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
from fakeserver import FakeServer
from superb.cli import main
from test_judges_calibrated_run import QUERIES, grades, home  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[1]


def test_pairwise_only_spec_progress_margins_agreement_and_show(home, grades, capsys, monkeypatch):
    monkeypatch.delenv("SUPERB_PROGRESS", raising=False)  # the bars on
    with FakeServer(responder=GradeModel(grades)) as srv:
        (home / "pw.toml").write_text("\n".join([
            'name = "pw"', "[dataset]", 'name = "chorus"', "[queries]", f"subset = {json.dumps(QUERIES)}",
            "[llm]", 'model = "fake-model"', f'base_urls = ["{srv.base_url}"]',
            "[pairwise_study]", 'split = "test"', "n_pairs = 12", "seed = 1", "probability = true",
            "choices = []", 'fields = { title = ["title"] }']) + "\n")
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
    from superb.judges.preference_study import RULES, at_thresholds, curve

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
    from superb.judges.spec import parse_judge_spec
    from superb.spec import read_toml
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
