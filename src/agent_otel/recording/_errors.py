"""Errors on spans: ERROR status, ``error.type``, and the ``agent_otel.error`` span event.

An ``Error`` event met between steps waits (as a :class:`PendingError`) for the step it
belongs to, which is known only when the next segment shows content or closes empty.
"""

from __future__ import annotations

from dataclasses import dataclass

from opentelemetry.trace import Status, StatusCode

from agent_otel import _attributes as A

from ._span import GuardedSpan


@dataclass(frozen=True, slots=True)
class PendingError:
    """An ``Error`` event waiting for the step it belongs to."""

    kind: str
    description: str | None
    fatal: bool
    time: int


def record_error(
    span: GuardedSpan, kind: str, description: str | None, fatal: bool, time: int
) -> None:
    """An ``Error`` event on ``span``: ERROR status and an ``agent_otel.error`` span event."""
    mark_error(span, kind, description)
    if span.is_recording():
        span.add_event(A.EVENT_ERROR, {A.ERROR_TYPE: kind, A.ERROR_FATAL: fatal}, timestamp=time)


def mark_error(span: GuardedSpan, error_type: str | None, description: str | None) -> None:
    """Set ERROR status (and ``error.type``) on a recording span."""
    if span.is_recording():
        if error_type is not None:
            span.set_attribute(A.ERROR_TYPE, error_type)
        span.set_status(Status(StatusCode.ERROR, description))


def error_type_of(error: BaseException) -> str:
    """``error.type`` for an exception: its class's qualified name (never its text)."""
    return type(error).__qualname__
