"""``Usage``: what the LLM cost, per tag (pipeline/component) and model. Thread-safe counters, one row per tag.

Counted per (tag, model):
  calls               requests that went to the model (a request retried 3 times is 1 call and 3 retries)
  cache_hits          requests answered from superb's response cache: no call made
  coalesced           requests identical (same cache key) to one already in flight: they waited for its answer
  failures            calls that failed after their retries (on_failure="record" turns them into fallbacks)
  retries             extra attempts after a 429, 5xx, connection error or timeout
  prompt_tokens, completion_tokens   as the server reported them
  server_cached_tokens               prompt tokens the server reused from its own prompt cache (llama.cpp cache_n)
  saved_prompt_tokens, saved_completion_tokens   tokens the cache hits would have cost
  wait_s              wall time spent waiting on the model, summed over calls (parallel calls overlap)
  dry_run             requests a DryRunClient counted instead of making (their tokens are estimates)
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping


@dataclass
class UsageRow:
    calls: int = 0
    cache_hits: int = 0
    coalesced: int = 0
    failures: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    server_cached_tokens: int = 0
    saved_prompt_tokens: int = 0
    saved_completion_tokens: int = 0
    wait_s: float = 0.0
    dry_run: int = 0

    def add(self, other: "UsageRow") -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


COUNTERS = tuple(f.name for f in fields(UsageRow))


class Usage:
    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], UsageRow] = {}
        self._lock = threading.Lock()

    def record(self, tag: str, model: str, **counts: float) -> None:
        """Add counts (names from COUNTERS) to the (tag, model) row."""
        unknown = set(counts) - set(COUNTERS)
        if unknown:
            raise ValueError(f"unknown usage counter(s) {sorted(unknown)}; known: {', '.join(COUNTERS)}")
        with self._lock:
            row = self._rows.setdefault((tag, model), UsageRow())
            for k, v in counts.items():
                setattr(row, k, getattr(row, k) + v)

    def row(self, tag: str | None = None) -> UsageRow:
        """Totals over all models for one tag, or over everything when tag is None."""
        total = UsageRow()
        with self._lock:
            for (t, _), r in self._rows.items():
                if tag is None or t == tag:
                    total.add(r)
        return total

    def total(self) -> UsageRow:
        return self.row(None)

    def totals(self) -> dict[str, float]:
        """All counters summed over tags and models, as a plain dict."""
        return asdict(self.total())

    def estimated_cost(self, prices: Mapping[str, Mapping[str, float]], tag: str | None = None) -> float:
        """Dollars for the tokens actually sent, with prices per 1M tokens by model. Unpriced models (e.g. the
        embedded one) cost 0."""
        cost = 0.0
        with self._lock:
            for (t, model), r in self._rows.items():
                if (tag is None or t == tag) and model in prices:
                    p = prices[model]
                    cost += (r.prompt_tokens * p.get("prompt", 0.0) + r.completion_tokens * p.get("completion", 0.0)) / 1e6
        return cost

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """{tag: {model, counters...}} with one entry per (tag, model); key "tag" alone when one model per tag."""
        out: dict[str, dict[str, Any]] = {}
        with self._lock:
            for (tag, model), r in sorted(self._rows.items()):
                key = tag if sum(1 for t, _ in self._rows if t == tag) == 1 else f"{tag} [{model}]"
                out[key] = {"tag": tag, "model": model, **asdict(r)}
        return out

    def to_frame(self, prices: Mapping[str, Mapping[str, float]] | None = None):
        """One row per (tag, model); with prices, an estimated_cost column in dollars."""
        import pandas as pd

        rows = list(self.to_dict().values())
        frame = pd.DataFrame(rows, columns=["tag", "model", *COUNTERS])
        if prices is not None:
            frame["estimated_cost"] = [
                (r["prompt_tokens"] * prices.get(r["model"], {}).get("prompt", 0.0)
                 + r["completion_tokens"] * prices.get(r["model"], {}).get("completion", 0.0)) / 1e6
                for r in rows
            ]
        return frame

    def __repr__(self) -> str:
        t = self.total()
        return (f"Usage(calls={t.calls}, cache_hits={t.cache_hits}, failures={t.failures}, retries={t.retries}, "
                f"prompt_tokens={t.prompt_tokens}, completion_tokens={t.completion_tokens})")
