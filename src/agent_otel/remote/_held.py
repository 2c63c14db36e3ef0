"""Remote agent calls that returned while their remote task still works.

An A2A agent may answer a call with a task still at work (a caller that sends without waiting
polls it, a stream the caller stopped reading leaves it running): the call's CLIENT span is
the remote agent's invocation, so it stays open until the caller learns the task ended
(``tasks/get``, ``tasks/resubscribe``, ``tasks/cancel``, a later message on the task), and a
task that ended failed fails it then. The caller may learn it with another client than the
one that sent the call (a request handler's client sent it and closed; a later handler's, or
a webhook's, polls): :data:`HELD`, the calls held in this process by task id, is every traced
client's. A call nobody follows to its end ends at shutdown, with the runs
(``recording/_open.also_end``), or once :data:`MAX_HELD` newer calls are held: its span then
says it never learned the task's end (``RemoteAgentCall.unfinished``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from opentelemetry import trace

from agent_otel import _attributes as A
from agent_otel._guard import report
from agent_otel.recording._open import also_end

from ._call import RemoteAgentCall

__all__ = ["HELD", "MAX_HELD", "HeldCalls"]

MAX_HELD = 256
"""How many calls the process holds open at most: past it, the oldest ends (a caller that
never follows its tasks to their end costs a bounded number of spans, not a leak)."""


class HeldCalls:
    """The calls whose remote task was still working when they returned, by task id, oldest
    first. Never raises."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: dict[str, RemoteAgentCall] = {}

    def __bool__(self) -> bool:
        return bool(self._calls)

    def hold(self, task_id: str, call: RemoteAgentCall) -> None:
        """``call`` returned with its task ``task_id`` at work: its span stays open. A call
        held for the same task before (the caller sent it another message) ends now: the
        newer call follows the task."""
        try:
            also_end(self.end_where)
            earlier = self._calls.pop(task_id, None)
            self._calls[task_id] = call
            while len(self._calls) > MAX_HELD:
                oldest = next(iter(self._calls))
                self._calls.pop(oldest).unfinished()
        except Exception:
            report("a2a held call")
            call.end()
            return
        if earlier is not None and earlier is not call:
            earlier.unfinished()

    def ended(self, task_id: str, failed: str | None) -> None:
        """The caller learned that the task ``task_id`` ended: the call held for it ends,
        failed as ``failed`` (the state's name) when the task failed or was rejected."""
        call = self._calls.pop(task_id, None)
        if call is not None:
            if failed is not None:
                call.fail(failed)
            call.end()

    def forget(self) -> None:
        """A forked child: the calls held are the parent's to end (ended here too, at the
        child's exit or by its polling, they would be exported twice, under the same ids)."""
        self._calls = {}

    def end_where(self, belongs: Callable[[Any], bool]) -> None:
        """A shutdown: every call held whose span ``belongs`` to the provider shutting down
        ends, unfinished (what became of its task is not known here)."""
        for task_id, call in list(self._calls.items()):
            span = trace.get_current_span(call.context)
            if belongs(span) and self._calls.pop(task_id, None) is call:
                call.unfinished(A.END_SHUTDOWN)


HELD = HeldCalls()
"""The calls held in this process, every traced client's."""

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=HELD.forget)
