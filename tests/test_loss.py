"""Span loss in configure()'s OTLP pipeline: counted by cause, exported, told, exact.

The counting logic alone (``SpanLoss``, driven with a fake clock), then configure() itself
against loopback endpoints that refuse or never answer: every span the tests create is either
accounted lost by its cause or (in the heavy load test, tests/integration/test_load.py)
received by a real OTLP receiver.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_contract.protocol import TextDelta
from agent_otel import Telemetry, otel_wrapper
from agent_otel import _attributes as A
from agent_otel.exporting._configure import configure
from agent_otel.exporting._loss import EXPORT_FAILED, QUEUE_FULL, SHUTDOWN, SpanLoss
from agent_otel.exporting._pipeline import (
    DEFAULT_MAX_QUEUE_SIZE,
    DEFAULT_SCHEDULE_DELAY_MILLIS,
    BatchSettings,
)
from agent_otel.exporting._tally import INTERNAL_METRICS_VAR
from agent_otel.exporting._tally import OTEL_SDK_EXPORTER_SPAN_EXPORTED as EXPORTED
from agent_otel.exporting._tally import OTEL_SDK_PROCESSOR_SPAN_PROCESSED as PROCESSED
from agent_otel.recording._open import runs_lost_to_shutdown


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "agent_otel"]


# --- SpanLoss ----------------------------------------------------------------------------------


def test_running_totals_are_logged_at_most_once_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    loss = SpanLoss(log_interval_s=10.0, clock=clock)
    loss.processed(3, "queue_full")  # the first loss is told at once
    loss.processed(2, "queue_full")
    clock.now += 9.9
    loss.exported_batch(512, "ConnectionError")
    assert len(_warnings(caplog)) == 1
    assert "3 spans lost so far (queue_full 3, export_failed 0, shutdown 0)" in _warnings(caplog)[0]
    clock.now += 0.1
    loss.processed(1, "queue_full")  # the interval passed: told again, with running totals
    assert len(_warnings(caplog)) == 2
    assert (
        "518 spans lost so far (queue_full 6, export_failed 512, shutdown 0)"
        in (_warnings(caplog)[1])
    )
    assert "collector" not in _warnings(caplog)[1]  # the hint follows the cause told about
    assert loss.lost() == {QUEUE_FULL: 6, EXPORT_FAILED: 512, SHUTDOWN: 0}


def test_successes_are_not_loss_and_nothing_is_told(caplog: pytest.LogCaptureFixture) -> None:
    loss = SpanLoss()
    for _ in range(4):
        loss.enter()
    loss.processed(4, None)
    loss.exported_batch(4, None)
    assert loss.settle() == 0
    assert loss.total == 0
    assert loss.summary() is None
    assert _warnings(caplog) == []


def test_settle_counts_queued_and_in_flight_spans_as_lost_at_shutdown() -> None:
    loss = SpanLoss()
    recorded: list[int] = []
    loss.on_stranded = recorded.append
    loss.queue_length = lambda: 7
    for _ in range(30):
        loss.enter()
    loss.processed(20, None)  # submitted to the exporter
    loss.processed(3, "queue_full")
    loss.exported_batch(10, None)
    loss.exported_batch(4, "Timeout")  # 6 submitted spans have no result: in flight
    assert loss.settle() == 7 + 6
    assert loss.settle() == 0  # idempotent
    assert recorded == [13]
    assert loss.lost() == {QUEUE_FULL: 3, EXPORT_FAILED: 4, SHUTDOWN: 13}
    assert (
        loss.summary() == "agent-otel: 20 spans lost (3 queue full, 4 export failed, 13 shutdown)"
    )


def test_an_export_that_outlives_the_shutdown_is_not_counted_twice() -> None:
    """A shutdown that gave up counts the batch in flight as lost at shutdown; that export's
    own failure came later (a silent collector's request timing out, a gRPC call cancelled as
    its channel closed at exit) and counted the same spans again, after the total was told:
    "12 spans lost (12 shutdown)", then "24 spans lost so far"."""
    loss = SpanLoss()
    loss.queue_length = lambda: 2
    for _ in range(12):
        loss.enter()
    loss.processed(10, None)  # in flight when the shutdown gives up
    assert loss.settle() == 12
    told = loss.lost()
    loss.exported_batch(10, "StatusCode.CANCELLED")  # the in-flight export fails after it
    loss.processed(2, None)  # the queue's rest, handed on by a thread still draining
    loss.exported_batch(2, None)
    assert loss.lost() == told == {QUEUE_FULL: 0, EXPORT_FAILED: 0, SHUTDOWN: 12}


def test_settle_corrects_an_over_counted_queue_full_by_conservation() -> None:
    # The SDK counts a drop when it sees a full queue; its export thread may pop a batch
    # before the append, so nothing was dropped. Conservation gives the true count.
    loss = SpanLoss()
    loss.queue_length = lambda: 0
    for _ in range(100):
        loss.enter()
    loss.processed(95, None)
    loss.processed(6, "queue_full")  # one too many
    loss.processed(0, None)
    loss.exported_batch(95, None)
    loss.settle()
    assert loss.lost() == {QUEUE_FULL: 5, EXPORT_FAILED: 0, SHUTDOWN: 0}


def test_spans_ended_after_shutdown_are_lost_at_shutdown() -> None:
    loss = SpanLoss()
    loss.queue_length = lambda: 0
    for _ in range(3):
        loss.enter()
    loss.processed(2, "already_shutdown")
    loss.processed(1, None)
    loss.exported_batch(1, None)
    loss.settle()
    assert loss.lost() == {QUEUE_FULL: 0, EXPORT_FAILED: 0, SHUTDOWN: 2}


def test_spans_ended_after_shutdown_are_told_as_such_not_as_a_short_shutdown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A run ended after shutdown (one an exit hook registered before ``configure()`` ran, so
    after its shutdown) was told "shutdown ended before the queue drained: raise
    shutdown_timeout_millis": no timeout brings those spans back."""
    loss = SpanLoss()
    loss.processed(3, "already_shutdown")
    [told] = _warnings(caplog)
    assert "raise shutdown_timeout_millis" not in told
    assert "ended after shutdown()" in told
    assert loss.lost()[SHUTDOWN] == 3


