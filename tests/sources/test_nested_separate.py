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
