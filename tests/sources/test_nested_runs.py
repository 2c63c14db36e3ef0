"""Nested graphs and agents used as tools keep their calls, tokens and answer in the trace.

A framework can run an agent inside another: LangGraph a compiled sub-graph as a node (the
supervisor pattern), the Agents SDK an agent as a tool. Its model calls are real calls: each
must have its chat span, its tokens counted once, its answer kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_contract.protocol import AgentEvent, PhaseMarker, TextDelta
from agent_otel.testing import InMemoryTelemetry, run_script

from . import _frameworks as fw
from ._trace import attributes, tokens

QUESTION = {"messages": [("user", "Weather?")]}
REACT = [
    ["invoke_agent agent", [
        ["step 0", ["chat", "execute_tool weather", "execute_tool weather"]],
        ["step 1", ["chat"]],
    ]],
]  # fmt: skip


def _supervisor(*workers: tuple[str, Any]) -> Any:
    """A graph whose nodes are compiled graphs, run one after the other."""
    from langgraph.graph import END, START, MessagesState, StateGraph

    graph = StateGraph(MessagesState)
    before = START
    for name, worker in workers:
        graph.add_node(name, worker)
        graph.add_edge(before, name)
        before = name
    graph.add_edge(before, END)
    return graph.compile(name="supervisor")


def _usage_in(update_items: list[Any]) -> int:
    """Input tokens of every AI message the root graph's updates carry (the graph's own count)."""
    seen: dict[str, int] = {}
    for mode, payload in update_items:
        if mode != "updates":
            continue
        for state in payload.values():
            for message in (state or {}).get("messages", ()):
                used = getattr(message, "usage_metadata", None)
                if used:
                    seen[message.id] = used["input_tokens"]
    return sum(seen.values())


async def _one_worker_run(
    telemetry: InMemoryTelemetry, **options: Any
) -> tuple[list[AgentEvent], list[Any]]:
    """A supervisor graph of one ReAct worker graph, run through ``langgraph_events`` (with
    ``options``): its events, and the items its sink kept."""
    pytest.importorskip("langgraph")
    from agent_contract.sources.langgraph_stream import langgraph_events

    kept: list[Any] = []
    graph = _supervisor(("worker", fw.langgraph_graph()))
    source = langgraph_events(graph, QUESTION, sink=kept.append, **options)
    return await run_script(telemetry, source, agent_name="agent"), kept


async def test_a_langgraph_sub_graph_used_as_a_node_keeps_its_calls_tokens_and_answer(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    events, kept = await _one_worker_run(otel_telemetry)

    assert (
        "".join(e.text for e in events if isinstance(e, TextDelta))
        == "Checking both.Sunny in both."
    )
    assert otel_telemetry.outline() == REACT
    assert not any(s.attributes and s.attributes.get("agent_otel.incomplete")
                   for s in otel_telemetry.spans())  # fmt: skip
    assert tokens(otel_telemetry) == _usage_in(kept) == 240
    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.usage.input_tokens"] == 240
    assert [e.name for e in events if isinstance(e, PhaseMarker)] == ["worker"]
    assert all(len(item) == 2 for item in kept)  # the sink gets what astream gives by default
    assert otel_telemetry.open_spans() == []


async def test_langgraph_with_subgraphs_streams_the_nested_items_to_the_sink(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    _, kept = await _one_worker_run(otel_telemetry, subgraphs=True)

    assert otel_telemetry.outline() == REACT
    assert tokens(otel_telemetry) == 240
    assert {len(item) for item in kept} == {3}  # (namespace, mode, payload), as asked
    assert {item[0] for item in kept} >= {()}
    assert any(item[0] and item[0][0].startswith("worker:") for item in kept)


async def test_each_langgraph_sub_agent_is_named_by_a_phase_and_keeps_its_steps(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("langgraph")
    from agent_contract.sources.langgraph_stream import langgraph_events

    graph = _supervisor(("researcher", fw.langgraph_graph(ids="research")),
                        ("writer", fw.langgraph_graph(ids="write")))  # fmt: skip
    events = await run_script(otel_telemetry, langgraph_events(graph, QUESTION), agent_name="agent")

    assert [e.name for e in events if isinstance(e, PhaseMarker)] == ["researcher", "writer"]
    chats = [s for s in otel_telemetry.spans() if s.name == "chat"]
    assert len(chats) == 4 and tokens(otel_telemetry) == 480
    # Each agent's turn is steps of its own, named by its phase: the writer's first call was
    # in the step of the researcher's answer, under the researcher's phase
    steps = [s for s in otel_telemetry.spans() if s.name.startswith("step ")]
    assert [(s.attributes or {}).get("agent_otel.phase") for s in steps] == [
        "researcher", "researcher", "writer", "writer"]  # fmt: skip


async def test_a_langgraph_model_that_does_not_stream_still_has_its_chat_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("langgraph")
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    from agent_contract.sources.langgraph_stream import langgraph_events

    usage = {"input_tokens": 70, "output_tokens": 5, "total_tokens": 75}
    meta = {"model_name": "gpt-4o-mini", "finish_reason": "stop"}
    reply = AIMessage(content="Sunny.", id="whole-1", usage_metadata=usage,  # type: ignore[arg-type]
                      response_metadata=meta)  # fmt: skip
    model = FakeMessagesListChatModel(responses=[reply], disable_streaming=True)

    async def answer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    compiled = _supervisor(("inner", graph.compile()))
    events = await run_script(
        otel_telemetry, langgraph_events(compiled, QUESTION), agent_name="agent"
    )

    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Sunny."
    [chat] = [s for s in otel_telemetry.spans() if s.name.startswith("chat")]
    assert (chat.attributes or {})["gen_ai.usage.input_tokens"] == 70
    assert (chat.attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)


def _agents_usage(tokens_in: int, tokens_out: int) -> Any:
    from agents import Usage

    return Usage(requests=1, input_tokens=tokens_in, output_tokens=tokens_out,
                 total_tokens=tokens_in + tokens_out)  # fmt: skip


def _below(telemetry: InMemoryTelemetry, top: Any) -> list[Any]:
    """Every span under ``top``, at any depth."""
    spans = telemetry.spans()
    found, ids = [], {top.context.span_id}
    for _ in spans:  # enough rounds for any depth
        more = [s for s in spans if s.parent and s.parent.span_id in ids and s not in found]
        found += more
        ids |= {s.context.span_id for s in more}
    return found


@pytest.mark.parametrize("streamed_by", ["tool_body", "as_tool_on_stream"])
async def test_an_agent_a_tool_streams_is_a_nested_run_under_the_tool(
    streamed_by: str, otel_telemetry: InMemoryTelemetry
) -> None:
    """An agent streamed inside a tool, by the tool's own body (``Runner.run_streamed`` and
    its ``stream_events()``) or by the SDK for ``agent.as_tool(on_stream=...)``: the body or
    the callback gets the SDK's events as ever, and the agent is a nested run under the
    tool's span with its call and tokens, counted once (it was recorded nowhere)."""
    pytest.importorskip("agents")
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    set_tracing_disabled(True)  # no export to the vendor's trace endpoint
    expert = Agent(name="expert", model=ScriptedModel([
        ModelStep(output=[assistant_message("sunny")], usage=_agents_usage(30, 4)),
    ]))  # fmt: skip
    seen: list[str] = []
    if streamed_by == "tool_body":

        @function_tool
        async def ask(q: str) -> str:
            """Ask the expert."""
            streamed = Runner.run_streamed(expert, q)
            seen.extend([event.type async for event in streamed.stream_events()])
            return str(streamed.final_output)

        tool, arguments = ask, {"q": "Paris?"}
    else:
        tool = expert.as_tool("ask", "Ask.", on_stream=lambda got: seen.append(got["event"].type))
        arguments = {"input": "Paris?"}
    lead = Agent(name="lead", tools=[tool], model=ScriptedModel([
        ModelStep(output=[function_call("ask", arguments, call_id="e1")],
                  usage=_agents_usage(100, 10)),
        ModelStep(output=[assistant_message("Sunny.")], usage=_agents_usage(140, 6)),
    ]))  # fmt: skip
    await run_script(otel_telemetry, openai_agents_events(lead, "Weather?"), agent_name="lead")

    nested = [["invoke_agent expert", [["step 0", ["chat"]]]]]
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", ["chat", ["execute_tool ask", nested]]], ["step 1", ["chat"]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == 100 + 30 + 140
    assert "raw_response_event" in seen and "agent_updated_stream_event" in seen
    assert otel_telemetry.open_spans() == []


