"""table.csv carries each tested row's MDE at its family's strictest step, alpha/m (issue 34; it was only in table.md):
on DL19's BM25 run and the outside DPH run with two declared hypotheses (m = 2), the value equals table.md's
"MDE at alpha/m" and, by scipy's noncentral t (not superb's code), a test at alpha/m has 80% power at that difference."""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from superb.cli import main

ROOT = Path(__file__).resolve().parents[1]
MIRROR = os.environ.get("SUPERB_DATA_MIRROR")
pytestmark = pytest.mark.skipif(not MIRROR or not (Path(MIRROR) / "trec-dl").is_dir(),
                                reason="needs SUPERB_DATA_MIRROR with trec-dl/")


def test_the_family_mde_is_in_table_csv_and_has_80_percent_power(tmp_path, monkeypatch):
    import scipy.stats

    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    src = Path(MIRROR) / "trec-dl"
    shutil.copy(src / "qrels.dl19-passage.txt", tmp_path / "qrels.txt")
    hyp = tmp_path / "hyp.toml"
    hyp.write_text('[[hypotheses]]\nsystem = "DPH"\nagainst = "BM25"\nmeasures = ["nDCG@10", "P@10"]\n'
                   'family = "main"\n')
    assert main(["evaluate", "--qrels", str(tmp_path / "qrels.txt"), str(src / "trec_results_dl19.txt"),
                 str(ROOT / "experiments" / "runs" / "dl19_pyterrier_dph.run"), "--names", "BM25,DPH", "--rel", "2",
                 "--measures", "nDCG@10", "P@10", "--hypotheses", str(hyp), "--out", str(tmp_path / "out")]) == 0
    table = pd.read_csv(tmp_path / "out" / "table.csv")
    rows = table[table["role"] == "confirmatory"]
    assert len(rows) == 2 and set(rows["family_size"]) == {2}
    md = (tmp_path / "out" / "table.md").read_text()
    for r in rows.itertuples():
        assert f"{r.mde_family:.4f}" in md  # table.md's MDE at alpha/m
        n, a = r.n_queries, 0.05 / 2
        crit = scipy.stats.t.ppf(1 - a / 2, n - 1)
        nc = r.mde_family / (r.sd_diff / math.sqrt(n))
        power = 1 - scipy.stats.nct.cdf(crit, n - 1, nc) + scipy.stats.nct.cdf(-crit, n - 1, nc)
        assert power == pytest.approx(0.8, abs=1e-3)
        assert r.mde_family > r.mde  # stricter level, larger detectable difference
    assert table[table["role"] == "exploratory"]["mde_family"].isna().all()  # untested by a family: none
