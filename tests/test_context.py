"""Context while pulling: the agent's own spans nest under ours; the consumer's never do.

While the wrapper waits for the agent's next event, the innermost sensible span is current
(open LLM call, else the only open tool call, else the step, else the agent span). Before it
yields, the consumer's context is back, so nothing stays attached across a yield.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agent_otel.testing import InMemoryTelemetry


def wrapper(t: InMemoryTelemetry) -> Any:
    return t.wrapper(agent_name="a")


def span(t: InMemoryTelemetry, name: str) -> ReadableSpan:
    [found] = [s for s in t.spans() if s.name == name]
    return found


def parent_of(t: InMemoryTelemetry, name: str) -> str | None:
    child = span(t, name)
    if child.parent is None:
        return None
    [parent] = [s for s in t.spans() if s.context and s.context.span_id == child.parent.span_id]
    return parent.name


async def test_agent_span_during_llm_call_nests_under_chat(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    tracer = otel_telemetry.tracer_provider.get_tracer("provider-sdk")

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c1")
        with tracer.start_as_current_span("POST /chat/completions"):  # e.g. httpx's span
            pass
        yield TextDelta(text="hi")
        yield LLMCallEnd(call_id="c1")
        with tracer.start_as_current_span("between calls"):
            pass
        yield StepBoundary()
        with tracer.start_as_current_span("after the step"):
            pass
        yield TextDelta(text="x")

    async for _ in wrapper(otel_telemetry)(agent()):
        pass

    assert parent_of(otel_telemetry, "POST /chat/completions") == "chat m"
    assert parent_of(otel_telemetry, "between calls") == "step 0"
    # After the boundary no step is open until the next event arrives: the agent span.
    assert parent_of(otel_telemetry, "after the step") == "invoke_agent a"


async def test_only_open_tool_is_current_while_it_runs(otel_telemetry: InMemoryTelemetry) -> None:
    tracer = otel_telemetry.tracer_provider.get_tracer("tools")

    async def agent() -> AsyncIterator[Any]:
        yield ToolCall(id="t1", function=FunctionCall(name="search", arguments="{}"))
        with tracer.start_as_current_span("search backend"):
            pass
        yield ToolResult(tool_call_id="t1", content="r")
        yield ToolCall(id="t2", function=FunctionCall(name="a", arguments="{}"))
        yield ToolCall(id="t3", function=FunctionCall(name="b", arguments="{}"))
        with tracer.start_as_current_span("two tools open"):  # ambiguous: the step
            pass
        yield ToolResult(tool_call_id="t2", content="r")
        yield ToolResult(tool_call_id="t3", content="r")

    async for _ in wrapper(otel_telemetry)(agent()):
        pass

    assert parent_of(otel_telemetry, "search backend") == "execute_tool search"
    assert parent_of(otel_telemetry, "two tools open") == "step 0"
    assert parent_of(otel_telemetry, "execute_tool a") == "step 0"
    assert parent_of(otel_telemetry, "execute_tool b") == "step 0"


async def test_consumer_context_is_never_changed(otel_telemetry: InMemoryTelemetry) -> None:
    tracer = otel_telemetry.tracer_provider.get_tracer("consumer")
    seen_by_consumer: list[Any] = []

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c1")
        yield TextDelta(text="a")
        yield ToolCall(id="t1", function=FunctionCall(name="search", arguments="{}"))
        yield TextDelta(text="b")
        yield LLMCallEnd(call_id="c1")

    with tracer.start_as_current_span("request handler") as handler:
        before = otel_context.get_current()
        async for _ in wrapper(otel_telemetry)(agent()):
            seen_by_consumer.append(trace.get_current_span())
            assert otel_context.get_current() is before
            with tracer.start_as_current_span("ui update"):
                pass
        assert otel_context.get_current() is before

    assert all(s is handler for s in seen_by_consumer)
    ui_updates = [s for s in otel_telemetry.spans() if s.name == "ui update"]
    assert len(ui_updates) == 5
    assert handler.get_span_context().span_id == next(
        s.context.span_id
        for s in otel_telemetry.spans()
        if s.name == "request handler" and s.context
    )
    for update in ui_updates:
        assert update.parent is not None
        assert update.parent.span_id == handler.get_span_context().span_id
    # And the run itself is a child of the context current when iteration started.
    assert parent_of(otel_telemetry, "invoke_agent a") == "request handler"


async def test_run_is_child_of_context_at_first_pull(otel_telemetry: InMemoryTelemetry) -> None:
    tracer = otel_telemetry.tracer_provider.get_tracer("consumer")

    async def agent() -> AsyncIterator[Any]:
        yield TextDelta(text="a")

    stream = wrapper(otel_telemetry)(agent())  # created outside any span
    with tracer.start_as_current_span("iterates"):
        async for _ in stream:
            pass

    assert parent_of(otel_telemetry, "invoke_agent a") == "iterates"


async def test_run_started_inside_a_tool_call_nests_under_it(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A sub-agent run inside a tool call: its invoke_agent span is a child of that tool."""
    sub_wrapper = otel_telemetry.wrapper(agent_name="sub")

    async def sub_agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="small", call_id="s1")
        yield TextDelta(text="sub answer")
        yield LLMCallEnd(call_id="s1")

    async def agent() -> AsyncIterator[Any]:
        yield ToolCall(id="t1", function=FunctionCall(name="delegate", arguments="{}"))
        answer = [e async for e in sub_wrapper(sub_agent())]  # the tool runs a sub-agent
        yield ToolResult(tool_call_id="t1", content=str(len(answer)))

    async for _ in wrapper(otel_telemetry)(agent()):
        pass

    assert parent_of(otel_telemetry, "invoke_agent sub") == "execute_tool delegate"
    by_id = {s.context.span_id: s for s in otel_telemetry.spans() if s.context}
    chat = span(otel_telemetry, "chat small")
    assert chat.parent is not None
    sub_step = by_id[chat.parent.span_id]
    assert sub_step.name == "step 0"
    assert sub_step.parent is not None
    assert by_id[sub_step.parent.span_id].name == "invoke_agent sub"
    assert len({s.context.trace_id for s in otel_telemetry.spans() if s.context}) == 1
