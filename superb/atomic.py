"""A results folder replaced as a whole: written beside it, then swapped in.

``with replacing(Path("results/NAME")) as tmp:`` yields a new, empty sibling folder ``results/.NAME.writing-PID``;
the writer fills it; on a clean exit the finished folder takes NAME's place and the old one is deleted. So:

* no file of an earlier run survives (a run file of a system since renamed, a gain plot of a dropped baseline),
  except the folder's README.md (``KEPT``): superb never writes one itself, it is the reader's account of the
  results (the numbers in it are checked against the new files by tests/test_readme_numbers.py), and a re-run must
  not delete it;
* an exception, Ctrl-C or a kill while writing leaves the old folder exactly as it was (the unfinished sibling is
  removed on the way out, or, after a kill, by the next write of the same folder);
* readers never see a half-written folder: on Linux the swap is one ``renameat2(RENAME_EXCHANGE)`` call; elsewhere
  (or on a file system without it) two renames, old folder aside then new folder in, a window of microseconds in
  which NAME is absent and the old folder is intact at ``.NAME.replaced-PID``.

Only a folder that looks like superb's (provenance.json, table.csv or table.md in it) or an empty one is replaced:
``--out ~/Documents`` must never delete a user's files. Nor does superb delete a user's file from its own folder:
while a folder holds a file that superb did not write there (one its provenance.json ``files`` list does not name,
other than README.md and report.html: a notes file, a spec, a script's output), it is refused, naming the files, and
so is a folder that holds an input of the command itself (the spec being run, a run file being evaluated). Move
those files out, or write elsewhere with ``--out`` (docs/spec.md, "What a run writes").

Before any LLM call, :func:`check_writable` makes sure the folder can be written: the nearest existing folder on the
way to it must take a new file (a path under a regular file, a read-only mount or a folder without write permission
is refused there and then, not after the calls were paid for).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from superb.errors import SuperbError
from superb.folder import layout

MARKERS = (layout.PROVENANCE, layout.TABLE, layout.TABLE_MD)  # files every folder superb writes has (or had, if partial)
KEPT = (layout.README,)  # carried into the new folder when the writer did not write it (see the module doc)
LATER = (layout.REPORT,)  # superb's, written after provenance.json's list of the folder's files
_WRITING, _REPLACED = "writing", "replaced"


@contextlib.contextmanager
def replacing(out: Path) -> Iterator[Path]:
    """Yield an empty folder beside ``out`` to write into; on success it becomes ``out`` (see the module doc)."""
    out = Path(out)
    check_replaceable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(out)
    tmp = _sibling(out, _WRITING, os.getpid())
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
        for name in KEPT:
            if (out / name).is_file() and not (tmp / name).exists():
                shutil.copy2(out / name, tmp / name)
        _swap_in(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def check_replaceable(out: Path, inputs: Iterable[str | Path] = ()) -> None:
    """SuperbError unless ``out`` is absent, an empty folder, or a folder superb wrote that holds no file of the
    user's (see the module doc) and none of ``inputs`` (the files the command reads: its spec, run files...)."""
    out = Path(out)
    for given in inputs:
        if _inside(Path(given), out):
            raise SuperbError(f"{given} is inside {out}, the results folder this command replaces as a whole: it "
                              f"would be deleted. Move it out of {out}, or write the results elsewhere with --out")
    if not out.exists():
        return
    if not out.is_dir():
        raise SuperbError(f"{out} is a file, not a results folder: choose another --out, or move the file away")
    if any(out.iterdir()) and not any((out / m).is_file() for m in MARKERS):
        shown = sorted(p.name for p in out.iterdir())[:5]
        raise SuperbError(f"{out} exists and is not a superb results folder (none of {', '.join(MARKERS)} in it; it "
                          f"holds {shown}...). superb replaces its results folder as a whole, so it will not write "
                          "there: choose another --out, or empty the folder first")
    foreign = foreign_files(out)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise SuperbError(f"{out} holds {len(foreign)} file(s) superb did not write there ({shown}): superb replaces "
                          "a results folder as a whole and will not delete them. Move them out of the folder (its "
                          "README.md is kept), or write the results elsewhere with --out")


