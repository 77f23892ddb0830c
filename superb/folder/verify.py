"""A file read from a results folder is checked against the sha256 its provenance.json records.

Every results folder superb writes records, in provenance.json's ``files``, the sha256 of each of its files (README.md
aside). A reader asks for a file through its folder (superb.folder.base.ResultsFolder.file), which hashes it the first
time and compares: a file whose bytes differ (a hand-edited cell of table.csv, a run file cut short) or that the record
does not list (a file dropped into the folder) is a :class:`FileNotAsRecorded` error naming the file, both sha256 and
the fix (exit 2). With ``--unverified`` (:func:`reading_unverified`), the file is read anyway and the mismatch is kept
(:class:`Mismatch`), so the command marks what it writes or prints as unverified (:func:`note`).

A folder written before superb recorded its files (no ``files`` map) cannot be checked: it is read with a warning
naming it, and its output is marked unverified the same way.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from superb.errors import DataError
from superb.folder.layout import PROVENANCE

_UNVERIFIED: ContextVar[bool] = ContextVar("superb_read_unverified", default=False)
FLAG = "--unverified"
log = logging.getLogger(__name__)


@contextlib.contextmanager
def reading_unverified(allowed: bool) -> Iterator[None]:
    """Within it, folders opened without an explicit ``unverified=`` read a file that differs from its record (the
    command's ``--unverified``)."""
    token = _UNVERIFIED.set(bool(allowed))
    try:
        yield
    finally:
        _UNVERIFIED.reset(token)


def unverified_allowed() -> bool:
    """Whether the running command was given ``--unverified``."""
    return _UNVERIFIED.get()


@dataclass(frozen=True)
class Mismatch:
    """A file read although it is not what its folder's provenance.json records: ``recorded`` None when the record
    does not list the file; ``found`` None when the folder records no files at all (written before superb did)."""

    folder: str
    name: str
    recorded: str | None
    found: str | None

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.name}"

    def why(self) -> str:
        if self.found is None:
            return f"{self.folder}/{PROVENANCE} is absent or records no sha256 of its files"
        if self.recorded is None:
            return f"{self.path} (sha256 {self.found[:16]}) is not among the files its {PROVENANCE} records"
        return f"{self.path} has sha256 {self.found[:16]}, its {PROVENANCE} records {self.recorded[:16]}"

    def to_dict(self) -> dict[str, str | None]:
        return {"folder": self.folder, "file": self.name, "recorded_sha256": self.recorded, "found_sha256": self.found}

    @staticmethod
    def from_dict(record: dict[str, str | None]) -> "Mismatch":
        return Mismatch(str(record["folder"]), str(record["file"]), record.get("recorded_sha256"),
                        record.get("found_sha256"))


class FileNotAsRecorded(DataError):
    """A file a command reads differs from the sha256 its folder's provenance.json records (or is not recorded)."""

    def __init__(self, mismatch: Mismatch, fix: str):
        self.mismatch = mismatch
        if mismatch.recorded is None:
            what = (f"{mismatch.path} is not among the files {mismatch.folder}/{PROVENANCE} records with their "
                    f"sha256 (this one has {mismatch.found[:16]}...): superb did not write it there")
        else:
            what = (f"{mismatch.path} is not the file superb wrote: its sha256 is {mismatch.found[:16]}..., "
                    f"{mismatch.folder}/{PROVENANCE} records {mismatch.recorded[:16]}... (changed after it was "
                    "written)")
        super().__init__(f"{what}. {fix}; or pass {FLAG} to read it anyway (what is printed or written is then marked "
                         "unverified)")


def note(mismatches: Sequence[Mismatch]) -> str:
    """The line that marks an output made from files that are not as recorded ("" when there are none)."""
    if not mismatches:
        return ""
    shown = "; ".join(m.why() for m in mismatches[:5]) + (f"; and {len(mismatches) - 5} more"
                                                          if len(mismatches) > 5 else "")
    return (f"**Unverified**: read with {FLAG} from files that are not as their results folder recorded them "
            f"({shown}): these numbers may not be the ones superb computed.")


def warn(mismatch: Mismatch) -> None:
    """The terminal's word on one file read unverified."""
    log.warning("superb: reading %s unverified: %s", mismatch.path, mismatch.why())


def as_records(mismatches: Sequence[Mismatch]) -> list[dict[str, str | None]]:
    """What an output's provenance.json keeps of the files it was made from unverified (under ``unverified``)."""
    return [m.to_dict() for m in mismatches]
