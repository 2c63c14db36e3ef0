"""Agents a framework runs inside a tool, in the frameworks that install in their own
environment (``.ci/separate-envs``): each is a nested run under the call that ran it, with its
calls, tokens (once) and answer."""

from __future__ import annotations

import pytest

from agent_otel.testing import InMemoryTelemetry

from ._trace import attributes, tokens


async def test_google_adk_agent_tools_in_parallel_are_nested_runs_under_their_calls(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``AgentTool``: ADK runs the agent on a runner of its own inside the call; each call is
    a nested run under its tool span, with its call, tokens (once) and answer."""
    pytest.importorskip("google.adk")
    from . import _fw_google_adk as fa
    from . import _script as s

    await fa.agent_tools(otel_telemetry)

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
    from . import _fw_strands as fs
    from . import _script as s

    await fs.agent_tool(otel_telemetry)

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


async def test_crewai_delegations_are_nested_runs_under_their_calls(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A hierarchical crew's manager delegating (``Delegate work to coworker``): CrewAI runs
    the coworker inside that tool, on the tool's thread; each delegation is one complete
    ``execute_tool`` span with its result and, under it, the coworker's nested run with its
    call, tokens (once, not in the crew's totals) and answer; two in one turn each under its
    own call."""
    pytest.importorskip("crewai")
    from . import _fw_crewai as fw
    from . import _script as s

    await fw.delegations(otel_telemetry)

    chat = f"chat {fw.MODEL}"
    outline = otel_telemetry.outline()
    [[run, [[step0, calls], step1]]] = outline
    assert (run, step0, step1) == ("invoke_agent crew", "step 0", ["step 1", [chat]])
    assert calls[0] == chat
    assert sorted(map(str, calls[1:])) == sorted(
        str(["execute_tool delegate_work_to_coworker",
             [[f"invoke_agent {who}", [["step 0", [chat]]]]]])
        for who in ("writer", "checker")
    )  # fmt: skip
    spans = otel_telemetry.by_name()["execute_tool delegate_work_to_coworker"]
    tools = {dict(t.attributes or {})["gen_ai.tool.call.id"]: t for t in spans}
    for call_id, who, answer in (("d1", "writer", "A sunny line."), ("d2", "checker", "Checked.")):
        span = dict(tools[call_id].attributes or {})
        assert "agent_otel.incomplete" not in span
        assert answer in str(span["gen_ai.tool.call.result"])
        parent = otel_telemetry.span(f"invoke_agent {who}").parent
        assert parent is not None and parent.span_id == tools[call_id].context.span_id
    for who, answer in (("writer", "A sunny line."), ("checker", "Checked.")):
        nested = attributes(otel_telemetry, f"invoke_agent {who}")
        assert answer in str(nested["gen_ai.output.messages"])
        assert nested["agent_otel.usage.input_tokens"] == s.TURNS[1].input
    assert tokens(otel_telemetry) == 2 * s.TURNS[1].input + s.TURNS[0].input + s.TURNS[1].input
    crew_run = attributes(otel_telemetry, "invoke_agent crew")
    assert crew_run["agent_otel.usage.input_tokens"] == s.TURNS[0].input + s.TURNS[1].input
    assert otel_telemetry.open_spans() == []
