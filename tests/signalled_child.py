"""Child processes that a test signals: started with every signal's default action, whatever the
test runner ignores, and shown (its threads, its signal state) if one ever hangs.

A process inherits the signals its parent ignores, and its blocked ones, across ``exec``:
``nohup`` ignores SIGHUP, and a shell without job control starts a background job (``cmd &``
in a script) with SIGINT and SIGQUIT ignored. A suite started either way started every child
that way too, so a child never took the SIGHUP or the Ctrl-C a test sent it (agent-otel leaves
an ignored signal ignored, as documented): it ran on until the test's hang guard, with nothing
on its stderr to say why. Each child now starts as a terminal or a process manager starts it
(:func:`started_plainly`), and a guard that runs out, waiting for its first line or its end,
fails the test with the child's threads and its ignored, blocked and caught signals
(:func:`first_line_within`, :func:`ended_within`) instead of a bare timeout, or none at all.
"""

from __future__ import annotations

import contextlib
import select
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import pytest

_AS_STARTED = """
import os, signal, sys
for signum in signal.valid_signals():
    try:
        if signal.getsignal(signum) is signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
    except (OSError, ValueError):
        pass
signal.pthread_sigmask(signal.SIG_SETMASK, ())
os.execvp(sys.argv[1], sys.argv[1:])
"""
"""Put every ignored signal back to its default action, unblock every signal, then become the
command (a caught signal's handler is reset by ``exec`` itself)."""

SHOWS_ITS_THREADS = (
    "import faulthandler as _faulthandler, signal as _signal\n"
    "_faulthandler.register(_signal.SIGUSR1, all_threads=True)\n"
)
"""The first lines of a child's script: SIGUSR1 writes every thread's stack to its stderr, from
C, so a main thread stuck anywhere is shown too (the waits below send it on their guard)."""

_DUMP_WAIT_S = 2.0


def started_plainly(command: Sequence[str]) -> list[str]:
    """``command``, run with every signal at its default action and none blocked."""
    return [sys.executable, "-S", "-c", _AS_STARTED, *command]


def first_line_within(process: subprocess.Popen[str], timeout_s: float) -> str:
    """The first line the child printed ("" if it ended without one), within ``timeout_s``;
    past that, the test fails as :func:`ended_within` fails it. (A line printed in one piece:
    only the pipe is watched, not what its reader already buffered.)"""
    assert process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], timeout_s)
    if not readable:
        _fail_showing(process, f"had printed no line after {timeout_s} s")
    return process.stdout.readline()


def ended_within(process: subprocess.Popen[str], timeout_s: float) -> tuple[str, str]:
    """What the child wrote to its stdout and stderr pipes ("" for one it has not) once it has
    ended, within ``timeout_s``; past that, the test fails with what the child is doing and
    which signals it ignores, blocks or catches."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        out, err = process.communicate(timeout=timeout_s)
        return out or "", err or ""
    return _fail_showing(process, f"was still running after {timeout_s} s")  # raises


def _fail_showing(process: subprocess.Popen[str], what: str) -> NoReturn:
    """Fail the test with the stack of each of the child's threads and its signals; kill it."""
    state = signal_state(process.pid)
    process.send_signal(signal.SIGUSR1)
    try:
        out, err = process.communicate(timeout=_DUMP_WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        try:  # a grandchild it started (a pool's worker) may hold the pipes open: not forever
            out, err = process.communicate(timeout=_DUMP_WAIT_S)
        except subprocess.TimeoutExpired:
            out, err = "(its pipes still held open by another process)", ""
    pytest.fail(
        f"the child (pid {process.pid}) {what}; its signals: {state}\n"
        f"--- its stderr (each thread's stack, if it shows them) ---\n{err}\n"
        f"--- its stdout ---\n{out}"
    )


def signal_state(pid: int) -> str:
    """The signals process ``pid`` ignores, blocks and catches (Linux's ``/proc``), by name."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError as error:
        return f"unknown ({error})"
    masks = dict(line.split(":", 1) for line in status.splitlines() if line.startswith("Sig"))
    shown = []
    for field, word in (("SigIgn", "ignored"), ("SigBlk", "blocked"), ("SigCgt", "caught")):
        mask = int(masks.get(field, "0").strip() or "0", 16)
        shown.append(f"{word} {_names(mask) or 'none'}")
    return "; ".join(shown)


def _names(mask: int) -> str:
    names = []
    for bit in range(mask.bit_length()):
        if mask >> bit & 1:
            try:
                names.append(signal.Signals(bit + 1).name)
            except ValueError:
                names.append(str(bit + 1))
    return ",".join(names)
