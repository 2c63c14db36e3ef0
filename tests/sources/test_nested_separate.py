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


async def test_crewai_delegations_are_nested_runs_under_their_calls(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A hierarchical crew's manager delegating (``Delegate work to coworker``): CrewAI runs
    the coworker inside that tool, on the tool's thread; each delegation is one complete
    ``execute_tool`` span with its result and, under it, the coworker's nested run with its
    call, tokens (once, not in the crew's totals) and answer; two in one turn each under its
    own call."""
    pytest.importorskip("crewai")
    import json

    from crewai import Agent, Crew, Process, Task

    from agent_contract.sources.crewai_stream import crewai_events

    from . import _fw_crewai as fw
    from . import _script as s

    def coworker(role: str, answer: str) -> Agent:
        return Agent(role=role, goal="Help.", backstory="A colleague.", verbose=False,
                     llm=fw.llm(lambda turn: fw.completion(1, answer, [])))  # fmt: skip

    def delegate(call_id: str, who: str) -> tuple[str, str, str]:
        args = {"task": f"Help with Paris, {who}.", "context": "weather", "coworker": who}
        return call_id, "delegate_work_to_coworker", json.dumps(args)

    def manage(turn: int) -> bytes:
        if turn == 0:
            return fw.completion(0, None, [delegate("d1", "writer"), delegate("d2", "checker")])
        return fw.completion(1, "Paris is sunny, checked.", [])

    manager = Agent(role="manager", goal="Manage.", backstory="A boss.", llm=fw.llm(manage),
                    allow_delegation=True, verbose=False)  # fmt: skip
    task = Task(description="Say something about Paris.", expected_output="a line")
    crew = Crew(agents=[coworker("writer", "A sunny line."), coworker("checker", "Checked.")],
                tasks=[task], manager_agent=manager, process=Process.hierarchical,
                verbose=False)  # fmt: skip
    await run_script(otel_telemetry, crewai_events(crew), agent_name="crew",
                     capture_content=True)  # fmt: skip

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
