"""Encode what a run exported with the real OTLP encoder functions the SDK's exporters call.

An encoder that raises, or that logs an error while encoding (it drops an attribute it cannot
encode and logs), fails the check: either way an exporter would lose data.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.metrics import AlwaysOnExemplarFilter
from opentelemetry.sdk.metrics.export import MetricsData
from opentelemetry.sdk.trace import ReadableSpan

from agent_otel.testing import InMemoryTelemetry
from test_property import Ledger

_ENCODER_LOGGER = "opentelemetry.exporter.otlp.proto.common"


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def _no_encoder_errors() -> Iterator[None]:
    handler = _Errors()
    logger = logging.getLogger(_ENCODER_LOGGER)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    assert not handler.messages, handler.messages


def assert_nested_in_time(spans: Sequence[ReadableSpan]) -> None:
    """Every span lies within its parent (it starts no earlier and ends no later), and every
    span event within its span."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    for span in spans:
        for event in span.events:
            assert span.start_time is not None and span.end_time is not None
            assert span.start_time <= event.timestamp <= span.end_time, (event.name, span.name)
        if span.parent is not None and span.parent.span_id in by_id:
            parent = by_id[span.parent.span_id]
            assert span.end_time is not None and parent.end_time is not None
            assert span.end_time <= parent.end_time, (span.name, "ends after", parent.name)
            assert span.start_time is not None and parent.start_time is not None
            assert span.start_time >= parent.start_time, (span.name, "starts before", parent.name)


def assert_encodes(
    spans: Sequence[ReadableSpan],
    metrics: MetricsData | None = None,
    logs: Sequence[ReadableLogRecord] = (),
) -> int:
    """Encode and serialise every span, metric point (exemplars included) and log record.

    Returns the number of exemplars seen, so a test can check it exercised them.
    """
    exemplars = 0
    with _no_encoder_errors():
        if spans:
            encode_spans(spans).SerializeToString()
        if metrics is not None:
            encode_metrics(metrics).SerializeToString()
            for resource in metrics.resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        for point in metric.data.data_points:
                            exemplars += len(getattr(point, "exemplars", ()) or ())
        if logs:
            encode_logs(logs).SerializeToString()
    return exemplars


class Exported(InMemoryTelemetry):
    """The kit's telemetry with an exemplar on every metric point and a ledger of every span
    start and end."""

    def __init__(self) -> None:
        self.ledger = Ledger()
        super().__init__(processors=[self.ledger], exemplar_filter=AlwaysOnExemplarFilter())

    def assert_encodes(self) -> int:
        """Every span and metric point exported so far encodes; returns the exemplar count."""
        return assert_encodes(self.spans(), self.metric_reader.get_metrics_data())
