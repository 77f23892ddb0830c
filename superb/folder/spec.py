"""A run folder's spec, parsed: the one place a spec read back from a results folder goes through
superb.run.spec.parse_spec (``superb merge``, ``superb judge --fill``), so what parsing a folder's spec may do is
decided here once."""

from __future__ import annotations

from pathlib import Path

from superb.folder.run_folder import RunFolder
from superb.run.spec import Spec, parse_spec


def folder_spec(folder: RunFolder, *, allow_plugins: bool = False) -> Spec:
    """The checked spec that wrote ``folder`` (its provenance.json's ``spec``, with ``spec_file`` as its source). A
    spec naming a plug-in is refused, none of them imported, unless ``allow_plugins`` (``--allow-plugins``: the user
    trusts the folder's code; superb.run.spec.parse_spec's ``plugins``)."""
    spec_file = folder.provenance.get("spec_file")
    return parse_spec(folder.spec_raw, source=Path(spec_file) if spec_file else None, plugins=allow_plugins)
