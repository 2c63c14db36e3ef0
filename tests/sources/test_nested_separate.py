"""Agents a framework runs inside a tool, in the frameworks that install in their own
environment (``.ci/separate-envs``): each is a nested run under the call that ran it, with its
calls, tokens (once) and answer."""

from __future__ import annotations

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import attributes, tokens


async def test_google_adk_agent_tools_in_parallel_are_nested_runs_under_their_calls(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``AgentTool``: ADK runs the agent on a runner of its own inside the call; each call is
    a nested run under its tool span, with its call, tokens (once) and answer."""
    pytest.importorskip("google.adk")
    from google.adk.tools.agent_tool import AgentTool
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from . import _fw_google_adk as fa
    from . import _script as s

    expert = fa.agent(fa._model([[types.Part(text="sunny")], [types.Part(text="rainy")]]), [],
                      name="expert")  # fmt: skip
    asks = [types.Part(function_call=types.FunctionCall(id=cid, name="expert",
                                                        args={"request": city}))
            for cid, city in (("e1", "Paris?"), ("e2", "Rome?"))]  # fmt: skip
    lead = fa.agent(fa._model([asks, [types.Part(text="Sunny, rainy.")]]), [AgentTool(expert)],
                    name="lead")  # fmt: skip
    await run_script(otel_telemetry, google_adk_events(lead, s.QUESTION), agent_name="lead",
                     capture_content=True)  # fmt: skip

    chat = f"chat {fa.MODEL}"
    nested = ["invoke_agent expert", [["step 0", [chat]]]]
    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", [chat, ["execute_tool expert", [nested]],
                        ["execute_tool expert", [nested]]]],
            ["step 1", [chat]],
        ]],
    ]  # fmt: skip
    answers = [str(dict(r.attributes or {}).get("gen_ai.output.messages"))
               for r in otel_telemetry.by_name()["invoke_agent expert"]]  # fmt: skip
    assert sorted("sunny" in a for a in answers) == [False, True]
    assert sorted("rainy" in a for a in answers) == [False, True]
    assert tokens(otel_telemetry) == 2 * (s.TURNS[0].input + s.TURNS[1].input)  # 4 calls, once
    lead_run = attributes(otel_telemetry, "invoke_agent lead")
    assert lead_run["agent_otel.usage.input_tokens"] == s.TURNS[0].input + s.TURNS[1].input
    assert otel_telemetry.open_spans() == []


async def test_strands_agents_as_tools_are_nested_runs_under_their_calls(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``agent.as_tool()``: Strands streams the agent inside the call; the call is a nested
    run under its tool span, with its call, tokens (once) and answer, its own tools scoped
    in it."""
    pytest.importorskip("strands")
    from strands import Agent, tool

    from agent_contract.sources.strands_stream import strands_events

    from . import _fw_strands as fs
    from . import _script as s

    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")

    @tool
    def lookup(city: str) -> str:
        """Look a city up."""
        with tracer.start_as_current_span("client lookup"):
            return "sunny"

    look = s.Call("k1", "lookup", {"city": "Paris"})
    expert = Agent(model=fs._model([
        [{"messageStart": {"role": "assistant"}}, *fs._uses(look),
         {"messageStop": {"stopReason": "tool_use"}}, fs._usage(s.TURNS[0])],
        [{"messageStart": {"role": "assistant"}}, *fs._text("sunny"),
         {"messageStop": {"stopReason": "end_turn"}}, fs._usage(s.TURNS[1])],
    ]), tools=[lookup], name="expert", description="Knows.", callback_handler=None)  # fmt: skip
    ask = s.Call("call_e", "expert", {"input": "Paris?"})
    lead = Agent(model=fs._model([
        [{"messageStart": {"role": "assistant"}}, *fs._uses(ask),
         {"messageStop": {"stopReason": "tool_use"}}, fs._usage(s.TURNS[0])],
        [{"messageStart": {"role": "assistant"}}, *fs._text("It is sunny."),
         {"messageStop": {"stopReason": "end_turn"}}, fs._usage(s.TURNS[1])],
    ]), tools=[expert.as_tool()], name="lead", callback_handler=None)  # fmt: skip
    await run_script(otel_telemetry, strands_events(lead, s.QUESTION), agent_name="lead",
                     capture_content=True)  # fmt: skip

    chat = "chat scripted-converse"
    nested = [
        "invoke_agent expert",
        [["step 0", [chat, ["execute_tool lookup", ["client lookup"]]]], ["step 1", [chat]]],
    ]
    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", [chat, ["execute_tool expert", [nested]]]],
            ["step 1", [chat]],
        ]],
    ]  # fmt: skip
    run = dict(otel_telemetry.span("invoke_agent expert").attributes or {})
    assert "sunny" in str(run["gen_ai.output.messages"])
    assert tokens(otel_telemetry) == 2 * (s.TURNS[0].input + s.TURNS[1].input)
    lead_run = attributes(otel_telemetry, "invoke_agent lead")
    assert lead_run["agent_otel.usage.input_tokens"] == s.TURNS[0].input + s.TURNS[1].input
    assert otel_telemetry.open_spans() == []
