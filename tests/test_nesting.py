"""No span of ours outlives its parent of ours: on every exit path the recorder ends a span's
open children before the span (backends draw a child ending after its parent as broken).

The conftest checks this for every test (``nesting_faults``); these are the paths a hostile
stream or a thread left behind take, each checked by the whole tree at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    SideCallStart,
    StepBoundary,
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


@pytest.mark.parametrize(
    ("left_at", "tree"),
    [
        ("the run's end", [["step 0", ["chat m", ["execute_tool research",
                                                  ["execute_tool weather"]]]]]),
        ("its caller's result", [["step 0", ["chat m", ["execute_tool research",
                                                        ["execute_tool weather"]]]]]),
        ("its step's end", [["step 0", ["chat m", "execute_tool weather"]],
                            ["step 1", ["chat m"]]]),
    ],
)  # fmt: skip
async def test_an_inner_tool_still_open_when_its_parent_ends_is_cut_short_inside_it(
    otel_telemetry: InMemoryTelemetry, left_at: str, tree: list[Any]
) -> None:
    """A thread still inside an inner tool when the span it runs under ends (its caller's
    tool span at the result or the run's end, the step it runs in outside a tool body): the
    inner tool is cut short then, inside that span, and its block's later exit changes
    nothing."""
    entered, release = threading.Event(), threading.Event()
    in_tool = left_at != "its step's end"

    def body() -> None:
        with contextlib.ExitStack() as stack:
            if in_tool:
                stack.enter_context(tool_scope("c1", "research"))
            call = stack.enter_context(inner_tool("weather", {"city": "Oslo"}))
            entered.set()
            release.wait(5)
            call.result("late")

    threads: list[threading.Thread] = []

    async def stream() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m")
        if in_tool:
            yield ToolCall(id="c1", function=FunctionCall(name="research", arguments="{}"))
        yield LLMCallEnd()
        thread = threading.Thread(target=contextvars.copy_context().run, args=(body,))
        thread.start()
        threads.append(thread)
        await asyncio.to_thread(entered.wait, 5)
        if left_at == "its caller's result":
            yield ToolResult(tool_call_id="c1", content="y")
        elif left_at == "its step's end":
            yield StepBoundary(index=0)
            yield LLMCallStart(model="m")
            yield LLMCallEnd()

    await run_script(otel_telemetry, stream(), agent_name="a")
    release.set()
    threads[0].join(5)

    assert otel_telemetry.outline() == [["invoke_agent a", tree]]
    assert otel_telemetry.nesting_faults() == []
    assert otel_telemetry.open_spans() == []
    weather = otel_telemetry.span("execute_tool weather")
    assert (weather.attributes or {}).get(INCOMPLETE) is True
    assert "gen_ai.tool.call.result" not in (weather.attributes or {})  # told after its end


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


async def test_a_nested_run_whose_end_comes_after_its_tools_ends_inside_that_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An agent a tool body runs, whose stream is left open past the tool's result (a
    framework closing it later): its run ends as the tool ends, inside the tool's span, cut
    short (its model call was at work: ``cancelled``); its stream's later close records
    nothing more. A call waiting for its usage ends before its step too."""

    async def expert() -> AsyncIterator[Any]:
        yield LLMCallStart(model="inner")
        yield TextDelta(text="thinking")
        yield LLMCallEnd()

    left: list[Any] = []

    async def stream() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m")  # no usage: held for it past its step
        yield ToolCall(id="c1", function=FunctionCall(name="ask", arguments="{}"))
        yield LLMCallEnd()
        with tool_scope("c1", "ask"):
            nested = otel_telemetry.wrapper(agent_name="expert")(expert())
            await nested.__anext__()  # its run starts, under the tool's span
        left.append(nested)
        yield ToolResult(tool_call_id="c1", content="y")
        yield StepBoundary(index=0)
        yield LLMCallStart(model="m")
        yield LLMCallEnd()

    await run_script(otel_telemetry, stream(), agent_name="a")
    await left[0].aclose()

    assert otel_telemetry.outline() == [
        ["invoke_agent a", [
            ["step 0", ["chat m", ["execute_tool ask", [
                ["invoke_agent expert", [["step 0", ["chat inner"]]]],
            ]]]],
            ["step 1", ["chat m"]],
        ]],
    ]  # fmt: skip
    assert otel_telemetry.nesting_faults() == []
    expert_run = otel_telemetry.span("invoke_agent expert").attributes or {}
    assert expert_run.get("agent_otel.end_reason") == "cancelled"
    assert (otel_telemetry.span("chat inner").attributes or {}).get(INCOMPLETE) is True
