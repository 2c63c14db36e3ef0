"""Agno: a tool a tool's body runs itself through Agno's own ``FunctionCall`` is no model's
call: an inner tool, an ``execute_tool`` span of its own under the calling tool's, with its
arguments, result and failure, ended before it (``agent_contract.scope.inner_tool``). The
model's own later call of that tool keeps its span; a member's tools stay its nested run's
(``tests/sources/test_nested_runs.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _script_chat as chat
from ._fw_agno import agent
from ._trace import check_inner_tools

pytest.importorskip("agno")


class Flooded(ValueError):
    """A tool's own failure (Agno hands the model its text)."""


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def forecast(city: str) -> str:
    """Tomorrow's forecast of a city."""
    raise Flooded(f"no forecast for {city}")


async def test_a_tool_run_in_a_tool_body_through_function_call_is_an_inner_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agno.run import RunContext
    from agno.tools.function import Function, FunctionCall

    from agent_contract.sources.agno_stream import agno_events

    def hooked(entrypoint: Any, agent: Any, run_context: RunContext | None = None) -> Any:
        function = Function.from_callable(entrypoint)
        function.tool_hooks = agent.tool_hooks  # the agent's hooks, as Agno gives its tools
        function._run_context = run_context  # a function of the run (None: of no run)
        function.process_entrypoint()
        return function

    def lookup(city: str, agent: Any, run_context: RunContext) -> str:
        """The weather of a city, looked up with the weather tool."""
        found = FunctionCall(function=hooked(weather, agent), arguments={"city": city}).execute()
        failed = FunctionCall(
            function=hooked(forecast, agent, run_context), arguments={"city": city}
        ).execute()
        assert failed.status == "failure"
        return f"looked up: {found.result}"

    async def alookup(city: str, agent: Any) -> str:
        """The same, awaited."""
        found = await FunctionCall(
            function=hooked(weather, agent), arguments={"city": city}
        ).aexecute()
        return f"looked up: {found.result}"

    built = agent(
        chat.call("lookup", {"city": "Paris"}, "c1"),
        chat.call("alookup", {"city": "Rome"}, "c2"),
        chat.call("weather", {"city": "Oslo"}, "c3"),
        chat.answer("Sunny."),
        tools=[lookup, alookup, weather],
    )
    await run_script(otel_telemetry, agno_events(built, "Weather?"), agent_name="a",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent a", [
        ["step 0", ["chat gpt-4o-mini", ["execute_tool lookup", [
            "execute_tool weather", "execute_tool forecast"]]]],
        ["step 1", ["chat gpt-4o-mini", ["execute_tool alookup", ["execute_tool weather"]]]],
        ["step 2", ["chat gpt-4o-mini", "execute_tool weather"]],
        ["step 3", ["chat gpt-4o-mini"]],
    ]]]  # fmt: skip
    check_inner_tools(otel_telemetry, ("Paris", "Rome"), ("Oslo", "c3"), "Flooded",
                      looked_up="looked up: sunny in Paris")  # fmt: skip
