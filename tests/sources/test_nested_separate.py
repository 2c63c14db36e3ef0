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

    await fs.agent_tool(otel_telemetry)

    _expert_nested_under(otel_telemetry, "execute_tool expert")


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


async def test_strands_an_agent_tool_whose_run_fails_fails_its_run_and_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The expert's model fails mid-stream: Strands catches it in ``as_tool()`` and hands the
    lead ``Agent error: ...``. Before, the nested run ended as if it had answered and the
    call failed as ``tool_error``; now the nested run, its call and the tool call fail with
    the exception's class, and the lead goes on untouched."""
    pytest.importorskip("strands")
    from opentelemetry.trace import StatusCode

    from agent_contract.sources.strands_stream import strands_events
    from agent_otel.testing import run_script

    from ._fw_strands import _model, _text, agent
    from .test_strands_teams import CHAT, _asks, _says, _turn

    expert = agent(_says("never", "said", "at", "all", fail=True), [], name="expert")
    lead = agent(_model([_asks("e1", "expert", {"input": "Paris?"}, 10),
                         _turn(*_text("Sorry."), tokens_in=12)]), [], name="lead")  # fmt: skip
    lead.tool_registry.register_tool(expert.as_tool())
    await run_script(otel_telemetry, strands_events(lead, "Go"), agent_name="lead")

    nested = ["invoke_agent expert", [["step 0", [CHAT]]]]
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", [CHAT, ["execute_tool expert", [nested]]]], ["step 1", [CHAT]],
    ]]]  # fmt: skip
    failed = sorted((s.name, dict(s.attributes or {}).get("error.type"))
                    for s in otel_telemetry.spans()
                    if s.status.status_code is StatusCode.ERROR)  # fmt: skip
    assert failed == [(CHAT, "Overloaded"), ("execute_tool expert", "Overloaded"),
                      ("invoke_agent expert", "Overloaded")]  # fmt: skip
    run = dict(otel_telemetry.span("invoke_agent expert").attributes or {})
    assert run["agent_otel.end_reason"] == "exhausted"
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("sync", [True, False], ids=["sync_tool", "async_tool"])
async def test_strands_an_agent_a_tool_body_runs_itself_is_a_nested_run_under_its_call(
    otel_telemetry: InMemoryTelemetry, sync: bool
) -> None:
    """A ``@tool`` calling another ``Agent`` directly (``expert(q)``, ``await
    expert.invoke_async(q)``), not through ``as_tool()``: that agent's run is a run of its own
    under the tool's span, as an agent tool's is, with its calls, its own tool, tokens (once)
    and answer. Before, it was invisible (its model calls stood down in the lead's run)."""
    pytest.importorskip("strands")
    from . import _fw_strands as fs

    await fs.agent_in_tool(otel_telemetry, sync=sync)

    _expert_nested_under(otel_telemetry, "execute_tool ask")


async def test_strands_an_agent_a_tool_body_runs_itself_that_fails_fails_its_run_and_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The expert a ``@tool`` asks itself fails mid-stream: its exception leaves ``expert(q)``
    into the body, which Strands turns into the lead's error result. The nested run and its
    call fail with the exception's class, so does the tool call, and the lead goes on."""
    pytest.importorskip("strands")
    from opentelemetry.trace import StatusCode

    from agent_contract.sources.strands_stream import strands_events
    from agent_otel.testing import run_script

    from ._fw_strands import _model, _text, agent
    from .test_strands_teams import CHAT, _asks, _says, _turn

    expert = agent(_says("never", "said", "at", "all", fail=True), [], name="expert")

    def ask(question: str) -> str:
        """Ask the expert."""
        return str(expert(question))

    lead = agent(_model([_asks("e1", "ask", {"question": "Paris?"}, 10),
                         _turn(*_text("Sorry."), tokens_in=12)]), [ask], name="lead")  # fmt: skip
    await run_script(otel_telemetry, strands_events(lead, "Go"), agent_name="lead")

    nested = ["invoke_agent expert", [["step 0", [CHAT]]]]
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", [CHAT, ["execute_tool ask", [nested]]]], ["step 1", [CHAT]],
    ]]]  # fmt: skip
    failed = sorted((s.name, dict(s.attributes or {}).get("error.type"))
                    for s in otel_telemetry.spans()
                    if s.status.status_code is StatusCode.ERROR)  # fmt: skip
    assert failed == [(CHAT, "Overloaded"), ("execute_tool ask", "Overloaded"),
                      ("invoke_agent expert", "Overloaded")]  # fmt: skip
    lead_run = otel_telemetry.span("invoke_agent lead")
    assert lead_run.status.status_code is not StatusCode.ERROR
    assert otel_telemetry.open_spans() == []


