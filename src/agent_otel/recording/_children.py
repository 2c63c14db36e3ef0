"""A span of the run whose children of ours may still be open when it ends.

No span outlives its parent: backends (Jaeger, Tempo, Phoenix) draw a child that ends after
its parent as broken. The recorder ends what it tracks (the run's calls and tools) before
their step and run; a span it does not track that starts under one of its spans (an inner
tool a body runs, a tool's stand-in request) is made that span's child here, and is cut short
as the parent ends, on whichever path it ends. Only such a parent pays for it: the span is
swapped for a :class:`ParentSpan` once, when its first such child starts; a plain run's spans
stay :class:`GuardedSpan`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from agent_otel import _clock
from agent_otel._guard import report

from ._span import GuardedSpan

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from agent_otel.scrubbing import Scrub

    from ._encodable import Count

Cut = Callable[[int], None]
"""Ends a child still open at the time given (does nothing once the child has ended)."""


class HasSpan(Protocol):
    """An owner of a span (a run, a step, a call or a tool)."""

    span: GuardedSpan


class ParentSpan(GuardedSpan):
    """A :class:`GuardedSpan` that ends its open children first, at its own end time."""

    __slots__ = ("children",)

    def __init__(self, raw: Span, count: Count, scrub: Scrub | None = None) -> None:
        super().__init__(raw, count, scrub)
        self.children: dict[object, Cut] = {}

    def end(self, end_time: int | None = None) -> None:
        """Cut short each child still open, newest first, then end the span itself."""
        children = self.children
        at = end_time if end_time is not None else _clock.now_ns()
        while children:
            _, cut = children.popitem()
            try:
                cut(at)
            except Exception:
                report("child span end")
        GuardedSpan.end(self, end_time)


def add_child(owner: HasSpan, key: object, cut: Cut) -> dict[object, Cut]:
    """``cut`` ends the child ``key`` of ``owner``'s span if it is still open when the span
    ends; the span's children, from which the child takes itself (``pop(key)``) as it ends."""
    span = owner.span
    if type(span) is not ParentSpan:
        span = owner.span = ParentSpan(span.raw, span.count, span.scrub)
    assert isinstance(span, ParentSpan)
    span.children[key] = cut
    return span.children


def ended(span: GuardedSpan) -> bool:
    """Whether the SDK span has ended (a child started now would outlive it)."""
    return getattr(span.raw, "end_time", None) is not None