async def test_agents_sdk_agents_used_as_tools_in_parallel_are_nested_runs_under_their_tools(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``agent.as_tool()`` runs the agent unstreamed, inside the tool: each call is a nested
    ``invoke_agent`` under its own tool span, with its chat span, its tokens (once: the
    parent's run counts only its own calls) and its answer."""
    pytest.importorskip("agents")
    from agents import Agent, set_tracing_disabled
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    set_tracing_disabled(True)  # no export to the vendor's trace endpoint
    translator = Agent(name="translator", instructions="Translate to French.", model=ScriptedModel([
        ModelStep(output=[assistant_message("Bonjour")], usage=_agents_usage(30, 4)),
        ModelStep(output=[assistant_message("Au revoir")], usage=_agents_usage(31, 5)),
    ]))  # fmt: skip
    calls = [function_call("translate", {"input": text}, call_id=cid)
             for cid, text in (("t1", "Hello"), ("t2", "Bye"))]  # fmt: skip
    lead = Agent(name="lead", tools=[translator.as_tool("translate", "Translate.")],
                 model=ScriptedModel([
                     ModelStep(output=calls, usage=_agents_usage(100, 10)),
                     ModelStep(output=[assistant_message("Bonjour. Au revoir.")],
                               usage=_agents_usage(140, 6)),
                 ]))  # fmt: skip
    results: list[Any] = []
    traced = otel_telemetry.wrapper(agent_name="lead", capture_content=True)
    [_ async for _ in traced(openai_agents_events(lead, "Translate", on_result=results.append))]

    assert results[0].final_output == "Bonjour. Au revoir."
    nested = [["invoke_agent translator", [["step 0", ["chat"]]]]]
    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", ["chat", ["execute_tool translate", nested],
                        ["execute_tool translate", nested]]],
            ["step 1", ["chat"]],
        ]],
    ]  # fmt: skip
    by_id = {s.context.span_id: s for s in otel_telemetry.spans()}
    answers = {}
    for run in [s for s in otel_telemetry.spans() if s.name == "invoke_agent translator"]:
        tool = by_id[run.parent.span_id]
        [chat] = [s for s in _below(otel_telemetry, run) if s.name == "chat"]
        output = str((chat.attributes or {})["gen_ai.output.messages"])
        answers[(tool.attributes or {})["gen_ai.tool.call.id"]] = output
        assert (run.attributes or {})["agent_otel.usage.input_tokens"] in {30, 31}
    assert sorted("Bonjour" in a for a in answers.values()) == [False, True]
    assert set(answers) == {"t1", "t2"}
    assert tokens(otel_telemetry) == 100 + 140 + 30 + 31  # every call once
    assert tokens(otel_telemetry, "gen_ai.usage.output_tokens") == 10 + 6 + 4 + 5
    assert attributes(otel_telemetry, "invoke_agent lead")["agent_otel.usage.input_tokens"] == 240
    assert otel_telemetry.open_spans() == []


