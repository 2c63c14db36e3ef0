"""Pending spans: open runs shown in any backend while they run (option ``pending_spans``).

An OTel span is exported only when it ends, so a 20-minute run shows nothing until its end,
and a run killed by a crash nothing at all. With ``pending_spans`` on, a run exports a
snapshot when it starts and then every interval while it stays open: for each span of the run
still open (the agent span, the open step, calls and tools in progress; not a call or step
that ended and is held for late data), one zero-duration child span with
the open span's name, kind and attributes so far, plus ``agent_otel.pending=true`` (the
manner of Logfire's pending spans). Its parent is the open span, so once the run ends the
snapshots sit under the spans they describe; the final spans supersede them (docs/live.md).

Snapshots carry no usage or cost attributes and record no metric: token totals and metrics
count each call once. They are written by one daemon thread per process, started with the
first watched run and ended when the last one ends (so no thread outlives the runs it
serves); a fork gives the child a clean state (its parent's runs are not the child's to
show). The cost is one span per open span per interval, nothing per event.
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Any

from opentelemetry import trace

from agent_otel import _attributes as A
from agent_otel._guard import report
from agent_otel._plain import a_kind, shown

from ._hints import OptionTypeError

__all__ = ["DEFAULT_INTERVAL", "MIN_INTERVAL", "forget", "interval_from", "snapshot", "watch"]

DEFAULT_INTERVAL = 15.0
"""Seconds between snapshots with ``pending_spans=True``."""
MIN_INTERVAL = 1.0
"""The shortest interval: the cost per open span stays bounded."""

_NOT_COPIED = ("gen_ai.usage.", "agent_otel.usage.")  # a snapshot never carries usage or cost
# ... nor, in a run with a content budget (``max_run_bytes``), captured content: it would be
# recorded again every interval, outside what the run may record in all.
_CONTENT = (
    A.INPUT_MESSAGES, A.OUTPUT_MESSAGES, A.SYSTEM_INSTRUCTIONS, A.TOOL_DEFINITIONS,
    A.TOOL_CALL_ARGUMENTS, A.TOOL_CALL_RESULT, A.OI_INPUT_VALUE, A.OI_OUTPUT_VALUE,
)  # fmt: skip
_NOT_COPIED_WITHIN_BUDGET = _NOT_COPIED + _CONTENT


def interval_from(option: bool | float | None, caller: str = "otel_wrapper") -> float | None:
    """The snapshot interval ``pending_spans`` asks for (None: off); a value of another type
    raises ``TypeError``, a number under the minimum (or not finite) ``ValueError``, each
    naming ``caller(pending_spans=...)``."""
    if option is None or option is False:
        return None
    if option is True:
        return DEFAULT_INTERVAL
    given: Any = option
    kind = type(given)  # a subclass's own comparisons never run
    takes = f"{caller}(pending_spans=...) takes True, False or a number of seconds"
    seconds = float.__float__(given) if issubclass(kind, float) else None
    if issubclass(kind, int) and kind is not bool:
        seconds = float(int.__int__(given)) if abs(int.__int__(given)) < 2**53 else math.inf
    if seconds is None:  # '15', a timedelta: a value of another type
        raise OptionTypeError(f"{takes} (as pending_spans=15), not {a_kind(option)}")
    if math.isfinite(seconds) and seconds >= MIN_INTERVAL:
        return seconds
    raise ValueError(f"{takes} >= {MIN_INTERVAL:g}, not {shown(option)}")


class _Watched:
    __slots__ = ("due", "interval", "run")

    def __init__(self, run: Any, interval: float) -> None:
        self.run = run
        self.interval = interval
        self.due = time.monotonic() + interval


_watched: dict[int, _Watched] = {}
_wake = threading.Condition()
_thread: threading.Thread | None = None


def watch(run: Any) -> None:
    """A run with ``pending_spans`` started: its first snapshot now, the next ones on time."""
    interval = run.s.pending_interval
    if interval is None:
        return
    snapshot(run)
    global _thread  # one thread per process
    with _wake:
        _watched[id(run)] = _Watched(run, interval)
        if _thread is None:
            _thread = threading.Thread(target=_serve, name="agent-otel-pending", daemon=True)
            _thread.start()
        _wake.notify()


def forget(run: Any) -> None:
    """The run is ending: no more snapshots of it (the thread ends with the last one)."""
    if id(run) not in _watched:
        return
    with _wake:
        if _watched.pop(id(run), None) is not None:
            _wake.notify()


def _serve() -> None:
    global _thread
    while True:
        with _wake:
            if not _watched or _thread is not threading.current_thread():
                if _thread is threading.current_thread():
                    _thread = None
                return
            now = time.monotonic()
            due = [w for w in _watched.values() if w.due <= now]
            if not due:
                _wake.wait(min(w.due for w in _watched.values()) - now)
                continue
            for w in due:
                w.due = now + w.interval
        for w in due:
            if id(w.run) in _watched:
                snapshot(w.run)


def snapshot(run: Any) -> int:
    """One pending child for each span of ``run`` still open; how many were exported. No
    more once the run's tracer provider was shut down (without ending its runs first): each one
    would be dropped with a warning from the SDK, every interval while the run goes on, so
    the run is no longer watched (its end tells the loss once, ``_open.told``)."""
    from ._open import shut_down_under  # _open imports this module

    try:
        if shut_down_under(run):
            forget(run)
            return 0
        spans = run.open_spans()
        tracer = run.s.tracer
        now = run.now()
        budget = getattr(run.s.capture, "max_run_bytes", None) is not None
    except Exception:
        report("pending snapshot")
        return 0
    left_out = _NOT_COPIED_WITHIN_BUDGET if budget else _NOT_COPIED
    written = 0
    for span in spans:
        try:
            written += _pending_child(tracer, span.raw, now, left_out)
        except Exception:
            report("pending snapshot")
    return written


def _pending_child(tracer: Any, raw: Any, now: int, left_out: tuple[str, ...]) -> int:
    if getattr(raw, "end_time", 0) is not None:  # ended meanwhile, or not an SDK span
        return 0
    attributes = {k: v for k, v in (raw.attributes or {}).items() if not k.startswith(left_out)}
    attributes[A.PENDING] = True
    child = tracer.start_span(
        raw.name, trace.set_span_in_context(raw), raw.kind, attributes, start_time=now
    )
    child.end(end_time=now)
    return 1


def _after_fork_in_child() -> None:
    global _thread, _wake
    _watched.clear()
    _thread = None
    _wake = threading.Condition()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
