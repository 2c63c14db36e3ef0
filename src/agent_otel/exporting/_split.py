"""Export requests kept under a collector's default message limit, whatever one item weighs.

A collector rejects a whole request over its limit (gRPC: 4 MiB by default), so one oversized
span would cost every other span of its batch. These exporters wrap the OTLP ones and split
each batch the processor hands them into requests of at most ``MAX_REQUEST_BYTES`` (an upper
estimate of the encoded size: every string's UTF-8 bytes plus a fixed overhead per span,
event, link and attribute). An item that is too big alone goes in a request of its own, so it
can cost only itself (then counted as ``export_failed``). agent-otel's own spans never are:
every string they carry is bounded (see docs/export.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

MAX_REQUEST_BYTES = 3 * 1024 * 1024
"""Target request size: a quarter under gRPC's 4 MiB default, for what the estimate misses."""
_SPAN = 160  # ids, times, kind, status, the span's framing
_ITEM = 48  # an event's or link's framing and times
_FIELD = 12  # one attribute's framing and type tag

T = TypeVar("T")


def _text(value: str) -> int:
    return len(value) if value.isascii() else len(value) << 2  # at most 4 bytes a character


def _value(value: Any) -> int:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if isinstance(value, (list, tuple)):
        return sum(_value(item) + 2 for item in value)
    if isinstance(value, Mapping):
        return _attributes(value)
    return 10


def _attributes(attributes: Mapping[str, Any] | None) -> int:
    """Inline for the common case (str keys, str/number values): this runs for every span
    exported, on the export thread, beside the encoder's ~40 us."""
    if not attributes:
        return 0
    total = 0
    for key, value in attributes.items():
        total += _FIELD + len(key)
        if type(value) is str:
            total += len(value) if value.isascii() else len(value) << 2
        elif type(value) is not int and type(value) is not float and type(value) is not bool:
            total += _value(value)
        else:
            total += 10
    return total


def span_size(span: ReadableSpan) -> int:
    """An upper estimate of ``span``'s OTLP-encoded size in bytes."""
    total = _SPAN + len(span.name) * 4 + _attributes(span.attributes)
    status = span.status.description if span.status is not None else None
    if status:
        total += _text(status)
    for event in span.events:
        total += _ITEM + len(event.name) * 4 + _attributes(event.attributes)
    for link in span.links:
        total += _ITEM + _attributes(link.attributes)
    return total


def log_size(record: ReadableLogRecord) -> int:
    """An upper estimate of ``record``'s OTLP-encoded size in bytes."""
    log = record.log_record
    name = getattr(log, "event_name", None)
    total = _SPAN + _value(log.body) + _attributes(log.attributes)
    return total + _text(name) if isinstance(name, str) else total


def requests(batch: Sequence[T], size: Callable[[T], int], limit: int) -> Iterator[Sequence[T]]:
    """``batch`` in order, as consecutive slices each estimated at most ``limit`` bytes (an
    item over the limit alone in its own slice)."""
    start, total = 0, 0
    for index, item in enumerate(batch):
        cost = size(item)
        if index > start and total + cost > limit:
            yield batch[start:index]
            start, total = index, 0
        total += cost
    if start < len(batch):
        yield batch[start:]


class SizeBoundSpanExporter(SpanExporter):
    """``inner`` fed requests under ``limit`` bytes (see the module docstring)."""

    def __init__(self, inner: SpanExporter, limit: int = MAX_REQUEST_BYTES) -> None:
        self.inner = inner
        self.limit = limit

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = SpanExportResult.SUCCESS
        for request in requests(spans, span_size, self.limit):
            if self.inner.export(request) is not SpanExportResult.SUCCESS:
                result = SpanExportResult.FAILURE
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


class SizeBoundLogExporter(LogRecordExporter):
    """The same for log records (content events carry whole messages)."""

    def __init__(self, inner: LogRecordExporter, limit: int = MAX_REQUEST_BYTES) -> None:
        self.inner = inner
        self.limit = limit

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        result = LogRecordExportResult.SUCCESS
        for request in requests(batch, log_size, self.limit):
            if self.inner.export(request) is not LogRecordExportResult.SUCCESS:
                result = LogRecordExportResult.FAILURE
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()  # type: ignore[no-untyped-call]

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)