async def test_agents_sdk_nested_agent_tools_nest_at_every_depth_and_keep_their_failures(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An agent tool inside an agent tool, and a function tool of the caller's calling
    ``Runner.run``: each run nests under the tool that ran it; a failing tool of a nested run
    marks that run's tool span only; a nested run whose model fails ends in error and so does
    its tool (the SDK turns the failure into text for the model)."""
    pytest.importorskip("agents")
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    set_tracing_disabled(True)

    @function_tool
    def lookup(term: str) -> str:
        raise KeyError(term)

    broken = Agent(name="broken", model=ScriptedModel([RuntimeError("model down")]))
    clerk = Agent(name="clerk", tools=[lookup], model=ScriptedModel([
        ModelStep(output=[function_call("lookup", {"term": "x"}, call_id="k1")],
                  usage=_agents_usage(11, 1)),
        ModelStep(output=[assistant_message("not found")], usage=_agents_usage(12, 2)),
    ]))  # fmt: skip
    researcher = Agent(name="researcher", tools=[clerk.as_tool("ask_clerk", "Ask.")],
                       model=ScriptedModel([
        ModelStep(output=[function_call("ask_clerk", {"input": "x?"}, call_id="r1")],
                  usage=_agents_usage(21, 1)),
        ModelStep(output=[assistant_message("unknown")], usage=_agents_usage(22, 2)),
    ]))  # fmt: skip

    @function_tool
    async def consult(question: str) -> str:
        result = await Runner.run(researcher, question)
        return str(result.final_output)

    lead = Agent(name="lead", tools=[consult, broken.as_tool("ask_broken", "Ask.")],
                 model=ScriptedModel([
        ModelStep(output=[function_call("consult", {"question": "x?"}, call_id="c1"),
                          function_call("ask_broken", {"input": "y?"}, call_id="b1")],
                  usage=_agents_usage(100, 10)),
        ModelStep(output=[assistant_message("done")], usage=_agents_usage(140, 6)),
    ]))  # fmt: skip
    await run_script(otel_telemetry, openai_agents_events(lead, "go"), agent_name="lead")

    clerk_run = ["invoke_agent clerk", [["step 0", ["chat", "execute_tool lookup"]],
                                        ["step 1", ["chat"]]]]  # fmt: skip
    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", ["chat",
                        ["execute_tool consult", [["invoke_agent researcher", [
                            ["step 0", ["chat", ["execute_tool ask_clerk", [clerk_run]]]],
                            ["step 1", ["chat"]],
                        ]]]],
                        ["execute_tool ask_broken", [["invoke_agent broken", [
                            ["step 0", ["chat"]]]]]]]],
            ["step 1", ["chat"]],
        ]],
    ]  # fmt: skip
    failed = {s.name: dict(s.attributes or {}).get("error.type")
              for s in otel_telemetry.spans() if not s.status.is_ok}  # fmt: skip
    assert failed == {"execute_tool lookup": "KeyError", "execute_tool ask_broken": "RuntimeError",
                      "invoke_agent broken": "RuntimeError", "chat": "RuntimeError"}  # fmt: skip
    assert tokens(otel_telemetry) == 100 + 140 + 21 + 22 + 11 + 12
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("how", ["sync tool", "to_thread"])
async def test_an_agents_sdk_run_sync_in_a_tool_is_a_nested_run_under_the_tool(
    otel_telemetry: InMemoryTelemetry, how: str
) -> None:
    """``Runner.run_sync`` in a function tool (a sync tool, which the SDK runs on a thread, or
    an async one handing it to ``asyncio.to_thread``): the nesting runner passed ``run_sync``
    to the SDK's runner, whose loop ran its own ``run``, so the agent was in no span and its
    tokens in no total; now it nests under the tool as ``Runner.run`` does."""
    pytest.importorskip("agents")
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    set_tracing_disabled(True)

    @function_tool
    def lookup(term: str) -> str:
        return "found"

    clerk = Agent(name="clerk", tools=[lookup], model=ScriptedModel([
        ModelStep(output=[function_call("lookup", {"term": "x"}, call_id="k1")],
                  usage=_agents_usage(11, 1)),
        ModelStep(output=[assistant_message("not found")], usage=_agents_usage(12, 2)),
    ]))  # fmt: skip

    def ask(question: str) -> str:
        return str(Runner.run_sync(clerk, question).final_output)

    async def ask_on_a_thread(question: str) -> str:
        return await asyncio.to_thread(ask, question)

    consult = function_tool(ask if how == "sync tool" else ask_on_a_thread, name_override="consult")
    lead = Agent(name="lead", tools=[consult], model=ScriptedModel([
        ModelStep(output=[function_call("consult", {"question": "x?"}, call_id="c1")],
                  usage=_agents_usage(100, 10)),
        ModelStep(output=[assistant_message("done")], usage=_agents_usage(140, 6)),
    ]))  # fmt: skip
    await run_script(otel_telemetry, openai_agents_events(lead, "go"), agent_name="lead")

    clerk_run = ["invoke_agent clerk", [["step 0", ["chat", "execute_tool lookup"]],
                                        ["step 1", ["chat"]]]]  # fmt: skip
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", ["chat", ["execute_tool consult", [clerk_run]]]], ["step 1", ["chat"]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == 100 + 140 + 11 + 12
    assert otel_telemetry.open_spans() == []


async def test_agents_sdk_agent_tools_run_as_the_sdk_runs_them_when_nothing_traces() -> None:
    """No run traced: the nested agent runs unstreamed, as the SDK runs it."""
    pytest.importorskip("agents")
    from agents import Agent, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    set_tracing_disabled(True)
    inner = ScriptedModel([[assistant_message("Bonjour")]])
    translator = Agent(name="translator", model=inner)
    lead = Agent(name="lead", tools=[translator.as_tool("translate", "Translate.")],
                 model=ScriptedModel([[function_call("translate", {"input": "Hi"}, call_id="t")],
                                      [assistant_message("Bonjour.")]]))  # fmt: skip
    kept: list[Any] = []
    [_ async for _ in openai_agents_events(lead, "Hi", on_result=kept.append)]

    assert kept[0].final_output == "Bonjour."
    assert [call.streamed for call in inner.calls] == [False]


def _autogen_text(text: str, tokens_in: int, tokens_out: int) -> Any:
    from autogen_core.models import CreateResult, RequestUsage

    usage = RequestUsage(prompt_tokens=tokens_in, completion_tokens=tokens_out)
    return CreateResult(finish_reason="stop", content=text, usage=usage, cached=False)


async def test_autogen_agents_used_as_tools_in_parallel_are_nested_runs_under_their_tools(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``AgentTool``: AutoGen runs the agent inside the call and puts its items in the outer
    stream; each call is a nested run under its own tool span, with its call, tokens (once:
    the outer run keeps only its own) and answer; an agent tool inside it nests again."""
    pytest.importorskip("autogen_agentchat")
    from autogen_agentchat.tools import AgentTool

    from agent_contract.sources.autogen_stream import autogen_events

    from . import _fw_autogen as fa
    from . import _script as s

    clerk = fa.agent([_autogen_text("on file", 11, 1)], [], name="clerk")
    expert = fa.agent(
        [fa._calls(s.Call("k1", "clerk", {"task": "look"})), _autogen_text("sunny", 30, 3),
         _autogen_text("rainy", 31, 4)],
        [AgentTool(clerk, return_value_as_last_message=True)], name="expert",
    )  # fmt: skip
    calls = fa._calls(s.Call("e1", "expert", {"task": "Paris?"}),
                      s.Call("e2", "expert", {"task": "Rome?"}))  # fmt: skip
    lead = fa.agent([calls, "It is sunny."], [AgentTool(expert, return_value_as_last_message=True)],
                    name="lead")  # fmt: skip
    await run_script(otel_telemetry, autogen_events(lead, "Weather?"), agent_name="lead",
                     capture_content=True)  # fmt: skip

    clerk_run = ["invoke_agent clerk", [["step 0", ["chat"]]]]
    first = ["invoke_agent expert", [["step 0", ["chat", ["execute_tool clerk", [clerk_run]]]],
                                     ["step 1", ["chat"]]]]  # fmt: skip
    second = ["invoke_agent expert", [["step 0", ["chat"]]]]
    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", ["chat", ["execute_tool expert", [first]],
                        ["execute_tool expert", [second]]]],
            ["step 1", ["chat"]],
        ]],
    ]  # fmt: skip
    outputs = [str((sp.attributes or {}).get("gen_ai.output.messages"))
               for sp in otel_telemetry.spans() if sp.name == "chat"]  # fmt: skip
    assert sum("sunny" in o for o in outputs) == 2 and sum("rainy" in o for o in outputs) == 1
    assert sum("on file" in o for o in outputs) == 1
    lead = attributes(otel_telemetry, "invoke_agent lead")["agent_otel.usage.input_tokens"]
    assert tokens(otel_telemetry) == lead + s.TURNS[0].input + 30 + 31 + 11  # once each
    assert otel_telemetry.open_spans() == []


