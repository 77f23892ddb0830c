"""What `superb judge --fill` reads and writes, below both of its modules: its options (FillOptions), the `superb run`
results folder read back (Folder, filled by superb.judges.fill.label.read_folder) and the names of the files it writes.
superb.judges.fill.label labels the targets and superb.judges.fill.write writes the files; both import from here, so neither
imports the other upward."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from superb.errors import SpecError
from superb.run.experiment import ExperimentResult, PipelineResult
from superb.judges.registry import PRESETS

SCOPES = ("all", "unjudged")
README_BEGIN, README_END = "<!-- views: superb judge --fill -->", "<!-- end views -->"


@dataclass(frozen=True)
class FillOptions:
    judge: str = "umbrela"  # a preset, or presets joined by "+": UMBRELA's rubric, no reranker's default prompt
    depth: int = 10
    scope: str = "all"
    weights: str = "linear"
    bootstrap: int = 1000
    dev_sample: int | None = None  # fit the cut points on a seeded sample of this many dev queries (default: all)

    def members(self) -> list[str]:
        names = [m.strip() for m in self.judge.split("+") if m.strip()]
        unknown = [m for m in names if m not in PRESETS]
        if not names or unknown or len(set(names)) != len(names):
            raise SpecError("--judge", f"{self.judge!r}: give a preset of {sorted(PRESETS)} or several joined by "
                                       "'+' (an ensemble), e.g. yesno_product+superb_product")
        if self.depth < 1:
            raise SpecError("--depth", f"expected a rank >= 1, found {self.depth}")
        if self.dev_sample is not None and self.dev_sample < 2:
            raise SpecError("--dev-sample", f"expected at least 2 dev queries, found {self.dev_sample}")
        if self.scope not in SCOPES:
            raise SpecError("--scope", f"{self.scope!r} is not one of {list(SCOPES)}")
        return names


@dataclass
class Folder:
    """A `superb run` results folder, read back: its spec, runs, topics, human qrels, usage and provenance."""

    path: Path
    provenance: dict[str, Any]
    spec: Any
    runs: dict[str, pd.DataFrame]
    topics: pd.DataFrame
    qrels: pd.DataFrame
    usage: pd.DataFrame

    def result(self):
        """An ExperimentResult holding what evaluation needs (superb.run.results.evaluate / write_table)."""

        return ExperimentResult(spec=self.spec, topics=self.topics, qrels=self.qrels,
                                pipelines={n: PipelineResult(n, r, 0.0) for n, r in self.runs.items()},
                                dataset_provenance=self.provenance.get("dataset") or {},
                                llm_info=self.provenance.get("llm"), timings={})
