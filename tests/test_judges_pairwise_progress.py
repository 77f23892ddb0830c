"""The long pairwise study shows a progress bar (issue 12.8): one step per pair and variant, with an ETA, on stderr;
off with SUPERB_PROGRESS=0."""

from __future__ import annotations

import re

from superb.testing.fakeserver import FakeServer
from superb.judges.studies.pairwise import pairwise_study
from superb.llm import LLMClient, LLMConfig, Usage
from test_judges_pairwise_study import PAIRS, _home, responder, wands  # noqa: F401 (fixtures)


def study(wands, field_sets):
    with FakeServer(responder=responder) as srv:
        llm = LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,)), cache=None, usage=Usage())
        return pairwise_study(wands, llm, PAIRS, field_sets=field_sets)


def test_progress_bar_counts_pairs_over_all_variants(wands, capsys, monkeypatch):
    monkeypatch.delenv("SUPERB_PROGRESS", raising=False)
    table, _ = study(wands, {"name": ("title",), "class": ("class",)})
    assert len(table) == 2 * 2 * 2  # field sets x choices x orders
    final = capsys.readouterr().err.rsplit("\r", 1)[-1]  # tqdm redraws with \r; the last drawing is the closed bar
    total = 2 * 2 * len(PAIRS)  # field sets x choices x pairs
    assert final.startswith("pairwise study (class, allow neither): 100%") and f"| {total}/{total} [" in final
    assert re.search(r"\[\d\d:\d\d<\d\d:\d\d, +[\d.]+(pair/s|s/pair)\]", final)  # elapsed<ETA, rate


def test_progress_bar_off_with_superb_progress_0(wands, capsys, monkeypatch):
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    study(wands, {"name": ("title",)})
    assert "pairwise study" not in capsys.readouterr().err
