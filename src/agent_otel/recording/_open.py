"""The runs open in this process, so that a shutdown can end them instead of losing them.

A run registers when it starts and leaves when it ends (:mod:`._wrapper`). At shutdown
(interpreter exit, SIGTERM, a ``multiprocessing`` worker's exit, ``Telemetry.shutdown()``),
:func:`end_runs` ends the runs still open on that tracer provider, newest first (a
sub-agent's run before the run that started it), each innermost span first, with
``agent_otel.end_reason=shutdown``; their open calls and tools are marked incomplete. Whoever
removes a run from the registry first ends it, so a run ends once even when its own
thread reaches its end at the same moment.

An application that shuts its own providers down (a web server's lifespan shutdown step, a
test fixture's teardown) calls :func:`end_open_runs` first, the public door to the same.
When it does not, the runs still open end into a provider that drops every span: nothing of
ours can run at the provider's shutdown (the middleware never patches a provider it was
given), so the loss is told where it is seen, as such a run ends (:func:`ended`): a warning
once per provider naming the remedy, and :func:`runs_lost_to_shutdown` counts them.

``configure()``'s telemetry ends (and counts) the runs on its providers itself (:func:`manage`).
Runs on providers wired by hand are ended at interpreter exit by a hook of ours, which must run
before the SDK's exit hooks shut those providers down (``atexit`` runs the newest first): a run
ended after that goes nowhere. The same hook has each ``configure()`` telemetry end its runs
then too: an exit flush the application registered after ``configure()``
(``atexit.register(provider.shutdown)``) runs before ``configure()``'s own exit hook. A
provider registers its hook when it is built, always before a run starts on it, but maybe
after our hook was registered (a first run on another provider, or before the application
built its providers). So each run start checks whether an exit hook was
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

from agent_otel._guard import logger, report

from . import _pending
from ._hints import check_provider, keyworded

_OPEN: dict[int, Any] = {}  # id -> RunRecorder, in start order (dict operations hold the GIL)
# configure()'s telemetries: whose runs they end (given an agent span), and how (counted)
_MANAGED: list[tuple[Callable[[Any], bool], Callable[[], object]]] = []
_NEWEST = [-1]  # atexit's count of callbacks when our exit hook was last made the newest
# CPython's count of exit hooks; elsewhere a number never the same twice: registered each run
_exit_hooks: Callable[[], int] = getattr(atexit, "_ncallbacks", itertools.count().__next__)


_AT_RUN_START: list[Callable[[], bool]] = []  # once each, at a run start, until it says done


def opened(run: Any) -> None:
    _OPEN[id(run)] = run
    if _exit_hooks() != _NEWEST[0]:  # an exit hook came after ours (a provider's): run first
        _make_newest()  # (also the first run of a forked child: see at_next_run_start)
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
    for hook in list(_AT_RUN_START):
        try:
            done = hook()
        except Exception:
            report("run start hook")
            done = True
        if done:
            with suppress(ValueError):
                _AT_RUN_START.remove(hook)
    if _AT_RUN_START:  # not done yet (a run off the main thread): the next run start again
        _NEWEST[0] = -2


def at_next_run_start(hook: Callable[[], bool]) -> None:
    """Call ``hook`` at the next run start in this process, and at each one after it until it
    returns True (``exporting/_process``: a forked worker's signal handlers, checked once its
    server set its own). Costs the runs nothing more: it rides on the exit hook's check."""
    _AT_RUN_START.append(hook)
    _NEWEST[0] = -2


def is_open(run: Any) -> bool:
    """Whether ``run`` is open: registered, and not yet claimed by whoever ends it."""
    return _OPEN.get(id(run)) is run


def claim(run: Any) -> bool:
    """Remove ``run``; True for the one caller that should now end it."""
    _pending.forget(run)
    return _OPEN.pop(id(run), None) is not None


_ALSO: list[Callable[[Callable[[Any], bool]], object]] = []  # others' spans held open