# --- defaults ----------------------------------------------------------------------------------


def test_batch_defaults_env_and_argument_order() -> None:
    ours = BatchSettings.resolve(env={})
    assert ours == BatchSettings(DEFAULT_MAX_QUEUE_SIZE, 1024, DEFAULT_SCHEDULE_DELAY_MILLIS)
    env = {"OTEL_BSP_MAX_QUEUE_SIZE": "4096", "OTEL_BSP_SCHEDULE_DELAY": "250"}
    assert BatchSettings.resolve(env=env) == BatchSettings(4096, 1024, 250)
    assert BatchSettings.resolve(100, env=env) == BatchSettings(100, 100, 250)  # batch <= queue


# --- configure() -------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in [v for v in os.environ if v.startswith("OTEL_")]:
        monkeypatch.delenv(var)


@pytest.fixture
def refused_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # closed again: connections are refused


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def _configured_to(traces_endpoint: str, reader: InMemoryMetricReader, timeout: float) -> Telemetry:
    """``configure()`` exporting to an OTLP receiver's traces endpoint (its base given), the
    SDK's own metrics read by ``reader``, no console."""
    return configure(
        "loss-test",
        endpoint=traces_endpoint.removesuffix("/v1/traces"),
        timeout=timeout,
        metric_readers=[reader],
        console=False,
        set_global=False,
    )


def _spans(tel: object, count: int) -> None:
    tracer = tel.tracer_provider.get_tracer("test")  # type: ignore[attr-defined]
    for i in range(count):
        tracer.start_span(f"s{i}").end()


