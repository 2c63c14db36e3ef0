"""Errors on spans: ERROR status, ``error.type``, and the ``agent_otel.error`` span event.

An ``Error`` event met between steps waits (as a :class:`PendingError`) for the step it
belongs to, which is known only when the next segment shows content or closes empty.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from traceback import walk_tb

from opentelemetry.trace import Status, StatusCode
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A

from ._span import GuardedSpan, exception_message, exception_names, exception_type

# A status description is a reason to read in a UI's banner, not a log: bounded.
MAX_DESCRIPTION = 1024
MAX_LINKS = 4  # how far back an exception's chain is read (causes and contexts)
LEAVES_LOOP = (SystemExit, KeyboardInterrupt)
"""What an asyncio task raises out of its event loop (every other exception stays in the
task): ``asyncio.run()`` then cancels the tasks left, so a run there ends by a cancel."""


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
    """Set ERROR status (and ``error.type``) on a recording span.

    The status always carries a reason (Phoenix shows it as the span's error): the
    description given, else the error type; bounded, and scrubbed at the span's write door.
    """
    if span.is_recording():
        if error_type is not None:
            span.set_attribute(A.ERROR_TYPE, error_type)
        reason = description if description else error_type
        reason = None if reason is None else span.cut_text(reason, MAX_DESCRIPTION)
        span.set_status(Status(StatusCode.ERROR, reason))


def fail_span(span: GuardedSpan, error: BaseException, error_type: str, now: int) -> None:
    """A raised exception on ``span``: the ``exception`` event (MLflow marks a span failed
    only with it) and ERROR status whose description is ``Type: message`` (what Phoenix shows).
    """
    span.record_exception(error, timestamp=now)
    mark_error(span, error_type, exception_reason(error, span))


def report_failure(span: GuardedSpan, error_type: str, text: str | None, now: int) -> None:
    """A failure the framework caught and reported (a tool's error result): the ``exception``
    event a raised one would have had, ``exception.type`` its class (or ``tool_error``) and
    ``exception.message`` its text when content capture is on, so a backend that marks a span
    failed only by that event (MLflow) shows it as it shows a raised one."""
    if span.is_recording():
        attributes: dict[str, AttributeValue] = {A.EXCEPTION_TYPE: error_type}
        if text:
            attributes[A.EXCEPTION_MESSAGE] = span.cut_text(text, MAX_DESCRIPTION)
        span.add_event(A.EVENT_EXCEPTION, attributes, timestamp=now)


def exception_reason(error: BaseException, span: GuardedSpan) -> str:
    """``Type: message`` for ``error``; its type alone when it cannot be rendered as text
    (scrubbed before its cut when ``span`` has a scrub)."""
    kind = exception_type(error)
    message = exception_message(error, scrub=span.scrub)[1]
    return f"{kind}: {message}" if message else kind


def error_type_of(error: BaseException) -> str:
    """``error.type`` for an exception: its class's qualified name (never its text)."""
    return exception_names(error)[1]


def raised_from(error: BaseException) -> Iterator[BaseException]:
    """``error``, then the exceptions it was raised from (each one's cause, else its context),
    ``MAX_LINKS`` at most."""
    seen: BaseException | None = error
    for _ in range(MAX_LINKS):
        if seen is None:
            return
        yield seen
        seen = seen.__cause__ or seen.__context__


def raised_in(error: BaseException) -> frozenset[str]:
    """The names of the functions ``error`` passed through (its traceback's frames, and those
    of the exceptions it was raised from): where it was raised."""
    return frozenset(
        frame.f_code.co_name
        for seen in raised_from(error)
        for frame, _ in walk_tb(seen.__traceback__)
    )
