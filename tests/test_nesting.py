"""No span of ours outlives its parent of ours: on every exit path the recorder ends a span's
open children before the span (backends draw a child ending after its parent as broken).

The conftest checks this for every test (``nesting_faults``); these are the paths a hostile
stream or a thread left behind take, each checked by the whole tree at once.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import AsyncIterator
from typing import Any

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    SideCallStart,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agent_contract.scope import inner_tool, tool_scope
from agent_otel.testing import InMemoryTelemetry, nesting_faults, run_script

INCOMPLETE = "agent_otel.incomplete"


async def test_a_stand_in_request_still_open_at_its_tools_result_ends_inside_that_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``SideCallStart(tool_call_id=b)``, ``ToolResult(b)``, then ``LLMCallEnd``: the stand-in
    request is cut short as its tool ends, not ended after it."""
    call = ToolCall(id="b", function=FunctionCall(name="lookup", arguments="{}"))
    events = [LLMCallStart(model="m"), call, LLMCallEnd(),
              SideCallStart(model="emulator", tool_call_id="b"), TextDelta(text="x"),
              ToolResult(tool_call_id="b", content="y"), LLMCallEnd()]  # fmt: skip
    await run_script(otel_telemetry, events, agent_name="a")

    assert otel_telemetry.outline() == [
        ["invoke_agent a", [["step 0", ["chat m", ["execute_tool lookup", ["chat emulator"]]]]]]
    ]
    assert otel_telemetry.nesting_faults() == []
    assert (otel_telemetry.span("chat emulator").attributes or {}).get(INCOMPLETE) is True


async def test_an_inner_tool_still_open_at_its_runs_end_ends_inside_the_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A tool body's thread still inside an inner tool when the stream ends: the inner tool is
    cut short with the run, inside its caller's span, and its block's later exit changes
    nothing."""
    entered, release = threading.Event(), threading.Event()

    def body() -> None:
        with tool_scope("c1", "research"), inner_tool("weather", {"city": "Oslo"}) as call:
            entered.set()
            release.wait(5)
            call.result("late")

    async def stream() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m")
        yield ToolCall(id="c1", function=FunctionCall(name="research", arguments="{}"))
        yield LLMCallEnd()
        thread = threading.Thread(target=contextvars.copy_context().run, args=(body,))
        thread.start()
        await asyncio.to_thread(entered.wait, 5)
        stream.thread = thread  # type: ignore[attr-defined]

    await run_script(otel_telemetry, stream(), agent_name="a")
    release.set()
    stream.thread.join(5)  # type: ignore[attr-defined]

    assert otel_telemetry.outline() == [
        ["invoke_agent a", [["step 0", ["chat m", ["execute_tool research",
                                                   ["execute_tool weather"]]]]]]
    ]  # fmt: skip
    assert otel_telemetry.nesting_faults() == []
    assert otel_telemetry.open_spans() == []
    weather = otel_telemetry.span("execute_tool weather")
    assert (weather.attributes or {}).get(INCOMPLETE) is True


def test_the_check_names_a_child_that_ends_after_its_parent() -> None:
    """``nesting_faults`` itself: a span of ours ended after its parent is named, another
    instrumentation's is not."""
    telemetry = InMemoryTelemetry()
    ours = telemetry.tracer_provider.get_tracer("agent_otel")
    theirs = telemetry.tracer_provider.get_tracer("other")
    from opentelemetry import trace

    parent = ours.start_span("step 0")
    context = trace.set_span_in_context(parent)
    child = ours.start_span("chat m", context=context)
    foreign = theirs.start_span("http", context=context)
    parent.end()
    child.end()
    foreign.end()
    assert nesting_faults(telemetry.spans()) == ["'chat m' ended after its parent 'step 0'"]
    assert telemetry.nesting_faults() == ["'chat m' ended after its parent 'step 0'"]
    telemetry.clear()  # (the conftest's check reads this telemetry too)