async def test_an_autogen_agent_tool_whose_run_fails_names_the_failure_on_its_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The expert's model fails mid-stream: AutoGen turns the exception into the call's
    text, and the call's span was failed as ``tool_error``; it is named by the class the
    nested run failed with, as any AutoGen tool's is, and the lead's spans are untouched."""
    pytest.importorskip("autogen_agentchat")
    from autogen_agentchat.tools import AgentTool
    from opentelemetry.trace import StatusCode

    from agent_contract.sources.autogen_stream import autogen_events

    from . import _fw_autogen as fa
    from . import _script as s

    expert = fa.agent(["never"], [], name="expert", fail=True)
    tool = AgentTool(expert, return_value_as_last_message=True)
    lead = fa.agent([fa._calls(s.Call("e1", "expert", {"task": "Paris?"})), "Sorry."], [tool],
                    name="lead")  # fmt: skip
    await run_script(otel_telemetry, autogen_events(lead, "Weather?"), agent_name="lead")

    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", ["chat", ["execute_tool expert", [["invoke_agent expert", [
            ["step 0", ["chat"]]]]]]]],
        ["step 1", ["chat"]],
    ]]]  # fmt: skip
    failed = sorted((sp.name, dict(sp.attributes or {}).get("error.type"))
                    for sp in otel_telemetry.spans()
                    if sp.status.status_code is StatusCode.ERROR)  # fmt: skip
    assert failed == [("chat", "Overloaded"), ("execute_tool expert", "Overloaded"),
                      ("invoke_agent expert", "Overloaded")]  # fmt: skip
    assert otel_telemetry.open_spans() == []


async def test_autogen_teams_give_each_speaker_its_own_steps_named_by_a_phase(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A ``RoundRobinGroupChat`` and a ``Swarm`` handoff: one run, each agent's turn its own
    step after a phase naming it (a new speaker is a new step, tools or not), tokens once."""
    pytest.importorskip("autogen_agentchat")
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import TextMentionTermination
    from autogen_agentchat.teams import RoundRobinGroupChat, Swarm

    from agent_contract.sources.autogen_stream import autogen_events

    from . import _fw_autogen as fa
    from . import _script as s

    researcher = fa.agent([_autogen_text("Paris is sunny.", 40, 4)], [], name="researcher")
    writer = fa.agent([_autogen_text("Sunny. TERMINATE", 50, 5)], [], name="writer")
    done = TextMentionTermination("TERMINATE")
    crew = RoundRobinGroupChat([researcher, writer], name="crew", termination_condition=done)
    events = await run_script(otel_telemetry, autogen_events(crew, "Weather?"), agent_name="crew")

    assert otel_telemetry.outline() == [
        ["invoke_agent crew", [["step 0", ["chat"]], ["step 1", ["chat"]]]]
    ]
    assert [e.name for e in events if isinstance(e, PhaseMarker)] == ["researcher", "writer"]
    steps = [attributes(otel_telemetry, f"step {i}").get("agent_otel.phase") for i in (0, 1)]
    assert steps == ["researcher", "writer"]  # the first speaker named too
    assert tokens(otel_telemetry) == 90
    assert attributes(otel_telemetry, "invoke_agent crew")["agent_otel.usage.input_tokens"] == 90

    otel_telemetry.clear()
    handoff = fa._calls(s.Call("h1", "transfer_to_writer", {}))
    router = AssistantAgent("router", model_client=fa._client([handoff]), handoffs=["writer"],
                            model_client_stream=True)  # fmt: skip
    writer = fa.agent([_autogen_text("Done. TERMINATE", 70, 7)], [], name="writer")
    swarm = Swarm([router, writer], termination_condition=TextMentionTermination("TERMINATE"))
    await run_script(otel_telemetry, autogen_events(swarm, "go"), agent_name="swarm")

    assert otel_telemetry.outline() == [
        ["invoke_agent swarm", [["step 0", ["chat", "execute_tool transfer_to_writer"]],
                                ["step 1", ["chat"]]]],
    ]  # fmt: skip
    assert tokens(otel_telemetry) == s.TURNS[0].input + 70


async def test_agno_team_members_are_nested_runs_under_the_delegating_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An Agno ``Team``: the leader's own calls are the run's; each member a delegation runs
    (two at once here) is a nested run under that delegation's tool span, with its call, its
    tokens (once) and its answer."""
    pytest.importorskip("agno")
    from agno.models.openai import OpenAIChat
    from agno.team import Team

    from agent_contract.sources.agno_stream import agno_events

    from . import _fw_agno as fg
    from . import _script_chat as chat
    from ._http import openai_client

    paris = fg.agent(chat.answer("Paris: sunny"), tools=[], name="paris")
    rome = fg.agent(chat.answer("Rome: rainy"), tools=[], name="rome")
    delegations = chat.calls([
        ("d1", "delegate_task_to_member", {"member_id": "paris", "task": "Weather?"}),
        ("d2", "delegate_task_to_member", {"member_id": "rome", "task": "Weather?"}),
    ])  # fmt: skip
    answer = chat.answer("Sunny and rainy.")
    model = OpenAIChat(id="gpt-4o-mini", async_client=openai_client(delegations, answer))
    team = Team(members=[paris, rome], model=model, name="lead", telemetry=False)
    kept: list[Any] = []
    await run_script(otel_telemetry, agno_events(team, "Weather?", sink=kept.append),
                     agent_name="lead", capture_content=True)  # fmt: skip

    member = [["step 0", ["chat gpt-4o-mini"]]]
    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", ["chat gpt-4o-mini",
                        ["execute_tool delegate_task_to_member", [["invoke_agent paris", member]]],
                        ["execute_tool delegate_task_to_member", [["invoke_agent rome", member]]]]],
            ["step 1", ["chat gpt-4o-mini"]],
        ]],
    ]  # fmt: skip
    spans = otel_telemetry.spans()
    by_id = {s.context.span_id: s for s in spans}
    for name, answer in (("paris", "Paris: sunny"), ("rome", "Rome: rainy")):
        run = otel_telemetry.span(f"invoke_agent {name}")
        assert run.parent is not None
        tool = dict(by_id[run.parent.span_id].attributes or {})
        assert tool["gen_ai.tool.call.id"] == {"paris": "d1", "rome": "d2"}[name]
        assert answer in str(dict(run.attributes or {}).get("gen_ai.output.messages"))
    used = [e for e in kept if getattr(e, "event", "").endswith("ModelRequestCompleted")]
    assert tokens(otel_telemetry) == sum(e.input_tokens for e in used)  # every call, once
    lead = attributes(otel_telemetry, "invoke_agent lead")["agent_otel.usage.input_tokens"]
    assert lead == sum(e.input_tokens for e in used if e.event.startswith("Team"))
    assert otel_telemetry.open_spans() == []


async def test_an_agno_broadcast_tells_each_members_tool_once_in_that_members_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``TeamMode.broadcast`` streams every member at once from tasks of its own: each
    member's tool is one span, in that member's nested run under the delegation (before, its
    body ran ahead of the stream and opened a second span, in the leader's step)."""
    pytest.importorskip("agno")
    from agno.models.openai import OpenAIChat
    from agno.team import Team
    from agno.team.mode import TeamMode

    from agent_contract.sources.agno_stream import agno_events

    from . import _fw_agno as fg
    from . import _script_chat as chat
    from ._http import openai_client

    def weather(city: str) -> str:
        """The weather."""
        return "sunny"

    def member(name: str) -> Any:
        asks = chat.call("weather", {"city": name}, f"w_{name}")
        return fg.agent(asks, chat.answer(f"{name}: sunny"), tools=[weather], name=name)

    everyone = chat.call("delegate_task_to_members", {"task": "Weather?"}, "d1")
    model = OpenAIChat(id="gpt-4o-mini", async_client=openai_client(everyone, chat.answer("ok")))
    team = Team(members=[member("paris"), member("rome")], model=model, name="lead",
                telemetry=False, mode=TeamMode.broadcast)  # fmt: skip
    await run_script(otel_telemetry, agno_events(team, "Weather?"), agent_name="lead")

    run = [
        ["step 0", ["chat gpt-4o-mini", "execute_tool weather"]],
        ["step 1", ["chat gpt-4o-mini"]],
    ]
    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", ["chat gpt-4o-mini", ["execute_tool delegate_task_to_members", [
                ["invoke_agent paris", run], ["invoke_agent rome", run]]]]],
            ["step 1", ["chat gpt-4o-mini"]],
        ]],
    ]  # fmt: skip
    tools = [s for s in otel_telemetry.spans() if s.name == "execute_tool weather"]
    assert sorted((s.attributes or {}).get("gen_ai.tool.call.id") for s in tools) == [
        "w_paris", "w_rome"]  # fmt: skip
    assert otel_telemetry.open_spans() == []