def also_end(end: Callable[[Callable[[Any], bool]], object]) -> None:
    """``end`` (given ``belongs``: whether a span is on the provider shutting down) runs
    wherever the open runs end (exit, ``Telemetry.shutdown()``, :func:`end_open_runs`), for
    spans held open outside any run (``remote/_held``: a remote agent's call whose task still
    works); registered once, with the exit hook made the newest."""
    if end not in _ALSO:
        _ALSO.append(end)
        atexit.unregister(_at_exit)
        atexit.register(_at_exit)


_SHOWN = 3  # runs a shutdown's line names; the others by their count
_WHY = (
    "A run ends when its stream does: one still open then is a stream not consumed to its "
    "end nor closed (a loop left by break, return or an exception outside "
    "contextlib.aclosing(), a stream kept for later) or an agent still at work. Consume each "
    "traced stream to its end inside async with contextlib.aclosing(stream), and in a shutdown "
    "step of your own call agent_otel.end_open_runs() before shutting your providers down "
    "(docs/endings.md#runs-still-open-at-shutdown)"
)


def end_runs(belongs: Callable[[Any], bool], when: str = "") -> int:
    """End every open run ``belongs`` accepts (given its agent span), newest first; how many
    (a run a tool body's exit left open among them, ended by that exit). What
    :func:`also_end` registered ends its spans ``belongs`` accepts first. Given ``when``
    (``"at interpreter exit"``), the runs it ended as ``shutdown`` are told in one line for
    every shutdown: which, why they were still open, and what to do."""
    for end in list(_ALSO):
        try:
            end(belongs)
        except Exception:
            report("held spans end at shutdown")
    names: list[str] = []
    ended = 0
    for run in reversed(list(_OPEN.values())):
        try:
            if not belongs(run.run.span.raw) or not claim(run):
                continue
            ended += 1
            run.end_at_shutdown()
            run.ended_by_shutdown()
            if run.run.error_type is None:  # (else a tool body's exit ended it: not told)
                names.append(str(getattr(run.run.span.raw, "name", "")))
            told(run)
        except Exception:
            report("run end at shutdown")
    if names and when:
        more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
        logger.warning(
            "agent-otel: %d run(s) still open %s were ended (agent_otel.end_reason=shutdown): "
            "%s%s. %s",
            len(names),
            when,
            ", ".join(map(repr, names[:_SHOWN])),
            more,
            _WHY,
        )
    return ended


@keyworded
def end_open_runs(tracer_provider: Any = None) -> int:
    """End the agent runs still open in this process, on ``tracer_provider`` (default: on
    any), and return how many.

    Call it before shutting down providers you built yourself (a FastAPI or Starlette
    lifespan's shutdown step, a test fixture's teardown): each run still open ends now,
    newest first, each innermost span first, with ``agent_otel.end_reason=shutdown`` and its
    open calls and tools marked incomplete, so the provider's shutdown exports them. A run
    ended here is not ended again when its stream finishes. A remote agent's call held open
    for its task (an A2A task still at work when the call returned) ends too. ``configure()``'s
    ``Telemetry.shutdown()`` (and ``Telemetry(tracer_provider, meter_provider).shutdown()``)
    does this itself. What is not a tracer provider (a tracer, the class, ``configure()``'s
    handle) raises ``TypeError`` at the call: it ended nothing, and the provider's shutdown
    would drop the runs still open. Otherwise never raises.
    """
    check_provider("end_open_runs", "tracer_provider", tracer_provider, "get_tracer")
    try:
        return end_runs(_on(tracer_provider), "when end_open_runs() was called")
    except Exception:
        report("end open runs")
        return 0


def _on(tracer_provider: Any) -> Callable[[Any], bool]:
    """Whether an agent span was started on ``tracer_provider`` (None: on any)."""
    if tracer_provider is None:
        return lambda span: True
    try:
        processor = getattr(tracer_provider, "_active_span_processor", None)
    except Exception:  # an object that is no provider: none of its runs
        processor = None
    if processor is None:  # not the SDK's provider: no run of ours writes through it
        return lambda span: False
    return lambda span: getattr(span, "_span_processor", None) is processor


_LOST = [0]  # runs that ended after their tracer provider was shut down
_TOLD: set[int] = set()  # id() of the span processors whose loss was told (or is, elsewhere)


