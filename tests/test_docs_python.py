"""docs/python.md's example block (README's "Using superb from Python" points to it), run as written: PISA BM25 >>
a pointwise reranker on the real 0.5B model, evaluated by pt.Experiment with superb's paired test, then superb's
NaN-aware Holm. The model file comes from the default SUPERB_HOME (joining 490 MB per run would be wasteful) through
SUPERB_MODEL_PATH; indexes and the LLM cache go to a temporary SUPERB_HOME."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.model, pytest.mark.slow]

PAGE = Path(__file__).resolve().parents[1] / "docs" / "python.md"


def example() -> str:
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(r"<!-- python-example -->\n```python\n(.*?)```", text, re.S)
    assert match, "docs/python.md has no <!-- python-example --> block"
    return match.group(1)


def test_the_python_example_runs_and_marks_with_nan_aware_holm(tmp_path, monkeypatch, chorus_mirror, capsys):
    from superb.errors import DataError, MissingDependencyError
    from superb.llm.model import resolve_model

    try:
        model = resolve_model("0.5b", download=False)
    except (DataError, MissingDependencyError, FileNotFoundError) as e:
        pytest.skip(f"the 0.5B model is not available offline: {e}")
    monkeypatch.setenv("SUPERB_MODEL_PATH", str(model))
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    namespace: dict = {}
    exec(compile(example(), "docs/python.md:python-example", "exec"), namespace)  # noqa: S102 - our own docs
    table = namespace["table"]
    assert "BM25 >> pointwise" in capsys.readouterr().out
    assert table["name"].tolist() == ["BM25", "BM25 >> pointwise"]
    for measure in ("nDCG@10", "P(rel=2)@5", "P(rel=2)@10"):
        assert {f"{measure} reject", f"{measure} p-value corrected"} <= set(table.columns)
        assert not table[f"{measure} reject"].iloc[0]  # the baseline row is never tested
    reranked = table.iloc[1]
    assert reranked["P(rel=2)@10"] == table.iloc[0]["P(rel=2)@10"]  # only the top 5 moved
    assert np.isnan(reranked["P(rel=2)@10 p-value"]) and not reranked["P(rel=2)@10 reject"]
    assert np.isnan(reranked["P(rel=2)@10 p-value corrected"])
    p = reranked["nDCG@10 p-value"]
    if not np.isnan(p):  # one test in the nDCG@10 family: Holm leaves its p as it is
        assert reranked["nDCG@10 p-value corrected"] == pytest.approx(p)
        assert bool(reranked["nDCG@10 reject"]) == (p <= 0.05)


def test_the_example_needs_at_most_three_imports():
    lines = [line for line in example().splitlines() if line.startswith(("import ", "from "))]
    assert len(lines) <= 3, lines
