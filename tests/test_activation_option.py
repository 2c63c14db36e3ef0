"""``otel_wrapper(activate_context=False)``: the agent keeps the consumer's context while it
computes each event, and the recorded spans are otherwise exactly those of the default."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from opentelemetry import trace

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
from agent_otel.testing import FakeClock, InMemoryTelemetry


def _script() -> list[Any]:
    return [
        LLMCallStart(model="m", provider="openai", call_id="c1", params={"temperature": 0.5}),
        TextDelta(text="hel"),
        TextDelta(text="lo"),
        ToolCall(id="t1", function=FunctionCall(name="search", arguments="{}")),
        LLMCallEnd(model="m", call_id="c1", finish_reason="tool_calls"),
        Usage(input_tokens=3, output_tokens=2),
        ToolResult(tool_call_id="t1", content="found", name="search"),
        StepBoundary(index=0),
        LLMCallStart(model="m", provider="openai", call_id="c2"),
        TextDelta(text="done"),
        LLMCallEnd(model="m", call_id="c2", finish_reason="stop"),
        Usage(input_tokens=5, output_tokens=1),
    ]


async def _agent(seen: list[trace.Span]) -> AsyncIterator[Any]:
    """Yields the script, noting the span current each time it computes the next event."""
    for event in _script():
        seen.append(trace.get_current_span())
        yield event
    seen.append(trace.get_current_span())


async def _run(
    activate_context: bool,
) -> tuple[list[Any], list[trace.Span], InMemoryTelemetry, Any]:
    telemetry = InMemoryTelemetry()
    consumer = telemetry.tracer_provider.get_tracer("consumer")
    seen: list[trace.Span] = []
    received: list[Any] = []
    wrap = telemetry.wrapper(agent_name="bench", activate_context=activate_context)
    with FakeClock().installed(), consumer.start_as_current_span("consumer") as outer:
        async for event in wrap(_agent(seen)):
            assert trace.get_current_span() is outer  # the consumer's context while it reads
            received.append(event)
    return received, seen, telemetry, outer


async def test_activation_off_the_agent_sees_the_consumers_context() -> None:
    received, seen, telemetry, outer = await _run(activate_context=False)
    assert len(received) == len(_script())
    assert seen
    assert all(span is outer for span in seen)
    telemetry.shutdown()


async def test_activation_on_the_agent_sees_the_runs_spans() -> None:
    _, seen, telemetry, outer = await _run(activate_context=True)
    ours = {span.name for span in seen if span is not outer}
    assert "chat m" in ours
    assert all(span is not outer for span in seen)
    telemetry.shutdown()


async def test_activation_off_records_the_same_spans() -> None:
    on_events, _, on, _ = await _run(activate_context=True)
    off_events, _, off, _ = await _run(activate_context=False)
    assert [type(e) for e in on_events] == [type(e) for e in off_events]
    tree_on, tree_off = on.tree(), off.tree()
    assert tree_on == tree_off
    names = {s.name for s in off.spans()}
    assert {"consumer", "invoke_agent bench", "chat m", "execute_tool search"} <= names
    for a, b in zip(on.spans(), off.spans(), strict=True):
        assert (a.name, a.kind, a.parent.span_id if a.parent else None) == (
            b.name,
            b.kind,
            b.parent.span_id if b.parent else None,
        )
        assert dict(a.attributes or {}) == dict(b.attributes or {})
        if a.name != "consumer":  # the consumer's span reads the SDK's clock, not ours
            assert (a.start_time, a.end_time) == (b.start_time, b.end_time)
    on.shutdown()
    off.shutdown()
