"""The runs open in this process, so that a shutdown can end them instead of losing them.

A run registers when it starts and leaves when it finishes (:mod:`._wrapper`). At shutdown
(interpreter exit, SIGTERM, a ``multiprocessing`` worker's exit, ``Telemetry.shutdown()``),
:func:`end_open_runs` ends the runs still open on that tracer provider, newest first (a
sub-agent's run before the run that started it), each innermost span first, with
``agent_otel.end_reason=shutdown``; their open calls and tools are marked incomplete. Whoever
removes a run from the registry first finishes it, so a run ends once even when its own
thread reaches its end at the same moment.

``configure()``'s telemetry ends (and counts) the runs on its providers itself (:func:`manage`).
Runs on providers wired by hand are ended at interpreter exit by a hook of ours, which must run
before the SDK's exit hooks shut those providers down (``atexit`` runs the newest first): a run
ended after that goes nowhere. A provider registers its hook when it is built, always before a
run starts on it, but maybe after our hook was registered (a first run on another provider, or
before the application built its providers). So each run start checks whether an exit hook was
registered since ours (``atexit``'s count of callbacks, one C call) and, if one was, registers
ours again: it is the newest again, and runs first.
"""

from __future__ import annotations

import atexit
import itertools
import os
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from agent_otel import _attributes as A
from agent_otel._guard import logger, report

from . import _pending

_OPEN: dict[int, Any] = {}  # id -> RunRecorder, in start order (dict operations hold the GIL)
_MANAGED: list[Callable[[Any], bool]] = []  # configure()'s telemetries: whose runs they end
_NEWEST = [-1]  # atexit's count of callbacks when our exit hook was last made the newest
# CPython's count of exit hooks; elsewhere a number never the same twice: registered each run
_exit_hooks: Callable[[], int] = getattr(atexit, "_ncallbacks", itertools.count().__next__)


def opened(run: Any) -> None:
    _OPEN[id(run)] = run
    if _exit_hooks() != _NEWEST[0]:  # an exit hook came after ours (a provider's): run first
        _make_newest()
    if run.s.pending_interval is not None:  # option pending_spans: shown while it runs
        _pending.watch(run)


def _make_newest() -> None:
    """Register the exit hook again, so it runs before every exit hook registered so far.

    No lock (none a fork could leave held): two threads here at once may register it twice,
    and the second call at exit finds no run left to end (the next re-registration, which
    ``unregister`` starts by removing every copy, leaves one).
    """
    atexit.unregister(_at_exit)
    atexit.register(_at_exit)
    _NEWEST[0] = _exit_hooks()


def claim(run: Any) -> bool:
    """Remove ``run``; True for the one caller that should now finish it."""
    _pending.forget(run)
    return _OPEN.pop(id(run), None) is not None


def end_open_runs(belongs: Callable[[Any], bool]) -> int:
    """End every open run ``belongs`` accepts (given its agent span), newest first; how many."""
    ended = 0
    for run in reversed(list(_OPEN.values())):
        try:
            if not belongs(run.run.span.raw) or not claim(run):
                continue
            run.finish(A.END_SHUTDOWN, None)
            ended += 1
        except Exception:
            report("run end at shutdown")
    return ended


def manage(belongs: Callable[[Any], bool]) -> None:
    """A telemetry that ends the runs on its provider itself (``belongs``, given an agent
    span), at its own shutdown: the exit hook leaves them to it."""
    _MANAGED.append(belongs)


def unmanage(belongs: Callable[[Any], bool]) -> None:
    with suppress(ValueError):
        _MANAGED.remove(belongs)


def _at_exit() -> None:
    """Interpreter exit: end the runs still open that no telemetry of ours ends itself."""
    managed = list(_MANAGED)
    ended = end_open_runs(lambda span: not any(belongs(span) for belongs in managed))
    if ended:
        logger.warning(
            "agent-otel: %d run(s) still open at interpreter exit were ended "
            "(agent_otel.end_reason=shutdown)",
            ended,
        )


def held() -> set[int]:
    """The ``id()`` of every SDK span an open run holds past its end (:meth:`held_spans`):
    views of what is open (the testing kit's, the terminal's) leave them out."""
    found: set[int] = set()
    for run in list(_OPEN.values()):
        try:
            found.update(id(span.raw) for span in run.held_spans())
        except Exception:
            report("held spans")
    return found


def open_count() -> int:
    return len(_OPEN)


def _after_fork_in_child() -> None:
    """A forked child (a worker a tool's pool started, a pre-forking server): the runs open
    in the parent are the parent's to end. Ended in the child at its exit, they would be
    exported twice, under the same span ids."""
    _OPEN.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
