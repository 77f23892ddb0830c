"""The engines' native output (PISA's C++ progress bars and ``[info]`` lines, the JVM's start-up line) kept off the
terminal unless asked for.

PISA writes from C++ straight to the process's file descriptors 1 and 2, so Python's logging levels cannot quiet
it: building the Chorus index printed about 140 lines and three progress bars of a hundred steps each. Inside
:func:`quiet`, descriptors 1 and 2 point to a temporary file; when the block raises (a failed build, Ctrl-C), the
captured text is written to stderr before the error goes on, so nothing needed to understand a failure is lost.
``SUPERB_ENGINE_LOGS=1`` leaves the engines' output on the terminal.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "SUPERB_ENGINE_LOGS"
_SHOWN_ON_ERROR = 8000  # characters of captured output shown when the block fails


def wanted() -> bool:
    """Whether the user asked to see the engines' own output (``SUPERB_ENGINE_LOGS=1``)."""
    return os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes")


@contextmanager
def quiet() -> Iterator[None]:
    """Descriptors 1 and 2 go to a temporary file for the block (see the module docstring)."""
    if wanted():
        yield
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = (os.dup(1), os.dup(2))
    with tempfile.TemporaryFile() as sink:
        failed = False
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            yield
        except BaseException:
            failed = True
            raise
        finally:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            if failed:
                sink.seek(0)
                text = sink.read().decode("utf-8", errors="replace")
                if text.strip():
                    sys.stderr.write(f"[engine output before the error; {ENV}=1 shows it as it happens]\n"
                                     f"{text[-_SHOWN_ON_ERROR:]}\n")
