"""Strands' direct tool calls (``agent.tool.weather(city=...)``): no model asked for them, and
Strands runs them outside its agent loop (no loop cycle in their invocation state), on a
thread of their own. Made in a tool's body during a run, such a call is that body's work: its
own spans hang under the calling tool's ``execute_tool`` span. Before, it opened an
``execute_tool`` span of its own beside the calling tool (in the step, not under it) that no
call ever ended: it ended with the run, marked incomplete, with no result. Runs in Strands'
own environment (``.ci/separate-envs``)."""

from __future__ import annotations

from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _script as s

pytest.importorskip("strands")


async def test_a_direct_tool_call_in_a_tool_body_is_that_body_s_work(
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

    def lookup(city: str) -> str:
        """The weather of a city, looked up with the weather tool."""
        answer = agents[0].tool.weather(city=city, record_direct_tool_call=False)
        return f"looked up: {answer['content'][0]['text']}"

    ask = [{"messageStart": {"role": "assistant"}}, *_text("Checking."),
           *_uses(s.Call("l1", "lookup", {"city": "Paris"})),
           {"messageStop": {"stopReason": "tool_use"}}, _usage(s.TURNS[0])]  # fmt: skip
    answer = [{"messageStart": {"role": "assistant"}}, *_text("Sunny."),
              {"messageStop": {"stopReason": "end_turn"}}, _usage(s.TURNS[1])]  # fmt: skip
    bot = Agent(model=_model([ask, answer]), tools=[tool(weather), tool(lookup)], name="bot",
                callback_handler=None)  # fmt: skip
    agents.append(bot)
    await run_script(otel_telemetry, strands_events(bot, s.QUESTION), agent_name="bot",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat scripted-converse", ["execute_tool lookup", ["station"]]]],
        ["step 1", ["chat scripted-converse"]],
    ]]]  # fmt: skip
    assert not any("agent_otel.incomplete" in (x.attributes or {}) for x in otel_telemetry.spans())
    lookup = otel_telemetry.span("execute_tool lookup")
    assert "looked up: sunny in Paris" in str((lookup.attributes or {})["gen_ai.tool.call.result"])
    assert otel_telemetry.open_spans() == []
