"""Split, test and correction names are defined once: superb.data.splits (DEV_TEST, SPLITS) and superb.eval.stats
(TESTS / TEST_NAMES, CORRECTIONS / CORRECTION_NAMES); the judges and the table footnotes read them from there, and
importing the judges still registers no data set (superb.data.splits is imported where it is used)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from superb.data.splits import DEV_TEST, SPLITS, split_of
from superb.eval import stats, table_markdown as report
from tiny_dataset import TinyDataset


def test_the_names_and_their_display_names_are_one_table():
    assert SPLITS == ("all", *DEV_TEST) and DEV_TEST == ("dev", "test")
    assert stats.TESTS == tuple(stats.TEST_NAMES) == ("t", "wilcoxon", "randomization")
    assert stats.CORRECTIONS == tuple(stats.CORRECTION_NAMES) == ("holm", "bonferroni", "none")
    assert report.TEST_NAMES is stats.TEST_NAMES and report.CORRECTION_NAMES is stats.CORRECTION_NAMES
    assert {split_of(str(q)) for q in range(200)} == set(DEV_TEST)


def test_importing_the_judges_registers_no_data_set():
    code = ("import sys, superb.judges.registry, superb.judges.pool, superb.judges.from_cache, superb.judges.commands.spec, "
            "superb.judges.studies.calibration_run, superb.judges.studies.calibration_agreement, superb.eval.table_markdown; "
            "print('ir_datasets' in sys.modules, 'superb.data.splits' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


def test_rated_pool_and_split_pool_use_the_split_names():
    from superb.judges.from_cache import rated_pool
    from superb.judges.studies.calibration_run import split_pool

    with pytest.raises(ValueError, match=r"splits \['train'\] are not dev/test"):
        rated_pool(TinyDataset({"d1": "x"}, {"q1": "y"}), ["dev", "train"])
    pool = pd.DataFrame({"qid": ["a", "b", "c"], "docno": ["1", "2", "3"]})
    ordered = split_pool(pool, split_of={"a": "test", "b": "dev", "c": "test"}.get)
    assert ordered["qid"].tolist() == ["b", "a", "c"] and ordered["split"].tolist() == ["dev", "test", "test"]
