"""A tool body run under ``agent_contract.scope.tool_scope`` has its own tool span current.

Whatever the body opens (an MCP client span, an HTTP span, a sub-agent run) nests under the
``execute_tool`` span of that very call: in tasks and threads the framework made, for calls
running in parallel, when the body starts before the consumer has read its ``ToolCall``
event, and never at the cost of the tool (its exceptions, its result).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
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
from agent_contract.scope import add_scope_hook, remove_scope_hook, tool_scope
from agent_otel.testing import InMemoryTelemetry


def _by_name(telemetry: InMemoryTelemetry) -> dict[str, ReadableSpan]:
    spans = telemetry.spans()
    named = {s.name: s for s in spans}
    assert len(named) == len(spans), [s.name for s in spans]  # names are unique in these runs
    return named


def _parent_of(spans: dict[str, ReadableSpan], name: str) -> str | None:
    parent = spans[name].parent
    if parent is None:
        return None
    return next(n for n, s in spans.items() if s.context.span_id == parent.span_id)


def _one_trace(telemetry: InMemoryTelemetry) -> None:
    assert len({s.context.trace_id for s in telemetry.spans()}) == 1


def _tracer(telemetry: InMemoryTelemetry) -> trace.Tracer:
    """Another library's tracer (an MCP client, an HTTP client) inside the tool."""
    return telemetry.tracer_provider.get_tracer("some.library")


def _call(call_id: str, name: str) -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments="{}"))


async def _framework_run(
    telemetry: InMemoryTelemetry,
    calls: list[tuple[str, str]],
    body: Callable[[str, str], Awaitable[str]],
    *,
    run_ahead: bool = False,
) -> None:
    """A framework's run: the model asks for ``calls``; each runs in a task of its own.

    ``run_ahead``: the tasks start (and finish) before the consumer reads the ``ToolCall``
    events, as in a framework whose run loop is ahead of its event queue.
    """

    async def stream() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", provider="openai")
        tasks = [asyncio.create_task(body(cid, name)) for cid, name in calls]
        if run_ahead:
            await asyncio.gather(*tasks)
        for cid, name in calls:
            yield _call(cid, name)
        yield LLMCallEnd(model="m")
        results = await asyncio.gather(*tasks)
        for (cid, name), result in zip(calls, results, strict=True):
            yield ToolResult(tool_call_id=cid, name=name, content=result)
        yield StepBoundary(index=0)
        yield LLMCallStart(model="m2", provider="openai")
        yield TextDelta(text="done")
        yield LLMCallEnd(model="m2")

    async for _ in telemetry.wrapper(agent_name="calc")(stream()):
        pass


async def test_parallel_tool_bodies_in_tasks_nest_what_they_open_under_their_own_tool_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    tracer = _tracer(otel_telemetry)

    async def body(call_id: str, name: str) -> str:
        with tool_scope(call_id, name):
            await asyncio.sleep(0)
            with tracer.start_as_current_span(f"client {call_id}"):
                await asyncio.sleep(0)
        return "ok"

    await _framework_run(otel_telemetry, [("a", "add"), ("b", "mul")], body)

    spans = _by_name(otel_telemetry)
    _one_trace(otel_telemetry)
    assert _parent_of(spans, "client a") == "execute_tool add"
    assert _parent_of(spans, "client b") == "execute_tool mul"
    assert _parent_of(spans, "execute_tool add") == "step 0"
    assert _parent_of(spans, "execute_tool mul") == "step 0"


async def test_a_sync_body_in_a_thread_nests_under_its_tool_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    tracer = _tracer(otel_telemetry)

    def work(call_id: str) -> str:
        with tracer.start_as_current_span(f"client {call_id}"):
            return "ok"

    async def body(call_id: str, name: str) -> str:
        def scoped() -> str:  # the framework's wrapper of a sync tool, on its thread
            with tool_scope(call_id, name):
                return work(call_id)

        return await asyncio.to_thread(scoped)

    await _framework_run(otel_telemetry, [("a", "add"), ("b", "mul")], body)

    spans = _by_name(otel_telemetry)
    _one_trace(otel_telemetry)
    assert _parent_of(spans, "client a") == "execute_tool add"
    assert _parent_of(spans, "client b") == "execute_tool mul"


