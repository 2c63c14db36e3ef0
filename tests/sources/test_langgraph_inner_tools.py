"""A LangChain tool whose body invokes another ``BaseTool`` itself (no model asked for it):
LangChain's callbacks nest that run under the calling tool's (its parent run id), and it is an
inner tool (``agent_contract.scope.inner_tool``), a span of its own under the calling tool's
with its arguments, result and failure, none of the model's calls."""

from __future__ import annotations

import json
from contextlib import suppress

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _deep as d

pytest.importorskip("langgraph")


class Flooded(ValueError):
    """An inner tool's own failure."""


@pytest.mark.parametrize("way", ["invoke", "ainvoke"])
async def test_a_tool_a_tool_body_invokes_is_a_span_under_that_tools(
    otel_telemetry: InMemoryTelemetry, way: str
) -> None:
    from langchain_core.tools import tool

    from agent_contract.sources.langgraph_stream import langgraph_events

    from ._fw_langgraph import react

    @tool
    def weather(city: str) -> str:
        """Current weather of a city."""
        return f"sunny in {city}"

    @tool
    def forecast(city: str) -> str:
        """Tomorrow's forecast of a city."""
        raise Flooded(f"no forecast for {city}")

    @tool
    async def research(city: str) -> str:
        """Research a city's weather."""
        if way == "invoke":
            found = weather.invoke({"city": city})
            with suppress(Flooded):
                forecast.invoke({"city": city})
        else:
            found = await weather.ainvoke({"city": city})
            with suppress(Flooded):
                await forecast.ainvoke({"city": city})
        return f"found: {found}"

    graph = react("lead", "research", '{"city": "Paris"}', [research])
    events = langgraph_events(graph, {"messages": [("user", d.QUESTION)]})
    await run_script(otel_telemetry, events, agent_name="lead", capture_content=True)

    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", ["chat", ["execute_tool research", [
            "execute_tool weather", "execute_tool forecast"]]]],
        ["step 1", ["chat"]],
    ]]]  # fmt: skip
    weather_span = otel_telemetry.span("execute_tool weather")
    attributes = weather_span.attributes or {}
    assert json.loads(str(attributes["gen_ai.tool.call.arguments"])) == {"city": "Paris"}
    assert "sunny in Paris" in str(attributes["gen_ai.tool.call.result"])
    assert "gen_ai.tool.call.id" not in attributes
    failed = otel_telemetry.span("execute_tool forecast")
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "Flooded"
    outer = otel_telemetry.span("execute_tool research")
    assert outer.status.status_code is StatusCode.UNSET
    assert "found: sunny in Paris" in str((outer.attributes or {})["gen_ai.tool.call.result"])
    assert (weather_span.end_time or 0) <= (outer.end_time or 0)
    assert otel_telemetry.open_spans() == []


async def test_a_tool_a_chain_in_a_tool_body_invokes_is_under_that_tools_span_too(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The body runs a runnable (a chain, a lambda) that invokes the other tool: LangChain
    names the runnable as that tool run's parent, not the calling tool, yet it runs in the
    calling tool's body all the same, an inner tool under its span (it was a stray span beside
    it, which no event ended, cut short at the run's end with no arguments or result)."""
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import tool

    from agent_contract.sources.langgraph_stream import langgraph_events

    from ._fw_langgraph import react

    @tool
    def weather(city: str) -> str:
        """Current weather of a city."""
        return f"sunny in {city}"

    @tool
    def research(city: str) -> str:
        """Research a city's weather."""
        chain = RunnableLambda(lambda c: weather.invoke({"city": c}))
        return f"found: {chain.invoke(city)}"

    graph = react("lead", "research", '{"city": "Paris"}', [research])
    events = langgraph_events(graph, {"messages": [("user", d.QUESTION)]})
    await run_script(otel_telemetry, events, agent_name="lead", capture_content=True)

    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", ["chat", ["execute_tool research", ["execute_tool weather"]]]],
        ["step 1", ["chat"]],
    ]]]  # fmt: skip
    attributes = otel_telemetry.span("execute_tool weather").attributes or {}
    assert json.loads(str(attributes["gen_ai.tool.call.arguments"])) == {"city": "Paris"}
    assert "sunny in Paris" in str(attributes["gen_ai.tool.call.result"])
    assert "agent_otel.incomplete" not in attributes
    assert otel_telemetry.open_spans() == []


async def test_a_tool_a_body_invokes_with_a_tool_call_of_its_own_is_inner_and_its_status_read(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A body invoking a tool with a tool call of its own making (LangChain returns a
    ``ToolMessage``) runs no model's call: an inner tool all the same (before, a span in the
    step under that id, which no event ended), failed when its ``ToolMessage`` says
    ``status="error"`` (an error ``handle_tool_error`` turned into its content)."""
    from langchain_core.tools import ToolException, tool

    from agent_contract.sources.langgraph_stream import langgraph_events

    from ._fw_langgraph import react

    @tool
    def checker(city: str) -> str:
        """Check a city's station."""
        raise ToolException(f"no station in {city}")

    checker.handle_tool_error = True

    @tool
    def weather(city: str) -> str:
        """Current weather of a city."""
        return f"sunny in {city}"

    @tool
    async def research(city: str) -> str:
        """Research a city's weather."""
        checked = checker.invoke(
            {"type": "tool_call", "id": "own-1", "name": "checker", "args": {"city": city}}
        )
        assert checked.status == "error"
        found = await weather.ainvoke(
            {"type": "tool_call", "id": "own-2", "name": "weather", "args": {"city": city}}
        )
        return f"found: {found.content}"

    graph = react("lead", "research", '{"city": "Paris"}', [research])
    events = langgraph_events(graph, {"messages": [("user", d.QUESTION)]})
    await run_script(otel_telemetry, events, agent_name="lead", capture_content=True)

    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", ["chat", ["execute_tool research", [
            "execute_tool checker", "execute_tool weather"]]]],
        ["step 1", ["chat"]],
    ]]]  # fmt: skip
    assert otel_telemetry.open_spans() == []
    spans = otel_telemetry.spans()
    assert not any("agent_otel.incomplete" in (x.attributes or {}) for x in spans)
    failed = otel_telemetry.span("execute_tool checker")
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "tool_error"
    weather_span = otel_telemetry.span("execute_tool weather")
    assert weather_span.status.status_code is StatusCode.UNSET
    attributes = weather_span.attributes or {}
    assert "sunny in Paris" in str(attributes["gen_ai.tool.call.result"])
    assert "gen_ai.tool.call.id" not in attributes  # no model call names it
    assert otel_telemetry.span("execute_tool research").status.status_code is StatusCode.UNSET