async def test_an_agno_route_members_answer_is_its_own_calls_text_and_the_teams_answer(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``TeamMode.route``: the leader hands the question to one member and answers with that
    member's response as it streams. Agno streams the member's text as the team's own content
    (the delegation's ``show_result``), while the member's call is open: that text is what the
    member's call produced (its chat span's output, its run's answer) and the team's answer."""
    pytest.importorskip("agno")
    from agno.models.openai import OpenAIChat
    from agno.team import Team
    from agno.team.mode import TeamMode

    from agent_contract.sources.agno_stream import agno_events

    from . import _fw_agno as fg
    from . import _script_chat as chat
    from ._http import openai_client

    paris = fg.agent(chat.answer("Paris: sunny"), tools=[], name="paris")
    route = chat.call("delegate_task_to_member", {"member_id": "paris", "task": "Weather?"}, "d1")
    model = OpenAIChat(id="gpt-4o-mini", async_client=openai_client(route))
    team = Team(members=[paris], model=model, name="lead", telemetry=False, mode=TeamMode.route)
    await run_script(otel_telemetry, agno_events(team, "Weather?"), agent_name="lead",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [["step 0", ["chat gpt-4o-mini", [
            "execute_tool delegate_task_to_member",
            [["invoke_agent paris", [["step 0", ["chat gpt-4o-mini"]]]]]]]]]],
    ]  # fmt: skip
    run = otel_telemetry.span("invoke_agent paris")
    spans = otel_telemetry.spans()
    [step] = [s for s in spans if s.parent is not None and s.parent.span_id == run.context.span_id]
    [member_call] = [s for s in spans if s.parent is not None
                     and s.parent.span_id == step.context.span_id]  # fmt: skip
    for span in (member_call, run, otel_telemetry.span("invoke_agent lead")):
        assert "Paris: sunny" in str((span.attributes or {}).get("gen_ai.output.messages"))
    assert otel_telemetry.open_spans() == []


async def test_an_agno_member_that_fails_fails_its_delegation_and_nothing_of_the_leader(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A member whose model refuses the request (a 400): its nested run and its call fail,
    and so does the delegation that ran it (before, its span was not marked: Agno hands the
    leader the error's text as the result); the leader's calls and run do not."""
    pytest.importorskip("agno")
    import httpx2
    from agno.models.openai import OpenAIChat
    from agno.team import Team
    from opentelemetry.trace import StatusCode

    from agent_contract.sources.agno_stream import agno_events

    from . import _fw_agno as fg
    from . import _script_chat as chat
    from ._http import openai_client

    def refused(request: Any) -> Any:
        return httpx2.Response(400, json={"error": {"message": "bad request", "type": "invalid"}})

    paris = fg.agent(refused, tools=[], name="paris")
    rome = fg.agent(chat.answer("Rome: rainy"), tools=[], name="rome")
    delegations = chat.calls([
        ("d1", "delegate_task_to_member", {"member_id": "paris", "task": "Weather?"}),
        ("d2", "delegate_task_to_member", {"member_id": "rome", "task": "Weather?"}),
    ])  # fmt: skip
    client = openai_client(delegations, chat.answer("Rainy in Rome."))
    model = OpenAIChat(id="gpt-4o-mini", async_client=client)
    team = Team(members=[paris, rome], model=model, name="lead", telemetry=False)
    await run_script(otel_telemetry, agno_events(team, "Weather?"), agent_name="lead")

    spans = otel_telemetry.spans()
    failed = [s for s in spans if s.status.status_code is StatusCode.ERROR]
    by_id = {s.context.span_id: s for s in spans}
    paris_run = otel_telemetry.span("invoke_agent paris")
    assert sorted(s.name for s in failed) == sorted(
        ["chat gpt-4o-mini", "invoke_agent paris", "execute_tool delegate_task_to_member"]
    )
    [delegation] = [s for s in failed if s.name.startswith("execute_tool")]
    assert dict(delegation.attributes or {})["gen_ai.tool.call.id"] == "d1"
    assert by_id[paris_run.parent.span_id] is delegation
    assert {dict(s.attributes or {}).get("error.type") for s in failed} == {"AgnoRunError"}
    assert otel_telemetry.open_spans() == []


async def test_a_llama_index_agent_workflow_handoff_keeps_each_agents_steps_and_tokens(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A multi-agent ``AgentWorkflow``: the router's handoff is its step's tool call, the next
    agent's turn a step of its own after a phase naming it; each call's tokens once."""
    pytest.importorskip("llama_index.core")
    from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
    from llama_index.core.base.llms.types import (
        ChatMessage,
        ChatResponse,
        LLMMetadata,
        ToolCallBlock,
    )
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    from agent_contract.sources.llama_index_stream import llama_index_events

    from . import _fw_llama_index as fl
    from . import _script as s

    class Turn(MockFunctionCallingLLM):
        """One reply (a tool-call block or text), with the provider's usage as ``raw``."""

        reply: Any = None
        turn: int = 0

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(is_function_calling_model=True, model_name=fl.MODEL)

        async def astream_chat(self, messages: Any, **kwargs: Any) -> Any:
            async def stream() -> AsyncIterator[Any]:
                text = self.reply if isinstance(self.reply, str) else ""
                message = ChatMessage(role="assistant", content=text)
                if not text:
                    message.blocks.append(self.reply)
                yield ChatResponse(
                    message=message, delta=text, raw=fl.chunk(self.turn, content=text)
                )
                yield ChatResponse(message=message, delta="", raw=fl.chunk(self.turn))  # usage

            return stream()

    handoff = ToolCallBlock(tool_call_id="h1", tool_name="handoff",
                            tool_kwargs={"to_agent": "writer", "reason": "to write"})  # fmt: skip
    router = FunctionAgent(name="router", description="Routes.", can_handoff_to=["writer"],
                           llm=Turn(reply=handoff, turn=0), streaming=True)  # fmt: skip
    writer = FunctionAgent(name="writer", description="Writes.",
                           llm=Turn(reply="Sunny.", turn=1), streaming=True)  # fmt: skip
    flow = AgentWorkflow(agents=[router, writer], root_agent="router")
    events = await run_script(otel_telemetry, llama_index_events(flow, "Weather?"),
                              agent_name="flow")  # fmt: skip

    assert otel_telemetry.outline() == [
        ["invoke_agent flow", [
            ["step 0", [f"chat {fl.MODEL}", "execute_tool handoff"]],
            ["step 1", [f"chat {fl.MODEL}"]],
        ]],
    ]  # fmt: skip
    assert [e.name for e in events if isinstance(e, PhaseMarker)] == ["router", "writer"]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Sunny."
    assert tokens(otel_telemetry) == s.TURNS[0].input + s.TURNS[1].input
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("traced", [False, True], ids=["awaited", "traced"])
async def test_a_llama_index_agent_a_workflow_step_runs_is_not_the_workflows_call(
    otel_telemetry: InMemoryTelemetry, traced: bool
) -> None:
    """A workflow step that runs an agent and awaits its answer: the agent's tool step scoped
    its body in the workflow's run, an ``execute_tool`` no event told, left incomplete there;
    now an agent the run does not stream is not its calls. Traced on its own, it nests."""
    pytest.importorskip("llama_index.core")
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock
    from llama_index.core.workflow import Context, StartEvent, StopEvent, Workflow, step

    from agent_contract.sources.llama_index_stream import llama_index_events

    from . import _fw_llama_index as fl

    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    asks = ToolCallBlock(tool_call_id="a1", tool_name="add", tool_kwargs={"a": 1, "b": 2})
    inner = FunctionAgent(name="adder", tools=[add], llm=fl.replies(asks, "3"))

    class Outer(Workflow):
        @step
        async def delegate(self, ctx: Context, ev: StartEvent) -> StopEvent:
            if traced:
                source = llama_index_events(inner, "1+2?")
                [_ async for _ in otel_telemetry.wrapper(agent_name="adder")(source)]
                return StopEvent(result="3")
            return StopEvent(result=str(await inner.run(user_msg="1+2?")))

    await run_script(otel_telemetry, llama_index_events(Outer(timeout=10)), agent_name="flow")

    chat = f"chat {fl.MODEL}"
    adder = ["invoke_agent adder", [["step 0", [chat, "execute_tool add"]], ["step 1", [chat]]]]
    flow = ["invoke_agent flow", [adder]] if traced else "invoke_agent flow"
    assert otel_telemetry.outline() == [flow]
    assert otel_telemetry.open_spans() == []


async def test_a_llama_index_agents_events_a_tool_forwards_name_its_own_model(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A tool runs an agent and forwards its events into the run's stream with
    ``ctx.write_event_to_stream`` (LlamaIndex's way to stream a sub-agent): it is a run nested
    under the tool's span, its model call told once there (the forwarded copies passed over),
    with its own agent's model. Before, the model was the run's agent's (an agent the run did
    not know by name: its own agent's LLM was read)."""
    pytest.importorskip("llama_index.core")
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock
    from llama_index.core.workflow import Context

    from agent_contract.sources.llama_index_stream import llama_index_events

    from . import _fw_llama_index as fl

    inner = FunctionAgent(name="researcher", description="Researches.",
                          llm=fl.replies("Found.", model="inner-model"))  # fmt: skip

    async def research(ctx: Context, q: str) -> str:
        """Research a question."""
        handler = inner.run(user_msg=q)
        async for event in handler.stream_events():
            if type(event).__name__ != "StopEvent":  # (it would end the run's stream)
                ctx.write_event_to_stream(event)
        return str(await handler)

    research.__annotations__["ctx"] = Context  # (this module's annotations are strings)
    asks = ToolCallBlock(tool_call_id="r1", tool_name="research", tool_kwargs={"q": "x"})
    lead = FunctionAgent(name="lead", tools=[research], llm=fl.replies(asks, "Done."))
    await run_script(otel_telemetry, llama_index_events(lead, "Go"), agent_name="lead")

    chats = sorted((sp for sp in otel_telemetry.spans() if sp.name.startswith("chat ")),
                   key=lambda sp: sp.start_time or 0)  # fmt: skip
    models = [(sp.attributes or {}).get("gen_ai.request.model") for sp in chats]
    assert models == [fl.MODEL, "inner-model", fl.MODEL]
    chat = f"chat {fl.MODEL}"
    researcher = ["invoke_agent researcher", [["step 0", ["chat inner-model"]]]]
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", [chat, ["execute_tool research", [researcher]]]], ["step 1", [chat]],
    ]]]  # fmt: skip
    assert otel_telemetry.open_spans() == []


def _llama_index_expert(fail: bool) -> Any:
    """A ``FunctionAgent`` ``expert`` on LlamaIndex's mock LLM (model ``inner``): it calls
    ``add`` (``s.TURNS[0]``'s usage in the raw OpenAI chunk), then answers ``3`` (turn 1's);
    ``fail``: its second request raises ``Overloaded`` before any chunk."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ChatMessage, ChatResponse, ToolCallBlock

    from . import _fw_llama_index as fl
    from . import _script as s

    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    async def stream(turn: int) -> AsyncIterator[Any]:
        if fail and turn:
            raise s.Overloaded("overloaded")
        text = "3" if turn else ""
        message = ChatMessage(role="assistant", content=text)
        if not turn:
            message.blocks.append(ToolCallBlock(tool_call_id="a1", tool_name="add",
                                                tool_kwargs={"a": 1, "b": 2}))  # fmt: skip
        yield ChatResponse(message=message, delta=text, raw=fl.chunk(turn, content=text))
        yield ChatResponse(message=message, delta="", raw=fl.chunk(turn))  # usage

    return FunctionAgent(name="expert", tools=[add], llm=fl._mock_llm("inner", stream))


@pytest.mark.parametrize(
    "streamed", [False, True, "internal"], ids=["awaited", "streamed", "internal"]
)
async def test_a_llama_index_agent_a_tool_body_runs_is_a_run_nested_under_its_call(
    otel_telemetry: InMemoryTelemetry, streamed: bool | str
) -> None:
    """A ``FunctionTool`` whose function runs an agent itself (``await expert.run(q)``, its
    handler's events streamed by the tool or not): that agent was nowhere in the trace, its
    calls and tokens lost. It is a run of its own under the tool's ``execute_tool`` span, with
    its steps, calls, tokens (once) and tool; the handler's events still reach the tool whole,
    the workflow's internal ones (its steps' state) too when it asks for them
    (``expose_internal=True``), and only then."""
    pytest.importorskip("llama_index.core")
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock

    from agent_contract.sources.llama_index_stream import llama_index_events

    from . import _fw_llama_index as fl
    from . import _script as s

    expert = _llama_index_expert(fail=False)
    seen: list[str] = []

    async def ask(q: str) -> str:
        """Ask the expert."""
        handler = expert.run(user_msg=q)
        if streamed:
            events = handler.stream_events(expose_internal=streamed == "internal")
            seen.extend([type(event).__name__ async for event in events])
        return str(await handler)

    asks = ToolCallBlock(tool_call_id="q1", tool_name="ask", tool_kwargs={"q": "1+2?"})
    lead = FunctionAgent(name="lead", tools=[ask], llm=fl.replies(asks, "It is 3."))
    await run_script(otel_telemetry, llama_index_events(lead, "1+2?"), agent_name="lead")

    chat = f"chat {fl.MODEL}"
    nested = ["invoke_agent expert", [["step 0", ["chat inner", "execute_tool add"]],
                                      ["step 1", ["chat inner"]]]]  # fmt: skip
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", [chat, ["execute_tool ask", [nested]]]], ["step 1", [chat]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == s.TURNS[0].input + s.TURNS[1].input  # the expert's, once
    if streamed:  # the tool's own reading of the handler lost nothing
        assert seen.count("AgentOutput") == 2 and seen[-1] == "StopEvent"
        assert ("StepStateChanged" in seen) is (streamed == "internal"), seen
    assert otel_telemetry.open_spans() == []


async def test_a_failed_llama_index_agent_a_tool_body_runs_fails_its_nested_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The agent a tool body runs fails (its model raises): its nested run fails with that
    exception's class, and the tool's call too (LlamaIndex catches the tool's exception); the
    tool body gets the exception as the same object."""
    pytest.importorskip("llama_index.core")
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock

    from agent_contract.sources.llama_index_stream import llama_index_events

    from . import _fw_llama_index as fl
    from . import _script as s

    expert = _llama_index_expert(fail=True)
    raised: list[BaseException] = []

    async def ask(q: str) -> str:
        """Ask the expert."""
        try:
            return str(await expert.run(user_msg=q))
        except Exception as error:
            raised.append(error)
            raise

    asks = ToolCallBlock(tool_call_id="q1", tool_name="ask", tool_kwargs={"q": "1+2?"})
    lead = FunctionAgent(name="lead", tools=[ask], llm=fl.replies(asks, "No answer."))
    await run_script(otel_telemetry, llama_index_events(lead, "1+2?"), agent_name="lead")

    assert [type(e) for e in raised] == [s.Overloaded]
    run = otel_telemetry.span("invoke_agent expert")
    call = otel_telemetry.span("execute_tool ask")
    assert run.parent is not None and run.parent.span_id == call.context.span_id
    assert (run.attributes or {}).get("error.type") == "Overloaded"
    assert (call.attributes or {}).get("error.type") == "Overloaded"
    assert otel_telemetry.open_spans() == []


async def test_a_llama_index_tool_body_awaiting_its_nested_agent_is_cancelled_with_the_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The run is closed while a tool body awaits the agent it runs: LlamaIndex tears both
    workflows down, the inner one's stream never ending. The body gets its ``CancelledError``
    (the wait for the nested run's end never holds it), and the nested run ends cancelled."""
    pytest.importorskip("llama_index.core")
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock

    from agent_contract.sources.llama_index_stream import llama_index_events

    from . import _fw_llama_index as fl

    working, cancelled = asyncio.Event(), asyncio.Event()

    async def slow(q: str) -> str:
        """Work for ever."""
        working.set()
        await asyncio.Event().wait()
        return q

    asks_slow = ToolCallBlock(tool_call_id="w1", tool_name="slow", tool_kwargs={"q": "x"})
    expert = FunctionAgent(name="expert", tools=[slow],
                           llm=fl.replies(asks_slow, "done", model="inner"))  # fmt: skip

    async def ask(q: str) -> str:
        """Ask the expert."""
        try:
            return str(await expert.run(user_msg=q))
        except asyncio.CancelledError:
            cancelled.set()
            raise

    asks = ToolCallBlock(tool_call_id="q1", tool_name="ask", tool_kwargs={"q": "x"})
    lead = FunctionAgent(name="lead", tools=[ask], llm=fl.replies(asks, "done"))
    stream = otel_telemetry.wrapper(agent_name="lead")(llama_index_events(lead, "go"))
    async for event in stream:
        if type(event).__name__ == "ToolCall":
            await asyncio.wait_for(working.wait(), 10)
            break
    await stream.aclose()
    await asyncio.wait_for(cancelled.wait(), 10)  # the body was not held
    for _ in range(100):
        if not otel_telemetry.open_spans():
            break
        await asyncio.sleep(0.05)

    run = otel_telemetry.span("invoke_agent expert")
    assert (run.attributes or {}).get("agent_otel.end_reason") == "cancelled"
    assert run.parent is not None
    assert run.parent.span_id == otel_telemetry.span("execute_tool ask").context.span_id
    assert otel_telemetry.open_spans() == []


async def test_a_llama_index_tool_waiting_for_a_human_is_one_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """LlamaIndex's human in the loop: a tool awaits ``ctx.wait_for_event``; its step runs
    again from the start once the answer comes, writing its ``ToolCall`` again. That was a
    second ``execute_tool`` of the same call, the first left incomplete; now one span, from
    the question to the result, the body's work after the answer under it."""
    pytest.importorskip("llama_index.core")
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock
    from llama_index.core.workflow import Context, HumanResponseEvent, InputRequiredEvent

    from agent_contract.sources.llama_index_stream import llama_index_events

    from . import _fw_llama_index as fl

    tracer = otel_telemetry.tracer_provider.get_tracer("app")

    async def approve(ctx: Context, q: str) -> str:
        """Ask a human."""
        asked = InputRequiredEvent(prefix=q)
        answer = await ctx.wait_for_event(HumanResponseEvent, waiter_id="q", waiter_event=asked)
        with tracer.start_as_current_span("human answered"):
            return f"human said {answer.response}"

    approve.__annotations__["ctx"] = Context  # (this module's annotations are strings)
    asks = ToolCallBlock(tool_call_id="p1", tool_name="approve", tool_kwargs={"q": "ok?"})
    bot = FunctionAgent(name="bot", tools=[approve], llm=fl.replies(asks, "done"))
    handlers: list[Any] = []

    def answer(event: Any) -> None:
        if type(event).__name__ == "InputRequiredEvent":
            handlers[0].ctx.send_event(HumanResponseEvent(response="yes"))

    source = llama_index_events(bot, "hi", on_handler=handlers.append, sink=answer)
    await run_script(otel_telemetry, source, agent_name="bot")

    chat = f"chat {fl.MODEL}"
    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", [chat, ["execute_tool approve", ["human answered"]]]], ["step 1", [chat]],
    ]]]  # fmt: skip
    assert not [s.name for s in otel_telemetry.spans()
                if (s.attributes or {}).get("agent_otel.incomplete")]  # fmt: skip