def told_elsewhere(tracer_provider: Any) -> None:
    """``configure()``'s telemetry tells the spans ended after its shutdown itself, with its
    count of them (``exporting/_loss``): a run ended there is still counted, but not told a
    second time, with the remedy for providers built by hand (whose shutdown the application
    calls, where ``configure()``'s users never do)."""
    with suppress(Exception):  # read as _on reads it: defensively
        processor = getattr(tracer_provider, "_active_span_processor", None)
        if processor is not None:
            _TOLD.add(id(processor))


def shut_down_under(run: Any) -> bool:
    """Whether ``run``'s tracer provider was shut down: what it ends, or starts, is dropped
    (False when that cannot be read: a processor of the application's)."""
    try:
        return _shut_down(getattr(run.run.span.raw, "_span_processor", None))
    except Exception:
        return False


def told(run: Any) -> None:
    """``run`` just ended: if its tracer provider was already shut down, every span it ended
    since was dropped. Counted, and told once per provider (module doc)."""
    try:
        processor = getattr(run.run.span.raw, "_span_processor", None)
        if not _shut_down(processor):
            return
    except Exception:  # a processor of the application's that cannot be read: not told
        return
    _LOST[0] += 1
    if id(processor) in _TOLD:
        return
    _TOLD.add(id(processor))
    logger.warning(
        "agent-otel: a run ended after its tracer provider was shut down: its spans were "
        "dropped. Call agent_otel.end_open_runs(tracer_provider) before "
        "tracer_provider.shutdown(), or shut down through "
        "agent_otel.Telemetry(tracer_provider, meter_provider).shutdown(), which does"
    )


def _shut_down(processor: Any) -> bool:
    """Whether a provider's span processor (the SDK's multi-processor of an agent span) was
    shut down: each of its processors that says so (the SDK's simple and batch ones) does,
    and one at least."""
    processors = getattr(processor, "_span_processors", None)
    if type(processors) is not tuple:
        return False
    known = False
    for each in processors:
        flag = getattr(each, "_shutdown", None)
        if flag is None:
            flag = getattr(getattr(each, "_batch_processor", None), "_shutdown", None)
        if flag is None:
            continue
        if flag is not True:
            return False
        known = True
    return known


_DRAINING: list[Callable[[Any], None]] = []  # told each run's agent span as the run ends


def ended(run: Any) -> None:
    """``run`` just ended (its own end, not a shutdown's): told if its spans were dropped, and
    handed to whoever drains the process after a fatal signal (``exporting/_process``)."""
    told(run)
    if _DRAINING:
        for flush in list(_DRAINING):
            try:
                flush(run.run.span.raw)
            except Exception:
                report("run flush while draining")


def draining(flush: Callable[[Any], None]) -> None:
    """From now on, each run that ends is handed to ``flush`` (given its agent span). No lock:
    called from a signal handler."""
    if flush not in _DRAINING:
        _DRAINING.append(flush)


def undrain(flush: Callable[[Any], None]) -> None:
    with suppress(ValueError):
        _DRAINING.remove(flush)


def runs_lost_to_shutdown() -> int:
    """How many runs ended after their tracer provider was shut down (their spans dropped)."""
    return _LOST[0]


def manage(belongs: Callable[[Any], bool], end: Callable[[], object]) -> None:
    """A telemetry that ends the runs on its provider itself (``belongs``, given an agent
    span), counted, with ``end``: at its shutdown, and from the exit hook, which runs before
    an exit flush the application registered after ``configure()`` (module doc)."""
    _MANAGED.append((belongs, end))


def unmanage(belongs: Callable[[Any], bool]) -> None:
    _MANAGED[:] = [each for each in _MANAGED if each[0] != belongs]


def _at_exit() -> None:
    """Interpreter exit: end the runs still open, a telemetry's through it (counted there)."""
    managed = list(_MANAGED)
    for _, end in managed:
        try:
            end()
        except Exception:
            report("run end at exit")
    end_runs(lambda span: not any(belongs(span) for belongs, _ in managed), "at interpreter exit")


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
    _AT_RUN_START.clear()  # the parent's, made in the parent (a child's fork hooks add its own)
    _DRAINING.clear()  # the parent was draining after its SIGTERM: the child was not signalled


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
