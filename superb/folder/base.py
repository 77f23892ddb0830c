"""A results folder opened for reading: its provenance.json, read once, and every other file handed out verified.

:class:`ResultsFolder` is the base of the folder kinds (superb.folder.kinds): a kind is a class that recognises its
provenance.json (``recognises``), says what it is (``kind``, ``written_by``) and how to get a changed file back
(``fix``). Each file a reader asks for (:meth:`ResultsFolder.file`) is checked against the sha256 provenance.json
records (superb.folder.verify), once.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar

from superb.digest import sha256_file
from superb.errors import DataError
from superb.folder import layout
from superb.folder.verify import FileNotAsRecorded, Mismatch, unverified_allowed, warn


class ResultsFolder:
    """A folder superb wrote, its provenance.json read (``provenance``); files come out of :meth:`file`, verified."""

    kind: ClassVar[str] = "a results folder"
    written_by: ClassVar[str] = "superb"

    def __init__(self, path: Path, provenance: dict[str, Any], provenance_sha256: str | None, *,
                 unverified: bool | None = None):
        self.path = Path(path)
        self.provenance = provenance
        self.provenance_sha256 = provenance_sha256
        self.allow_unverified = unverified_allowed() if unverified is None else bool(unverified)
        files = provenance.get("files")
        self._recorded: dict[str, Any] | None = files if isinstance(files, dict) else None
        self.read: dict[str, str] = {}  # relative path -> sha256 of every file read so far
        self.mismatches: list[Mismatch] = []

    @classmethod
    def recognises(cls, record: dict[str, Any]) -> bool:
        """Whether provenance.json ``record`` is this kind's (the kinds are tried most specific first)."""
        return False

    def checks_files(self) -> bool:
        """Whether the files of this kind are read against a record (a benchmark folder keeps its own per figure)."""
        return True

    def describe(self) -> str:
        """What the folder is, for a refusal: 'results/x is a `superb table` folder (written by ...)'."""
        return f"{self.path} is {self.kind} (written by {self.written_by})"

    def fix(self, name: str) -> str:
        """How to get the recorded file back."""
        return (f"Restore it (`git checkout -- {self.path / name}` for a committed folder) or write the folder again "
                f"with {self.written_by}")

    # --- files -------------------------------------------------------------------------------------------------------
    def has(self, name: str) -> bool:
        return (self.path / name).is_file()

    def file(self, name: str, *, missing: str = "") -> Path:
        """``path/name``, checked against its recorded sha256 the first time it is asked for; a missing file is a
        DataError naming it (``missing``: what the command needs instead)."""
        path = self.path / name
        if not path.is_file():
            raise DataError(f"{path} does not exist: {missing or self.describe()}")
        if name not in self.read:
            self._check(name, path)
        return path

    def read_text(self, name: str) -> str:
        return self.file(name).read_text(encoding="utf-8")

    def read_json(self, name: str) -> Any:
        path = self.file(name)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise DataError(f"{path} is not valid JSON ({exc}): {self.fix(name)}") from None

    def _check(self, name: str, path: Path) -> None:
        found = sha256_file(path)
        self.read[name] = found
        if not self.checks_files():
            return
        if self._recorded is None:  # written before superb recorded its files: nothing to check against
            if not self.mismatches:
                self._unrecorded()
            return
        recorded = self._recorded.get(name)
        if recorded == found:
            return
        mismatch = Mismatch(str(self.path), name, recorded if isinstance(recorded, str) else None, found)
        if not self.allow_unverified:
            raise FileNotAsRecorded(mismatch, self.fix(name))
        if all(m.name != name for m in self.mismatches):  # merge may have named it already (its own record)
            warn(mismatch)
            self.mismatches.append(mismatch)

    def _unrecorded(self) -> None:
        mismatch = Mismatch(str(self.path), layout.PROVENANCE, None, None)
        warn(mismatch)
        self.mismatches.append(mismatch)

    @property
    def verified(self) -> bool:
        """True when every file read so far is as recorded."""
        return not self.mismatches

    def inputs_record(self) -> dict[str, Any]:
        """What an output made from this folder records of it: the folder, its kind, provenance.json's sha256, the
        sha256 of every file read, and whether they were as recorded."""
        return {"folder": str(self.path), "kind": type(self).__name__, "provenance_sha256": self.provenance_sha256,
                "files": dict(sorted(self.read.items())), "verified": self.verified}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"


def read_provenance(path: Path, what: str, damaged: str = "") -> tuple[dict[str, Any], str]:
    """(provenance.json of the folder ``path`` as a dict, its sha256); a DataError naming the file otherwise.
    ``what``: the folders the command takes; ``damaged``: the fix for a record that cannot be read."""
    damaged = damaged or "write it again with the command that wrote it"
    if not path.exists():
        raise DataError(f"{path} does not exist: give {what}")
    if not path.is_dir():
        raise DataError(f"{path} is not a folder: give {what}")
    record_path = path / layout.PROVENANCE
    if not record_path.is_file():
        raise DataError(f"{record_path} does not exist: {path} is not a folder superb wrote; give {what}")
    data = record_path.read_bytes()
    try:
        record = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"{record_path} is not valid JSON ({exc}): the folder is damaged; {damaged}") from None
    if not isinstance(record, dict):
        raise DataError(f"{record_path} is not a JSON object (found {type(record).__name__}): the folder is damaged; "
                        f"{damaged}")
    return record, hashlib.sha256(data).hexdigest()
