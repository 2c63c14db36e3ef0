"""smolagents: a tool a ``ToolCallingAgent``'s tool runs in its ``forward`` (``other(...)``,
smolagents' ``Tool.__call__``) is no model's call: an inner tool, an ``execute_tool`` span of
its own under the calling tool's, with its arguments, result and failure, ended before it
(``agent_contract.scope.inner_tool``). The model's own later call of that tool keeps its span;
a managed agent's tools stay its nested run's (``tests/sources/test_nested_runs.py``)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry

from ._trace import check_inner_tools
from .test_smolagents import _reply

pytest.importorskip("smolagents")


class Flooded(ValueError):
    """A tool's own failure."""


async def test_a_tool_a_tool_s_forward_calls_is_an_inner_tool_of_that_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    import httpx2 as httpx
    from smolagents import OpenAIModel, ToolCallingAgent, tool

    from agent_contract.sources.smolagents_stream import smolagents_events

    @tool
    def weather(city: str) -> str:
        """Current weather of a city.

        Args:
            city: the city.
        """
        return f"sunny in {city}"

    @tool
    def forecast(city: str) -> str:
        """Tomorrow's forecast of a city.

        Args:
            city: the city.
        """
        raise Flooded(f"no forecast for {city}")

    @tool
    def lookup(city: str) -> str:
        """The weather of a city, looked up with the weather tool.

        Args:
            city: the city.
        """
        with contextlib.suppress(Flooded):  # its span says it failed
            forecast(city=city)
        found = weather(city)
        agents[0].execute_tool_call("weather", {"city": "Lyon"})  # the agent's own door
        return f"looked up: {found}"

    agents: list[Any] = []
    turns = iter([
        [("c1", "lookup", {"city": "Paris"})],
        [("c2", "weather", {"city": "Oslo"})],
        [("c3", "final_answer", {"answer": "Sunny."})],
    ])  # fmt: skip

    def respond(request: httpx.Request) -> httpx.Response:
        return _reply(0, None, next(turns), stream=False)  # type: ignore[no-any-return]

    client = {"http_client": httpx.Client(transport=httpx.MockTransport(respond)),
              "max_retries": 0}  # fmt: skip
    model = OpenAIModel("gpt-4o-mini", api_key="offline", api_base="http://mock.invalid/v1",
                        client_kwargs=client)  # fmt: skip
    agent = ToolCallingAgent(tools=[weather, forecast, lookup], model=model, verbosity_level=0)
    agents.append(agent)
    traced = otel_telemetry.wrapper(agent_name="agent", capture_content=True)
    [_ async for _ in traced(smolagents_events(agent, "Weather?"))]

    assert otel_telemetry.outline() == [["invoke_agent agent", [
        ["step 0", ["chat gpt-4o-mini", ["execute_tool lookup", [
            "execute_tool forecast", "execute_tool weather", "execute_tool weather"]]]],
        ["step 1", ["chat gpt-4o-mini", "execute_tool weather"]],
        ["step 2", ["chat gpt-4o-mini"]],
    ]]]  # fmt: skip
    check_inner_tools(otel_telemetry, ("Paris", "Lyon"), ("Oslo", "c2"), "Flooded",
                      looked_up="looked up: sunny in Paris")  # fmt: skip


async def test_a_tool_a_code_agent_s_tool_calls_in_its_forward_nests_under_it(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The same inside a CodeAgent's code: the tool its code calls is an inner tool of the code
    run, and the tool that one's ``forward`` calls an inner tool of it in turn."""
    import httpx2 as httpx
    from smolagents import CodeAgent, OpenAIModel, tool

    from agent_contract.sources.smolagents_stream import smolagents_events

    @tool
    def weather(city: str) -> str:
        """Current weather of a city.

        Args:
            city: the city.
        """
        return f"sunny in {city}"

    @tool
    def lookup(city: str) -> str:
        """The weather of a city, looked up with the weather tool.

        Args:
            city: the city.
        """
        return f"looked up: {weather(city)}"

    code = "Thought: look.\n<code>\nprint(lookup('Paris'))\n</code>"
    turns = iter([code, "Thought: done.\n<code>\nfinal_answer('Sunny.')\n</code>"])

    def respond(request: httpx.Request) -> httpx.Response:
        return _reply(0, next(turns), [], stream=False)  # type: ignore[no-any-return]

    client = {"http_client": httpx.Client(transport=httpx.MockTransport(respond)),
              "max_retries": 0}  # fmt: skip
    model = OpenAIModel("gpt-4o-mini", api_key="offline", api_base="http://mock.invalid/v1",
                        client_kwargs=client)  # fmt: skip
    agent = CodeAgent(tools=[weather, lookup], model=model, verbosity_level=0)
    traced = otel_telemetry.wrapper(agent_name="agent", capture_content=True)
    [_ async for _ in traced(smolagents_events(agent, "Weather?"))]

    assert otel_telemetry.outline()[0][1][0] == [
        "step 0", ["chat gpt-4o-mini", ["execute_tool python_interpreter", [
            ["execute_tool lookup", ["execute_tool weather"]]]]],
    ]  # fmt: skip
    assert otel_telemetry.open_spans() == []
    weather_span = otel_telemetry.span("execute_tool weather").attributes or {}
    assert json.loads(str(weather_span["gen_ai.tool.call.arguments"])) == {"city": "Paris"}
    assert "sunny in Paris" in str(weather_span["gen_ai.tool.call.result"])
