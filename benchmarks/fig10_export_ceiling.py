"""Figure 10: the export path's ceiling, and what a burst loses, to a real OTLP receiver.

The receiver (``_receiver.py``) runs in its own process on loopback and decodes every request.

* Ceiling: the batch processor and OTLP exporter exactly as ``configure()`` builds them
  (``otlp_span_pipeline``), fed spans of real agent runs (ended already, so producing them
  costs nothing) into a queue big enough to drop none; spans/s is what the receiver counted
  divided by the time it took, up to the last full batch. OTLP/HTTP and OTLP/gRPC, with the
  SDK's batch defaults (512 spans) and ours (1,024), and ours with gzip, to the receiver as
  it is and with 50 ms added to every request (a collector across a network).
* Bursts: 10,000 runs of 4 spans in a tight loop through ``otel_wrapper`` and ``configure()``
  over OTLP/HTTP to the 50 ms receiver, with the SDK's defaults (also queue 2,048 and delay
  5 s, set through ``OTEL_BSP_*``) and with ours; the share of spans lost (received + counted
  lost = created is checked every time).
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan

from agent_otel import otel_wrapper
from agent_otel.exporting._configure import configure
from agent_otel.exporting._pipeline import BatchSettings, otlp_span_pipeline

from ._harness import Row, Stat, interleave, ratio, run_scripts
from ._receiver import Receiver
from ._setup import Sdk
from .fig4_memory import _run_script

SDK_BATCH = {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "512"}
SDK_DEFAULTS = {**SDK_BATCH, "OTEL_BSP_MAX_QUEUE_SIZE": "2048", "OTEL_BSP_SCHEDULE_DELAY": "5000"}
GZIP = {"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip"}
CEILINGS: dict[str, tuple[str, dict[str, str]]] = {
    "http, SDK defaults": ("http/protobuf", SDK_BATCH),
    "http, agent-otel defaults": ("http/protobuf", {}),
    "http, agent-otel defaults + gzip": ("http/protobuf", GZIP),
    "grpc, SDK defaults": ("grpc", SDK_BATCH),
    "grpc, agent-otel defaults": ("grpc", {}),
}
LATENCY_MS = 50  # the second receiver: every trace request takes 50 ms more, as if remote


@contextmanager
def _env(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


async def _recorded(runs: int) -> list[ReadableSpan]:
    sdk = Sdk()
    wrap = otel_wrapper(agent_name="bench", tracer_provider=sdk.tracer_provider)
    await run_scripts(wrap, (_run_script(i) for i in range(runs)))
    spans = sdk.spans()
    sdk.shutdown()
    return spans


def ceiling(rx: Receiver, spans: list[ReadableSpan], n: int, name: str) -> float:
    protocol, env = CEILINGS[name]
    url = rx.grpc_url if protocol == "grpc" else rx.http_url
    with _env({"OTEL_BSP_MAX_QUEUE_SIZE": str(n), **env}):
        _, processor = otlp_span_pipeline(protocol, url, None, None, None, MeterProvider())
        batch = BatchSettings.resolve().max_export_batch_size
    start = rx.spans()
    began = time.perf_counter()
    for span in itertools.islice(itertools.cycle(spans), n):
        processor.on_end(span)
    got = rx.wait_spans(start + n - batch, timeout=120) - start
    elapsed = time.perf_counter() - began
    processor.shutdown()
    return got / elapsed


async def burst(rx: Receiver, runs: int, env: dict[str, str]) -> float:
    """Percent of the burst's spans lost; checks that every span is accounted for."""
    before = rx.spans()
    with _env(env):
        tel = configure("bench", endpoint=rx.http_url, console=False, set_global=False)
    wrap = otel_wrapper(
        agent_name="bench", tracer_provider=tel.tracer_provider, meter_provider=tel.meter_provider
    )
    scripts = [_run_script(i) for i in range(runs)]
    await run_scripts(wrap, scripts)
    tel.shutdown(timeout_millis=60_000)
    received = rx.spans() - before
    lost = sum(tel.spans_lost.values())
    if received + lost != 4 * runs:
        raise AssertionError(f"figure 10: {received} received + {lost} lost != {4 * runs}")
    return 100 * lost / (4 * runs)


async def run(quick: bool) -> list[Row]:
    n, rounds, runs = (4_000, 1, 250) if quick else (12_000, 3, 10_000)
    spans = await _recorded(500)
    fig = "10 export ceiling"
    rows: list[Row] = []
    for latency in (0, LATENCY_MS):
        where = "loopback receiver" if not latency else f"receiver +{latency} ms per request"
        with Receiver(latency_ms=latency) as rx:
            configs: dict[str, Any] = {
                name: (lambda name=name: ceiling(rx, spans, n, name)) for name in CEILINGS
            }
            res = await interleave(configs, rounds, warmup=0)
            for name in CEILINGS:
                rows.append(
                    Row(
                        fig,
                        f"{where}: spans/s, {name}",
                        Stat.of(res[name]),
                        "spans/s",
                        note=f"{n:,} spans of 4-span runs fed to the processor",
                    )
                )
            for proto in ("http", "grpc"):
                rows.append(
                    Row(
                        fig,
                        f"{where}: {proto} ceiling, ours / SDK defaults",
                        ratio(res, f"{proto}, agent-otel defaults", f"{proto}, SDK defaults"),
                        "x",
                    )
                )
            gz = ratio(res, "http, agent-otel defaults + gzip", "http, agent-otel defaults")
            rows.append(Row(fig, f"{where}: http ceiling, gzip / none", gz, "x"))
            if not latency:
                continue
            out = await interleave(
                {"sdk": lambda: burst(rx, runs, SDK_DEFAULTS), "ours": lambda: burst(rx, runs, {})},
                rounds,
                warmup=0,
            )
            for key, label in (("sdk", "SDK batch defaults"), ("ours", "agent-otel defaults")):
                rows.append(
                    Row(
                        fig,
                        f"{where}: burst of {runs:,} runs ({4 * runs:,} spans) "
                        f"over http, {label}: spans lost",
                        Stat.of(out[key]),
                        "%",
                        note="received + counted lost = created, checked",
                    )
                )
    return rows  # fmt: skip
