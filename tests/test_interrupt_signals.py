"""superb.interrupt without a model: a second Ctrl-C ends the process at once, a stuck cleanup ends after the grace
time, and a SIGINT inherited as ignored stays ignored. Each in a real subprocess that receives real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from signal_helpers import as_from_a_terminal

STUCK = """
import sys, time
from superb import interrupt
interrupt.GRACE_S = {grace}
with interrupt.handling():
    try:
        print("ready", flush=True)
        time.sleep(60)
    except KeyboardInterrupt:
        print("cleaning", flush=True)
        time.sleep(60)  # a cleanup that never ends
print("returned", flush=True)
"""


def _start(grace: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(STUCK.format(grace=grace))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=as_from_a_terminal)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_a_second_ctrl_c_ends_a_stuck_cleanup_at_once():
    proc = _start(grace=60)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.stdout.readline().strip() == "cleaning"
    sent = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert time.monotonic() - sent < 2.0
    assert proc.returncode == 130
    assert "superb: interrupted; completed LLM calls are cached" in err and "second Ctrl-C" in err
    assert "returned" not in out


def test_a_stuck_cleanup_ends_after_the_grace_time():
    proc = _start(grace=1.0)
    sent = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert 1.0 <= time.monotonic() - sent < 6.0
    assert proc.returncode == 130
    assert "cleanup did not finish within 1 s" in err
    assert "cleaning" in out and "returned" not in out


def test_an_ignored_sigint_stays_ignored():
    """A shell's background job inherits SIGINT ignored; superb does not take the signal back."""
    code = ("import signal, time\nfrom superb import interrupt\nwith interrupt.handling():\n"
            "    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN\n    print('ok', flush=True)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_main_in_process_returns_130_and_restores_the_handler(monkeypatch):
    """In-process callers (tests, scripts) get 130 back, not an exit, and their own SIGINT handler afterwards."""
    from superb import cli

    def interrupted(args):
        raise KeyboardInterrupt

    before = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(cli, "_cmd_show", interrupted)
    assert cli.main(["show", "results/nowhere"]) == 130
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.parametrize("second", [False, True])
def test_sigint_to_the_group_reaches_a_blocking_superb_command(tmp_path, second):
    """`superb llm serve` stand-in: any `superb` command blocked in a wait ends with 130 on the group's SIGINT."""
    code = ("import sys, threading\nfrom superb import cli\n"
            "def block(args):\n    print('ready', flush=True)\n    threading.Event().wait()\n"
            "cli._cmd_show = block\nsys.exit(cli.main())\n")
    proc = subprocess.Popen([sys.executable, "-c", code, "show", "x"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=as_from_a_terminal)
    assert proc.stdout.readline().strip() == "ready"
    os.killpg(proc.pid, signal.SIGINT)
    if second:
        os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert "superb: interrupted; completed LLM calls are cached" in err
