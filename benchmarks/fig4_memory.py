"""Figures 4 and 6: memory.

4. A one-million-event stream and ten thousand sequential runs leave memory flat once spans are
   exported (the exporter here counts spans and keeps none): Python heap (tracemalloc) growth
   per event between half-way and the end of the stream, per run between the 5,000th and the
   10,000th run, should be ~0 bytes. With content capture on, the heap growth of a long stream
   stays within the capture budgets (each streamed call buffers at most ``max_bytes`` of output
   text and as much reasoning text).
6. The recorder's own memory per open span: heap allocated per open tool call and per open LLM
   call of one run, minus what the SDK alone allocates for the same ``start_span`` calls.

Memory figures are single measurements (deterministic to within allocator noise), not rounds.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import SpanKind

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import ContentCapture, otel_wrapper
from agent_otel import _attributes as A
from agent_otel.recording._options import settings_from
from agent_otel.recording._recorder import RunRecorder

from ._harness import Row, Stat, run_scripts
from ._setup import Sdk


def _heap() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _one(value: float) -> Stat:
    return Stat(value, value, value, 1)


async def long_stream(n: int, text: str = "tok ", reasoning: bool = False) -> AsyncIterator[Any]:
    yield LLMCallStart(model="m", provider="openai", call_id="c1")
    for i in range(n):
        yield TextDelta(text=f"{text}{i % 10}")  # new event and text each time, as in real life
        if reasoning:
            yield ReasoningDelta(text=f"{text}{i % 10}")
    yield LLMCallEnd(model="m", call_id="c1", finish_reason="stop")
    yield Usage(input_tokens=1, output_tokens=n)


async def _stream_growth(
    wrap: Any, n: int, text: str = "tok "
) -> tuple[float, int, int, dict[int, int]]:
    """Heap growth per event over the second half of a long stream; peak growth; RSS growth;
    heap held (above the start) at each checkpoint."""
    marks: dict[int, int] = {}
    checkpoints = {n // 10, n // 2, n}
    i = 0
    tracemalloc.reset_peak()
    base = _heap()
    rss0 = _rss()
    async for event in wrap(long_stream(n, text)):
        if isinstance(event, TextDelta):
            i += 1
            if i in checkpoints:
                del event
                marks[i] = _heap()
    peak = tracemalloc.get_traced_memory()[1] - base
    per_event = (marks[n] - marks[n // 2]) / (n - n // 2)
    return per_event, peak, _rss() - rss0, {k: v - base for k, v in marks.items()}


def _run_script(i: int) -> list[Any]:
    return [
        LLMCallStart(model="m", provider="openai", call_id=f"c{i}", params={"temperature": 0.1}),
        *(TextDelta(text="tok ") for _ in range(5)),
        ToolCall(id=f"t{i}", function=FunctionCall(name="search", arguments="{}")),
        Usage(input_tokens=10, output_tokens=5),
        LLMCallEnd(model="m", call_id=f"c{i}", finish_reason="tool_calls"),
        ToolResult(tool_call_id=f"t{i}", content="ok", name="search"),
    ]


async def _runs_growth(wrap: Any, runs: int) -> tuple[float, int]:
    warm, half = runs // 10, runs // 2
    marks: dict[int, int] = {}
    rss0 = _rss()
    for i in range(1, runs + 1):
        await run_scripts(wrap, [_run_script(i)])
        if i in (warm, half, runs):
            marks[i] = _heap()
    return (marks[runs] - marks[half]) / (runs - half), _rss() - rss0


def _open_span_bytes(kind: str, k: int) -> tuple[float, float]:
    """Heap per open span: (recorder total incl. the SDK span, SDK span alone)."""
    sdk = Sdk(keep_spans=False)
    settings = settings_from(
        {
            "agent_name": "bench",
            "tracer_provider": sdk.tracer_provider,
            "meter_provider": sdk.meter_provider,
        }
    )
    rec = RunRecorder(settings, otel_context.get_current())
    rec.llm_start("m", "openai", "warm", None, None)  # opens the step; warms every cache
    rec.llm_end("m", "warm", "stop", None)
    ids = [f"{kind}{i}" for i in range(k)]
    before = _heap()
    for cid in ids:
        if kind == "tool":
            rec.tool_call(cid, "search", "{}", None)
        else:
            rec.llm_start("m", "openai", cid, None, None)
    total = (_heap() - before) / k
    tracer = settings.tracer
    parent = rec.run.context  # the parent makes no difference to a span's size
    spans = []
    before = _heap()
    for cid in ids:
        if kind == "tool":
            attributes: dict[str, Any] = {
                A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
                A.TOOL_NAME: "search",
                A.TOOL_TYPE: A.TOOL_TYPE_FUNCTION,
                A.TOOL_CALL_ID: cid,
            }
            spans.append(
                tracer.start_span("execute_tool search", parent, SpanKind.INTERNAL, attributes)
            )
        else:
            attributes = {
                A.OPERATION_NAME: A.OP_CHAT,
                A.PROVIDER_NAME: "openai",
                A.REQUEST_MODEL: "m",
            }
            span = tracer.start_span("chat m", parent, SpanKind.CLIENT, attributes)
            span.set_attribute(A.LLM_CALL_ID, cid)
            spans.append(span)
    alone = (_heap() - before) / k
    rec.end(A.END_EXHAUSTED)
    for span in spans:
        span.end()
    sdk.shutdown()
    return total, alone


async def run(quick: bool) -> list[Row]:
    n, runs, k = (20_000, 1_000, 200) if quick else (1_000_000, 10_000, 2_000)
    sdk = Sdk(keep_spans=False)
    wrap = otel_wrapper(
        agent_name="bench", tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider
    )
    budget = ContentCapture(max_bytes=32 * 1024)
    capture = otel_wrapper(
        agent_name="bench",
        tracer_provider=sdk.tracer_provider,
        meter_provider=sdk.meter_provider,
        capture_content=budget,
    )
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        per_event, peak, rss, _ = await _stream_growth(wrap, n)
        per_run, rss_runs = await _runs_growth(wrap, runs)
        cap_n = n // 4
        cap_event, cap_peak, _, held = await _stream_growth(capture, cap_n, text="x" * 100)
        tool_total, tool_sdk = _open_span_bytes("tool", k)
        llm_total, llm_sdk = _open_span_bytes("llm", k)
    finally:
        if not was_tracing:
            tracemalloc.stop()
    exported = sdk.span_count()
    sdk.shutdown()
    if exported == 0:
        raise AssertionError("figure 4: no spans exported")
    fig4, fig6 = "4 memory", "6 per-span memory"
    # The one open call buffers at most max_bytes characters of output text (in 100-character
    # parts here, ~1.5 bytes of heap per character with the str headers and the list).
    limit = 2 * budget.max_bytes
    text_mb = cap_n * 100 / 1e6
    half, end = held[cap_n // 2], held[cap_n]
    return [
        Row(fig4, f"{n:,}-event stream: heap growth per event (2nd half)", _one(per_event),
            "B/event", "~0", abs(per_event) < 1,
            note=f"peak {peak / 1024:.0f} KiB over the run; RSS +{rss / 1024:.0f} KiB"),
        Row(fig4, f"{runs:,} sequential runs: heap growth per run (2nd half)", _one(per_run),
            "B/run", "~0", abs(per_run) < 8, note=f"RSS +{rss_runs / 1024:.0f} KiB"),
        Row(fig4, f"content capture on ({budget.max_bytes // 1024} KiB budget), {cap_n:,} x "
            f"100-char deltas ({text_mb:.1f} MB text): heap held at the end of the stream",
            _one(end / 1024), "KiB", f"<= {limit // 1024} KiB, flat",
            end <= limit and abs(end - half) < 4096,
            note=f"held half-way {half / 1024:.0f} KiB; growth per event in 2nd half "
            f"{cap_event:.2f} B; peak {cap_peak / 1024:.0f} KiB (the output attribute encoded "
            "at the call's end)"),
        Row(fig6, "open tool call: recorder state (excl. SDK span)",
            _one(tool_total - tool_sdk), "B/span",
            note=f"incl. SDK span {tool_total:.0f} B; SDK span alone {tool_sdk:.0f} B"),
        Row(fig6, "open LLM call: recorder state (excl. SDK span)", _one(llm_total - llm_sdk),
            "B/span", note=f"incl. SDK span {llm_total:.0f} B; SDK span alone {llm_sdk:.0f} B"),
    ]  # fmt: skip
