"""The runs open in this process, so that a shutdown can end them instead of losing them.

A run registers when it starts and leaves when it finishes (:mod:`._wrapper`). At shutdown
(interpreter exit, SIGTERM, a ``multiprocessing`` worker's exit, ``Telemetry.shutdown()``),
:func:`end_open_runs` ends the runs still open on that tracer provider, newest first (a
sub-agent's run before the run that started it), each innermost span first, with
``agent_otel.end_reason=shutdown``; their open calls and tools are marked incomplete. Whoever
removes a run from the registry first finishes it, so a run ends once even when its own
thread reaches its end at the same moment.

``configure()``'s telemetry ends (and counts) the runs on its providers itself (:func:`manage`).
Runs on providers wired by hand are ended at interpreter exit by a hook registered when the
first run starts. That is after those providers registered their own exit hooks, so it runs
before them (``atexit`` runs the newest first): the spans end before the SDK's exit flush.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from agent_otel import _attributes as A
from agent_otel._guard import logger, report

from . import _pending

_OPEN: dict[int, Any] = {}  # id -> RunRecorder, in start order (dict operations hold the GIL)
_MANAGED: list[Callable[[Any], bool]] = []  # configure()'s telemetries: whose runs they end
_AT_EXIT: list[bool] = []  # whether the exit hook is registered


def opened(run: Any) -> None:
    _OPEN[id(run)] = run
    if not _AT_EXIT:
        _AT_EXIT.append(True)
        atexit.register(_at_exit)
    if run.s.pending_interval is not None:  # option pending_spans: shown while it runs
        _pending.watch(run)


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
