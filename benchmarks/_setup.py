"""Telemetry set-ups shared by the figures: SDK providers whose output stays in memory."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, Sampler

from agent_otel import otel_wrapper


class CountingExporter(SpanExporter):
    """Counts exported spans and keeps none (so memory figures see no exporter retention)."""

    def __init__(self) -> None:
        self.count = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.count += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


class Sdk:
    """A tracer provider with a ``SimpleSpanProcessor`` and a meter provider with an in-memory
    reader: what ``agent_otel.testing.InMemoryTelemetry`` sets up, with a choice of exporter
    and sampler."""

    def __init__(self, *, sampled: bool = True, keep_spans: bool = True) -> None:
        sampler: Sampler | None = None if sampled else ALWAYS_OFF
        self.tracer_provider = TracerProvider(sampler=sampler)
        self.exporter: InMemorySpanExporter | CountingExporter = (
            InMemorySpanExporter() if keep_spans else CountingExporter()
        )
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self) -> list[ReadableSpan]:
        if isinstance(self.exporter, InMemorySpanExporter):
            return list(self.exporter.get_finished_spans())
        return []

    def span_count(self) -> int:
        if isinstance(self.exporter, InMemorySpanExporter):
            return len(self.exporter.get_finished_spans())
        return self.exporter.count

    def clear(self) -> None:
        if isinstance(self.exporter, InMemorySpanExporter):
            self.exporter.clear()

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


class Wrapped:
    """``otel_wrapper()`` on a tracer provider with ``processor`` (the export path a figure
    measures) and a meter provider with an in-memory reader."""

    def __init__(self, processor: SpanProcessor) -> None:
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(processor)
        self.meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
        self.wrap = otel_wrapper(
            agent_name="bench",
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
        )

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
