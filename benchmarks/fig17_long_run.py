"""Figure 17: a long run with a growing history: bytes exported and memory held per step.

One run of S steps; each step is one LLM call whose ``LLMCallStart.messages`` is the whole
history so far (as agents resend it), then the answer, then a ``StepBoundary``; the history
grows by a user message and the answer every step. Content capture is on. Measured: the OTLP
bytes of every exported span (encoded as the OTLP exporter encodes them, one span at a time,
then dropped) and the peak memory the process held during the run (``tracemalloc``: the
agent's own history included, which grows with new content by construction). The figure is
the growth when S doubles: 2x is linear in new content, 4x would be the square of the history.
``history="new"`` records each message once; the default (``"every_call"``) records the whole
history on every call, bounded per call by ``max_bytes``.

``tests/test_long_run.py`` runs :func:`measure` at two sizes and fails if the growth is not
linear; this figure runs it at 5,000 and 10,000 steps (the default mode at 500 and 1,000).

A long run of tool calls (:func:`measure_tools`): turns of one model call asking for three tools,
their results and a ``StepBoundary``, content capture on, at 10,000 and 20,000 tool calls. What
a run holds for its calls is what is open (the turn in progress), so the peak memory held
should not grow when the calls double (``tests/test_tool_scope.py`` counts the ended calls a
run remembers, in runs of thousands of calls).
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import ContentCapture, otel_wrapper

from ._harness import Row, Stat

SIZES = (5_000, 10_000)
QUICK_SIZES = (50, 100)
# The default mode at a tenth of the steps: it encodes up to max_bytes per call, so 10,000
# steps of it take minutes; its bytes per step are the comparison.
EVERY_CALL_SIZES = (500, 1_000)
TOOL_SIZES = (10_000, 20_000)  # tracemalloc makes a tool call cost about 5 ms
QUICK_TOOL_SIZES = (100, 200)
TOOLS_PER_TURN = 3


class OtlpBytes(SpanExporter):
    """Counts the OTLP protobuf bytes of what it is given, and keeps nothing."""

    def __init__(self) -> None:
        self.bytes = 0
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.bytes += encode_spans(spans).ByteSize()
        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


@dataclass(frozen=True)
class LongRun:
    steps: int
    exported_bytes: int
    spans: int
    peak_memory: int  # bytes; 0 when not traced


async def _agent(steps: int) -> AsyncIterator[Any]:
    """The run: its history grows by two short messages a step and is sent whole each call."""
    history: list[dict[str, str]] = [{"role": "system", "content": "You answer briefly."}]
    for step in range(steps):
        history.append({"role": "user", "content": f"question {step}: what comes next?"})
        yield LLMCallStart(model="m", call_id=f"c{step}", messages=history)
        answer = f"answer {step}: the next thing."
        yield TextDelta(text=answer)
        yield LLMCallEnd(call_id=f"c{step}", finish_reason="stop")
        yield Usage(input_tokens=len(history), output_tokens=8)
        yield StepBoundary()
        history.append({"role": "assistant", "content": answer})


async def _tool_agent(calls: int, per_turn: int) -> AsyncIterator[Any]:
    """``calls`` tool calls, each with a new id: ``per_turn`` a model call (0: tools only, no
    model call between them), then their results and a ``StepBoundary``."""
    for turn, first in enumerate(range(0, calls, per_turn or 1)):
        ids = [f"call_{n}" for n in range(first, min(calls, first + (per_turn or 1)))]
        if per_turn:
            yield LLMCallStart(model="m", call_id=f"c{turn}", messages=[])
        for call_id in ids:
            yield ToolCall(id=call_id, function=FunctionCall(name="add", arguments="{}"))
        if per_turn:
            yield LLMCallEnd(call_id=f"c{turn}", finish_reason="tool_calls")
            yield Usage(input_tokens=10, output_tokens=5)
        for call_id in ids:
            yield ToolResult(tool_call_id=call_id, content="ok")
        yield StepBoundary()


def measure(steps: int, capture: ContentCapture, *, memory: bool = True) -> LongRun:
    """One long run of ``steps`` steps with ``capture``: what it exported and held."""
    return _measure(_agent(steps), steps, capture, memory)


def measure_tools(
    calls: int, capture: ContentCapture | None, per_turn: int = TOOLS_PER_TURN
) -> LongRun:
    """One long run of ``calls`` tool calls (``per_turn`` a model call; 0: tools only) with
    ``capture``: what it exported and held (``steps``: the calls)."""
    return _measure(_tool_agent(calls, per_turn), calls, capture, True)


def _measure(
    agent: AsyncIterator[Any], steps: int, capture: ContentCapture | None, memory: bool
) -> LongRun:
    exporter = OtlpBytes()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    wrap = otel_wrapper(tracer_provider=provider, capture_content=capture)

    async def consume() -> None:
        async for _ in wrap(agent):
            pass

    gc.collect()
    if memory:
        tracemalloc.start()
    try:
        asyncio.run(consume())
        peak = tracemalloc.get_traced_memory()[1] if memory else 0
    finally:
        if memory:
            tracemalloc.stop()
    provider.shutdown()
    return LongRun(steps, exporter.bytes, exporter.spans, peak)


def _tool_rows(small: LongRun, large: LongRun) -> list[Row]:
    growth = large.peak_memory / small.peak_memory
    return [
        Row("17 long run",
            f"{small.steps:,} vs {large.steps:,} tool calls: peak memory held, growth when "
            "calls double", Stat.of([growth]), "x", "<= 1.1", growth <= 1.1,
            note=f"{small.peak_memory / 2**20:.2f} MiB, {large.peak_memory / 2**20:.2f} MiB")
    ]  # fmt: skip


def _rows(label: str, small: LongRun, large: LongRun, memory: bool) -> list[Row]:
    fig = "17 long run"
    rows = [
        Row(fig, f"{label}: bytes exported per step at {n.steps:,} steps",
            Stat.of([n.exported_bytes / n.steps]), "B")
        for n in (small, large)
    ]  # fmt: skip
    rows.append(
        Row(fig, f"{label}: bytes exported, growth when steps double",
            Stat.of([large.exported_bytes / small.exported_bytes]), "x",
            "<= 2.2" if memory else "", large.exported_bytes <= 2.2 * small.exported_bytes
            if memory else None)
    )  # fmt: skip
    if memory:
        rows.append(
            Row(fig, f"{label}: peak memory held, growth when steps double",
                Stat.of([large.peak_memory / small.peak_memory]), "x", "<= 2.2",
                large.peak_memory <= 2.2 * small.peak_memory,
                note=f"{small.peak_memory / 2**20:.1f} MiB, {large.peak_memory / 2**20:.1f} MiB")
        )  # fmt: skip
    return rows


async def run(quick: bool) -> list[Row]:
    small, large = QUICK_SIZES if quick else SIZES
    rows: list[Row] = []
    new = ContentCapture(history="new")
    rows += _rows(
        'history="new"',
        await asyncio.to_thread(measure, small, new),
        await asyncio.to_thread(measure, large, new),
        True,
    )
    every = ContentCapture()
    small, large = QUICK_SIZES if quick else EVERY_CALL_SIZES
    rows += _rows(
        "every call (default, 32 KiB per call)",
        await asyncio.to_thread(measure, small, every, memory=False),
        await asyncio.to_thread(measure, large, every, memory=False),
        False,
    )
    small, large = QUICK_TOOL_SIZES if quick else TOOL_SIZES
    rows += _tool_rows(
        await asyncio.to_thread(measure_tools, small, new),
        await asyncio.to_thread(measure_tools, large, new),
    )
    return rows
