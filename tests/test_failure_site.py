"""A run one tool's exception kills: only the span it failed in is marked with the exception.

Its siblings end as what they are: a success if their result came, else incomplete (cut
short), never with an error that is not theirs. The failing tool is the one the exception's
traceback names, or the lone tool still open; not a lone tool whose sibling already returned
its error (the run dying of that failure afterwards).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from agent_contract.protocol import FunctionCall, StepBoundary, ToolCall, ToolResult
from agent_otel.testing import InMemoryTelemetry, run_script


class ToolFailure(RuntimeError):
    """What the failing tool raises."""


def _call(call_id: str, name: str) -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments="{}"))


def _tools(telemetry: InMemoryTelemetry) -> dict[str, ReadableSpan]:
    return {(s.attributes or {})["gen_ai.tool.call.id"]: s for s in telemetry.spans()  # type: ignore[misc]
            if s.name.startswith("execute_tool ")}  # fmt: skip


def _failed(span: ReadableSpan) -> bool:
    return span.status.status_code is StatusCode.ERROR


async def test_a_reported_failure_that_then_kills_the_run_leaves_the_open_sibling_unblamed(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    async def agent() -> AsyncIterator[Any]:
        yield _call("w", "weather")
        yield _call("f", "forecast")
        yield ToolResult("f", "no forecast for Rome", is_error=True)
        raise ToolFailure("no forecast for Rome")  # the framework re-raises what it reported

    with pytest.raises(ToolFailure):
        await run_script(otel_telemetry, agent())

    tools = _tools(otel_telemetry)
    assert _failed(tools["f"]) and (tools["f"].attributes or {})["error.type"] == "tool_error"
    weather = tools["w"]
    assert not _failed(weather) and "error.type" not in (weather.attributes or {})
    assert (weather.attributes or {})["agent_otel.incomplete"] is True
    assert not any(e.name == "exception" for e in weather.events)
    [step] = [s for s in otel_telemetry.spans() if s.name.startswith("step")]
    assert (step.attributes or {})["error.type"] == "ToolFailure"  # the run died in this step


async def test_the_tool_the_traceback_names_is_the_one_marked(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Two tools open; the exception passed through ``forecast``: only it fails."""

    async def forecast() -> str:
        raise ToolFailure("no forecast")

    async def agent() -> AsyncIterator[Any]:
        yield _call("w", "weather")
        yield _call("f", "forecast")
        await forecast()

    with pytest.raises(ToolFailure):
        await run_script(otel_telemetry, agent())

    tools = _tools(otel_telemetry)
    assert _failed(tools["f"]) and (tools["f"].attributes or {})["error.type"] == "ToolFailure"
    assert not _failed(tools["w"]) and (tools["w"].attributes or {})["agent_otel.incomplete"]


async def test_a_sibling_whose_result_came_stays_a_success(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    async def agent() -> AsyncIterator[Any]:
        yield _call("w", "weather")
        yield _call("f", "forecast")
        yield ToolResult("w", "sunny")
        raise ToolFailure("no forecast")

    with pytest.raises(ToolFailure):
        await run_script(otel_telemetry, agent())

    tools = _tools(otel_telemetry)
    assert _failed(tools["f"])  # the lone tool still open: the one that was running
    assert not _failed(tools["w"]) and "agent_otel.incomplete" not in (tools["w"].attributes or {})


async def test_two_open_tools_and_no_evidence_blame_the_step(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    async def agent() -> AsyncIterator[Any]:
        yield _call("a", "weather")
        yield _call("b", "weather")
        raise ToolFailure("one of them")

    with pytest.raises(ToolFailure):
        await run_script(otel_telemetry, agent())

    assert not any(_failed(s) for s in _tools(otel_telemetry).values())
    [step] = [s for s in otel_telemetry.spans() if s.name.startswith("step")]
    assert _failed(step)


async def test_a_failed_tool_in_an_earlier_step_does_not_spare_a_later_lone_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    async def agent() -> AsyncIterator[Any]:
        yield _call("f", "forecast")
        yield ToolResult("f", "no", is_error=True)
        yield StepBoundary(0)
        yield _call("w", "weather")
        raise ToolFailure("weather broke")

    with pytest.raises(ToolFailure):
        await run_script(otel_telemetry, agent())

    assert (_tools(otel_telemetry)["w"].attributes or {})["error.type"] == "ToolFailure"


async def test_pydantic_ai_a_tool_that_kills_the_run_is_the_only_tool_marked(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """pydantic-ai ends the run on a tool's exception and cancels the sibling still running."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    async def model(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        yield {0: DeltaToolCall(name="weather", json_args='{"city": "Paris"}', tool_call_id="w")}
        yield {1: DeltaToolCall(name="forecast", json_args='{"city": "Rome"}', tool_call_id="f")}

    agent = Agent(FunctionModel(stream_function=model, model_name="scripted-model"))

    @agent.tool_plain
    async def weather(city: str) -> str:
        """Current weather of a city."""
        await asyncio.sleep(0.05)  # still running when forecast fails
        return "sunny"

    @agent.tool_plain
    async def forecast(city: str) -> str:
        """Tomorrow's forecast for a city."""
        raise ToolFailure(f"no forecast for {city}")

    with pytest.raises(ToolFailure):
        await run_script(otel_telemetry, pydantic_ai_events(agent, "Weather?"))

    tools = _tools(otel_telemetry)
    assert _failed(tools["f"]) and (tools["f"].attributes or {})["error.type"] == "ToolFailure"
    assert not _failed(tools["w"]) and "error.type" not in (tools["w"].attributes or {})


async def test_langgraph_a_node_that_fails_after_its_tool_ran_blames_its_step_not_the_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A node runs the model's tool call (``ToolNode``) and then raises, so the graph never
    streams the tool's answer: the tool returned (LangChain's callbacks saw it end), so its
    span ends with that answer, no failure and not cut short; the step fails with the node's
    error, as does the run."""
    pytest.importorskip("langgraph")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessageChunk
    from langchain_core.outputs import ChatGenerationChunk
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    from agent_contract.sources.langgraph_stream import langgraph_events

    class Asking(GenericFakeChatModel):
        async def _astream(self, messages: Any, *args: Any, **kw: Any) -> Any:
            ask = [{"index": 0, "id": "w", "name": "weather", "args": '{"city": "Paris"}'}]
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=ask))  # type: ignore[arg-type]

    @tool
    def weather(city: str) -> str:
        """Current weather of a city."""
        return "sunny"

    async def model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await Asking(messages=iter(())).ainvoke(state["messages"])]}

    async def tools_then_check(state: MessagesState) -> dict[str, Any]:
        await ToolNode([weather]).ainvoke(state)
        raise ToolFailure("the check after the tool failed")

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", tools_then_check)
    graph.add_edge(START, "model")
    graph.add_edge("model", "tools")
    graph.add_edge("tools", END)
    with pytest.raises(ToolFailure):
        source = langgraph_events(graph.compile(), {"messages": [("user", "hi")]})
        await run_script(otel_telemetry, source, capture_content=True)

    weather_span = _tools(otel_telemetry)["w"]
    assert not _failed(weather_span) and "error.type" not in (weather_span.attributes or {})
    assert "agent_otel.incomplete" not in (weather_span.attributes or {})
    assert json.loads(str((weather_span.attributes or {})["gen_ai.tool.call.result"])) == "sunny"
    [step] = [s for s in otel_telemetry.spans() if s.name.startswith("step")]
    assert (step.attributes or {})["error.type"] == "ToolFailure"
    assert otel_telemetry.open_spans() == []
