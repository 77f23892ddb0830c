"""What produced a result: package versions, the project's commit, the host, timings. Never secrets.

One writer for every results folder (``superb run``, ``superb judge``, benchmarks, fills): :func:`write` adds
``packages``, ``project`` and ``host`` to the folder's record and, for a folder whose files are read back, ``files``
(each file's sha256, which superb.folder checks every read against), and writes provenance.json once: the caller
gathers the whole record first (the results writer ships the LLM responses before, and puts their summary in it).

The project's code state: ``project.commit`` (HEAD) and ``project.dirty`` (uncommitted changes to the code; the
results/ tree is data, not code, and is left out, so re-writing a committed folder does not make the tree dirty).
A dirty tree is RECORDED, not refused: ``project.diff`` holds the sha256 and size of the patch (``git diff HEAD``
plus every untracked, non-ignored file outside results/ as a new-file diff) and, when it is at most
:data:`PATCH_LIMIT` bytes, the patch itself is written beside provenance.json as ``source.patch``:
``git checkout <commit> && git apply results/NAME/source.patch`` recreates the code that wrote the folder. Refusing
would make every run from a working tree unkeepable and push people to commit blindly before running; recording keeps
the exact code, and tests/test_provenance_history.py fails any committed folder whose commit is not in the history
or whose recorded patch is missing or altered.

The code is read when the command STARTS (:func:`code_at_start`, around every ``superb`` command), not when the
folder is written: a commit, checkout or edit made while a long run is going would otherwise be recorded as the code
that produced it. The start state is what ``project`` records; when the checkout differs at write time,
``project.changed_during_run`` names the commit and dirtiness found then, and a warning says so (a module imported
late in the run may then be the newer one).
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
import subprocess
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from superb.digest import sha256_file
from superb.folder.layout import NOT_HASHED, PROVENANCE, SOURCE_PATCH

PACKAGES = ("superb", "python-terrier", "pyterrier", "pyterrier-pisa", "ir-datasets", "ir-measures", "openai",
            "pandas", "numpy", "scipy", "xllamacpp", "onnxruntime")
ROOT = Path(__file__).resolve().parents[1]
PATCH_FILE = SOURCE_PATCH
PATCH_LIMIT = 1_000_000  # bytes; a larger diff is recorded by hash and size only
_NOT_CODE = ":(exclude)results"  # pathspec: the results tree is not code
_START: dict[str, Any] = {}  # code_at_start(): {"commit": str | None, "patch": str | None} at the command's start
log = logging.getLogger(__name__)


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _git(*args: str, ok: tuple[int, ...] = (0,)) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode in ok else None


def source_patch() -> str | None:
    """The uncommitted code changes as one patch against HEAD (tracked changes, then untracked files as new files),
    results/ left out; "" for a clean tree, None outside a git checkout."""
    tracked = _git("diff", "--binary", "HEAD", "--", ".", _NOT_CODE)
    untracked = _git("ls-files", "--others", "--exclude-standard", "-z", "--", ".", _NOT_CODE)
    if tracked is None or untracked is None:
        return None
    parts = [tracked]
    for name in sorted(n for n in untracked.split("\0") if n):
        new = _git("diff", "--binary", "--no-index", "--", "/dev/null", name, ok=(0, 1))  # 1: files differ
        if new:
            parts.append(new)
    return "".join(parts)


@contextmanager
def code_at_start():
    """For the duration (one command: ``superb``'s entry point wraps every command in it), :func:`record_code`
    records the checkout's commit and patch as they were when it began."""
    commit = _git("rev-parse", "HEAD")
    _START.update(commit=commit.strip() if commit else None, patch=source_patch())
    try:
        yield
    finally:
        _START.clear()


def _commit_record(commit: str | None, patch: str | None, patch_file: str) -> dict[str, Any]:
    if commit is None:
        return {"commit": None, "dirty": None}
    if patch is None:
        return {"commit": commit, "dirty": None}
    record: dict[str, Any] = {"commit": commit, "dirty": bool(patch)}
    if patch:
        data = patch.encode("utf-8")
        record["diff"] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                          "patch": patch_file if len(data) <= PATCH_LIMIT else None}
        if len(data) > PATCH_LIMIT:
            record["diff"]["omitted"] = f"{len(data)} bytes > PATCH_LIMIT {PATCH_LIMIT}"
    return record


def record_code(folder: str | Path, patch_file: str = PATCH_FILE) -> dict[str, Any]:
    """The code that ran: the :func:`code_at_start` state inside one (else the checkout now), with the patch
    written to ``folder/patch_file`` when the code is dirty and the patch small enough (a stale one removed when it
    is not). A checkout that changed since the start is named in ``changed_during_run`` and warned about."""
    now_commit = _git("rev-parse", "HEAD")
    now_commit = now_commit.strip() if now_commit else None
    now_patch = source_patch()
    if _START:
        patch = _START["patch"]
        project = _commit_record(_START["commit"], patch, patch_file)
        if (now_commit, now_patch) != (_START["commit"], patch):
            project["changed_during_run"] = {"commit": now_commit, "dirty": None if now_patch is None
                                             else bool(now_patch)}
            log.warning("the project's code changed while this command ran (commit %s%s at the start, %s%s now): "
                        "%s records the start state", (_START["commit"] or "?")[:12], " + changes" if patch else "",
                        (now_commit or "?")[:12], " + changes" if now_patch else "", Path(folder) / PROVENANCE)
    else:
        patch = now_patch
        project = _commit_record(now_commit, patch, patch_file)
    target = Path(folder) / patch_file
    if (project.get("diff") or {}).get("patch"):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(patch.encode("utf-8"))
    elif target.exists():
        target.unlink()
    return project


