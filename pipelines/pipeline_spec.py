"""One ``[[pipelines]]`` entry of a spec as superb.run.spec read it: what superb.pipelines.systems builds a system from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from superb.transformers.registry import needs_llm


@dataclass(frozen=True)
class PipelineSpec:
    name: str
    path: str  # key path for messages, e.g. "pipelines[2]"
    first_stage: dict[str, Any] | None = None
    input: str | None = None
    rerank: tuple[dict[str, Any], ...] = ()
    baseline: str | None = None
    compare: tuple[str, ...] = ()  # head-to-head comparisons besides the baseline, each family tested apart

    @property
    def uses_llm(self) -> bool:
        expands = isinstance(self.first_stage, dict) and "expand" in self.first_stage  # first_stage.expand: LLM
        return expands or any(needs_llm(r.get("type")) for r in self.rerank)
