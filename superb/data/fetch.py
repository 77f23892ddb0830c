"""Pinned data files: fetch once, verify by sha256, keep under ``superb.paths.data_dir()/<dataset>/``.

Resolution order for one file:
  1. the cached copy in ``data_dir()/<dataset>/<name>`` if its sha256 matches;
  2. a local mirror (env ``SUPERB_DATA_MIRROR``): ``<mirror>/<dataset>/<name>`` or ``<mirror>/<name>``, copied and verified;
     a mirror may keep the file gzipped (``<name>.gz``): it is decompressed, and the sha256 is the upstream file's;
  3. a download of the upstream URL (urllib, with a timeout), verified.

Every copy is written to a temporary file in the target folder and renamed into place only after its checksum was
verified, so an interrupted or corrupt transfer never leaves a file under the final name. A cached file whose checksum
does not match (e.g. edited by hand) is not used: it is fetched again and replaced, and a warning says so.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import urllib.error
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from superb import paths
from superb.digest import sha256_file
from superb.errors import DataError

MIRROR_ENV = "SUPERB_DATA_MIRROR"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class PinnedFile:
    """One upstream file at a fixed version: its local name, where to download it, and what it must hash to."""

    name: str
    url: str
    size: int
    sha256: str


def fetch(pinned: PinnedFile, dataset: str, *, timeout: float = 60.0) -> Path:
    """Return the local, verified path of ``pinned`` (see the module docstring for the order tried)."""
    folder = paths.data_dir() / dataset
    target = folder / pinned.name  # a name may hold a sub-folder (trec-dl's first-stages/NAME/...)
    if target.is_file():
        got = sha256_file(target)
        if got == pinned.sha256:
            return target
        warnings.warn(
            f"cached {target} has sha256 {got}, expected {pinned.sha256}; fetching it again", stacklevel=2
        )
    target.parent.mkdir(parents=True, exist_ok=True)

    mirror = paths.data_mirror()
    tried: list[str] = []
    if mirror is not None:
        for plain in (mirror / dataset / pinned.name, mirror / pinned.name):
            for candidate, opener in ((plain, open), (plain.with_name(plain.name + ".gz"), gzip.open)):
                if candidate.is_file():
                    try:
                        with opener(candidate, "rb") as source:
                            _write_verified(source, target, pinned, origin=str(candidate))
                    except (OSError, EOFError) as exc:  # a truncated or damaged .gz
                        raise DataError(f"cannot read {candidate}: {exc}. Replace it with the file from "
                                        f"{pinned.url}") from None
                    return target
                tried.append(str(candidate))

    try:
        with urllib.request.urlopen(pinned.url, timeout=timeout) as response:
            _write_verified(response, target, pinned, origin=pinned.url)
    except (urllib.error.URLError, OSError) as exc:
        where = (
            f"{MIRROR_ENV} is set but the file is not at {' or '.join(tried)}"
            if tried
            else f"{MIRROR_ENV} is not set"
        )
        raise DataError(
            f"cannot get data file {pinned.name!r} for {dataset!r}: downloading {pinned.url} failed ({exc}), and "
            f"{where}. Fix: connect to the internet, or download that URL yourself and put the file in a folder "
            f"<mirror>/{dataset}/{pinned.name}, then set {MIRROR_ENV}=<mirror>."
        ) from exc
    return target


def _write_verified(source: BinaryIO, target: Path, pinned: PinnedFile, *, origin: str) -> None:
    """Stream ``source`` into a temp file beside ``target``, check sha256, then rename atomically."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            for chunk in iter(lambda: source.read(_CHUNK), b""):
                digest.update(chunk)
                out.write(chunk)
        got = digest.hexdigest()
        if got != pinned.sha256:
            raise DataError(
                f"checksum mismatch for data file {pinned.name!r} from {origin}: expected sha256 {pinned.sha256}, "
                f"got {got}. The file is not the pinned version (corrupt or changed upstream); it was not used. "
                f"Fix: replace it with the file from {pinned.url} (expected {pinned.size} bytes)."
            )
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
