"""The figures are written as real, non-empty PNG files."""

import numpy as np
import pandas as pd
import pytest

from superb.eval.plots import cost_plot, gain_plot

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_cost_plot_writes_png(tmp_path):
    points = pd.DataFrame({"system": ["BM25", "BM25 >> pointwise", "BM25 >> listwise"],
                           "ndcg10": [0.41, 0.47, 0.52], "calls_per_query": [0, 20, 3],
                           "prompt_tokens_per_query": [0, 9000.0, 5200.0]})
    path = cost_plot(points, tmp_path / "figs" / "cost.png")
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 5_000
    with pytest.raises(ValueError, match="calls_per_query"):
        cost_plot(points.drop(columns="calls_per_query"), tmp_path / "bad.png")


def test_gain_plot_writes_png(tmp_path):
    rng = np.random.default_rng(0)
    rows = [(s, f"q{i}", "nDCG@10", float(v)) for s in ("BM25", "BM25 >> X")
            for i, v in enumerate(rng.random(25))]
    perquery = pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])
    path = gain_plot(perquery, "BM25 >> X", "BM25", "nDCG@10", tmp_path / "gain.png")
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 5_000
    with pytest.raises(ValueError, match="RM3"):
        gain_plot(perquery, "BM25 >> X", "RM3", "nDCG@10", tmp_path / "bad.png")
