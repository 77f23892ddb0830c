"""A re-run into a results folder whose plug-ins have changed since it was written: its rows will differ from the
folder's for a reason no number shows, so `superb run` says which file changed, with both sha256 (the folder's
provenance.json records each plug-in's file hash, or its installed distribution's version:
superb.transformers.plugins.PluginRef)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from superb.folder import layout


def changed_plugins(folder: Path, now: dict[str, dict[str, Any]]) -> list[str]:
    """One sentence per plug-in whose record in ``folder``'s provenance.json differs from ``now`` (the spec's
    records, superb.transformers.registry.plugin_records, by key path): its file and both sha256, or both versions.
    Nothing for a folder without provenance.json or without plug-ins, or one that cannot be read (it is replaced)."""
    try:
        recorded = json.loads((Path(folder) / layout.PROVENANCE).read_text(encoding="utf-8")).get("plugins") or {}
    except (OSError, ValueError, AttributeError):
        return []
    out = []
    for where, then in recorded.items():
        current = now.get(where)
        if not isinstance(then, dict) or current is None or then.get("module") != current.get("module"):
            continue
        name = current.get("file") or current.get("module")
        if then.get("sha256") and current.get("sha256") and then["sha256"] != current["sha256"]:
            out.append(f"plug-in {name} ({where}) changed since {folder} was written: sha256 {then['sha256']} there, "
                       f"{current['sha256']} now; its rows will differ from the folder's")
        elif then.get("version") and current.get("version") and then["version"] != current["version"]:
            out.append(f"plug-in {name} ({where}) changed since {folder} was written: {then.get('distribution')} "
                       f"{then['version']} there, {current['version']} now; its rows will differ from the folder's")
    return out
