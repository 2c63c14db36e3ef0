"""The one door every span write of a run goes through.

:class:`GuardedSpan` wraps a span the run started: each write is made OTLP-encodable first
(:mod:`._encodable`, repairs counted as the run's anomalies), and a span or SDK that raises
turns that one write into a no-op, reported once (:mod:`agent_otel._guard`), so a failure on
one span never stops another span's ending. :func:`start_span` is the one place a run starts
a span: a tracer that raises yields a non-recording span instead. The SDK span itself (not the
wrapper) is what goes into contexts, so code running under it sees the SDK's own object.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from contextlib import suppress
from typing import Any

from opentelemetry import trace
from opentelemetry.context.context import Context
from opentelemetry.trace import INVALID_SPAN, Span, SpanContext, SpanKind, Status, Tracer
from opentelemetry.util.types import Attributes, AttributeValue

from agent_contract.sources._arguments import TRUNCATION_MARK
from agent_otel import _attributes as A
from agent_otel._guard import report
from agent_otel._plain import text_of
from agent_otel.scrubbing import MARGIN, Scrub

from ._encodable import (
    DROP,
    MAX_TEXT_BYTES,
    STRING_TRUNCATED,
    Count,
    bounded_text,
    checked,
    checked_text,
    clean_text,
    clean_value,
    uncounted,
)

MAX_EXCEPTION_MESSAGE_BYTES = 4 * 1024
"""The ``exception.message`` bound: enough for any diagnosis, never a whole payload."""
MAX_STACKTRACE_BYTES = 16 * 1024
"""The ``exception.stacktrace`` bound: its head (the outermost frames) and its tail (the
innermost frames and the exception line) are kept, the middle cut and marked."""


def scrubbed_prefix(text: str, scrub: Scrub | None, chars: int) -> str:
    """``text`` scrubbed (when ``scrub``) as far as a cut to ``chars`` characters needs: the
    cut comes after scrubbing, so it cannot keep a secret's prefix (:meth:`Scrub.prefix`)."""
    if scrub is None:  # what the cut keeps, and one more character to say it cut
        return text if len(text) <= chars else text[: chars + 1]
    return scrub.prefix(text, chars)


def exception_names(error: BaseException) -> tuple[str | None, str]:
    """An exception class's module and qualified name, as the plain strings they are
    (``Exception`` for a class that names itself with something else, or not at all)."""
    cls = type(error)
    try:
        module = text_of(getattr(cls, "__module__", None))
        name = text_of(getattr(cls, "__qualname__", None)) or text_of(cls.__name__)
    except Exception:  # a metaclass whose attributes raise
        return None, "Exception"
    return module, name or "Exception"