def foreign_files(out: Path) -> list[str]:
    """The files under ``out`` (relative paths, sorted) that its provenance.json's ``files`` list does not name,
    README.md and report.html aside; [] for a folder without such a list (nothing tells superb's files from others)."""
    try:
        listed = json.loads((out / layout.PROVENANCE).read_text(encoding="utf-8")).get("files")
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(listed, (list, dict)) or not listed:
        return []
    names = {item if isinstance(item, str) else str(item.get("name")) for item in listed} \
        if isinstance(listed, list) else set(listed)
    found = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() or p.is_symlink())
    return [f for f in found if f not in names and f not in (*KEPT, *LATER, layout.PROVENANCE)]


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def check_writable(out: Path) -> None:
    """SuperbError unless a results folder can be written at ``out`` (see the module doc): the nearest existing
    folder on the way to its parent takes a new file. Nothing is left behind (the probe file is deleted)."""
    out = Path(out).absolute()
    if out.exists() and not out.is_dir():
        raise SuperbError(f"{out} is a file, not a results folder: choose another --out, or move the file away")
    # the folder is written beside ``out`` (.NAME.writing-PID), then swapped in: its parent must take new files
    existing = next((p for p in out.parents if p.exists() or p.is_symlink()), Path("/"))
    if not existing.is_dir():
        raise SuperbError(f"cannot write the results folder {out}: {existing} is a file, not a folder; choose "
                          "another --out")
    try:
        handle, probe = tempfile.mkstemp(prefix=".superb-probe-", dir=existing)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise SuperbError(f"cannot write the results folder {out}: {existing} does not take a new file "
                          f"({exc.strerror or exc}); choose a writable --out before any LLM call is made") from None


def remove_stale(out: Path) -> list[Path]:
    """Delete what killed writers of ``out`` left beside it (``.NAME.writing-PID`` of a process that is gone). A
    ``.NAME.replaced-PID`` is an old folder whose swap was cut between its two renames: put back when ``out`` is
    missing, else deleted. Returns the paths handled."""
    handled = []
    prefix = f".{out.name}."
    for path in sorted(p for p in out.parent.iterdir() if p.name.startswith(prefix)):
        kind, _, pid = path.name[len(prefix):].rpartition("-")
        if kind not in (_WRITING, _REPLACED) or not pid.isdigit() or _alive(int(pid)):
            continue
        if kind == _REPLACED and not out.exists():
            os.rename(path, out)
        else:
            shutil.rmtree(path, ignore_errors=True)
        handled.append(path)
    return handled


def _sibling(out: Path, kind: str, pid: int) -> Path:
    return out.with_name(f".{out.name}.{kind}-{pid}")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # ours from an earlier write in this process, finished or failed: not in use
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _swap_in(new: Path, out: Path) -> None:
    """``new`` becomes ``out``; the folder that was ``out`` (if any) is deleted."""
    if not out.exists():
        os.rename(new, out)
        return
    if _exchange(new, out):  # new is out now, and the old folder sits at new's path
        shutil.rmtree(new)
        return
    old = _sibling(out, _REPLACED, os.getpid())
    shutil.rmtree(old, ignore_errors=True)
    os.rename(out, old)
    os.rename(new, out)
    shutil.rmtree(old)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_libc = None


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one atomic step (Linux renameat2 RENAME_EXCHANGE); False where that is not available."""
    global _libc
    if not sys.platform.startswith("linux"):
        return False
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    renameat2 = getattr(_libc, "renameat2", None)
    if renameat2 is None:  # glibc < 2.28
        return False
    rc = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # the file system or kernel cannot exchange
        return False
    raise OSError(err, f"cannot swap {a} and {b}: {os.strerror(err)}")
