"""Captured content on a span: redacted, bounded JSON, encoded once.

The span owners (:mod:`.._run`, :mod:`.._chat`, :mod:`.._tool`) call these with their own
span and key; nothing here decides which span or key.
"""

from __future__ import annotations

import json
from typing import Any

from agent_otel import _attributes as A
from agent_otel._guard import report
from agent_otel.recording._span import GuardedSpan

from ._capture import ContentCapture, ContentKind
from ._fit import recent
from ._messages import input_messages


def encode(
    capture: ContentCapture | None, span: GuardedSpan, kind: ContentKind, value: Any
) -> str | None:
    """Captured content as redacted, bounded JSON (None: capture off, span not recording, or
    the value dropped)."""
    if capture is None or not span.recording:
        return None
    try:  # a redaction hook or a value that cannot be serialised: drop the content only
        if kind == "input_messages":
            value = recent(value, capture.max_bytes)  # older ones cannot fit anyway
            if value is None:
                return None
            value = input_messages(value, capture.max_bytes)
        # scrubbed as the span's writes are; the agent's value raising counted on the run
        return capture.encode(kind, value, span.scrub, span.count)
    except Exception:
        report("content capture", span.count)
        return None


def put(
    capture: ContentCapture | None, span: GuardedSpan, kind: ContentKind, key: str, value: Any
) -> str | None:
    """:func:`encode`, set on ``span`` as ``key`` when content goes on spans; the JSON."""
    encoded = encode(capture, span, kind, value)
    if encoded is not None and capture is not None and capture.spans:
        span.set_attribute(key, encoded)
    return encoded


def put_input(capture: ContentCapture | None, span: GuardedSpan, messages: Any) -> str | None:
    """A chat call's input messages on its span: with ``history="new"``, only those after the
    previous call's input, and how many it omits (``agent_otel.input.messages.omitted``)."""
    if capture is None or not span.recording:
        return None
    messages, omitted = capture.new_messages(messages, span.count)
    encoded = put(capture, span, "input_messages", A.INPUT_MESSAGES, messages)
    if omitted and encoded is not None and capture.spans:
        span.set_attribute(A.INPUT_MESSAGES_OMITTED, omitted)
    return encoded


def failure_text(capture: ContentCapture | None, span: GuardedSpan, text: str | None) -> str | None:
    """A failure's text that is content (what a tool returned as its error, often quoting its
    arguments) as a status description and ``exception`` event may carry it: only where content
    goes on spans, through the redaction hook (as a ``tool_result``) and within ``max_bytes``
    and what the run has left (``max_run_bytes``); None otherwise, and the failure is described
    by its type alone."""
    if text is None or capture is None or not capture.spans:
        return None
    encoded = encode(capture, span, "tool_result", text)
    if encoded is None:  # dropped by the hook, or it failed
        return None
    value = json.loads(encoded)
    if value == {A.STRIPPED_REASON: A.STRIPPED_SIZE_EXCEEDED}:  # the run's budget is spent
        return None
    return value if isinstance(value, str) else encoded
