"""A failed model call as a ``gen_ai.client.operation.exception`` log event.

The conventions define this event for an exception during a GenAI client operation: recorded
when one occurs (not content: on whatever the content capture), at severity WARN, with
``exception.type`` and ``exception.message``, in the context of the operation's span so a
backend joins it to the trace. A chat span fails either way the agent can tell it: an
exception raised while the call was open, or an ``Error`` event inside the call.
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry._logs import Logger, LogRecord, SeverityNumber
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel._guard import report

from ._encodable import clean_attributes
from ._span import GuardedSpan


def emit_operation_exception(
    logger: Logger | None, span: GuardedSpan, error_type: str, message: str | None, now: int
) -> None:
    """Emit the event for ``span``'s failure (``message`` as its span records it, already
    scrubbed and bounded); nothing without a logger, and a failing logger only reported."""
    if logger is None:
        return
    try:
        attributes: dict[str, AttributeValue] = {A.EXCEPTION_TYPE: error_type}
        if message:
            attributes[A.EXCEPTION_MESSAGE] = message
        if span.scrub is not None:  # as the span's own strings are, at its write door
            attributes = span.scrub.value(attributes)
        attributes = clean_attributes(attributes)  # what the OTLP log encoder can write
        logger.emit(
            LogRecord(
                timestamp=now,
                observed_timestamp=now,
                context=trace.set_span_in_context(span.raw),
                severity_number=SeverityNumber.WARN,
                severity_text="WARN",
                event_name=A.EVENT_OPERATION_EXCEPTION,
                attributes=attributes,
            )
        )
    except Exception:
        report("exception event")