async def test_smolagents_managed_agents_are_nested_runs_under_the_call_that_ran_them(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A managed agent: smolagents runs it unstreamed inside the manager's call; it is a
    nested run under that call's span, with its call, its tokens (once) and its answer."""
    pytest.importorskip("smolagents")
    from smolagents import OpenAIModel, ToolCallingAgent

    from agent_contract.sources.smolagents_stream import smolagents_events

    from . import _fw_smolagents as fs
    from . import _script as s

    def model(respond: Any) -> Any:
        return OpenAIModel(fs.MODEL, api_key="offline", api_base="http://mock.invalid/v1",
                           client_kwargs=fs.client(respond))  # fmt: skip

    asked: list[int] = []

    def lead(messages: list[dict[str, Any]]) -> bytes:
        asked.append(1)
        if len(asked) == 1:
            return fs.completion(0, None, [("call_e", "expert", '{"task": "Paris?"}')])
        return fs.completion(0, None, fs.answer("The expert says: sunny."))

    expert = ToolCallingAgent(
        tools=[], model=model(lambda messages: fs.completion(1, None, fs.answer("sunny"))),
        verbosity_level=0, name="expert", description="Knows the weather.",
    )  # fmt: skip
    boss = ToolCallingAgent(tools=[], model=model(lead), managed_agents=[expert],
                            verbosity_level=0)  # fmt: skip
    kept: list[Any] = []
    await run_script(otel_telemetry, smolagents_events(boss, s.QUESTION, sink=kept.append),
                     agent_name="lead", capture_content=True)  # fmt: skip

    chat = f"chat {fs.MODEL}"
    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", [chat, ["execute_tool expert", [
                ["invoke_agent expert", [["step 0", [chat]]]]]]]],
            ["step 1", [chat]],
        ]],
    ]  # fmt: skip
    expert_run = dict(otel_telemetry.span("invoke_agent expert").attributes or {})
    assert expert_run["agent_otel.usage.input_tokens"] == s.TURNS[1].input
    assert tokens(otel_telemetry) == 2 * s.TURNS[0].input + s.TURNS[1].input
    [result] = [
        item for item in kept if type(item).__name__ == "ToolOutput" and item.id == "call_e"
    ]
    assert "sunny" in str(result.output)  # the managed agent's report, as smolagents writes it
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("expert_fails", [False, True], ids=["answers", "model_fails"])
async def test_a_smolagents_code_agents_managed_agent_nests_under_its_code_call(
    otel_telemetry: InMemoryTelemetry, expert_fails: bool
) -> None:
    """A ``CodeAgent`` managing a ``ToolCallingAgent`` (smolagents' multi-agent recipe): its
    code calls the managed agent, and that agent's run is a nested run under the code's
    ``python_interpreter`` call, with its calls, its tool (the body's own span under it) and
    its tokens once. smolagents runs the code on a thread of its own: before, none of it was
    in the trace. A managed agent whose model fails fails its own run, and the code call with
    smolagents' class for it."""
    pytest.importorskip("smolagents")
    from opentelemetry.trace import StatusCode
    from smolagents import CodeAgent, OpenAIModel, ToolCallingAgent, tool

    from agent_contract.sources.smolagents_stream import smolagents_events

    from . import _fw_smolagents as fs
    from . import _script as s

    tracer = otel_telemetry.providers()["tracer_provider"].get_tracer("probe")

    def model(respond: Any) -> Any:
        return OpenAIModel(fs.MODEL, api_key="offline", api_base="http://mock.invalid/v1",
                           client_kwargs=fs.client(respond), retry=False)  # fmt: skip

    @tool
    def weather(city: str) -> str:
        """Weather of a city.

        Args:
            city: the city.
        """
        with tracer.start_as_current_span("GET weather"):
            return f"sunny in {city}"

    asked: list[int] = []

    def expert_model(messages: list[dict[str, Any]]) -> Any:
        asked.append(1)
        if expert_fails:
            return RuntimeError("provider down")
        if len(asked) == 1:
            return fs.completion(1, None, [("c_w", "weather", '{"city": "Paris"}')])
        return fs.completion(1, None, fs.answer("sunny"))

    expert = ToolCallingAgent(tools=[weather], model=model(expert_model), verbosity_level=0,
                              name="expert", description="Knows the weather.")  # fmt: skip
    code = iter(["print(expert(task='Paris?'))", "final_answer('It is sunny.')"])

    def lead_model(messages: list[dict[str, Any]]) -> bytes:
        return fs.completion(0, f"Thought: ask.\n<code>\n{next(code)}\n</code>", [])

    lead = CodeAgent(tools=[], model=model(lead_model), managed_agents=[expert],
                     verbosity_level=0)  # fmt: skip
    await run_script(otel_telemetry, smolagents_events(lead, s.QUESTION), agent_name="lead")

    chat, code_call = f"chat {fs.MODEL}", "execute_tool python_interpreter"
    expert_steps = (
        [["step 0", [chat]]]
        if expert_fails
        else [["step 0", [chat, ["execute_tool weather", ["GET weather"]]]], ["step 1", [chat]]]
    )
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", [chat, [code_call, [["invoke_agent expert", expert_steps]]]]],
        ["step 1", [chat, code_call]],
    ]]]  # fmt: skip
    expert_run = otel_telemetry.span("invoke_agent expert")
    used = dict(expert_run.attributes or {}).get("agent_otel.usage.input_tokens")
    assert tokens(otel_telemetry) == 2 * s.TURNS[0].input + (
        0 if expert_fails else 2 * s.TURNS[1].input
    )
    if expert_fails:
        asked_code = min(otel_telemetry.by_name()[code_call], key=lambda sp: sp.start_time or 0)
        assert expert_run.status.status_code is StatusCode.ERROR
        assert (asked_code.attributes or {})["error.type"] == "AgentGenerationError"
    else:
        assert used == 2 * s.TURNS[1].input
    assert otel_telemetry.open_spans() == []