def _sdk_sums(reader: InMemoryMetricReader) -> dict[tuple[str, str | None], int]:
    sums: dict[tuple[str, str | None], int] = {}
    data = reader.get_metrics_data()
    assert data is not None
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name in (PROCESSED, EXPORTED):
                    for point in metric.data.data_points:  # type: ignore[union-attr]
                        key = (metric.name, (point.attributes or {}).get(A.ERROR_TYPE))
                        sums[key] = sums.get(key, 0) + int(point.value)  # type: ignore[union-attr]
    return sums


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_refused_collector_every_span_counted_lost_by_cause_and_exported_as_metrics(
    protocol: str, refused_endpoint: str, caplog: pytest.LogCaptureFixture
) -> None:
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)  # the SDK's own retry noise
    reader = InMemoryMetricReader()
    stream = io.StringIO()
    tel = configure(
        "loss-test",
        endpoint=refused_endpoint,
        protocol=protocol,
        timeout=0.5,
        max_queue_size=64,
        metric_readers=[reader],
        console=True,
        console_stream=stream,
        set_global=False,
    )
    try:
        _spans(tel, 1_000)
    finally:
        assert tel.shutdown()
    logging.getLogger("opentelemetry").setLevel(logging.NOTSET)
    lost = tel.spans_lost
    assert sum(lost.values()) == 1_000  # nothing reached the collector, all of it counted
    assert lost[QUEUE_FULL] > 0
    assert lost[EXPORT_FAILED] > 0
    told = _warnings(caplog)
    assert any("spans lost so far" in m for m in told)  # told while it happened
    summary = f"agent-otel: 1,000 spans lost ({lost[QUEUE_FULL]:,} queue full, "
    assert any(m.startswith(summary) for m in told)  # and totalled at shutdown
    assert summary in stream.getvalue()  # in the terminal view's shutdown summary too
    sums = _sdk_sums(reader)  # the SDK's own metrics, on configure()'s meter provider
    assert sums[(PROCESSED, "queue_full")] >= lost[QUEUE_FULL]
    failed = sum(v for (name, err), v in sums.items() if name == EXPORTED and err)
    assert failed == lost[EXPORT_FAILED]


def test_shutdown_that_gives_up_counts_queued_and_in_flight_spans(
    silent_endpoint: str, caplog: pytest.LogCaptureFixture
) -> None:
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
    reader = InMemoryMetricReader()
    tel = configure(
        "loss-test",
        endpoint=silent_endpoint,
        timeout=5.0,
        max_queue_size=1_000,
        metric_readers=[reader],
        console=False,
        set_global=False,
        shutdown_timeout_millis=300,
    )
    _spans(tel, 700)  # a batch hangs in flight; the rest waits in the queue
    assert not tel.shutdown()
    logging.getLogger("opentelemetry").setLevel(logging.NOTSET)
    assert tel.spans_lost == {QUEUE_FULL: 0, EXPORT_FAILED: 0, SHUTDOWN: 700}
    assert "agent-otel: 700 spans lost (700 shutdown)" in _warnings(caplog)


