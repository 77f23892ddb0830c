"""Ctrl-C for the `superb` command: the first one unwinds, a second one (or a stuck unwind) ends the process at once.

A terminal's Ctrl-C sends SIGINT to the whole process group. The first raises KeyboardInterrupt in the main thread as
Python's default does: context managers clean up (a half-built index folder is removed, the response cache is
closed; every completed LLM call is already committed), and `superb` prints :data:`MESSAGE` and exits with 130. Two
things bound that unwind:

* a second SIGINT writes the message and calls ``os._exit(130)`` at once;
* a watchdog thread, started by the first, does the same after :data:`GRACE_S` seconds.

Neither can act while C code holds the GIL, which is why the embedded llama.cpp server runs in a child process
(superb.llm.server: xllamacpp loads and releases its model holding the GIL, for seconds to minutes on a loaded
machine), and why `superb` ends with ``os._exit`` once a run was interrupted (:func:`exit_now`, which also kills the
server's process): interpreter shutdown would join worker threads that may still be busy.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

from superb.exit_codes import EXIT_INTERRUPTED

MESSAGE = "superb: interrupted; completed LLM calls are cached, run the same command again to resume"
GRACE_S = 8.0  # the longest the first Ctrl-C's cleanup may take before the process ends without it

_count = 0
_installed = False  # superb's SIGINT handler is in place (handling()): a Ctrl-C is counted before it raises
_done = threading.Event()  # set when the command returned: the watchdog has nothing left to bound


def requested() -> bool:
    """True once a SIGINT reached the handler of :func:`handling` (the run is being interrupted)."""
    return _count > 0


def installed() -> bool:
    """True while :func:`handling` has superb's SIGINT handler in place: then every Ctrl-C is counted
    (:func:`requested`) before its KeyboardInterrupt is raised, so a KeyboardInterrupt with none counted was raised by
    code, not by the user (superb.faults)."""
    return _installed


def exit_now(why: str = "", *, status: int = EXIT_INTERRUPTED, line: str | None = MESSAGE) -> None:
    """Write ``line`` + ``why`` (straight to fd 2: the main thread may hold sys.stderr's lock) and end the process
    with ``status`` without interpreter shutdown."""
    server = sys.modules.get("superb.llm.server")
    if server is not None:
        server.kill_children()  # the embedded model's process: it would outlive us until its model load is done
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a stream busy in another thread must not stop the exit
            pass
    if line is not None:
        os.write(2, f"{line}{why}\n".encode())
    os._exit(status)


def _watchdog(grace_s: float) -> None:
    if not _done.wait(grace_s):
        exit_now(f" (cleanup did not finish within {grace_s:.0f} s; ended without it)")


def _on_sigint(signum, frame) -> None:
    global _count
    _count += 1
    if _count > 1:
        exit_now(" (second Ctrl-C: ended at once)")
    threading.Thread(target=_watchdog, args=(GRACE_S,), name="superb-interrupt-watchdog", daemon=True).start()
    raise KeyboardInterrupt


@contextmanager
def handling() -> Iterator[None]:
    """Install superb's SIGINT handler for the duration (main thread only; a SIGINT that the process inherited as
    ignored, as in a shell's background job, stays ignored). Restores the previous handler on leaving."""
    global _count, _installed
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # no Ctrl-C can arrive: a KeyboardInterrupt is code's own
        _installed = True
        try:
            yield
        finally:
            _installed = False
        return
    previous = signal.signal(signal.SIGINT, _on_sigint)
    _count = 0
    _installed = True
    _done.clear()
    try:
        yield
    finally:
        _done.set()
        _count = 0
        _installed = False
        signal.signal(signal.SIGINT, previous)
