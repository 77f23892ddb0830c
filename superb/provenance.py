"""What produced a result: package versions, the project's commit, the host, timings. Never secrets."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path

PACKAGES = ("superb", "python-terrier", "pyterrier", "pyterrier-pisa", "ir-datasets", "ir-measures", "openai",
            "pandas", "numpy", "scipy", "xllamacpp", "onnxruntime")


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def project_commit() -> dict[str, str | bool | None]:
    """The git commit of the project checkout and whether it had uncommitted changes (None outside a checkout)."""
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "dirty": None}
    if commit.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


def host() -> dict[str, str | int | None]:
    import os

    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()}
