"""views.md / table.md's sentence on views lists every declared pair that an untested view finds different, whatever
direction that view's table stores it in (results/chorus_table4_full omitted fuse(BM25, bi-encoder, pointwise) vs
BM25 >> bi-encoder, raw p 2.4e-7 in filled, because table_filled.csv holds it as BM25 >> bi-encoder vs the fusion)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from superb.eval.view_verdicts import views_sentence

ROOT = Path(__file__).resolve().parents[1]


def row(system, baseline, view, family, verdict, p, delta):
    return {"system": system, "baseline": baseline, "view": view, "measure": "nDCG@10", "family": family,
            "verdict": verdict, "p": p, "delta": delta}


def test_a_pair_stored_the_other_way_in_the_untested_view_is_listed_in_the_declared_direction():
    table = pd.DataFrame([
        row("F", "B", "full", "confirmatory:main", "n.s.", 0.3, 0.02),
        row("F", "B", "condensed", "confirmatory:main", "n.s.", 0.2, 0.03),
        row("B", "F", "filled", "", "", 2.4e-7, -0.0618),
    ])
    text = views_sentence(table)
    assert "- F vs B, nDCG@10: +0.0618, raw p 2.4e-07 in filled (exploratory)" in text


def test_the_committed_views_md_lists_the_declared_fusion_pair():
    from superb.run.results import read_table

    folder = ROOT / "results" / "chorus_table4_full"
    sentence = views_sentence(read_table(folder))
    assert "fuse(BM25, bi-encoder, pointwise) vs BM25 >> bi-encoder, nDCG@10: +0.0618, raw p 2.4e-07" in sentence
    assert sentence in (folder / "views.md").read_text(encoding="utf-8")
    assert sentence in (folder / "table.md").read_text(encoding="utf-8")
