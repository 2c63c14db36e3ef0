"""Figure 5: a dead collector. The OTLP/HTTP exporter points at a loopback port that refuses
connections (exporter timeout 0.5 s), behind a ``BatchSpanProcessor``; the baseline is the same
processor in front of an ``InMemorySpanExporter``. Interleaved rounds of R runs each (an LLM call
with 10 chunks and a tool call: 4 spans per run); the per-run cost is the agent thread's CPU time
(the export thread runs beside it) and the wall time. Then the heap after many more runs with the
dead endpoint: flat once the span queue (``max_queue_size``) is full, the excess dropped.
"""

from __future__ import annotations

import gc
import logging
import socket
import time
import tracemalloc
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ._harness import Row, Stat, interleave, ratio, run_scripts
from ._setup import Wrapped
from .fig4_memory import _run_script

QUEUE = 2048
SPAN_BOUND = 4096  # bytes of heap allowed per queued span (an ended SDK span is ~3 KB)


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # closed again: connections to it are refused


class Setup(Wrapped):
    """A ``BatchSpanProcessor`` (queue ``QUEUE``) in front of ``exporter``."""

    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter = exporter
        super().__init__(
            BatchSpanProcessor(exporter, max_queue_size=QUEUE, export_timeout_millis=1000)
        )


async def runs(setup: Setup, count: int, start: int = 0) -> tuple[float, float]:
    """CPU (this thread) and wall time per run, in microseconds."""
    scripts = [_run_script(start + i) for i in range(count)]
    cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
    await run_scripts(setup.wrap, scripts)
    return (time.thread_time_ns() - cpu) / count / 1000, (
        time.perf_counter_ns() - wall
    ) / count / 1000


async def run(quick: bool) -> list[Row]:
    otel_logger = logging.getLogger("opentelemetry")
    counter, propagate = _Count(), otel_logger.propagate
    otel_logger.addHandler(counter)  # the export failures are counted, not printed
    otel_logger.propagate = False
    try:
        return await _run(quick, counter)
    finally:
        otel_logger.removeHandler(counter)
        otel_logger.propagate = propagate


async def _run(quick: bool, failures: _Count) -> list[Row]:
    per_round, rounds, soak = (50, 3, 2_000) if quick else (500, 15, 20_000)
    endpoint = f"http://127.0.0.1:{closed_port()}/v1/traces"
    dead = Setup(OTLPSpanExporter(endpoint=endpoint, timeout=0.5))
    live_exporter = InMemorySpanExporter()
    live = Setup(live_exporter)
    wall: dict[str, list[float]] = {"dead": [], "live": []}

    def measure(name: str, setup: Setup) -> Any:
        async def once() -> float:
            if name == "live":
                live_exporter.clear()
            cpu, elapsed = await runs(setup, per_round)
            wall[name].append(elapsed)
            return cpu

        return once

    res = await interleave({"dead": measure("dead", dead), "live": measure("live", live)}, rounds)
    warm = len(wall["dead"]) - rounds
    wall = {k: v[warm:] for k, v in wall.items()}
    live.tracer_provider.force_flush()
    if not live_exporter.get_finished_spans():
        raise AssertionError("figure 5: the live exporter received no spans")

    # Memory with the dead endpoint: the queue fills, the excess is dropped. The heap level
    # moves with the queue's fill, so compare the highest level of each half of the soak.
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        step = soak // 10
        levels = []
        for i in range(10):
            await runs(dead, step, 10**6 + i * step)
            gc.collect()
            levels.append(tracemalloc.get_traced_memory()[0] - base)
    finally:
        if not was_tracing:
            tracemalloc.stop()
    first, second = max(levels[:5]), max(levels[5:])
    growth = (second - first) / (soak / 2)
    started = time.perf_counter()
    dead.shutdown()
    shutdown_s = time.perf_counter() - started
    live.shutdown()
    if failures.count == 0:
        raise AssertionError("figure 5: the refused endpoint never failed an export")
    fig = "5 dead collector"
    cpu_ratio = ratio(res, "dead", "live")
    wall_ratio = Stat.of([d / w for d, w in zip(wall["dead"], wall["live"], strict=True)])
    bound = QUEUE * SPAN_BOUND
    return [
        Row(fig, "live in-memory exporter: agent-thread CPU per run", Stat.of(res["live"]), "us"),
        Row(fig, "refused endpoint: agent-thread CPU per run", Stat.of(res["dead"]), "us",
            note=f"{failures.count} export failures logged"),
        Row(fig, "refused / live, agent-thread CPU per run", cpu_ratio, "x", "within noise",
            cpu_ratio.lo <= 1.0 <= cpu_ratio.hi or abs(cpu_ratio.median - 1) < 0.1),
        Row(fig, "refused / live, wall time per run", wall_ratio, "x"),
        Row(fig, f"refused endpoint, {soak:,} runs: highest heap above start",
            Stat(second / 1e6, min(levels) / 1e6, max(levels) / 1e6, len(levels)), "MB",
            f"<= {bound / 1e6:.1f} MB (queue {QUEUE} spans)", max(levels) <= bound,
            note=f"2nd-half vs 1st-half peak: {growth:+.1f} B/run; shutdown {shutdown_s:.1f} s"),
    ]  # fmt: skip
