"""The OTLP span pipeline ``configure()`` builds: batch processor, exporter, loss accounting.

Defaults chosen for a busy service (figures in ``docs/export.md``): a queue of 16,384 spans
(about two seconds of a tight loop's output, ~50 MB at worst, instead of the SDK's 2,048:
under half a second), batches of 1,024 spans (one request's round trip is paid for twice as
many spans; each request is kept under a gRPC collector's 4 MiB message limit by ``_split``),
and a 1 s schedule delay (instead of 5 s: a queue emptied more often has room when a burst
comes). Compression stays the SDK's (none; ``OTEL_EXPORTER_OTLP_COMPRESSION=gzip`` for a
remote collector): gzip costs CPU in the agent's process and did not raise the ceiling to a
collector on the same host. ``OTEL_BSP_*`` variables still win over these defaults, and
arguments over both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from agent_otel.exporting import _env
from agent_otel.exporting._exporters import span_exporter
from agent_otel.exporting._loss import SpanLoss
from agent_otel.exporting._split import SizeBoundSpanExporter
from agent_otel.exporting._tally import TallyMeterProvider, internal_metrics_on

DEFAULT_MAX_QUEUE_SIZE = 16_384
DEFAULT_MAX_EXPORT_BATCH_SIZE = 1_024
DEFAULT_SCHEDULE_DELAY_MILLIS = 1_000


@dataclass(frozen=True)
class BatchSettings:
    max_queue_size: int
    max_export_batch_size: int
    schedule_delay_millis: int
    export_timeout_millis: int = 30_000

    @classmethod
    def resolve(
        cls, max_queue_size: int | None = None, env: Mapping[str, str] | None = None
    ) -> BatchSettings:
        """Argument, else ``OTEL_BSP_*``, else our defaults; the batch never exceeds the queue
        (the SDK would reject it)."""
        defaults = cls(DEFAULT_MAX_QUEUE_SIZE, DEFAULT_MAX_EXPORT_BATCH_SIZE,
                       DEFAULT_SCHEDULE_DELAY_MILLIS)  # fmt: skip
        return cls._read("OTEL_BSP_", defaults, max_queue_size, env)

    @classmethod
    def logs(cls, env: Mapping[str, str] | None = None) -> BatchSettings:
        """``OTEL_BLRP_*``, else the SDK's defaults, for the log record batch processor: read
        as ``OTEL_BSP_*`` are, as the SDK left to itself raised out of ``configure()`` on an
        out-of-range one (``OTEL_BLRP_MAX_QUEUE_SIZE=0``: ``max_queue_size must be a positive
        integer``, no variable named) and logged a traceback for one that does not parse."""
        return cls._read("OTEL_BLRP_", cls(2_048, 512, 1_000), None, env)

    @classmethod
    def _read(
        cls,
        prefix: str,
        defaults: BatchSettings,
        max_queue_size: int | None,
        env: Mapping[str, str] | None,
    ) -> BatchSettings:
        queue = max_queue_size or _env.int_var(
            f"{prefix}MAX_QUEUE_SIZE", defaults.max_queue_size, env
        )
        batch = _env.int_var(f"{prefix}MAX_EXPORT_BATCH_SIZE", defaults.max_export_batch_size, env)
        delay = _env.int_var(
            f"{prefix}SCHEDULE_DELAY", defaults.schedule_delay_millis, env,
            maximum=_env.MOST_MILLIS,
        )  # fmt: skip
        export = _env.int_var(
            f"{prefix}EXPORT_TIMEOUT", defaults.export_timeout_millis, env,
            maximum=_env.MOST_MILLIS,
        )  # fmt: skip
        return cls(queue, min(batch, queue), delay, export)


class CountingBatchSpanProcessor(BatchSpanProcessor):
    """The SDK's batch processor, counting the sampled spans that enter it into ``loss``."""

    def __init__(
        self,
        exporter: SpanExporter,
        loss: SpanLoss,
        settings: BatchSettings,
        meter_provider: TallyMeterProvider,
    ) -> None:
        super().__init__(
            exporter,
            max_queue_size=settings.max_queue_size,
            schedule_delay_millis=settings.schedule_delay_millis,
            max_export_batch_size=settings.max_export_batch_size,
            export_timeout_millis=settings.export_timeout_millis,
            meter_provider=meter_provider,
        )
        self.loss = loss

    def on_end(self, span: ReadableSpan) -> None:
        context = span.context
        if context is not None and context.trace_flags.sampled:
            self.loss.enter()
        super().on_end(span)
        if self.loss.on_queued is not None:
            self.loss.on_queued()


def otlp_span_pipeline(
    protocol: str | None,
    endpoint: str | None,
    headers: Mapping[str, str] | None,
    timeout: float | None,
    max_queue_size: int | None,
    meter_provider: MeterProvider,
) -> tuple[SpanExporter, CountingBatchSpanProcessor]:
    """The OTLP exporter and its batch processor, both reporting to ``meter_provider``."""
    loss = SpanLoss()
    tally = TallyMeterProvider(meter_provider, loss)
    loss.on_stranded = tally.record_shutdown_loss
    with internal_metrics_on():
        exporter = SizeBoundSpanExporter(  # no request over a collector's message limit
            span_exporter(protocol, endpoint, headers, timeout, meter_provider=tally)
        )
        processor = CountingBatchSpanProcessor(
            exporter, loss, BatchSettings.resolve(max_queue_size), tally
        )
    return exporter, processor
