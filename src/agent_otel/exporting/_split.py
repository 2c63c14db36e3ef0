"""Export requests kept under a collector's default message limit, whatever one item weighs.

A collector rejects a whole request over its limit (gRPC: 4 MiB by default), so one oversized
span would cost every other span of its batch. These exporters wrap the OTLP ones and split
each batch the processor hands them into requests of at most ``MAX_REQUEST_BYTES`` (an upper
estimate of the encoded size: every string's UTF-8 bytes plus a fixed overhead per span,
event, link and attribute). An item that is too big alone goes in a request of its own, so it
can cost only itself (then counted as ``export_failed``). agent-otel's own spans never are:
every string they carry is bounded (see docs/export.md).

A collector may take less (its ``max_request_body_size``, or the proxy in front of it: nginx
refuses a body over 1 MiB by default). It answers such a request with HTTP 413, and the
request was lost whole, each of its spans small enough. So a request refused that way is sent
again in halves, down to one item alone (which is then lost, counted with that status), and
the next batches are split under the size learned (told once). The status is read in the
export's own thread from the SDK exporter's duration record (:func:`answered`, fed by
``_tally`` for spans and by :class:`AnswerMeterProvider` for log records), the same record
that tells the loss accounting a refused batch from an exported one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

from opentelemetry.context import Context
from opentelemetry.metrics import Histogram, Meter, NoOpHistogram, NoOpMeter, NoOpMeterProvider
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.semconv._incubating.metrics.otel_metrics import (
    OTEL_SDK_EXPORTER_OPERATION_DURATION,
)
from opentelemetry.util.types import Attributes

from agent_otel import _attributes as A
from agent_otel._guard import logger as _log

MAX_REQUEST_BYTES = 3 * 1024 * 1024
"""Target request size: a quarter under gRPC's 4 MiB default, for what the estimate misses."""
_SPAN = 160  # ids, times, kind, status, the span's framing
_ITEM = 48  # an event's or link's framing and times
_FIELD = 12  # one attribute's framing and type tag

TOO_LARGE = 413
"""HTTP's answer to a request over the receiver's size limit ("Content Too Large")."""
SMALLEST_LIMIT = 64 * 1024
"""The learned limit goes no lower: a collector that refuses even that refuses every span."""

T = TypeVar("T")


class _Answer(threading.local):
    """Per export thread: the HTTP status the last request was answered with, and whether the
    request in flight is sent again in halves if it is refused as too large."""

    status: int | None = None
    resend: bool = False


_ANSWER = _Answer()


def answered(attributes: Mapping[str, Any] | None) -> bool:
    """An SDK exporter's ``otel.sdk.exporter.operation.duration`` record, in the export's
    thread: note its status. True when the request is refused as too large and is sent again
    in halves: its items are counted then, not now."""
    status = (attributes or {}).get(A.HTTP_RESPONSE_STATUS_CODE)
    _ANSWER.status = status if type(status) is int else None
    return _ANSWER.status == TOO_LARGE and _ANSWER.resend


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


class _Splitter(Generic[T]):
    """Requests under ``limit`` bytes by ``size``; one refused as too large sent again in
    halves, and the limit lowered for the next batches (the module docstring)."""

    def __init__(self, size: Callable[[T], int], limit: int, what: str) -> None:
        self.size = size
        self.limit = limit
        self._what = what  # "spans", "log records": named when the limit is lowered

    def send(self, batch: Sequence[T], export: Callable[[Sequence[T]], bool]) -> bool:
        """Export ``batch`` in order; True if every item was delivered."""
        delivered = True
        for request in requests(batch, self.size, self.limit):
            delivered = self._sent(request, export) and delivered
        return delivered

    def _sent(self, request: Sequence[T], export: Callable[[Sequence[T]], bool]) -> bool:
        _ANSWER.status = None
        _ANSWER.resend = len(request) > 1
        try:
            if export(request):
                return True
        finally:
            _ANSWER.resend = False
        if _ANSWER.status != TOO_LARGE or len(request) < 2:
            return False
        weight = sum(self.size(item) for item in request)
        learned = max(min(self.limit, weight // 2), SMALLEST_LIMIT)
        if learned < self.limit:
            if self.limit == MAX_REQUEST_BYTES:  # the first time
                _log.warning(
                    "agent-otel: the collector refused a request of about %.1f MB as too large "
                    "(HTTP 413): %s are now sent in requests under %.1f MB",
                    weight / 1e6,
                    self._what,
                    learned / 1e6,
                )
            self.limit = learned
        delivered = True  # the halves (two slices at least: the request weighs more than half)
        for half in requests(request, self.size, max(weight // 2, 1)):
            delivered = self._sent(half, export) and delivered
        return delivered


class SizeBoundSpanExporter(SpanExporter):
    """``inner`` fed requests under ``limit`` bytes (see the module docstring)."""

    def __init__(self, inner: SpanExporter, limit: int = MAX_REQUEST_BYTES) -> None:
        self.inner = inner
        self._splitter = _Splitter(span_size, limit, "spans")

    @property
    def limit(self) -> int:
        return self._splitter.limit

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._splitter.send(spans, self._export):
            return SpanExportResult.SUCCESS
        return SpanExportResult.FAILURE

    def _export(self, spans: Sequence[ReadableSpan]) -> bool:
        return self.inner.export(spans) is SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


class SizeBoundLogExporter(LogRecordExporter):
    """The same for log records (content events carry whole messages)."""

    def __init__(self, inner: LogRecordExporter, limit: int = MAX_REQUEST_BYTES) -> None:
        self.inner = inner
        self._splitter = _Splitter(log_size, limit, "log records")

    @property
    def limit(self) -> int:
        return self._splitter.limit

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        if self._splitter.send(batch, self._export):
            return LogRecordExportResult.SUCCESS
        return LogRecordExportResult.FAILURE

    def _export(self, batch: Sequence[ReadableLogRecord]) -> bool:
        return self.inner.export(batch) is LogRecordExportResult.SUCCESS

    def shutdown(self) -> None:
        self.inner.shutdown()  # type: ignore[no-untyped-call]

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


class AnswerMeterProvider(NoOpMeterProvider):
    """A meter provider for an exporter whose own metrics nobody reads (the log exporter's):
    it keeps nothing, but hands each export's duration record to :func:`answered`."""

    def get_meter(
        self,
        name: str,
        version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes | None = None,
    ) -> Meter:
        return _AnswerMeter(name, version, schema_url)


class _AnswerMeter(NoOpMeter):
    def create_histogram(self, name: str, *args: Any, **kwargs: Any) -> Histogram:
        if name == OTEL_SDK_EXPORTER_OPERATION_DURATION:
            return _AnswerHistogram(name)
        return super().create_histogram(name, *args, **kwargs)


class _AnswerHistogram(NoOpHistogram):
    def record(
        self,
        amount: int | float,
        attributes: Attributes | None = None,
        context: Context | None = None,
    ) -> None:
        answered(attributes)
