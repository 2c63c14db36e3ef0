"""The SDK's own span processor and exporter metrics, wired to ``configure()``'s meter provider.

The SDK's ``BatchSpanProcessor`` and OTLP span exporters record ``otel.sdk.processor.span.*``
and ``otel.sdk.exporter.span.*`` on the meter provider they are given, but only when
``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED`` is true at construction. ``internal_metrics_on``
sets it for the construction of configure()'s own processor and exporter only (other users'
processors keep the environment's choice). ``TallyMeterProvider`` hands the SDK the real meter
provider's instruments, so the metrics are exported with the others, and reads the two counters
that say where spans went into a ``SpanLoss`` as they are recorded.

An OTLP/HTTP exporter whose collector answers with a refusal (400, 413 for a request over its
limit, 503 once retries ran out: a Collector's queue full or its memory limiter refusing) gets
a status code but no exception, and the SDK then records the batch on
``otel.sdk.exporter.span.exported`` with no ``error.type``: exported, though it was lost. Its
duration metric, recorded right after in the same export, carries the status. So a batch the
exporter counts without an error waits for that duration record in its thread: a status
outside 2xx-3xx makes it failed, ``error.type`` the status (both metrics), else it is counted
as the SDK counted it. A request refused as too large (413) that ``_split`` sends again in
halves is not counted at all: its spans are, as the halves end.
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
    OTEL_SDK_EXPORTER_OPERATION_DURATION,
    OTEL_SDK_EXPORTER_SPAN_EXPORTED,
    OTEL_SDK_PROCESSOR_SPAN_PROCESSED,
    OTEL_SDK_PROCESSOR_SPAN_QUEUE_CAPACITY,
    OTEL_SDK_PROCESSOR_SPAN_QUEUE_SIZE,
)
from opentelemetry.util.types import Attributes

from agent_otel import _attributes as A
from agent_otel._fork import ChildLock
from agent_otel.exporting._loss import SHUTDOWN, SpanLoss
from agent_otel.exporting._split import answered

INTERNAL_METRICS_VAR = "OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED"
_env_lock = ChildLock()


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
        self._batches = _Batches()  # the span exporter's batches awaiting their duration record
        self._duration_made = False  # the SDK made the exporter's duration histogram here

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
            return _Exported(counter, loss.exported_batch, self._owner)
        return counter

    def create_histogram(self, name: str, unit: str = "", description: str = "", **kw: Any) -> Any:
        histogram = self._meter.create_histogram(name, unit, description, **kw)
        if name == OTEL_SDK_EXPORTER_OPERATION_DURATION:
            self._owner._duration_made = True
            return _Duration(histogram, self._owner._batches)
        return histogram

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


class _Batches(threading.local):
    """Per thread: the span exporter's last batch counted without an error, until its export's
    duration record says how it ended (the SDK records the two, in that order, in one block)."""

    def __init__(self) -> None:
        self.waiting: tuple[_Exported, int, Attributes, Context | None] | None = None

    def settle(self, error_type: str | None) -> None:
        """Count the waiting batch: exported, or failed with ``error_type``."""
        waiting, self.waiting = self.waiting, None
        if waiting is not None:
            exported, amount, attributes, context = waiting
            if error_type is not None:
                attributes = {**(attributes or {}), A.ERROR_TYPE: error_type}
            exported.count(amount, attributes, context)


class _Exported(_Tally):
    """``otel.sdk.exporter.span.exported``: a batch counted without an error waits for the
    export's duration record (``_Duration``), which tells a refused batch from an exported one."""

    def __init__(self, counter: Any, sink: Any, owner: TallyMeterProvider) -> None:
        super().__init__(counter, sink)
        self._owner = owner

    def add(
        self, amount: int, attributes: Attributes = None, context: Context | None = None
    ) -> None:
        batches = self._owner._batches
        if not self._owner._duration_made or (attributes or {}).get(A.ERROR_TYPE) is not None:
            self.count(amount, attributes, context)
            return
        batches.settle(None)  # (one left waiting: its duration never came, counted as the SDK did)
        batches.waiting = (self, amount, attributes, context)

    def count(self, amount: int, attributes: Attributes, context: Context | None) -> None:
        super().add(amount, attributes, context)


class _Duration:
    """``otel.sdk.exporter.operation.duration``: its HTTP status settles the waiting batch."""

    def __init__(self, histogram: Any, batches: _Batches) -> None:
        self._histogram = histogram
        self._batches = batches

    def __getattr__(self, name: str) -> Any:
        return getattr(self._histogram, name)

    def record(
        self, amount: float, attributes: Attributes = None, context: Context | None = None
    ) -> None:
        refused = _refused(attributes)
        if refused is not None and self._batches.waiting is not None:
            attributes = {**(attributes or {}), A.ERROR_TYPE: refused}
        if answered(attributes):  # refused as too large, sent again in halves: counted then
            self._batches.waiting = None
        self._batches.settle(refused)
        self._histogram.record(amount, attributes, context)


def _refused(attributes: Attributes) -> str | None:
    """The status of an export answered outside 2xx-3xx that names no error, as a string."""
    attributes = attributes or {}
    status = attributes.get(A.HTTP_RESPONSE_STATUS_CODE)
    if attributes.get(A.ERROR_TYPE) is not None or not isinstance(status, int):
        return None
    return None if 200 <= status < 400 else str(status)


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
