"""Strands' direct tool calls (``agent.tool.weather(city=...)``): no model asked for them, and
Strands runs them outside its agent loop (no loop cycle in their invocation state), on a
thread of their own. Made in a tool's body during a run, such a call is an inner tool of that
body (``agent_contract.scope.inner_tool``): an ``execute_tool`` span of its own under the
calling tool's, with its arguments, result and failure, none of the model's calls. Runs in
Strands' own environment (``.ci/separate-envs``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _script as s

pytest.importorskip("strands")


class Flooded(ValueError):
    """A tool's own failure (Strands turns it into an error result)."""


async def test_a_direct_tool_call_in_a_tool_body_is_a_tool_span_under_that_body_s(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from strands import Agent, tool

    from agent_contract.sources.strands_stream import strands_events

    from ._fw_strands import _model, _text, _usage, _uses

    tracer = otel_telemetry.tracer_provider.get_tracer("the-tools")
    agents: list[Any] = []

    def weather(city: str) -> str:
        """Current weather of a city."""
        with tracer.start_as_current_span("station"):
            return f"sunny in {city}"

    def forecast(city: str) -> str:
        """Tomorrow's forecast of a city."""
        raise Flooded(f"no forecast for {city}")

    def lookup(city: str) -> str:
        """The weather of a city, looked up with the weather tool."""
        answer = agents[0].tool.weather(city=city, record_direct_tool_call=False)
        failed = agents[0].tool.forecast(city=city, record_direct_tool_call=False)
        assert failed["status"] == "error"
        return f"looked up: {answer['content'][0]['text']}"

    ask = [{"messageStart": {"role": "assistant"}}, *_text("Checking."),
           *_uses(s.Call("l1", "lookup", {"city": "Paris"})),
           {"messageStop": {"stopReason": "tool_use"}}, _usage(s.TURNS[0])]  # fmt: skip
    answer = [{"messageStart": {"role": "assistant"}}, *_text("Sunny."),
              {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])]  # fmt: skip
    bot = Agent(model=_model([ask, answer]), tools=[tool(weather), tool(forecast), tool(lookup)],
                name="bot", callback_handler=None)  # fmt: skip
    agents.append(bot)
    await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat scripted-converse", ["execute_tool lookup", [
            ["execute_tool weather", ["station"]], "execute_tool forecast"]]]],
        ["step 1", ["chat scripted-converse"]],
    ]]]  # fmt: skip
    assert not any("agent_otel.incomplete" in (x.attributes or {}) for x in otel_telemetry.spans())
    lookup = otel_telemetry.span("execute_tool lookup")
    assert "looked up: sunny in Paris" in str((lookup.attributes or {})["gen_ai.tool.call.result"])
    weather = otel_telemetry.span("execute_tool weather").attributes or {}
    assert json.loads(str(weather["gen_ai.tool.call.arguments"])) == {"city": "Paris"}
    assert "sunny in Paris" in str(weather["gen_ai.tool.call.result"])
    forecast = otel_telemetry.span("execute_tool forecast")
    assert forecast.status.status_code is StatusCode.ERROR
    assert (forecast.attributes or {})["error.type"] == "Flooded"
    assert lookup.status.status_code is StatusCode.UNSET
    chat = min((x for x in otel_telemetry.spans() if x.name == "chat scripted-converse"),
               key=lambda x: x.start_time or 0)  # fmt: skip
    said = str((chat.attributes or {})["gen_ai.output.messages"])
    assert "lookup" in said and "weather" not in said  # what the model asked for, alone
    assert otel_telemetry.open_spans() == []