def host() -> dict[str, str | int | None]:
    import os

    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()}


def environment(folder: str | Path) -> dict[str, Any]:
    """What every record gets, measured now: ``packages``, ``project`` (with source.patch written into ``folder``
    when the code is dirty: :func:`record_code`) and ``host``."""
    return {"packages": package_versions(), "project": record_code(folder), "host": host()}


def write(folder: str | Path, record: dict[str, Any], *, environment_of: dict[str, Any] | None = None,
          hash_files: bool = False) -> Path:
    """THE writer of provenance.json, called once per folder a command writes: ``record`` plus packages, project and
    host (measured now by :func:`environment`, with source.patch beside it when the code is dirty; or taken from
    ``environment_of``, an environment measured earlier or a provenance read back, to keep what it recorded), then,
    with ``hash_files``, ``files``: the sha256 of every other file of the folder (:func:`folder_files`), which every
    reader checks what it reads against (superb.folder.verify). Returns the provenance.json path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    source = environment(folder) if environment_of is None else environment_of
    full = {**record, **{k: source.get(k) for k in ("packages", "project", "host")}}
    if hash_files:
        full["files"] = folder_files(folder)
    path = folder / PROVENANCE
    path.write_text(json.dumps(full, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return path


def folder_files(folder: str | Path, skip: tuple[str, ...] = NOT_HASHED) -> dict[str, str | None]:
    """provenance.json's ``files``: relative path -> sha256 of every file of the results folder ``folder``, those in
    ``skip`` aside (README.md: :data:`NOT_HASHED`); provenance.json itself is listed with None (a file cannot hold its
    own hash)."""
    folder = Path(folder)
    found = {p.relative_to(folder).as_posix(): sha256_file(p) for p in sorted(folder.rglob("*"))
             if p.is_file() and p.relative_to(folder).as_posix() not in skip}
    found[PROVENANCE] = None
    return dict(sorted(found.items()))


def record_file(folder: str | Path, name: str) -> None:
    """Add (or update) one file written after provenance.json (report.html) to its ``files``, with its sha256; a
    folder without provenance.json, or whose ``files`` is an old list of names, is left as it is."""
    path = Path(folder) / PROVENANCE
    if not path.is_file():
        return
    text = path.read_text(encoding="utf-8")
    record = json.loads(text)
    files = record.get("files")
    if not isinstance(files, dict):
        return
    files[name] = sha256_file(Path(folder) / name)
    record["files"] = dict(sorted(files.items()))
    path.write_text(json.dumps(record, indent=2, ensure_ascii="\\u" in text, default=str)
                    + ("\n" if text.endswith("\n") else ""), encoding="utf-8")


def recorded_patch_ok(folder: str | Path, project: dict[str, Any]) -> str | None:
    """None when the folder's code is recoverable (a clean commit, or a dirty one whose source.patch is present with
    the recorded sha256); else what is wrong, naming the file. A tree recorded dirty without a diff cannot be
    recovered: the commit alone is not the code that ran."""
    diff = project.get("diff")
    if not diff:
        if project.get("dirty"):
            return (f"{PROVENANCE} records a dirty tree (uncommitted changes) but no diff, so the code that wrote "
                    "the folder cannot be recovered; re-issue it from committed code (`superb responses replay` then "
                    "`superb run`, 0 LLM calls)")
        return None
    if not diff.get("patch"):
        return f"the diff ({diff.get('bytes')} bytes) was too large to keep: {diff.get('omitted')}"
    file = Path(folder) / diff["patch"]
    if not file.is_file():
        return f"{file} is missing (recorded sha256 {diff['sha256'][:12]}...)"
    if sha256_file(file) != diff["sha256"]:
        return f"{file} does not match the recorded sha256 {diff['sha256'][:12]}..."
    return None


BENCH_RECORD = PROVENANCE  # in results/bench/: one entry per figure file


def record_bench(out_dir: str | Path, files: list[str | Path], bench: str) -> Path:
    """Benchmarks write many figures into one folder (results/bench/): each figure file gets its own entry in
    ``out_dir/provenance.json`` (the bench script, the file's sha256, and the packages, project and host measured
    now, with source.patch_<bench> beside it when the code is dirty); entries of other figures are kept. The top-level
    ``project`` is the latest recording's, for readers that look for one commit per results folder."""
    out_dir = Path(out_dir)
    path = out_dir / BENCH_RECORD
    record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"files": {}}
    project = record_code(out_dir, patch_file=f"source.patch_{bench}")
    env = {"bench": bench, "packages": package_versions(), "project": project, "host": host(),
           "recorded": "by the bench's run"}
    for file in files:
        file = Path(file)
        record["files"][file.name] = {**env, "sha256": hashlib.sha256(file.read_bytes()).hexdigest()}
    record["project"] = project  # the code of the latest recording; each figure keeps the code that wrote it
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return path
