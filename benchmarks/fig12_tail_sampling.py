"""Figure 12: the tail sampler. CPU per span of ``TailSampler(BatchSpanProcessor)`` against a
plain ``BatchSpanProcessor`` (both in front of a null exporter, the same runs of 4 spans, the
process's CPU so the export thread counts too), with most runs dropped (ratio 0.1) and every
run kept (ratio 1). Then the heap held under a flood of concurrent long runs: C runs open at
once, each growing to S spans, interleaved event by event; the sampler's bound (``max_bytes``)
against the highest heap seen while they run, and the plain processor's as the baseline.
"""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc
from collections.abc import AsyncIterator, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from agent_contract.protocol import FunctionCall, ToolCall, ToolResult
from agent_otel.sampling import TailSampler, TailSamplingPolicy

from ._harness import Row, Stat, diff, interleave, ratio, run_scripts
from ._setup import Wrapped
from .fig4_memory import _run_script

SPANS_PER_RUN = 4  # agent, step, chat, tool


class NullExporter(SpanExporter):
    def __init__(self) -> None:
        self.exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.exported += len(spans)
        return SpanExportResult.SUCCESS


class Pipeline(Wrapped):
    """A ``BatchSpanProcessor`` in front of a null exporter, behind a ``TailSampler`` with
    ``policy`` (none: the plain processor)."""

    def __init__(self, policy: TailSamplingPolicy | None) -> None:
        self.exporter = NullExporter()
        batch = BatchSpanProcessor(self.exporter, max_queue_size=1 << 16)
        self.sampler = TailSampler(batch, policy) if policy is not None else None
        super().__init__(self.sampler or batch)


async def _cpu_per_span(pipe: Pipeline, runs: int) -> float:
    scripts = [_run_script(i) for i in range(runs)]
    pipe.tracer_provider.force_flush()
    cpu = time.process_time_ns()
    await run_scripts(pipe.wrap, scripts)
    pipe.tracer_provider.force_flush()  # the export thread's share is part of the cost
    return (time.process_time_ns() - cpu) / (runs * SPANS_PER_RUN)


async def _long_run(wrap: Any, tools: int) -> None:
    async def events() -> AsyncIterator[Any]:
        for i in range(tools):
            yield ToolCall(id=f"t{i}", function=FunctionCall(name="search", arguments="{}"))
            yield ToolResult(tool_call_id=f"t{i}", content="ok", name="search")
            await asyncio.sleep(0)  # every run open at once, advancing in turn

    async for _ in wrap(events()):
        pass


async def _flood(pipe: Pipeline, concurrent: int, tools: int) -> tuple[int, int]:
    """(highest heap above the start while the runs go on, bytes the sampler held at most)."""
    peak, held = 0, 0
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    done = asyncio.Event()

    async def watch() -> None:
        nonlocal peak, held
        while not done.is_set():
            peak = max(peak, tracemalloc.get_traced_memory()[0] - base)
            if pipe.sampler is not None:
                held = max(held, pipe.sampler.stats().held_bytes)
            await asyncio.sleep(0)

    watcher = asyncio.create_task(watch())
    await asyncio.gather(*(_long_run(pipe.wrap, tools) for _ in range(concurrent)))
    done.set()
    await watcher
    return peak, held


async def run(quick: bool) -> list[Row]:
    runs, rounds = (100, 3) if quick else (1_000, 15)
    concurrent, tools, bound = (20, 20, 256 * 1024) if quick else (200, 100, 8 * 1024 * 1024)
    plain = Pipeline(None)
    dropping = Pipeline(TailSamplingPolicy(keep_ratio=0.1))
    keeping = Pipeline(TailSamplingPolicy(keep_ratio=1.0))
    res = await interleave(
        {
            "plain": lambda: _cpu_per_span(plain, runs),
            "drop": lambda: _cpu_per_span(dropping, runs),
            "keep": lambda: _cpu_per_span(keeping, runs),
        },
        rounds,
    )
    if not plain.exporter.exported or not keeping.exporter.exported:
        raise AssertionError("figure 12: no spans reached the exporter")
    kept = keeping.sampler.stats() if keeping.sampler else None
    if kept is None or kept.runs_dropped or not kept.runs_kept:
        raise AssertionError("figure 12: ratio 1 must keep every run")
    for pipe in (plain, dropping, keeping):
        pipe.shutdown()

    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        flood_plain = Pipeline(None)
        base_peak, _ = await _flood(flood_plain, concurrent, tools)
        flooded = Pipeline(TailSamplingPolicy(keep_ratio=0.0, max_bytes=bound))
        peak, held = await _flood(flooded, concurrent, tools)
        stats = flooded.sampler.stats() if flooded.sampler else None
    finally:
        if not was_tracing:
            tracemalloc.stop()
    flood_plain.shutdown()
    flooded.shutdown()
    assert stats is not None
    fig = "12 tail sampling"
    spans = concurrent * (2 * tools + 2)
    added = Stat.of([peak - base_peak]) if peak > base_peak else Stat.of([0.0])
    return [
        Row(fig, "plain BatchSpanProcessor: CPU per span", Stat.of(res["plain"]), "ns",
            note="agent-otel's recording included (4-span runs)"),
        Row(fig, "TailSampler(BSP) / BSP, CPU per span, ratio 0.1 (90% dropped)",
            ratio(res, "drop", "plain"), "x"),
        Row(fig, "TailSampler(BSP) / BSP, CPU per span, ratio 1 (all kept)",
            ratio(res, "keep", "plain"), "x"),
        Row(fig, "TailSampler added CPU per span, all kept", diff(res, "keep", "plain"), "ns"),
        Row(fig, f"flood: {concurrent} concurrent runs x {2 * tools + 2} spans, bytes held",
            Stat.of([held / 1e6]), "MB", f"<= {bound / 1e6:.1f} MB (max_bytes)", held <= bound,
            note=f"{stats.runs_overflowed} runs overflowed (exported as they went), "
            f"{stats.runs_dropped} dropped whole, {spans:,} spans"),
        Row(fig, "flood: highest heap above start, TailSampler minus plain BSP",
            Stat.of([added.median / 1e6]), "MB", f"~ bound ({bound / 1e6:.1f} MB) + estimate error",
            note=f"plain BSP alone: {base_peak / 1e6:.1f} MB"),
    ]  # fmt: skip
