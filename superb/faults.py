"""What an exception raised by code superb runs for a user means: a plug-in's import, its constructor, its
``transform`` or its ``score()`` (docs/extending.md).

A Ctrl-C the user pressed passes on unchanged (superb.interrupt: the run unwinds and exits 130). Anything else,
``SystemExit`` and a ``KeyboardInterrupt`` the code raised itself included, is a fault: :func:`fault` makes it a
StageError that names what ran and the last line of the user's own file in the traceback, so the command exits 2, never
0 and never hangs. ``asyncio.CancelledError`` and ``GeneratorExit`` are how coroutines are stopped: never faults.

A plug-in's own KeyboardInterrupt is told from a Ctrl-C this way: under the `superb` command, superb's SIGINT handler
counts each signal before it raises (superb.interrupt.requested), and signals reach only the main thread; so a
KeyboardInterrupt raised on another thread (the LLM client's loop), or with no SIGINT counted, is the code's own. Where
superb's handler is not installed (superb used from Python), a KeyboardInterrupt on the main thread cannot be told from
a Ctrl-C and is taken as one.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import sysconfig
import threading
import traceback
from pathlib import Path
from typing import Any, Iterable

from superb import interrupt
from superb.errors import StageError

#: how coroutines and generators are stopped: never a fault of the code that sees them
STOPPING = (asyncio.CancelledError, GeneratorExit)
_OWN_PACKAGES = ("superb", "superb.transformers", "superb.pipelines")  # looked up in sys.modules, never imported here


def is_ctrl_c(exc: BaseException) -> bool:
    """Whether ``exc`` is the user's Ctrl-C (module docstring), not something a plug-in raised."""
    if not isinstance(exc, KeyboardInterrupt) or threading.current_thread() is not threading.main_thread():
        return False
    return interrupt.requested() or not interrupt.installed()


def is_fault(exc: BaseException) -> bool:
    """Whether ``exc``, caught around a user's code, is that code's fault (not a Ctrl-C, not a cancellation)."""
    return not isinstance(exc, STOPPING) and not is_ctrl_c(exc)


def fault(what: str, exc: BaseException, files: Iterable[Any] = (), *, after: str = "") -> StageError:
    """The StageError for ``exc`` raised by ``what`` (e.g. ``pipelines[2].rerank[0] (type 'mine', Mine.score)``):
    ``<what> raised <Type>: <message><after>, at <file>:<line>``, the place the last frame in the user's ``files``
    (paths, or classes and functions: their source files) in the traceback, else the last frame outside superb,
    Python and the installed packages, else the last frame."""
    return StageError(f"{what} raised {described(exc, files, after=after)}")


def described(exc: BaseException, files: Iterable[Any] = (), *, after: str = "") -> str:
    """``<Type>: <message><after>, at <file>:<line>`` (:func:`user_line`): an exception as an error line quotes it."""
    text = str(exc)
    place = user_line(exc, files)
    return f"{type(exc).__name__}{': ' + text if text else ''}{after}" + (f", at {place}" if place else "")


def user_line(exc: BaseException, files: Iterable[Any] = ()) -> str | None:
    """``file:line`` of the user's code where ``exc`` was raised (see :func:`fault`); None without a traceback."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:  # the file that does not parse, not importlib
        return f"{_shown(exc.filename)}:{exc.lineno}"
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    if not frames:
        return None
    wanted = {_resolved(f) for f in map(_source, files) if f}
    mine = [f for f in frames if _resolved(f.filename) in wanted]
    if not mine:
        mine = [f for f in frames if not _library(f.filename)] or frames
    return f"{_shown(mine[-1].filename)}:{mine[-1].lineno}"


def _source(where: Any) -> str | os.PathLike | None:
    """A path as it is; a class or function: its source file (None when Python cannot say)."""
    if where is None or isinstance(where, (str, os.PathLike)):
        return where
    try:
        return inspect.getsourcefile(where)
    except (TypeError, OSError):
        return None


def _resolved(file: str | os.PathLike) -> str:
    try:
        return str(Path(file).resolve())
    except (OSError, RuntimeError, ValueError):
        return str(file)


def _library_roots() -> list[str]:
    roots = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    for name in _OWN_PACKAGES:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            roots.add(str(Path(module.__file__).parent))
    return [_resolved(r) + os.sep for r in roots if r]


def _library(file: str) -> bool:
    if file.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return True
    path = _resolved(file)
    return any(path.startswith(root) for root in _library_roots())


def _shown(file: str) -> str:
    """A path relative to the current folder when it lies there, else as it is."""
    try:
        return Path(file).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return str(file)
