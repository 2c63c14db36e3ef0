"""Metric exemplars name the span each record measures, so a slow bucket opens its span.

The SDK's default exemplar filter keeps a measurement's exemplar only when the context it is
recorded in holds a sampled span. The records used to be made in the consumer's context (the
wrapper restores it before reading each event): with no span of the consumer's there was no
exemplar at all, and with one the exemplar named the consumer's span, not the call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

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
from agent_otel.testing import InMemoryTelemetry, run_script

# metric -> the span it measures (by name in the script below)
MEASURES = {
    "gen_ai.client.operation.duration": "chat m",
    "gen_ai.client.operation.time_to_first_chunk": "chat m",
    "gen_ai.client.token.usage": "chat m",
    "gen_ai.execute_tool.duration": "execute_tool",
    "gen_ai.invoke_agent.duration": "invoke_agent",
    "gen_ai.invoke_agent.inference_calls": "invoke_agent",
    "gen_ai.invoke_agent.tool_calls": "invoke_agent",
}


def _tool(call_id: str, name: str) -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments="{}"))


def script(late_usage: bool = False) -> list[Any]:
    """One call (its usage before or after its end), then two tools open at once."""
    usage = Usage(input_tokens=3, output_tokens=2)
    return [
        LLMCallStart(model="m", provider="openai", call_id="c1"),
        TextDelta("x"),
        *([] if late_usage else [usage]),
        LLMCallEnd(model="m", call_id="c1", finish_reason="tool_calls"),
        *([usage] if late_usage else []),
        _tool("t1", "search"),
        _tool("t2", "fetch"),
        ToolResult("t2", "ok"),
        ToolResult("t1", "ok"),
        StepBoundary(0),
    ]


def exemplars(telemetry: InMemoryTelemetry) -> Iterator[tuple[str, int, int]]:
    """(metric, span id, trace id) of every exemplar (read before anything else collects)."""
    for name, points in telemetry.histograms().items():
        for point in points:
            for exemplar in point.exemplars:
                yield name, exemplar.span_id or 0, exemplar.trace_id or 0


@pytest.mark.parametrize("activate", [True, False], ids=["activation", "no-activation"])
@pytest.mark.parametrize("late_usage", [False, True], ids=["usage", "late-usage"])
@pytest.mark.parametrize("consumer_span", [False, True], ids=["bare", "in-a-request-span"])
async def test_each_records_exemplar_names_the_span_it_measures(
    otel_telemetry: InMemoryTelemetry, late_usage: bool, consumer_span: bool, activate: bool
) -> None:
    request = otel_telemetry.tracer_provider.get_tracer("app").start_span("request")
    with trace.use_span(request, end_on_exit=True) if consumer_span else nullcontext():
        await run_script(otel_telemetry, script(late_usage), activate_context=activate)
    found = list(exemplars(otel_telemetry))
    spans = {s.context.span_id: s for s in otel_telemetry.spans() if s.context}

    assert {name for name, _, _ in found} == set(MEASURES)  # every metric has its exemplars
    for name, span_id, trace_id in found:
        span = spans[span_id]
        assert span.name.startswith(MEASURES[name]), (name, span.name)
        assert trace_id == span.context.trace_id  # type: ignore[union-attr]
    tools = {spans[s].name for name, s, _ in found if name == "gen_ai.execute_tool.duration"}
    assert tools == {"execute_tool search", "execute_tool fetch"}  # each its own, though both
    # were open at once (neither was ever the run's current span)


async def test_an_unsampled_run_gives_no_exemplar() -> None:
    telemetry = InMemoryTelemetry(sampler=ALWAYS_OFF)
    await run_script(telemetry, script())
    assert list(exemplars(telemetry)) == []
    assert set(telemetry.histograms()) >= set(MEASURES)  # its metrics are still recorded
