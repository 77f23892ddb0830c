"""For tests that send Ctrl-C to a child process."""

from __future__ import annotations

import signal


def as_from_a_terminal() -> None:
    """``preexec_fn`` of a child that is sent Ctrl-C: SIGINT handled by default, as for a command started from a
    terminal. A test run started as a shell's background job (a CI runner's `cmd &`) inherits SIGINT ignored, and
    superb keeps an inherited SIG_IGN (test_an_ignored_sigint_stays_ignored), so without this the child would ignore
    the Ctrl-C the test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
