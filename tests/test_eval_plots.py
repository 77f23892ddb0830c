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


def test_cost_of_a_system_includes_its_inputs():
    """A fusion makes no call itself, yet costs the LLM stages it fuses: the cost plot places each system at the
    requests of its whole input chain."""
    from superb.run.results import cumulative_cost
    from superb.run.spec import PipelineSpec

    pipelines = (PipelineSpec(name="BM25", path="p[0]", first_stage={"engine": "pisa"}),
                 PipelineSpec(name="P", path="p[1]", input="BM25", rerank=({"type": "pointwise"},)),
                 PipelineSpec(name="fuse(BM25, P)", path="p[2]", input="P", rerank=({"type": "fuse"},)),
                 PipelineSpec(name="P >> L", path="p[3]", input="P", rerank=({"type": "listwise"},)),
                 PipelineSpec(name="fuse(BM25, P, L)", path="p[4]", input="P >> L", rerank=({"type": "fuse"},)))
    usage = pd.DataFrame({"system": ["BM25", "P", "fuse(BM25, P)", "P >> L", "fuse(BM25, P, L)"],
                          "calls_per_query": [0, 20, 0, 1, 0],
                          "prompt_tokens_per_query": [0.0, 3000.0, 0.0, 500.0, 0.0]})
    cost = cumulative_cost(pipelines, usage)
    assert cost["calls_per_query"].to_dict() == {"BM25": 0, "P": 20, "fuse(BM25, P)": 20, "P >> L": 21,
                                                 "fuse(BM25, P, L)": 21}
    assert cost.loc["fuse(BM25, P, L)", "prompt_tokens_per_query"] == 3500.0


def test_cost_plot_numbers_of_points_that_sit_together_take_different_corners():
    from superb.eval.plots import _label_offsets

    x = np.array([0.0, 0.0, 0.0, 40.0, 0.0])
    y = np.array([0.43, 0.432, 0.60, 0.54, 0.431])
    offsets = _label_offsets(x, y)
    # the 1st, 2nd and 5th points are within 3% of each other on both axes: three different corners
    assert len({offsets[0], offsets[1], offsets[4]}) == 3
    # the others have no near neighbour: the default corner
    assert offsets[2] == offsets[3] == offsets[0] == (4, 3)
