"""THE check that turns a finished command's failed LLM requests into its exit code (superb.exit_codes): the
request counts printed on stderr, EXIT_LLM_FAILURES when more failed than ``llm.max_failure_share`` allows.
`superb run`, `superb merge` and `superb judge` end with :func:`llm_exit_code`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from superb.exit_codes import EXIT_LLM_FAILURES, EXIT_OK
from superb.llm.config import LLMConfig
from superb.folder import layout

_COUNTS = ("calls", "cache_hits", "failures", "dry_run", "coalesced")


def llm_exit_code(llm_spec: Mapping[str, Any] | None, usage: Mapping[str, Any] | None) -> int:
    """Print the LLM request counts on stderr; EXIT_LLM_FAILURES (with why) when the failures exceed
    ``llm.max_failure_share`` of ``llm_spec``, else EXIT_OK. ``usage``: the client's totals (``Usage.totals()``) or
    its per-tag rows (``Usage.to_dict()``, as provenance.json stores them); None or empty: no LLM was used."""
    totals = _totals(usage)
    if not totals:
        return EXIT_OK
    calls, hits, failures, not_called, coalesced = (totals.get(k, 0) for k in _COUNTS)
    # a request identical to one in flight waits for its answer (coalesced): a request all the same, which a cached
    # re-run counts as a cache hit, so the totals of a live run and of its re-run agree
    requests = calls + hits + coalesced
    if not_called:  # a cache-only client (--from-cache): its "calls" are the misses it answered with "missing"
        print(f"superb: LLM requests: {requests} ({hits} from the cache, {not_called} not in the cache and not "
              f"called: counted as missing), no call made", file=sys.stderr)
        return EXIT_OK
    same = f", {coalesced} answered by an identical request in flight" if coalesced else ""
    print(f"superb: LLM requests: {requests} ({calls} calls made, {hits} from the cache{same}), {failures} failed",
          file=sys.stderr)
    excess = LLMConfig.from_spec(dict(llm_spec or {})).failure_excess(failures, requests)
    if excess is None:
        return EXIT_OK
    print(f"superb: {excess}. The results are written, but scores with fallbacks are not the method's; see the "
          f"failures column. Fix the endpoint and run again (only the failed calls are repeated), or allow a share "
          f"with llm.max_failure_share. Exit code {EXIT_LLM_FAILURES}.", file=sys.stderr)
    return EXIT_LLM_FAILURES


def folder_usage(folder: str | Path) -> dict[str, Any] | None:
    """The LLM usage a results folder's provenance.json records under ``llm.usage`` (None when there is none)."""
    path = Path(folder) / layout.PROVENANCE
    if not path.is_file():
        return None
    llm = json.loads(path.read_text(encoding="utf-8")).get("llm") or {}
    return llm.get("usage") if isinstance(llm, Mapping) else None


def _totals(usage: Mapping[str, Any] | None) -> dict[str, int]:
    """calls, cache_hits and failures summed over per-tag rows, or read from totals."""
    if not usage:
        return {}
    rows = list(usage.values()) if all(isinstance(v, Mapping) for v in usage.values()) else [usage]
    return {k: sum(int(r.get(k, 0) or 0) for r in rows) for k in _COUNTS}
