"""The kinds of folder superb writes, each a class recognised from its provenance.json, and :func:`open_folder`.

``open_folder(path)`` reads provenance.json once and hands the folder to the first kind (most specific first) that
recognises the record: a shard of a run, a merged run, the folder of a run (superb.folder.run_folder), a ``superb
table`` folder, a judge benchmark, a ``superb judge`` folder, the benchmarks' results/bench. Where a command needs
a kind (``expect``), another kind is refused, naming what the folder is: a ``superb table`` folder given where a
collection (a run's folder) is expected is not read as one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from superb.errors import DataError
from superb.folder import layout
from superb.folder.base import ResultsFolder, read_provenance
from superb.folder.run_folder import MergedFolder, RunFolder, ShardFolder
from superb.folder.verify import Mismatch


class TableFolder(ResultsFolder):
    """A paper's table (``superb table``): table.md, table.csv (one row per system, collection and measure, each a
    folder's own cell), table.tex, and a provenance.json naming the collections and their folders' sha256."""

    kind = "a `superb table` folder"
    written_by = "`superb table`"

    @classmethod
    def recognises(cls, record: dict[str, Any]) -> bool:
        return isinstance(record.get("collections"), list)

    def describe(self) -> str:
        command = self.provenance.get("command")
        made = " ".join(map(str, command)) if isinstance(command, list) else self.written_by
        names = [str(c.get("name")) for c in self.provenance["collections"] if isinstance(c, dict)]
        return (f"{self.path} is {self.kind} (written by `{made}`: a table of the collections "
                f"{', '.join(names) or '(none)'})")


class BenchmarkFolder(ResultsFolder):
    """A judge benchmark (queries, pooled documents and LLM judgments: superb.judges.benchmark)."""

    kind = "a judge benchmark"
    written_by = "`superb judge` ([benchmark])"

    @classmethod
    def recognises(cls, record: dict[str, Any]) -> bool:
        return record.get("kind") == "superb-benchmark"


class JudgeFolder(ResultsFolder):
    """The folder of ``superb judge SPEC``: judgments, agreement with the human labels, the label study."""

    kind = "the folder of a judge study"
    written_by = "`superb judge SPEC`"

    @classmethod
    def recognises(cls, record: dict[str, Any]) -> bool:
        spec = record.get("spec")
        return isinstance(spec, dict) and "pipelines" not in spec and ("variants" in record or "pool" in spec)


class BenchFolder(ResultsFolder):
    """results/bench: the benchmarks' figures, each recorded with the script and code that made it."""

    kind = "the benchmarks' folder"
    written_by = "the scripts under bench/"

    @classmethod
    def recognises(cls, record: dict[str, Any]) -> bool:
        files = record.get("files")
        return isinstance(files, dict) and any(isinstance(v, dict) for v in files.values())

    def checks_files(self) -> bool:
        return False  # each figure's record is its own (superb.provenance.record_bench), not a folder's


#: most specific first: the first kind that recognises a provenance.json is the folder's
KINDS: tuple[type[ResultsFolder], ...] = (ShardFolder, MergedFolder, RunFolder, TableFolder, BenchmarkFolder,
                                          JudgeFolder, BenchFolder)
#: what every command that takes a collection asks for
COLLECTION = "a folder written by `superb run`, `superb evaluate` or `superb merge` (e.g. results/quickstart)"


def kind_of(record: dict[str, Any]) -> type[ResultsFolder] | None:
    """The kind whose provenance.json ``record`` is, or None."""
    return next((k for k in KINDS if k.recognises(record)), None)


def open_folder(path: str | Path, expect: type[ResultsFolder] = RunFolder, *, unverified: bool | None = None,
                what: str = COLLECTION, damaged: str = "", record_optional: bool = False) -> Any:
    """The folder at ``path`` as an instance of its kind, which must be ``expect`` (or a subclass); else a DataError
    naming what it is and ``what`` the command takes. ``unverified``: read files that differ from their record
    (default: the command's ``--unverified``, superb.folder.verify.reading_unverified); ``damaged``: the fix for a
    provenance.json that cannot be read (default: write the folder again); ``record_optional``: a run's folder copied
    without its provenance.json is read as one (with no spec), unverified and so marked, rather than refused."""
    path = Path(path)
    if record_optional and path.is_dir() and not (path / layout.PROVENANCE).exists() and issubclass(RunFolder, expect):
        return RunFolder(path, {}, None, unverified=unverified)
    record, digest = read_provenance(path, what, damaged)
    kind = kind_of(record)
    if kind is None:
        raise DataError(f"{path / layout.PROVENANCE} is not the record of a folder superb recognises (its keys: "
                        f"{', '.join(sorted(record)[:8]) or 'none'}): give {what}")
    folder = kind(path, record, digest, unverified=unverified)
    if not isinstance(folder, expect):
        raise DataError(f"{folder.describe()}, not {expect.kind}: give {what}")
    return folder


def check_inputs(paths: list[str | Path], *, unverified: bool | None = None) -> list[Mismatch]:
    """Each of ``paths`` (files a command was given: run files, qrels) that lies inside a folder superb wrote (its
    provenance.json records the file) is checked against its recorded sha256, as a folder's reader checks it: a
    changed one is refused (FileNotAsRecorded), or with ``unverified`` returned among the mismatches."""
    found: list[Mismatch] = []
    for given in paths:
        path = Path(given).resolve()
        for parent in list(path.parents)[:3]:
            if not (parent / layout.PROVENANCE).is_file():
                continue
            record, digest = read_provenance(parent, "a results folder")
            kind = kind_of(record) or ResultsFolder
            files = record.get("files")
            name = path.relative_to(parent).as_posix()
            if isinstance(files, dict) and name in files:
                folder = kind(parent, record, digest, unverified=unverified)
                folder.file(name)
                found += folder.mismatches
            break
    return found