async def test_agno_members_kept_in_step_never_wait_on_a_reader_that_stopped_or_is_not_there(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A team's members go in step with the adapter (each member tool call waits until the
    adapter has read it): a run nothing traces, a team whose members are not in its stream
    (``stream_member_events=False``) and a reader that stops at the lead's delegation while
    its members run all end, with nothing left waiting."""
    pytest.importorskip("agno")
    import asyncio

    from agent_contract.protocol import ToolCall
    from agent_contract.sources import agno_stream
    from agent_contract.sources.agno_stream import agno_events

    from . import _deep as d
    from . import _fw_agno as fg

    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")
    untraced = [e async for e in agno_events(fg.teams(tracer), d.QUESTION)]
    assert "".join(e.text for e in untraced if isinstance(e, TextDelta)) == d.ANSWERS["lead"]

    quiet = fg.teams(tracer, stream_member_events=False)
    events = await asyncio.wait_for(
        run_script(otel_telemetry, agno_events(quiet, d.QUESTION), agent_name="lead"), 20
    )
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == d.ANSWERS["lead"]

    otel_telemetry.clear()
    traced = otel_telemetry.wrapper(agent_name="lead")(agno_events(fg.teams(tracer), d.QUESTION))
    async for event in traced:
        if isinstance(event, ToolCall):
            break
    await asyncio.wait_for(traced.aclose(), 20)  # type: ignore[attr-defined]
    assert agno_stream._TAKERS == {}
    assert otel_telemetry.open_spans() == []


async def test_a_langgraph_graph_a_tool_invokes_is_a_run_nested_under_that_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A tool running a graph with a plain ``ainvoke()`` (nothing streams it): LangGraph
    forwards its items to the outer stream, and they are a run of their own under the tool's
    span, named after the graph, its calls and tools each once there (they were steps of the
    outer run, which split the tool's span in two, both left incomplete)."""
    pytest.importorskip("langgraph")
    from langchain_core.tools import tool

    from agent_contract.sources.langgraph_stream import langgraph_events

    from . import _fw_langgraph as fl

    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")
    expert = fl.react("expert", "lookup", '{"term": "Paris"}', [tool(_lookup(tracer))])

    @tool
    async def ask_expert(q: str) -> str:
        """Ask the expert."""
        await expert.ainvoke({"messages": [("user", q)]})
        return "on file"

    lead = fl.react("lead", "ask_expert", '{"q": "Paris?"}', [ask_expert])
    await run_script(
        otel_telemetry, langgraph_events(lead, {"messages": [("user", "Paris?")]}),
        agent_name="lead",
    )  # fmt: skip

    inner = ["invoke_agent expert", [
        ["step 0", ["chat", ["execute_tool lookup", ["client lookup"]]]], ["step 1", ["chat"]],
    ]]  # fmt: skip
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", ["chat", ["execute_tool ask_expert", [inner]]]], ["step 1", ["chat"]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == 2 * (120 + 200)  # each call once
    assert not any(
        (s.attributes or {}).get("agent_otel.incomplete") for s in otel_telemetry.spans()
    )
    assert otel_telemetry.open_spans() == []


def _lookup(tracer: Any) -> Any:
    from . import _deep as d

    return d.lookup(tracer)