def describe_exception(
    error: BaseException, count: Count = uncounted, scrub: Scrub | None = None
) -> dict[str, AttributeValue]:
    """The semconv ``exception`` event attributes, as far as ``error`` lets us read them.

    The type name is always there; the message and stack trace only when ``str()`` and
    ``traceback`` can render them (an ``__str__`` that raises is a common agent bug). Both are
    bounded (``MAX_EXCEPTION_MESSAGE_BYTES``, ``MAX_STACKTRACE_BYTES``): a 1.5 MB message
    kept whole in both, on two spans, would cost its batch. A cut is marked and counted.
    Both are scrubbed by ``scrub`` before they are cut (:func:`scrubbed_prefix`).
    """
    attributes: dict[str, AttributeValue] = {A.EXCEPTION_TYPE: exception_type(error)}
    raw, message = exception_message(error, count, scrub)
    if message is not None:
        attributes[A.EXCEPTION_MESSAGE] = message
    with suppress(Exception):
        trace = "".join(traceback.format_exception(error))
        if raw and message is not None and len(raw) > MAX_EXCEPTION_MESSAGE_BYTES // 4:
            trace = trace.replace(raw, message)  # its last line: the message, cut as above
        head = tail = trace  # a cut keeps a head and a tail: each is scrubbed before it
        if scrub is not None and len(trace) <= MAX_STACKTRACE_BYTES + MARGIN:
            head = tail = scrub.text(trace)
        elif scrub is not None:
            head = scrub.prefix(trace, MAX_STACKTRACE_BYTES // 4)
            tail = scrub.suffix(trace, MAX_STACKTRACE_BYTES)
        trace = _head_and_tail(head, tail, count, MAX_STACKTRACE_BYTES)
        attributes[A.EXCEPTION_STACKTRACE] = clean_text(trace, count)
    return attributes


def exception_type(error: BaseException) -> str:
    """``exception.type``: the class's qualified name, with its module unless a built-in."""
    module, name = exception_names(error)
    return f"{module}.{name}" if module and module != "builtins" else name


def exception_message(
    error: BaseException, count: Count = uncounted, scrub: Scrub | None = None
) -> tuple[str | None, str | None]:
    """``str(error)`` as it is and as ``exception.message`` records it (scrubbed, then
    bounded); ``(None, None)`` when it cannot be rendered."""
    try:
        raw = str.__str__(str(error))
        limit = MAX_EXCEPTION_MESSAGE_BYTES
        message = clean_text(scrubbed_prefix(raw, scrub, limit), count)
        return raw, bounded_text(message, count, limit)
    except Exception:  # the type name is recorded; the text may not be
        return None, None


def _head_and_tail(text: str, end: str, count: Count, limit: int) -> str:
    """A text within ``limit`` UTF-8 bytes: its first quarter (from ``text``) and its last three
    quarters (from ``end``, the same text or its end scrubbed on its own)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit and end is text:
        return text
    count(STRING_TRUNCATED)
    room = limit - len(TRUNCATION_MARK) - 2
    last = data if end is text else end.encode("utf-8", "replace")
    head, tail = data[: room // 4], last[len(last) - (room - room // 4) :]
    return (
        head.decode("utf-8", "ignore") + f"\n{TRUNCATION_MARK}\n" + tail.decode("utf-8", "ignore")
    )


def current_in(span: GuardedSpan) -> Context:
    """A context with ``span`` current, for the records of a span the run never made current
    (its own context, when it has one, is the one to use): their exemplars name the span."""
    return trace.set_span_in_context(span.raw)


class GuardedSpan(Span):
    """A span whose every write is scrubbed, encodable and can never raise (see the module
    docstring). Scrubbing comes first: a repair or a cut must not hide a secret from it."""

    __slots__ = ("_count", "raw", "recording", "scrub")

    def __init__(self, raw: Span, count: Count, scrub: Scrub | None = None) -> None:
        self.raw = raw
        self._count = count
        self.scrub = scrub
        try:
            self.recording = bool(raw.is_recording())
        except Exception:
            report("span is_recording")
            self.recording = False

    @property
    def count(self) -> Count:
        """The run's anomaly count this span's writes tell what they dropped through."""
        return self._count

    def get_span_context(self) -> SpanContext:
        return self.raw.get_span_context()

    def is_recording(self) -> bool:
        return self.recording

    def set_attribute(self, key: str, value: Any) -> None:
        if not self.recording:
            return
        if self.scrub is not None:
            value = self.scrub.attribute(value)
        kind = type(value)
        if not (
            kind is float
            or kind is bool
            or (kind is str and value.isascii() and len(value) <= MAX_TEXT_BYTES)
        ):
            value = clean_value(value, self._count)
            if value is DROP:
                return
        try:
            self.raw.set_attribute(key if key.isascii() else clean_text(key, self._count), value)
        except Exception:
            report("span set_attribute")

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        if not self.recording or not attributes:
            return
        try:
            self.raw.set_attributes(checked(attributes, self._count, self.scrub))
        except Exception:
            report("span set_attributes")

    def set_checked(self, attributes: Mapping[str, Any]) -> None:
        """:meth:`set_attributes` without the checks, for what :func:`checked` returned (with
        this span's count and scrub) and numbers and flags of our own: a chat span's last
        write checks only what the events told (figure 2)."""
        if self.recording and attributes:
            try:
                self.raw.set_attributes(attributes)
            except Exception:
                report("span set_attributes")

    def add_event(
        self, name: str, attributes: Attributes = None, timestamp: int | None = None
    ) -> None:
        if not self.recording:
            return
        try:
            if self.scrub is not None:
                name = self.scrub.text(name)
            self.raw.add_event(
                clean_text(name, self._count),
                checked(attributes, self._count, self.scrub),
                timestamp=timestamp,
            )
        except Exception:
            report("span add_event")

    def add_link(self, context: SpanContext, attributes: Attributes = None) -> None:
        if self.recording:
            try:
                self.raw.add_link(context, checked(attributes, self._count, self.scrub))
            except Exception:
                report("span add_link")

    def update_name(self, name: str) -> None:
        if self.recording:
            try:
                if self.scrub is not None:
                    name = self.scrub.text(name)
                self.raw.update_name(clean_text(name, self._count))
            except Exception:
                report("span update_name")

    def set_status(self, status: Status | Any, description: str | None = None) -> None:
        if not self.recording:
            return
        try:
            if isinstance(status, Status) and isinstance(status.description, str):
                text = scrubbed_prefix(status.description, self.scrub, MAX_EXCEPTION_MESSAGE_BYTES)
                text = bounded_text(
                    clean_text(text, self._count), self._count, MAX_EXCEPTION_MESSAGE_BYTES
                )
                status = Status(status.status_code, text)
            elif isinstance(description, str) and self.scrub is not None:
                description = self.scrub.text(description)
            self.raw.set_status(status, description)
        except Exception:
            report("span set_status")

    def cut_text(self, text: str, chars: int) -> str:
        """``text`` as this span exports it within ``chars`` characters (``\u2026`` ends a
        cut one): scrubbed first, so the cut cannot split a secret out of its format."""
        text = scrubbed_prefix(text, self.scrub, chars)
        return text if len(text) <= chars else text[: chars - 1] + "\u2026"

    def record_exception(
        self,
        exception: BaseException,
        attributes: Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        """The SDK's exception event, built so that a hostile exception cannot stop it."""
        if not self.recording:
            return
        # no exception.escaped: deprecated in semconv
        event = describe_exception(exception, self._count, self.scrub)
        if attributes:
            event.update(attributes)
        self.add_event(A.EVENT_EXCEPTION, event, timestamp)

    def end(self, end_time: int | None = None) -> None:
        """End the SDK span; a processor raising in ``on_end`` stops nothing else."""
        try:
            self.raw.end(end_time=end_time)
        except Exception:
            report("span end")

    def __repr__(self) -> str:
        return f"GuardedSpan({self.raw!r})"


MAX_STARTS = 256
"""The most span starts a wrapper remembers (:func:`known_start`)."""


def known_start(
    starts: dict[Any, tuple[str, dict[str, AttributeValue]]] | None,
    key: Any,
    name: str,
    attributes: dict[str, AttributeValue],
    count: Count,
    scrub: Scrub | None,
) -> tuple[str, dict[str, AttributeValue]]:
    """``name`` and ``attributes`` checked; remembered in ``starts`` under ``key`` when both
    came out as they went in (nothing scrubbed, repaired or counted: a start that needed a
    repair is checked, and counted, on every span). Figure 2: a chat or tool span's name and
    the attributes of its model, provider or tool are checked once per wrapper, not per call.
    ``key`` holds only exact ``str`` values and ``None``: no hostile ``__eq__`` runs in it."""
    clean_name = checked_text(name, count, scrub)
    clean = checked(attributes, count, scrub)
    if starts is not None and clean_name is name and clean is attributes:
        remember(starts, key, (name, attributes))
    return clean_name, clean


def remember(starts: dict[Any, Any], key: Any, start: Any) -> None:
    """Keep ``start`` under ``key`` in a wrapper's ``starts`` (at most ``MAX_STARTS``)."""
    if len(starts) >= MAX_STARTS:
        starts.clear()
    starts[key] = start


def start_span(
    tracer: Tracer,
    count: Count,
    scrub: Scrub | None,
    name: str,
    context: Context,
    kind: SpanKind,
    attributes: dict[str, AttributeValue],
    start_time: int,
) -> GuardedSpan:
    """Start a span of the run whose ``name`` and ``attributes`` are what
    :func:`checked_text` and :func:`checked` returned (with ``count`` and ``scrub``: its
    writes are checked with them too): what samplers and processors see at start is
    scrubbed and encodable. A failing tracer: a no-op span."""
    try:
        raw = tracer.start_span(name, context, kind, attributes, start_time=start_time)
    except Exception:
        report("span start")
        raw = INVALID_SPAN
    return GuardedSpan(raw, count, scrub)
