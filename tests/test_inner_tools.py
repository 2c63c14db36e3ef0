"""A tool run inside another tool's body that no model asked for (``inner_tool``).

Each is an ``execute_tool {name}`` span of its own, child of the span of the tool whose body
ran it, with its arguments and result (content capture on), its own status and
``error.type``, ending before the calling tool's span; none of the calls the model made (the
chat span's output keeps what it asked for). Outside any tool body it is a tool span in the
run's step; with no run it does nothing, and the code's exception passes unchanged.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from contextlib import suppress
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agent_contract.scope import (
    add_inner_tool_hook,
    inner_tool,
    remove_inner_tool_hook,
    tool_scope,
)
from agent_otel.testing import InMemoryTelemetry, run_script

KEYS = {
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "agent_otel.tool.is_error",
    "error.type",
    "agent_otel.incomplete",
}


class Flooded(ValueError):
    """An inner tool's own failure."""


def _weather(city: str) -> str:
    with inner_tool("weather", {"city": city}) as call:
        value = f"sunny in {city}"
        call.result(value)
    return value


def _forecast(city: str) -> str:
    with inner_tool("forecast", json.dumps({"city": city})):
        raise Flooded(f"no forecast for {city}")


def _research() -> str:
    """The model's tool: its body runs three tools itself, one inside another."""
    with inner_tool("report", {"cities": ["Paris"]}) as report:
        text = _weather("Paris")
        report.result(text)
    with suppress(Flooded):
        _forecast("Rome")
    with inner_tool("lookup", {"q": "x"}) as lookup:
        lookup.result("not found", error=True)
    with inner_tool("parse", {"q": "x"}) as parse:  # a failure a framework caught
        parse.result("bad input", error=KeyError("q"))
    return text


