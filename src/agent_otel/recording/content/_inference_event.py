"""Captured content as ``gen_ai.client.inference.operation.details`` log events.

With ``ContentCapture(events=True)`` (``EVENT_ONLY`` / ``SPAN_AND_EVENT``) each chat call,
when it is finalised, is also emitted through the OTel Logs API: the event's attributes are
the chat span's ``gen_ai.*`` / ``error.type`` attributes (the event extends the inference
span's attribute set), with the messages and the offered tools' definitions as structured
values instead of JSON text (in ``EVENT_ONLY`` too, where the span has none), and its
context is the chat span's, so a backend joins it to the trace.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry._logs import LogRecord
from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel.recording._encodable import clean_attributes
from agent_otel.scrubbing import Scrub

_STRUCTURED = (A.INPUT_MESSAGES, A.OUTPUT_MESSAGES, A.SYSTEM_INSTRUCTIONS, A.TOOL_DEFINITIONS)


# The cost keys follow an open proposal, not the registry the event's definition extends.
_NOT_ON_EVENTS = frozenset({A.COST_AMOUNT, A.COST_CURRENCY, A.COST_SOURCE})


def _event_key(key: str) -> bool:
    return (key.startswith("gen_ai.") and key not in _NOT_ON_EVENTS) or key == A.ERROR_TYPE


def inference_details(
    span: Span,
    fallback: Mapping[str, AttributeValue],
    content: Mapping[str, str | None],
    scrub: Scrub | None = None,
) -> LogRecord:
    """The event for one chat call: ``span``'s attributes (``fallback`` when the span does not
    expose them) and ``content``, the captured JSON texts by attribute key; every string of
    it scrubbed by ``scrub`` before the logger (and any processor) sees it, and encodable."""
    recorded = getattr(getattr(span, "raw", span), "attributes", None)  # a GuardedSpan's SDK span
    source = recorded if isinstance(recorded, Mapping) else fallback
    attributes: dict[str, Any] = {k: v for k, v in source.items() if _event_key(k)}
    for key in _STRUCTURED:
        attributes.pop(key, None)
    for key, text in content.items():
        if text is not None:
            attributes[key] = json.loads(text)
    if scrub is not None:
        attributes = scrub.value(attributes)
    # encodable as the span's: the JSON read back holds the lone surrogates it escaped, and
    # the OTLP log encoder drops an attribute whose string UTF-8 cannot write (the span's
    # repair counted them; a content text past 64 bits drops its attribute, as there)
    attributes = clean_attributes(attributes)
    return LogRecord(
        event_name=A.EVENT_INFERENCE_DETAILS,
        attributes=attributes,
        context=trace.set_span_in_context(span),
    )