@pytest.mark.heavy  # waits on a real exporter's retry or shutdown (seconds)
@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_the_totals_told_at_a_shutdown_that_gave_up_stay_final(
    protocol: str, silent_endpoint: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The batch in flight at a shutdown that gave up is counted lost then; its export
    failing afterwards (its timeout; a gRPC call cancelled as the channel closes) counted it
    again, after the total was told. And the step given up on (the meter provider's
    shutdown, its deadline passed) printed its traceback into an application going on."""
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
    tel = configure(
        "loss-test",
        endpoint=silent_endpoint,
        protocol=protocol,
        timeout=0.3,
        console=False,
        set_global=False,
        shutdown_timeout_millis=100,
    )
    _spans(tel, 12)
    tel.force_flush(50)  # hands the batch to the exporter, which never hears back
    assert not tel.shutdown()
    told, told_lines = tel.spans_lost, len(caplog.records)
    time.sleep(1.0)  # the export in flight times out, or is cancelled, meanwhile
    logging.getLogger("opentelemetry").setLevel(logging.NOTSET)
    assert sum(told.values()) == 12  # each span once: failed in time, or lost at shutdown
    assert tel.spans_lost == told
    late = caplog.records[told_lines:]
    assert not [r.getMessage() for r in late if r.levelno >= logging.INFO], "told after"


def test_spans_ended_after_shutdown_are_counted(refused_endpoint: str) -> None:
    tel = configure(
        "loss-test", endpoint=refused_endpoint, timeout=0.1, console=False, set_global=False
    )
    assert tel.shutdown()
    _spans(tel, 5)
    assert tel.spans_lost[SHUTDOWN] == 5


def test_a_run_ended_after_configures_shutdown_is_told_once_without_hand_wiring_advice(
    refused_endpoint: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A run that ends after ``configure()``'s telemetry shut down (an exit hook registered
    before ``configure()``, which runs after its shutdown) was told twice: by the loss line,
    and by a second warning whose remedy is for providers built by hand ("call
    end_open_runs(tracer_provider) before tracer_provider.shutdown()", a call a user of
    ``configure()`` never makes). Told once now, by the loss line; still counted."""
    tel = configure(
        "loss-test", endpoint=refused_endpoint, timeout=0.1, console=False, set_global=False
    )
    assert tel.shutdown()
    lost_before = runs_lost_to_shutdown()

    async def late() -> None:
        async def agent() -> AsyncIterator[TextDelta]:
            yield TextDelta(text="late")

        wrapper = otel_wrapper(
            tracer_provider=tel.tracer_provider, meter_provider=tel.meter_provider
        )
        [_ async for _ in wrapper(agent())]

    asyncio.run(late())
    told = _warnings(caplog)
    assert [line for line in told if "ended after shutdown()" in line], told
    assert not [line for line in told if "end_open_runs" in line], told
    assert runs_lost_to_shutdown() == lost_before + 1
    assert tel.spans_lost[SHUTDOWN] >= 1


def test_other_processors_keep_the_environments_choice(refused_endpoint: str) -> None:
    tel = configure(
        "loss-test", endpoint=refused_endpoint, timeout=0.1, console=False, set_global=False
    )
    assert INTERNAL_METRICS_VAR not in os.environ  # switched on only while ours were built
    reader = InMemoryMetricReader()
    theirs = TracerProvider()
    theirs.add_span_processor(
        BatchSpanProcessor(InMemorySpanExporter(), meter_provider=MeterProvider([reader]))
    )
    theirs.get_tracer("t").start_span("s").end()
    theirs.shutdown()
    tel.shutdown()
    data = reader.get_metrics_data()
    assert data is None or not data.resource_metrics  # no SDK metrics for their processor


def test_console_only_has_no_loss_account() -> None:
    tel = configure("loss-test", console=True, console_stream=io.StringIO(), set_global=False)
    _spans(tel, 3)
    tel.shutdown()
    assert tel.spans_lost == {}


@pytest.mark.parametrize("status", [400, 413])
def test_spans_a_collector_refuses_by_http_status_are_counted_lost_with_that_status(
    status: int, caplog: pytest.LogCaptureFixture
) -> None:
    """A Collector that answers but refuses (413: the request over its limit; 400; 503 once its
    queue is full or its memory limiter refuses, retried first, tests/integration/
    test_remote_tier.py) loses the batch. The SDK's exporter reports such an answer with no
    error (it has a status code, no exception), so its ``otel.sdk.exporter.span.exported``
    counted the batch exported: nothing was told lost. Each refused span is ``export_failed``,
    on the SDK's metric too, with the status as ``error.type``."""
    from otlp_receiver import receiving

    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)  # the SDK's own error line
    reader = InMemoryMetricReader()
    with receiving(status=status) as received:
        tel = _configured_to(received.endpoint, reader, timeout=2)
        try:
            _spans(tel, 10)
            tel.force_flush(5_000)
        finally:
            assert tel.shutdown()
    logging.getLogger("opentelemetry").setLevel(logging.NOTSET)
    names = [name for name, _ in received.spans]
    assert set(names) == {f"s{i}" for i in range(10)}  # sent, and refused
    if status != 413:  # (413, too large: sent again in halves, down to each span alone)
        assert len(names) == 10
    assert tel.spans_lost == {QUEUE_FULL: 0, EXPORT_FAILED: 10, SHUTDOWN: 0}
    assert any("10 spans lost" in m for m in _warnings(caplog))
    sums = _sdk_sums(reader)
    assert sums.get((EXPORTED, str(status))) == 10
    assert (EXPORTED, None) not in sums


