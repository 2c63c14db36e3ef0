"""Under load nothing is lost silently: received plus counted lost equals created.

configure() exports over OTLP/HTTP and OTLP/gRPC to a real OTLP receiver on loopback
(``benchmarks._receiver``: its own process, every request decoded with opentelemetry-proto),
while real agent runs of 4 spans each go through ``otel_wrapper`` in a tight loop. A burst
that fits the default queue arrives whole; a flood into a small queue loses spans, and every
one of them is counted. The loss counts also reach the receiver as the SDK's own metrics.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest
from benchmarks._harness import run_scripts
from benchmarks._receiver import Receiver
from benchmarks.fig4_memory import _run_script

from agent_otel import _attributes as A
from agent_otel import otel_wrapper
from agent_otel.exporting._configure import configure
from agent_otel.exporting._loss import QUEUE_FULL, SHUTDOWN
from agent_otel.exporting._tally import OTEL_SDK_EXPORTER_SPAN_EXPORTED as EXPORTED
from agent_otel.exporting._tally import OTEL_SDK_PROCESSOR_SPAN_PROCESSED as PROCESSED
from agent_otel.exporting._telemetry import Telemetry

pytestmark = pytest.mark.heavy

SPANS_PER_RUN = 4  # invoke_agent > step > (chat, execute_tool)


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with Receiver() as rx:
        yield rx


def _configure(rx: Receiver, protocol: str, **kwargs: object) -> Telemetry:
    url = rx.grpc_url if protocol == "grpc" else rx.http_url
    return configure(
        f"load-{protocol}",
        endpoint=url,
        protocol=protocol,
        console=False,
        set_global=False,
        metric_export_interval_millis=60_000,  # one export, at shutdown, carries the totals
        **kwargs,  # type: ignore[arg-type]
    )


def _drive(tel: Telemetry, runs: int) -> int:
    """``runs`` agent runs back to back, as fast as the loop goes; the spans they create."""
    wrap = otel_wrapper(
        agent_name="load", tracer_provider=tel.tracer_provider, meter_provider=tel.meter_provider
    )
    scripts = [_run_script(i) for i in range(runs)]

    asyncio.run(run_scripts(wrap, scripts))
    return runs * SPANS_PER_RUN


def _exported_ok(rx: Receiver, protocol: str) -> float:
    points = [
        p
        for p in rx.stats()["sums"]
        if p["name"] == EXPORTED
        and A.ERROR_TYPE not in p["attributes"]
        and p["attributes"]
        .get("otel.component.type", "")
        .startswith("otlp_grpc" if protocol == "grpc" else "otlp_http")
    ]
    return sum(p["value"] for p in points)


def _dropped(rx: Receiver) -> float:
    return rx.sum_of(PROCESSED, **{A.ERROR_TYPE: "queue_full"})


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_a_burst_that_fits_arrives_whole(receiver: Receiver, protocol: str) -> None:
    before = receiver.spans()
    tel = _configure(receiver, protocol)  # the default queue: 16,384 spans
    created = _drive(tel, 3_000)
    assert tel.shutdown()
    received = receiver.spans() - before
    assert received == created == 12_000
    assert sum(tel.spans_lost.values()) == 0


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_a_flood_loses_spans_and_counts_every_one(
    receiver: Receiver, protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    before, before_ok = receiver.spans(), _exported_ok(receiver, protocol)
    before_dropped = _dropped(receiver)
    tel = _configure(receiver, protocol, max_queue_size=256)
    created = _drive(tel, 5_000)
    assert tel.shutdown()
    received = receiver.spans() - before
    lost = tel.spans_lost
    assert lost[QUEUE_FULL] > 0, "the flood did not overflow the queue: the test proves nothing"
    assert received + sum(lost.values()) == created  # counted exactly, nothing silent
    assert lost[SHUTDOWN] == 0  # shutdown drained the queue in time
    assert any("spans lost so far" in r.getMessage() for r in caplog.records)
    # The SDK's own metrics reached the receiver with the others: delivered spans exactly,
    # queue-full drops at least as many as counted (the SDK's count may run a few high).
    assert _exported_ok(receiver, protocol) - before_ok == received
    assert _dropped(receiver) - before_dropped >= lost[QUEUE_FULL]