async def test_google_adk_a_runner_a_tool_body_makes_itself_is_a_nested_run_under_its_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A function tool running another agent on a runner it makes itself (not an
    ``AgentTool``, whose runner inherits the outer runner's plugins): that run is a nested run
    under the tool's span, with its call, tokens (once) and answer. Before, it was invisible."""
    pytest.importorskip("google.adk")
    from . import _fw_google_adk as fa
    from . import _script as s

    await fa.runner_in_tool(otel_telemetry)

    chat = f"chat {fa.MODEL}"
    nested = ["invoke_agent expert", [["step 0", [chat]]]]
    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", [chat, ["execute_tool ask", [nested]]]],
            ["step 1", [chat]],
        ]],
    ]  # fmt: skip
    run = dict(otel_telemetry.span("invoke_agent expert").attributes or {})
    assert "sunny" in str(run["gen_ai.output.messages"])
    assert tokens(otel_telemetry) == 2 * s.TURNS[0].input + s.TURNS[1].input
    assert otel_telemetry.open_spans() == []


async def test_strands_a_team_a_tool_body_streams_through_the_adapter_is_one_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A ``@tool`` streaming a ``Swarm`` through ``strands_events`` and its own traced run: the
    team's members run in its tasks, in the tool body's context, and are that run's steps,
    not also runs nested of their own (each call once, its tokens once)."""
    pytest.importorskip("strands")
    from strands.multiagent import Swarm

    from agent_contract.sources.strands_stream import strands_events
    from agent_otel.testing import run_script

    from ._fw_strands import _model, _text, agent
    from .test_strands_teams import CHAT, _asks, _says, _turn

    member = agent(_says("one", tokens_in=10), [], name="member")

    async def ask(question: str) -> str:
        """Ask the team."""
        await run_script(otel_telemetry, strands_events(Swarm([member]), question),
                         agent_name="team")  # fmt: skip
        return "done"

    lead = agent(_model([_asks("e1", "ask", {"question": "Q"}, 5),
                         _turn(*_text("Ok."), tokens_in=7)]), [ask], name="lead")  # fmt: skip
    await run_script(otel_telemetry, strands_events(lead, "Go"), agent_name="lead")

    team = ["invoke_agent team", [["step 0", [CHAT]]]]
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", [CHAT, ["execute_tool ask", [team]]]], ["step 1", [CHAT]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == 5 + 10 + 7
    assert otel_telemetry.open_spans() == []


async def test_strands_a_delegation_tool_is_a_nested_run_told_once(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``agent.as_tool(delegate=True)``: Strands also puts the delegate's own events, unwrapped,
    in the lead's stream, and ends the lead's turn with the delegate's answer, asking the
    lead's model nothing more. The delegate's call is its nested run's alone: before, the
    lead's step had a second chat span telling it again (its tokens counted twice)."""
    pytest.importorskip("strands")
    from strands import Agent

    from agent_contract.sources.strands_stream import strands_events
    from agent_otel.testing import run_script

    from ._fw_strands import _model, _text
    from .test_strands_teams import CHAT, _asks, _says, _turn

    billing = Agent(model=_says("Paid.", tokens_in=10), name="billing", description="Bills.",
                    callback_handler=None)  # fmt: skip
    lead = Agent(model=_model([_asks("e1", "billing", {"input": "Pay"}, 5),
                               _turn(*_text("Never."), tokens_in=7)]),
                 tools=[billing.as_tool(delegate=True)], name="lead",
                 callback_handler=None)  # fmt: skip
    await run_script(otel_telemetry, strands_events(lead, "Go"), agent_name="lead",
                     capture_content=True)  # fmt: skip

    nested = ["invoke_agent billing", [["step 0", [CHAT]]]]
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", [CHAT, ["execute_tool billing", [nested]]]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == 5 + 10
    run = dict(otel_telemetry.span("invoke_agent lead").attributes or {})
    assert "Paid." in str(run["gen_ai.output.messages"])  # the delegate's answer is the lead's
    assert otel_telemetry.open_spans() == []


def _expert_nested_under(otel_telemetry: InMemoryTelemetry, tool: str) -> None:
    """The Strands lead's ``tool`` holds the expert's whole run (its own tool and two calls,
    its answer); tokens are counted on each run once, nothing left open."""
    from . import _script as s

    chat = "chat scripted-converse"
    nested = [
        "invoke_agent expert",
        [["step 0", [chat, ["execute_tool lookup", ["client lookup"]]]], ["step 1", [chat]]],
    ]
    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [["step 0", [chat, [tool, [nested]]]], ["step 1", [chat]]]],
    ]
    run = dict(otel_telemetry.span("invoke_agent expert").attributes or {})
    assert "sunny" in str(run["gen_ai.output.messages"])
    assert tokens(otel_telemetry) == 2 * (s.TURNS[0].input + s.TURNS[1].input)
    lead_run = attributes(otel_telemetry, "invoke_agent lead")
    assert lead_run["agent_otel.usage.input_tokens"] == s.TURNS[0].input + s.TURNS[1].input
    assert otel_telemetry.open_spans() == []
