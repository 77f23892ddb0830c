"""`superb run` end to end with declared hypotheses on real Chorus data and a real PISA first stage (non-LLM
rerankers: no model needed): a spec, then the same spec plus an exploratory pipeline and a head-to-head list; the
confirmatory rows of the two table.csv files are the same, p-values, marks and family sizes included."""

import pandas as pd
import pytest

from chorus_specs import chorus_spec
from superb.cli import main

RERANKERS = """
[[pipelines]]
name = "BM25 >> shuffle"
input = "BM25"
rerank = { type = "shuffle", seed = 3, top_k = 10 }
[[pipelines]]
name = "BM25 >> random"
input = "BM25"
rerank = { type = "random", seed = 1, top_k = 20 }
"""
MORE = """
[[pipelines]]
name = "BM25 >> shuffle 2"
input = "BM25"
rerank = { type = "shuffle", seed = 5, top_k = 10 }
compare = ["BM25 >> shuffle", "BM25 >> random"]
"""
HYPOTHESES = """
[[hypotheses]]
system = "BM25 >> shuffle"
against = "BM25"
family = "main"
evidence = "a control: shuffling the top 10 should lower nDCG@10"
[[hypotheses]]
system = "BM25 >> random"
against = "BM25"
measures = ["nDCG@10"]
family = "main"
"""


@pytest.mark.slow
def test_an_exploratory_pipeline_leaves_every_confirmatory_row_unchanged(chorus_run_home):
    home = chorus_run_home
    tables = {}
    for name, rerankers in (("small", RERANKERS), ("large", RERANKERS + MORE)):
        spec = home / f"{name}.toml"
        spec.write_text(chorus_spec(name, "http://127.0.0.1:9", home / "cache.sqlite", rerankers + HYPOTHESES,
                                    evaluation='views = ["full", "condensed"]'))
        assert main(["run", str(spec), "--out", str(home / name)]) == 0
        tables[name] = pd.read_csv(home / name / "table.csv")
    small, large = tables["small"], tables["large"]
    keys = ["system", "baseline", "view", "measure"]
    columns = ["mean", "delta", "ci_low", "ci_high", "p", "p_corrected", "reject", "family_size", "verdict"]
    conf = {k: t[t.role == "confirmatory"].set_index(keys)[columns].sort_index() for k, t in tables.items()}
    assert len(conf["small"]) == 2 * 2 + 1 * 2  # shuffle: P@5 and nDCG@10; random: nDCG@10; two views each
    pd.testing.assert_frame_equal(conf["small"], conf["large"])
    assert set(large[large.system == "BM25 >> shuffle 2"].role) == {"exploratory"}
    assert set(large[large.kind == "head-to-head"].role) == {"exploratory"}
    assert len(large) > len(small)
    # random reorders the top 20, P@5 of it is not equal by construction; the first stage is depth 20
    md = (home / "large" / "table.md").read_text()
    assert "## Confirmatory hypotheses" in md and "a control: shuffling" in md and "\u1d9c" in md
    assert "## What this table can detect" in md and (home / "large" / "power.csv").is_file()
    assert {"n_no_relevant", "ci_low", "ci_high", "mde", "role", "kind"} <= set(large.columns)
