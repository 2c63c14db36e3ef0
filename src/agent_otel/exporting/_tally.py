"""The SDK's own span processor and exporter metrics, wired to ``configure()``'s meter provider.

The SDK's ``BatchSpanProcessor`` and OTLP span exporters record ``otel.sdk.processor.span.*``
and ``otel.sdk.exporter.span.*`` on the meter provider they are given, but only when
``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED`` is true at construction. ``internal_metrics_on``
sets it for the construction of configure()'s own processor and exporter only (other users'
processors keep the environment's choice). ``TallyMeterProvider`` hands the SDK the real meter
provider's instruments, so the metrics are exported with the others, and reads the two counters
that say where spans went into a ``SpanLoss`` as they are recorded.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, cast

from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, CallbackT, Meter, MeterProvider
from opentelemetry.semconv._incubating.metrics.otel_metrics import (
    OTEL_SDK_EXPORTER_SPAN_EXPORTED,
    OTEL_SDK_PROCESSOR_SPAN_PROCESSED,
    OTEL_SDK_PROCESSOR_SPAN_QUEUE_CAPACITY,
    OTEL_SDK_PROCESSOR_SPAN_QUEUE_SIZE,
)
from opentelemetry.util.types import Attributes

from agent_otel import _attributes as A
from agent_otel.exporting._loss import SHUTDOWN, SpanLoss

INTERNAL_METRICS_VAR = "OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED"
_env_lock = threading.Lock()


@contextmanager
def internal_metrics_on() -> Iterator[None]:
    """Switch the SDK's internal metrics on for what is constructed inside this block."""
    with _env_lock:
        previous = os.environ.get(INTERNAL_METRICS_VAR)
        os.environ[INTERNAL_METRICS_VAR] = "true"
        try:
            yield
        finally:
            if previous is None:
                del os.environ[INTERNAL_METRICS_VAR]
            else:
                os.environ[INTERNAL_METRICS_VAR] = previous


class TallyMeterProvider(MeterProvider):
    """The real provider's meters, with the span outcome counters also counted into ``loss``."""

    def __init__(self, real: MeterProvider, loss: SpanLoss) -> None:
        self._real = real
        self._loss = loss
        self._processed: _Tally | None = None

    def get_meter(
        self,
        name: str,
        version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes = None,
    ) -> Meter:
        meter = self._real.get_meter(name, version, schema_url, attributes)
        return cast(Meter, _TallyMeter(meter, self))

    def record_shutdown_loss(self, count: int) -> None:
        """Record spans stranded at shutdown on the processor's counter (error.type=shutdown)."""
        if count and self._processed is not None:
            self._processed.record_only(count, SHUTDOWN)


class _TallyMeter:
    def __init__(self, meter: Meter, owner: TallyMeterProvider) -> None:
        self._meter = meter
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._meter, name)

    def create_counter(self, name: str, unit: str = "", description: str = "") -> Any:
        counter = self._meter.create_counter(name, unit, description)
        loss = self._owner._loss
        if name == OTEL_SDK_PROCESSOR_SPAN_PROCESSED:
            self._owner._processed = _Tally(counter, loss.processed)
            return self._owner._processed
        if name == OTEL_SDK_EXPORTER_SPAN_EXPORTED:
            return _Tally(counter, loss.exported_batch)
        return counter

    def create_up_down_counter(self, name: str, unit: str = "", description: str = "") -> Any:
        counter = self._meter.create_up_down_counter(name, unit, description)
        if name == OTEL_SDK_PROCESSOR_SPAN_QUEUE_CAPACITY and self._owner._processed is not None:
            return _Capacity(counter, self._owner._processed)
        return counter

    def create_observable_up_down_counter(
        self,
        name: str,
        callbacks: Sequence[CallbackT] | None = None,
        unit: str = "",
        description: str = "",
    ) -> Any:
        if name == OTEL_SDK_PROCESSOR_SPAN_QUEUE_SIZE and callbacks:
            self._owner._loss.queue_length = partial(_observe, callbacks[0])
        return self._meter.create_observable_up_down_counter(name, callbacks, unit, description)


def _observe(callback: CallbackT) -> int:
    """The value the SDK's queue-size callback observes right now."""
    observed = callback(CallbackOptions())  # type: ignore[operator]
    return int(next(iter(observed)).value)


class _Tally:
    """A counter that also tells ``sink`` each amount and its ``error.type``."""

    def __init__(self, counter: Any, sink: Any) -> None:
        self._counter = counter
        self._sink = sink
        self.component: dict[str, Any] = {}  # the processor's otel.component.* attributes

    def add(
        self, amount: int, attributes: Attributes = None, context: Context | None = None
    ) -> None:
        self._counter.add(amount, attributes, context)
        self._sink(amount, (attributes or {}).get(A.ERROR_TYPE))

    def record_only(self, amount: int, error_type: str) -> None:
        self._counter.add(amount, {**self.component, A.ERROR_TYPE: error_type})


class _Capacity:
    """The queue capacity counter: the SDK adds to it once, with the component's attributes."""

    def __init__(self, counter: Any, processed: _Tally) -> None:
        self._counter = counter
        self._processed = processed

    def add(
        self, amount: int, attributes: Attributes = None, context: Context | None = None
    ) -> None:
        self._processed.component = dict(attributes or {})
        self._counter.add(amount, attributes, context)
