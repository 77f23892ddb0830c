"""sha256 of files, read in 1 MB blocks: the one helper behind every check that a file holds what was recorded
(pinned data files, a shard's files, shipped responses, a results folder's source.patch). Imports nothing heavy."""

from __future__ import annotations

import hashlib
import os
from typing import Iterable

_CHUNK = 1 << 20


def sha256_files(paths: Iterable[str | os.PathLike]) -> str:
    """sha256 of the bytes of ``paths`` read one after the other (a file cut into parts hashes as the whole)."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(_CHUNK), b""):
                digest.update(chunk)
    return digest.hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    return sha256_files([path])
