"""Figure 11: memory held per open run, and what the garbage collector costs with many open.

An open run here is a wrapped agent stream suspended in the middle of an LLM call, after a
finished tool call: its agent, step and chat spans are open, the tool span has ended (and was
exported). Heap per open run (tracemalloc) for 10,000 such runs, split into the SDK's span
objects (the same ``start_span`` calls with the same attributes, held open without us) and the
rest (our recorder state, the wrapper generator, the contexts). Then CPU per run when 10,000 runs
are open at once (all opened, then all finished), with the collector on (default thresholds),
tuned (a higher young-generation threshold) and off; ``docs/export.md`` explains the ratios.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry.trace import SpanKind, set_span_in_context

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agent_otel import _attributes as A
from agent_otel import otel_wrapper

from ._harness import Row, Stat, interleave, ratio
from ._setup import Sdk

TUNED = (50_000, 20, 100)  # fewer young collections; see docs/export.md


def _one(value: float) -> Stat:
    return Stat(value, value, value, 1)


def _heap() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


async def _paused(i: int) -> AsyncIterator[Any]:
    """A run that stops mid-call: the caller pulls it up to its last TextDelta and holds it."""
    yield ToolCall(id=f"t{i}", function=FunctionCall(name="search", arguments="{}"))
    yield ToolResult(tool_call_id=f"t{i}", content="ok", name="search")
    yield LLMCallStart(model="m", provider="openai", call_id=f"c{i}", params={"temperature": 0.1})
    yield TextDelta(text="tok ")
    yield TextDelta(text="tok ")
    yield LLMCallEnd(model="m", call_id=f"c{i}", finish_reason="stop")  # once resumed


async def open_runs(wrap: Any, count: int) -> list[Any]:
    held = []
    for i in range(count):
        stream = wrap(_paused(i))
        for _ in range(5):
            await stream.__anext__()
        held.append(stream)
    return held


def sdk_alone(sdk: Sdk, count: int) -> list[Any]:
    """The SDK spans of the same open runs, started directly with the same attributes."""
    tracer = sdk.tracer_provider.get_tracer("bench")
    held = []
    for i in range(count):
        agent = tracer.start_span(
            "invoke_agent bench",
            None,
            SpanKind.INTERNAL,
            {A.OPERATION_NAME: A.OP_INVOKE_AGENT, A.AGENT_NAME: "bench"},
        )
        ctx = set_span_in_context(agent)
        step = tracer.start_span("step 0", ctx, SpanKind.INTERNAL, {A.STEP_INDEX: 0})
        sctx = set_span_in_context(step, ctx)
        tracer.start_span(
            "execute_tool search",
            sctx,
            SpanKind.INTERNAL,
            {A.OPERATION_NAME: A.OP_EXECUTE_TOOL, A.TOOL_NAME: "search", A.TOOL_CALL_ID: f"t{i}"},
        ).end()
        chat = tracer.start_span(
            "chat m",
            sctx,
            SpanKind.CLIENT,
            {
                A.OPERATION_NAME: A.OP_CHAT,
                A.PROVIDER_NAME: "openai",
                A.REQUEST_MODEL: "m",
                A.REQUEST_TEMPERATURE: 0.1,
            },
        )
        held.append((agent, step, chat))
    return held  # fmt: skip


async def _bare(count: int) -> list[Any]:
    held = []
    for i in range(count):
        stream = _paused(i)
        for _ in range(5):
            await stream.__anext__()
        held.append(stream)
    return held


async def run(quick: bool) -> list[Row]:
    opened, rounds = (1_000, 2) if quick else (10_000, 3)
    sdk = Sdk(keep_spans=False)
    wrap = otel_wrapper(
        agent_name="bench", tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider
    )
    await open_runs(wrap, 50)  # warm every cache before measuring
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        base = _heap()
        held: list[Any] = await open_runs(wrap, opened)
        total = (_heap() - base) / opened
        base = _heap()
        spans = sdk_alone(sdk, opened)
        sdk_bytes = (_heap() - base) / opened
        del spans
        base = _heap()
        bare = await _bare(opened)
        bare_bytes = (_heap() - base) / opened
        del bare
    finally:
        if not was_tracing:
            tracemalloc.stop()
    for stream in held:
        async for _ in stream:  # finish them
            pass
    del held

    async def open_and_finish() -> float:
        """CPU per run for ``opened`` runs that are all open at once, then all finish."""
        cpu = time.process_time_ns()
        streams = await open_runs(wrap, opened)
        for stream in streams:
            async for _ in stream:
                pass
        return (time.process_time_ns() - cpu) / opened / 1000

    def collector(mode: str) -> Any:
        async def measure() -> float:
            thresholds = gc.get_threshold()
            if mode == "off":
                gc.disable()
            elif mode == "tuned":
                gc.set_threshold(*TUNED)
            try:
                return await open_and_finish()
            finally:
                gc.set_threshold(*thresholds)
                gc.enable()

        return measure

    res = await interleave({m: collector(m) for m in ("on", "tuned", "off")}, rounds)
    sdk.shutdown()
    fig = "11 open runs"
    ours = total - sdk_bytes - bare_bytes
    return [
        Row(fig, f"{opened:,} open runs: heap per open run", _one(total / 1024), "KiB",
            note=f"SDK spans {sdk_bytes / 1024:.1f} KiB, the agent's own generator "
            f"{bare_bytes / 1024:.1f} KiB, agent-otel's state {ours / 1024:.1f} KiB"),
        Row(fig, f"{opened:,} open runs: agent-otel's own state per open run", _one(ours / 1024),
            "KiB", note="heap per open run minus the SDK spans and the bare agent generator"),
        Row(fig, f"{opened:,} runs open at once: CPU per run, gc off", Stat.of(res["off"]), "us"),
        Row(fig, f"{opened:,} runs open at once: CPU per run, gc on / gc off",
            ratio(res, "on", "off"), "x", note=f"default thresholds {gc.get_threshold()}"),
        Row(fig, f"{opened:,} runs open at once: CPU per run, gc tuned / gc off",
            ratio(res, "tuned", "off"), "x", note=f"gc.set_threshold{TUNED}"),
    ]  # fmt: skip
