"""What a person at a terminal sees while superb works: one-line status messages on stderr for the steps that have
no progress bar of their own (building a first-stage index, running a first stage, joining the model file), and
paragraphs wrapped to the terminal's width.

Status lines follow the progress bars' switch: off with ``SUPERB_PROGRESS=0``. Wrapping applies only when the output
is a terminal, so files and pipes get the text as written (tables, logs and tests read it whole).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import textwrap
import time
from contextlib import contextmanager
from collections.abc import Iterator
from typing import TextIO

_LIST = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)")


def progress_on() -> bool:
    return os.environ.get("SUPERB_PROGRESS", "").strip().lower() not in {"0", "false", "off", "no"}


@contextmanager
def status(what: str, stream: TextIO | None = None) -> Iterator[None]:
    """``what ...`` on stderr when the step starts and ``what: done in N s`` when it ends (nothing when progress is
    off)."""
    stream = stream or sys.stderr
    if not progress_on():
        yield
        return
    print(f"{what} ...", file=stream, flush=True)
    t0 = time.perf_counter()
    yield
    print(f"{what}: done in {time.perf_counter() - t0:.1f} s", file=stream, flush=True)


def wrap_paragraphs(text: str, width: int | None = None) -> str:
    """Each line longer than ``width`` (default: the terminal's) wrapped at word boundaries, a list item's
    continuation indented under its text; markdown table rows, code blocks and headings are left as they are."""
    width = width or shutil.get_terminal_size((100, 24)).columns
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or len(line) <= width or line.lstrip().startswith(("|", "#", "```")):
            out.append(line)
            continue
        bullet = _LIST.match(line)
        hang = " " * len(bullet.group(1)) if bullet else ""
        out.append(textwrap.fill(line, width=width, subsequent_indent=hang, break_long_words=False,
                                 break_on_hyphens=False))
    return "\n".join(out)


def shown(text: str, stream: TextIO | None = None) -> str:
    """``text`` as it should be printed on ``stream`` (default stdout): wrapped to the terminal when it is one."""
    stream = stream or sys.stdout
    return wrap_paragraphs(text) if getattr(stream, "isatty", lambda: False)() else text


class WrappingFormatter(logging.Formatter):
    """Log lines (warnings on stderr) wrapped to the terminal's width, continuation lines indented."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        width = shutil.get_terminal_size((100, 24)).columns
        return "\n".join(textwrap.fill(line, width=width, subsequent_indent="    ", break_long_words=False,
                                        break_on_hyphens=False) if len(line) > width else line
                          for line in text.split("\n"))


def wrap_log_lines() -> None:
    """When stderr is a terminal, the root logger's handlers wrap their lines (:class:`WrappingFormatter`)."""
    if not getattr(sys.stderr, "isatty", lambda: False)():
        return
    for handler in logging.getLogger().handlers:
        fmt = handler.formatter
        handler.setFormatter(WrappingFormatter(fmt._fmt if fmt else None, fmt.datefmt if fmt else None))
