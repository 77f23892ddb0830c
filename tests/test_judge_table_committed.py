"""results/judges_dl_table is `superb table`'s output over the two committed judge folders (DL19, DL20) as its
provenance.json records the command, file for file; and its cells are the folders' own (agreement_calibrated.csv's
test rows, label_study.csv's nDCG@10 orderings), not numbers of its own."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from folder_helpers import rerun_recorded_table

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = Path("results") / "judges_dl_table"


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_committed_judge_table_is_what_its_recorded_command_writes(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the command names the folders relative to the project
    command = rerun_recorded_table(COMMITTED, tmp_path / "judges_dl_table")
    assert "results/judges_dl20" in command


@pytest.mark.parametrize("collection, folder", [("DL19", "judges_dl19"), ("DL20", "judges_dl20")])
def test_its_cells_are_the_judge_folders_own(collection, folder):
    table = [r for r in rows(ROOT / COMMITTED / "table.csv") if r["collection"] == collection]
    agreement = {r["judge"]: r for r in rows(ROOT / "results" / folder / "agreement_calibrated.csv")
                 if r["split"] == "test"}
    study = {(r["judge"], r["labels"]): r for r in rows(ROOT / "results" / folder / "label_study.csv")
             if r["measure"] == "nDCG@10"}
    kappas = [r for r in table if r["statistic"] == "kappa_linear"]
    assert {r["judge"] for r in kappas} == {"umbrela", "umbrela_written", "yesno"}
    for r in kappas:
        source = agreement[r["judge"]]
        assert (float(r["value"]), float(r["low"]), float(r["high"]), r["n"]) == (
            float(source["kappa_linear"]), float(source["kappa_linear_low"]), float(source["kappa_linear_high"]),
            source["n"])
    orderings = [r for r in table if r["statistic"].rsplit("_", 1)[-1] in ("llm", "filled")]
    assert {r["statistic"] for r in orderings} >= {"tau_llm", "tau_filled", "tau_ap_llm", "rho_llm"}
    for r in orderings:
        statistic, labels = r["statistic"].rsplit("_", 1)
        source = study[(r["judge"], labels)]
        assert (float(r["value"]), float(r["low"]), float(r["high"])) == (
            float(source[statistic]), float(source[f"{statistic}_low"]), float(source[f"{statistic}_high"]))
