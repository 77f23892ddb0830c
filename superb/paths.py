"""Where superb keeps what it downloads and builds. One root, overridable: SUPERB_HOME (default ~/.cache/superb)."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    root = os.environ.get("SUPERB_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "superb")
    return Path(root)


def data_dir() -> Path:
    """Downloaded (or mirror-copied), checksum-verified data files, one sub-folder per data set."""
    return home() / "data"


def index_dir() -> Path:
    """First-stage indexes (Terrier, PISA), one sub-folder per data set, engine and field choice."""
    return home() / "indexes"


def model_dir() -> Path:
    """Joined and verified GGUF model files."""
    return home() / "models"


def llm_cache_path() -> Path:
    """The persistent LLM response cache shared by all components (SQLite)."""
    return home() / "llm-cache.sqlite"


def data_mirror() -> Path | None:
    """A local folder with copies of the pinned data files, for machines without internet (SUPERB_DATA_MIRROR)."""
    value = os.environ.get("SUPERB_DATA_MIRROR")
    return Path(value).expanduser().resolve() if value else None