async def test_tools_a_body_runs_are_spans_under_its_tool_span_not_calls_of_the_model(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The whole tree: each inner tool under the span whose body ran it (at any depth), its
    arguments and result, a raised failure named by its class, a returned one ``tool_error``;
    the model's call and its chat span's output untouched; every span ended, inner first."""

    async def stream() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", provider="openai")
        yield ToolCall(id="c1", function=FunctionCall(name="research", arguments="{}"))
        yield LLMCallEnd(model="m")

        def body() -> str:
            with tool_scope("c1", "research"):
                return _research()

        result = await asyncio.to_thread(body)  # a framework's worker thread
        yield ToolResult(tool_call_id="c1", name="research", content=result)
        yield StepBoundary(index=0)
        yield LLMCallStart(model="m", provider="openai")
        yield TextDelta(text="done")
        yield LLMCallEnd(model="m")

    await run_script(otel_telemetry, stream(), agent_name="a", capture_content=True)

    assert otel_telemetry.outline() == [
        ["invoke_agent a", [
            ["step 0", ["chat m", ["execute_tool research", [
                ["execute_tool report", ["execute_tool weather"]],
                "execute_tool forecast",
                "execute_tool lookup",
                "execute_tool parse",
            ]]]],
            ["step 1", ["chat m"]],
        ]],
    ]  # fmt: skip
    tools = {s.name: s for s in otel_telemetry.spans() if s.name.startswith("execute_tool ")}
    weather = dict(tools["execute_tool weather"].attributes or {})
    assert weather["gen_ai.operation.name"] == "execute_tool"
    assert weather["gen_ai.tool.name"] == "weather"
    assert "gen_ai.tool.call.id" not in weather  # no model call: no call id
    assert json.loads(str(weather["gen_ai.tool.call.arguments"])) == {"city": "Paris"}
    assert "sunny in Paris" in str(weather["gen_ai.tool.call.result"])
    assert tools["execute_tool weather"].status.status_code is StatusCode.UNSET
    forecast = tools["execute_tool forecast"]
    assert forecast.status.status_code is StatusCode.ERROR
    assert (forecast.attributes or {})["error.type"] == "Flooded"
    assert json.loads(str((forecast.attributes or {})["gen_ai.tool.call.arguments"])) == {
        "city": "Rome"
    }
    lookup = tools["execute_tool lookup"]
    assert lookup.status.status_code is StatusCode.ERROR
    assert (lookup.attributes or {})["error.type"] == "tool_error"
    assert (lookup.attributes or {})["agent_otel.tool.is_error"] is True
    parse = tools["execute_tool parse"]
    assert (parse.attributes or {})["error.type"] == "KeyError"
    research = tools["execute_tool research"]
    assert research.status.status_code is StatusCode.UNSET  # its body caught the failure
    assert (research.attributes or {})["gen_ai.tool.call.id"] == "c1"
    for name in ("report", "forecast", "lookup", "parse"):  # inner ones end inside the caller
        inner = tools[f"execute_tool {name}"]
        assert (research.start_time or 0) <= (inner.start_time or 0)
        assert (inner.end_time or 0) <= (research.end_time or 0)
    # the chat span's output keeps what the model asked for: research alone
    first = min((s for s in otel_telemetry.spans() if s.name == "chat m"),
                key=lambda s: s.start_time or 0)  # fmt: skip
    output = str((first.attributes or {})["gen_ai.output.messages"])
    assert "research" in output and "weather" not in output and "forecast" not in output
    root = otel_telemetry.span("invoke_agent a")
    assert root.status.status_code is StatusCode.UNSET
    assert otel_telemetry.open_spans() == []
    durations = otel_telemetry.histograms()["gen_ai.execute_tool.duration"]
    by_tool = {str(p.attributes.get("gen_ai.tool.name")): p for p in durations}
    assert set(by_tool) >= {"research", "report", "weather", "forecast", "lookup"}
    assert by_tool["forecast"].attributes.get("error.type") == "Flooded"


async def test_outside_a_tool_body_an_inner_tool_is_a_tool_span_in_the_step(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The run's own code (no tool open) running a tool: a tool span in the open step, and
    in the step a model call is current in, beside that call; nothing of the run changes."""

    async def stream() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", provider="openai")
        yield TextDelta(text="thinking")
        _weather("Oslo")  # while the call is current
        yield LLMCallEnd(model="m")
        _weather("Rome")  # after it, in the run's context
        yield StepBoundary(index=0)

    await run_script(otel_telemetry, stream(), agent_name="a")

    assert otel_telemetry.outline() == [
        ["invoke_agent a", [
            ["step 0", ["chat m", "execute_tool weather", "execute_tool weather"]],
        ]],
    ]  # fmt: skip
    assert otel_telemetry.open_spans() == []


async def test_before_any_step_an_inner_tool_opens_the_step_it_runs_in(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    async def stream() -> AsyncIterator[Any]:
        _weather("Oslo")
        yield LLMCallStart(model="m", provider="openai")
        yield LLMCallEnd(model="m")

    await run_script(otel_telemetry, stream(), agent_name="a")
    assert otel_telemetry.outline() == [
        ["invoke_agent a", [["step 0", ["execute_tool weather", "chat m"]]]],
    ]  # fmt: skip


def test_with_no_run_current_an_inner_tool_does_nothing_and_its_exception_passes_unchanged(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    error = Flooded("mine")
    with pytest.raises(Flooded) as raised, inner_tool("forecast", {"city": "Rome"}) as call:
        call.result("ignored")
        raise error
    assert raised.value is error
    assert _weather("Paris") == "sunny in Paris"
    assert otel_telemetry.spans() == []


async def test_hostile_values_and_a_failing_hook_cost_the_tool_nothing(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Names, arguments and results of any type (a non-str name, arguments that cannot be
    encoded, a result whose ``__str__`` raises) are repaired or dropped; a hook that fails
    costs only the span; the tool's value and exception are its own."""

    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("no text")

        __repr__ = __str__

    class BrokenCall:
        def __enter__(self) -> None:
            raise RuntimeError("enter bug")

        def __exit__(self, *exc: object) -> None:
            raise RuntimeError("exit bug")

        def result(self, value: Any, error: bool) -> None:
            raise RuntimeError("result bug")

    def broken(name: Any, arguments: Any, mcp: Any) -> Any:
        raise RuntimeError("hook bug")

    async def stream() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", provider="openai")
        yield LLMCallEnd(model="m")
        for name, arguments in ((Hostile(), Hostile()), (b"\xff", {1: {2}}), ("", "{not json")):
            with inner_tool(name, arguments, mcp=Hostile()) as call:  # type: ignore[arg-type]
                call.result(Hostile(), error=Hostile())  # type: ignore[arg-type]

    await run_script(otel_telemetry, stream(), agent_name="a", capture_content=True)
    names = [s.name for s in otel_telemetry.spans() if s.name.startswith("execute_tool")]
    assert names == ["execute_tool unknown"] * 3  # no name: the conventions' unknown
    assert otel_telemetry.open_spans() == []

    # with no run of ours current, the hooks after ours are asked: a failing one costs nothing
    for hook in (broken, lambda *_: BrokenCall()):
        add_inner_tool_hook(hook)  # type: ignore[arg-type]
        try:
            error = Flooded("mine")
            with pytest.raises(Flooded) as raised, inner_tool("t") as call:
                call.result(1)
                raise error
            assert raised.value is error
            with inner_tool("t") as call:
                call.result(2)
        finally:
            remove_inner_tool_hook(hook)  # type: ignore[arg-type]


async def test_an_inner_tool_still_open_as_the_run_ends_ends_with_it(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A run that ends while an inner tool still runs (a framework gave up on its tool, whose
    worker thread goes on): the inner span ends with the run, cut short, as its calling tool's
    does, never after the run's or left open; the block's late exit changes nothing."""
    entered, release = threading.Event(), threading.Event()

    def body() -> None:
        with tool_scope("c1", "research"), inner_tool("slow", {"q": "x"}) as call:
            entered.set()
            release.wait(5)
            call.result("late")

    worker: asyncio.Future[None] | None = None

    async def stream() -> AsyncIterator[Any]:
        nonlocal worker
        yield LLMCallStart(model="m", provider="openai")
        yield ToolCall(id="c1", function=FunctionCall(name="research", arguments="{}"))
        yield LLMCallEnd(model="m")
        worker = asyncio.ensure_future(asyncio.to_thread(body))
        await asyncio.to_thread(entered.wait, 5)
        raise TimeoutError("the tool took too long")

    with pytest.raises(TimeoutError):
        await run_script(otel_telemetry, stream(), agent_name="a", capture_content=True)
    try:
        assert otel_telemetry.open_spans() == []
    finally:
        release.set()
        assert worker is not None
        await worker
    run, inner = otel_telemetry.span("invoke_agent a"), otel_telemetry.span("execute_tool slow")
    assert (inner.attributes or {}).get("agent_otel.incomplete") is True
    assert "gen_ai.tool.call.result" not in (inner.attributes or {})  # told after its end
    assert (inner.end_time or 0) <= (run.end_time or 0)
    assert otel_telemetry.open_spans() == []
