"""A framework run's cover: the value of :data:`~._context.COVERED` in that run's context.

A framework starts tasks and threads of its own in the run's context (its model requests, a
tool's fire-and-forget work, a worker started at first use), and each copies the context. A
plain ``True`` there outlived the run: a task still running after the run ended stood the
providers down for every model call it made, which no span of ours told either, so the call
went untraced and its tokens uncounted. The cover is true only while its run is open (the
question asked of the run, :attr:`RunCover.open`, once per read: a provider's request, a
framework span, never an event of ours); a chat span's stand-down ends with that span the
same way (``_context._ended``).
"""

from __future__ import annotations

from collections.abc import Callable

from agent_otel._guard import report


class RunCover:
    """Truthy while the framework run it was made for is open."""

    __slots__ = ("open",)

    def __init__(self, still_open: Callable[[], bool]) -> None:
        self.open = still_open

    def __bool__(self) -> bool:
        try:  # asked inside another library's call: nothing may raise there
            return bool(self.open())
        except Exception:
            report("stand-down")
            return False  # theirs is recorded: a second span, not a lost call

    def __repr__(self) -> str:
        return "<agent-otel: a framework run's model calls are covered>"