def test_a_collector_with_a_lower_request_limit_gets_every_span_in_smaller_requests(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A collector, or the proxy in front of it (nginx refuses a body over 1 MiB by default),
    answers a request over its limit with 413 (HTTP's "Content Too Large"), whatever the spans
    in it weigh one by one: a batch of heavy spans under agent-otel's 3 MiB estimate was lost
    whole. A refused request is sent again in halves, down to one span, and later batches go
    in requests under the size learned: only a span over the limit alone is lost, counted
    ``export_failed`` with the status."""
    from otlp_receiver import receiving

    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)  # the SDK's own error line
    reader = InMemoryMetricReader()
    heavy = "x" * 150_000
    with receiving(max_bytes=1024 * 1024) as received:
        tel = _configured_to(received.endpoint, reader, timeout=5)
        try:
            tracer = tel.tracer_provider.get_tracer("test")
            for i in range(20):  # 3 MB: one request by the estimate, three times the limit
                tracer.start_span(f"first{i}", attributes={"w": heavy}).end()
            tracer.start_span("too-big-alone", attributes={"w": "y" * 1_500_000}).end()
            tel.force_flush(10_000)
            refused_first = received.refused
            for i in range(20):
                tracer.start_span(f"second{i}", attributes={"w": heavy}).end()
            tel.force_flush(10_000)
        finally:
            tel.shutdown()
    logging.getLogger("opentelemetry").setLevel(logging.NOTSET)
    names = [name for name, _ in received.spans]
    expected = [f"first{i}" for i in range(20)] + [f"second{i}" for i in range(20)]
    assert sorted(names) == sorted(expected)  # each once, the one too big alone excepted
    assert received.refused == refused_first  # the second batch was sent under the limit
    assert tel.spans_lost == {QUEUE_FULL: 0, EXPORT_FAILED: 1, SHUTDOWN: 0}
    sums = _sdk_sums(reader)
    assert sums.get((EXPORTED, None)) == 40
    assert sums.get((EXPORTED, "413")) == 1
    told = [m for m in _warnings(caplog) if "413" in m]
    assert len(told) == 1 and "too large" in told[0], _warnings(caplog)


@pytest.mark.heavy  # waits on a real exporter's retry or shutdown (seconds)
def test_a_shutdown_that_gives_up_tells_its_reason_once_not_the_sdks_double_shutdowns(
    silent_endpoint: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A collector that never answers: the shutdown gives up at its bound and says why, once.
    It then shuts the exporters down itself, to break the stuck export off: the span exporter
    its provider had shut down already, and the log exporter its provider shut down again once
    the stuck export ended: each time the SDK warned "Exporter already shutdown, ignoring
    call", lines of noise under the one reason."""
    tel = configure(
        "loss-test",
        endpoint=silent_endpoint,
        timeout=1.0,
        console=False,
        set_global=False,
        shutdown_timeout_millis=300,
    )
    from agent_otel import record_evaluation

    record_evaluation("judge", score=1.0, logger_provider=tel.logger_provider)  # queued
    assert not tel.shutdown()  # the span exporter shut down first, then the logs' export hung
    time.sleep(1.5)  # the stuck export times out; its provider's shutdown goes on
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert sum("is the collector reachable?" in line for line in lines) == 1, lines
    assert not [line for line in lines if "already shutdown" in line], lines
