"""CrewAI beyond the conformance matrix: concurrent runs kept apart, the result last in ``sink``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent_contract.protocol import TextDelta, ToolCall, ToolResult
from agent_otel.testing import run_script

pytest.importorskip("crewai")

from . import _fw_crewai as fw
from . import _script as s


async def test_concurrent_runs_keep_their_own_events() -> None:
    def tools_then_answer(turn: int) -> bytes:
        if turn == 0:
            return fw.completion(0, None, [("call_w", "weather", '{"city": "Paris"}')])
        return fw.completion(1, "Sunny in Paris.", [])

    async def play(model: Any, tools: list[Any]) -> tuple[list[Any], list[Any]]:
        kept: list[Any] = []
        events = fw.crewai_events(fw.agent(model, tools), s.QUESTION, sink=kept.append)
        return [e async for e in events], kept

    (tooled, kept_a), (plain, kept_b) = await asyncio.gather(
        play(fw.llm(tools_then_answer), fw.tools(s.Run())),
        play(fw.llm(lambda turn: fw.completion(0, "Only words.", [])), []),
    )

    assert [e.id for e in tooled if isinstance(e, ToolCall)] == ["call_w"]
    assert [e.tool_call_id for e in tooled if isinstance(e, ToolResult)] == ["call_w"]
    assert "".join(e.text for e in tooled if isinstance(e, TextDelta)) == "Sunny in Paris."
    assert not [e for e in plain if isinstance(e, (ToolCall, ToolResult))]
    assert "".join(e.text for e in plain if isinstance(e, TextDelta)) == "Only words."
    assert kept_a[-1].raw == "Sunny in Paris." and kept_b[-1].raw == "Only words."
    mine = {type(e).__name__ for e in kept_b}
    assert "ToolUsageStartedEvent" not in mine  # none of the other run's CrewAI events


async def test_the_agents_exception_comes_out_as_the_same_object() -> None:
    boom = s.Overloaded("overloaded")

    class Broken:
        def kickoff(self, *args: Any, **kwargs: Any) -> Any:
            raise boom

    with pytest.raises(s.Overloaded) as caught:
        [_ async for _ in fw.crewai_events(Broken(), s.QUESTION)]
    assert caught.value is boom


async def test_a_tool_reporting_its_own_failure_is_a_failed_call(
    otel_telemetry: Any,
) -> None:
    from crewai.tools import tool
    from crewai.tools.tool_failure import ToolFailure
    from opentelemetry.trace import StatusCode

    @tool("weather")
    def weather(city: str) -> str:
        """Current weather of a city."""
        return s.weather_sync(city)

    @tool("forecast")
    def forecast(city: str) -> Any:
        """Tomorrow's forecast for a city."""
        return ToolFailure(message=f"no forecast for {city}", code="no_data")

    def respond(turn: int) -> bytes:
        if turn == 0:
            return fw.completion(0, None, [(c.id, c.name, c.json) for c in s.CALLS])
        return fw.completion(1, "".join(s.ANSWER), [])

    source = fw.crewai_events(fw.agent(fw.llm(respond), [weather, forecast]), s.QUESTION)
    events = await run_script(otel_telemetry, source, agent_name="agent")

    results = {e.tool_call_id: e for e in events if isinstance(e, ToolResult)}
    assert results["call_f"].is_error and not results["call_w"].is_error
    spans = {s.name: s for s in otel_telemetry.spans() if s.name.startswith("execute_tool")}
    failed, fine = spans["execute_tool forecast"], spans["execute_tool weather"]
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "no_data"
    assert fine.status.status_code is not StatusCode.ERROR


async def test_a_tool_body_finds_its_step_however_far_the_consumer_lags(
    otel_telemetry: Any,
) -> None:
    """CrewAI runs ahead of the consumer on its own threads; a consumer slow to pull (a loaded
    loop) must not put the tool's span on the run: its body waits until the consumer has taken
    the events before it, so its scope finds the step and the call they opened."""
    from opentelemetry import trace as otel_trace

    parents: list[str] = []

    def lookup(city: str) -> str:
        """Look up the weather."""
        parents.append(getattr(otel_trace.get_current_span(), "name", ""))
        return "sunny"

    from crewai.tools import tool

    def respond(turn: int) -> bytes:
        if turn == 0:
            return fw.completion(0, None, [("call_l", "lookup", '{"city": "Paris"}')])
        return fw.completion(1, "Sunny.", [])

    async def lagging(events: Any) -> Any:
        async for event in events:  # each event reaches the recorder 0.2 s after CrewAI's
            await asyncio.sleep(0.2)
            yield event

    crew = fw.agent(fw.llm(respond), [tool("lookup")(lookup)])
    events = lagging(fw.crewai_events(crew, s.QUESTION))
    await run_script(otel_telemetry, events, agent_name="agent")

    assert parents == ["execute_tool lookup"]
    assert otel_telemetry.outline() == [
        ["invoke_agent agent", [
            ["step 0", ["chat gpt-4o-mini", "execute_tool lookup"]],
            ["step 1", ["chat gpt-4o-mini"]],
        ]],
    ]  # fmt: skip