async def test_a_body_that_runs_before_its_event_is_read_opens_its_span_and_the_event_adopts_it(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    tracer = _tracer(otel_telemetry)

    async def body(call_id: str, name: str) -> str:
        with tool_scope(call_id, name), tracer.start_as_current_span(f"client {call_id}"):
            await asyncio.sleep(0)
        return "ok"

    await _framework_run(otel_telemetry, [("a", "add"), ("b", "mul")], body, run_ahead=True)

    spans = _by_name(otel_telemetry)
    _one_trace(otel_telemetry)
    assert [n for n in spans if n.startswith("execute_tool")] == [
        "execute_tool add",
        "execute_tool mul",
    ]  # one span per call: the event took the early one
    for cid, name in (("a", "add"), ("b", "mul")):
        tool = spans[f"execute_tool {name}"]
        assert _parent_of(spans, f"client {cid}") == f"execute_tool {name}"
        assert _parent_of(spans, f"execute_tool {name}") == "step 0"
        assert dict(tool.attributes or {})["gen_ai.tool.call.id"] == cid
        assert "agent_otel.incomplete" not in dict(tool.attributes or {})
        assert tool.start_time is not None and spans[f"client {cid}"].start_time is not None
        assert tool.start_time <= spans[f"client {cid}"].start_time  # it started with the tool


async def test_an_early_span_opened_by_id_alone_takes_its_name_from_the_event(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    async def body(call_id: str, name: str) -> str:
        with tool_scope(call_id):  # the runner knows the id, not the name
            await asyncio.sleep(0)
        return "ok"

    await _framework_run(otel_telemetry, [("a", "add")], body, run_ahead=True)

    spans = _by_name(otel_telemetry)
    attributes = dict(spans["execute_tool add"].attributes or {})
    assert attributes["gen_ai.tool.name"] == "add"
    [point] = otel_telemetry.histograms()["gen_ai.execute_tool.duration"]
    assert dict(point.attributes or {})["gen_ai.tool.name"] == "add"


async def test_calls_of_one_name_without_ids_are_taken_in_the_order_they_were_asked_for(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    tracer = _tracer(otel_telemetry)

    async def body(call_id: str, name: str) -> str:
        with tool_scope(None, name), tracer.start_as_current_span(f"client {call_id}"):
            await asyncio.sleep(0)
        return "ok"

    async def stream() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", provider="openai")
        yield _call("first", "add")
        yield _call("second", "add")
        yield LLMCallEnd(model="m")
        for cid in ("first", "second"):  # started in order, as frameworks start them
            await body(cid, "add")
            yield ToolResult(tool_call_id=cid, name="add", content="ok")

    async for _ in otel_telemetry.wrapper()(stream()):
        pass

    spans = otel_telemetry.spans()
    tools = {
        dict(s.attributes or {})["gen_ai.tool.call.id"]: s
        for s in spans
        if s.name == "execute_tool add"
    }
    clients = {s.name: s for s in spans if s.name.startswith("client")}
    for cid in ("first", "second"):
        parent = clients[f"client {cid}"].parent
        assert parent is not None and parent.span_id == tools[cid].context.span_id


async def test_a_body_scoped_after_its_call_ended_opens_nothing(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    tracer = _tracer(otel_telemetry)

    async def stream() -> AsyncIterator[Any]:
        yield _call("a", "add")
        yield ToolResult(tool_call_id="a", name="add", content="ok")
        with tool_scope("a", "add"), tracer.start_as_current_span("late"):
            pass
        yield TextDelta(text="done")

    async for _ in otel_telemetry.wrapper()(stream()):
        pass

    names = [s.name for s in otel_telemetry.spans()]
    assert names.count("execute_tool add") == 1
    late = next(s for s in otel_telemetry.spans() if s.name == "late")
    step = next(s for s in otel_telemetry.spans() if s.name == "step 0")
    assert late.parent is not None and late.parent.span_id == step.context.span_id


async def test_a_body_whose_call_event_never_comes_still_ends_its_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    async def stream() -> AsyncIterator[Any]:
        yield TextDelta(text="thinking")
        with tool_scope("a", "add"):  # its result comes, its call never does
            pass
        yield ToolResult(tool_call_id="a", name="add", content="ok")
        with tool_scope("b", "mul"):  # neither comes
            pass
        yield TextDelta(text="done")

    async for _ in otel_telemetry.wrapper()(stream()):
        pass

    tools = {s.name: dict(s.attributes or {}) for s in otel_telemetry.spans()}
    assert "agent_otel.incomplete" not in tools["execute_tool add"]
    assert tools["execute_tool mul"]["agent_otel.incomplete"] is True
    [root] = [s for s in otel_telemetry.spans() if s.parent is None]
    assert "tool_result_without_call" not in str(root.attributes)  # no repair: nothing lost


async def test_a_sub_agent_run_inside_a_tool_scopes_its_own_tools(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    tracer = _tracer(otel_telemetry)

    async def inner_stream() -> AsyncIterator[Any]:
        yield _call("x", "lookup")
        with tool_scope("x", "lookup"), tracer.start_as_current_span("client x"):
            pass
        yield ToolResult(tool_call_id="x", name="lookup", content="ok")

    async def body(call_id: str, name: str) -> str:
        with tool_scope(call_id, name):
            async for _ in otel_telemetry.wrapper(agent_name="expert")(inner_stream()):
                pass
        return "ok"

    await _framework_run(otel_telemetry, [("a", "ask_expert")], body)

    _one_trace(otel_telemetry)
    assert _shape(otel_telemetry) == [
        ["invoke_agent calc", [
            ["step 0", [
                "chat m",
                ["execute_tool ask_expert", [
                    ["invoke_agent expert", [["step 0", [["execute_tool lookup", ["client x"]]]]]],
                ]],
            ]],
            ["step 1", ["chat m2"]],
        ]],
    ]  # fmt: skip


def _shape(telemetry: InMemoryTelemetry) -> list[Any]:
    def walk(node: dict[str, Any]) -> Any:
        kids = [walk(child) for child in node["children"]]
        return [node["name"], kids] if kids else node["name"]

    return [walk(root) for root in telemetry.tree(attributes=False, events=False)]


def test_with_no_run_current_a_scope_does_nothing_and_the_tools_exception_passes_unchanged(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    error = ValueError("tool failed")
    with pytest.raises(ValueError) as raised, tool_scope("a", "add"):
        raise error
    assert raised.value is error
    assert otel_telemetry.spans() == []


async def test_a_failing_hook_costs_only_the_scope(otel_telemetry: InMemoryTelemetry) -> None:
    def broken(call_id: str | None, name: str | None, arguments: Any, mcp: Any) -> Any:
        raise RuntimeError("hook bug")

    class BrokenScope:
        def __enter__(self) -> None:
            raise RuntimeError("enter bug")

        def __exit__(self, *exc: object) -> None:
            raise RuntimeError("exit bug")

    def half(call_id: str | None, name: str | None, arguments: Any, mcp: Any) -> Any:
        return BrokenScope()

    for hook in (broken, half):
        add_scope_hook(hook)
        try:
            with tool_scope("a", "add"):
                value = 42
            assert value == 42
            error = KeyError("mine")
            with pytest.raises(KeyError) as raised, tool_scope("a", "add"):
                raise error
            assert raised.value is error
        finally:
            remove_scope_hook(hook)


async def test_the_tools_exception_leaves_the_scope_unchanged_inside_a_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    error = ValueError("tool failed")
    seen: list[BaseException] = []

    async def stream() -> AsyncIterator[Any]:
        yield _call("a", "add")
        try:
            with tool_scope("a", "add"):
                raise error
        except ValueError as caught:
            seen.append(caught)
            assert trace.get_current_span().is_recording()  # the run's context is back
        yield ToolResult(tool_call_id="a", name="add", content="boom", is_error=True)

    async for _ in otel_telemetry.wrapper()(stream()):
        pass
    assert seen == [error]


async def test_calls_of_one_name_without_ids_started_out_of_order_are_told_by_their_arguments(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    tracer = _tracer(otel_telemetry)

    async def stream() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", provider="openai")
        yield ToolCall(id="first", function=FunctionCall(name="add", arguments='{"x": 1}'))
        yield ToolCall(id="second", function=FunctionCall(name="add", arguments='{"x": 2}'))
        yield LLMCallEnd(model="m")
        for x in (2, 1):  # threads of a pool: the second call's body starts first
            with tool_scope(None, "add", {"x": x}), tracer.start_as_current_span(f"client {x}"):
                pass
        yield ToolResult(tool_call_id="first", name="add", content="2")
        yield ToolResult(tool_call_id="second", name="add", content="3")

    async for _ in otel_telemetry.wrapper()(stream()):
        pass

    spans = otel_telemetry.spans()
    tools = {
        s.context.span_id: dict(s.attributes or {}) for s in spans if s.name == "execute_tool add"
    }
    for x, cid in ((1, "first"), (2, "second")):
        [client] = [s for s in spans if s.name == f"client {x}"]
        assert client.parent is not None
        assert tools[client.parent.span_id]["gen_ai.tool.call.id"] == cid


async def test_bodies_without_ids_that_run_ahead_of_their_events_are_adopted_by_arguments(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    tracer = _tracer(otel_telemetry)

    async def stream() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", provider="openai")
        for x in (2, 1):  # the framework ran both before the consumer read either call
            with tool_scope(None, "add", {"x": x}), tracer.start_as_current_span(f"client {x}"):
                pass
        yield ToolCall(id="first", function=FunctionCall(name="add", arguments='{"x": 1}'))
        yield ToolCall(id="second", function=FunctionCall(name="add", arguments='{"x": 2}'))
        yield LLMCallEnd(model="m")
        yield ToolResult(tool_call_id="first", name="add", content="2")
        yield ToolResult(tool_call_id="second", name="add", content="3")

    async for _ in otel_telemetry.wrapper()(stream()):
        pass

    spans = otel_telemetry.spans()
    tools = {
        s.context.span_id: dict(s.attributes or {}) for s in spans if s.name == "execute_tool add"
    }
    assert len(tools) == 2
    for x, cid in ((1, "first"), (2, "second")):
        [client] = [s for s in spans if s.name == f"client {x}"]
        assert client.parent is not None
        assert tools[client.parent.span_id]["gen_ai.tool.call.id"] == cid
        assert "agent_otel.incomplete" not in tools[client.parent.span_id]
