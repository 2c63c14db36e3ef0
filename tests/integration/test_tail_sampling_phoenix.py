"""A run the tail sampler keeps arrives complete at a real Phoenix; a dropped one not at all.

``configure(tail_sampling=...)`` over OTLP/HTTP: a kept run (over the token limit) with a
sub-agent run and many tool spans, then a run under every limit (dropped). The spans Phoenix
returns for the kept trace are exactly the ones recorded (names, ids, parents); the dropped
trace has none, though it was exported in the same flush.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from _support import Phoenix, poll, spans_in_phoenix
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

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
from agent_otel import TailSamplingPolicy, otel_wrapper
from agent_otel.exporting._configure import configure

pytestmark = pytest.mark.heavy
TOOLS = 40


def script(tokens: int, sub: Any = None) -> list[Any]:
    events: list[Any] = [
        LLMCallStart(model="gpt-4o-mini", provider="openai", call_id="c"),
        TextDelta("plan"),
        Usage(input_tokens=tokens, output_tokens=10),
        LLMCallEnd(call_id="c"),
    ]
    for i in range(TOOLS):
        events.append(ToolCall(id=f"t{i}", function=FunctionCall(name="search", arguments="{}")))
        if i == 0 and sub is not None:
            events.append(sub)
        events.append(ToolResult(tool_call_id=f"t{i}", content="ok"))
    events.append(StepBoundary())
    return events


async def replay(items: list[Any]) -> AsyncIterator[Any]:
    for item in items:
        if callable(item):
            await item()
        else:
            yield item


def test_a_kept_run_arrives_complete(phoenix: Phoenix, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")  # Phoenix has no OTLP metrics receiver
    local = InMemorySpanExporter()  # everything recorded, before sampling
    tel = configure(
        "agent-otel-it-tail-sampling",
        endpoint=phoenix.http_url,
        console=False,
        set_global=False,
        span_processors=[SimpleSpanProcessor(local)],
        tail_sampling=TailSamplingPolicy(keep_ratio=0.0, tokens_over=1000),
    )
    wrap = otel_wrapper(agent_name="root", tracer_provider=tel.tracer_provider)
    sub_wrap = otel_wrapper(agent_name="sub", tracer_provider=tel.tracer_provider)

    async def sub_agent() -> None:
        async for _ in sub_wrap(replay(script(tokens=5))):
            pass

    async def runs() -> None:
        async for _ in wrap(replay(script(tokens=5000, sub=sub_agent))):  # kept: tokens
            pass
        async for _ in wrap(replay(script(tokens=5))):  # dropped
            pass

    try:
        asyncio.run(runs())
        assert tel.force_flush(20_000)
    finally:
        assert tel.shutdown()

    by_trace: dict[str, list[Any]] = {}
    for span in local.get_finished_spans():
        assert span.context is not None
        by_trace.setdefault(format(span.context.trace_id, "032x"), []).append(span)
    kept_id, dropped_id = sorted(by_trace, key=lambda t: -len(by_trace[t]))
    kept = by_trace[kept_id]
    assert len(kept) == 2 * (TOOLS + 3)  # two runs of agent, step, chat and the tools
    expected = {
        format(s.context.span_id, "016x"): format(s.parent.span_id, "016x") if s.parent else None
        for s in kept
        if s.context is not None
    }
    received = poll(
        lambda: (s := spans_in_phoenix(phoenix, kept_id)) and len(s) >= len(expected) and s,
        timeout=60,
        what=f"{len(expected)} spans of the kept trace in Phoenix",
    )
    assert {s["span_id"]: s["parent_span_id"] for s in received} == expected
    assert sorted(s["name"] for s in received) == sorted(s.name for s in kept)
    assert spans_in_phoenix(phoenix, dropped_id) == []  # same flush: none of it went out
