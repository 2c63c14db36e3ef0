"""Strands multi-agent runs (``Swarm``, ``Graph``) streamed through ``strands_events``: one
run, each node's turn steps after a phase naming it, every model call a chat span with its
tokens once, every tool in the step of the agent that called it, a failed node marked on its
own call. Runs in Strands' own environment (``.ci/separate-envs``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import phases, sent, tokens

pytest.importorskip("strands")

CHAT = "chat scripted-converse"


def _turn(*blocks: dict[str, Any], stop: str = "end_turn", tokens_in: int = 10) -> list[Any]:
    usage = {"inputTokens": tokens_in, "outputTokens": 1, "totalTokens": tokens_in + 1}
    return [{"messageStart": {"role": "assistant"}}, *blocks,
            {"messageStop": {"stopReason": stop}},
            {"metadata": {"usage": usage, "metrics": {"latencyMs": 1}}}]  # fmt: skip


def _says(*words: str, tokens_in: int = 10, barrier: Any = None, fail: bool = False) -> Any:
    from ._fw_strands import _model, _text

    return _model([_turn(*_text(*words), tokens_in=tokens_in)], barrier=barrier, fail=fail)


def _asks(call_id: str, name: str, args: dict[str, Any], tokens_in: int) -> list[Any]:
    from . import _script as s
    from ._fw_strands import _uses

    return _turn(*_uses(s.Call(call_id, name, args)), stop="tool_use", tokens_in=tokens_in)


def lookup(q: str) -> str:
    """Look it up."""
    return "found"


def _failed(telemetry: InMemoryTelemetry) -> dict[str, Any]:
    return {s.name: (s.attributes or {}).get("error.type") for s in telemetry.spans()
            if s.status.status_code is StatusCode.ERROR}  # fmt: skip


async def test_a_swarm_is_one_run_each_agents_turn_its_steps(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Before, a Swarm's run was an empty ``invoke_agent`` span: every call, tool and token
    of its agents was lost (the adapter read only a lone agent's items)."""
    from strands.multiagent import Swarm

    from agent_contract.sources.strands_stream import strands_events

    from ._fw_strands import _model, _text, agent

    handoff = {"agent_name": "writer", "message": "yours"}
    researcher = agent(_model([
        _asks("l1", "lookup", {"q": "x"}, 10),
        _asks("h1", "handoff_to_agent", handoff, 11),
        _turn(*_text("Handed over."), tokens_in=12),  # Strands lets it speak once more
    ]), [lookup], name="researcher")  # fmt: skip
    writer = agent(_model([_turn(*_text("The answer."), tokens_in=20)]), [], name="writer")
    kept: list[Any] = []
    source = strands_events(Swarm([researcher, writer]), "Go", sink=kept.append)
    await run_script(otel_telemetry, source, agent_name="team")

    assert otel_telemetry.outline() == [["invoke_agent team", [
        ["step 0", [CHAT, "execute_tool lookup"]],
        ["step 1", [CHAT, "execute_tool handoff_to_agent"]],
        ["step 2", [CHAT]],
        ["step 3", [CHAT]],
    ]]]  # fmt: skip
    assert phases(otel_telemetry) == ["researcher", "researcher", "researcher", "writer"]
    assert tokens(otel_telemetry) == 10 + 11 + 12 + 20
    assert kept[-1].get("type") == "multiagent_result"  # the team's own items, untouched
    assert _failed(otel_telemetry) == {}
    assert otel_telemetry.open_spans() == []


async def test_a_graphs_parallel_nodes_are_each_told_whole(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``plan`` fans out to ``left`` and ``right``, which stream at the same time: each call
    is one chat span with its own text and tokens, in a step of its node."""
    from strands.multiagent import GraphBuilder

    from agent_contract.sources.strands_stream import strands_events

    from ._fw_strands import agent

    barrier = asyncio.Barrier(2)
    builder = GraphBuilder()
    builder.add_node(agent(_says("plan", tokens_in=10), [], name="plan"), "plan")
    for name, size in (("left", 20), ("right", 30)):
        builder.add_node(agent(_says(name, "!", tokens_in=size, barrier=barrier), [], name=name),
                         name)  # fmt: skip
        builder.add_edge("plan", name)
    builder.set_entry_point("plan")
    builder.set_max_node_executions(5)
    source = strands_events(builder.build(), "Go")
    await run_script(otel_telemetry, source, agent_name="graph", capture_content=True)

    assert otel_telemetry.outline() == [["invoke_agent graph", [
        ["step 0", [CHAT]], ["step 1", [CHAT]], ["step 2", [CHAT]],
    ]]]  # fmt: skip
    assert sorted(phases(otel_telemetry)[1:]) == ["left", "right"]
    by_step = {(s.attributes or {}).get("agent_otel.phase"): s for s in otel_telemetry.spans()
               if s.name.startswith("step ")}  # fmt: skip
    for chat in [s for s in otel_telemetry.spans() if s.name == CHAT]:
        step = next(n for n, s in by_step.items() if s.context.span_id == chat.parent.span_id)
        said = json.loads(str((chat.attributes or {})["gen_ai.output.messages"]))
        assert "".join(p.get("content", "") for m in said for p in m["parts"]).startswith(step)
    assert tokens(otel_telemetry) == 60
    assert otel_telemetry.open_spans() == []


async def test_a_team_as_a_graph_node_names_its_agents_by_path(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from strands.multiagent import GraphBuilder, Swarm

    from agent_contract.sources.strands_stream import strands_events

    from ._fw_strands import agent

    inner = Swarm([agent(_says("inner", tokens_in=5), [], name="solo")])
    builder = GraphBuilder()
    builder.add_node(agent(_says("first", tokens_in=7), [], name="first"), "first")
    builder.add_node(inner, "crew")
    builder.add_edge("first", "crew")
    builder.set_entry_point("first")
    builder.set_max_node_executions(5)
    await run_script(otel_telemetry, strands_events(builder.build(), "Go"), agent_name="graph")

    assert otel_telemetry.outline() == [["invoke_agent graph", [
        ["step 0", [CHAT]], ["step 1", [CHAT]],
    ]]]  # fmt: skip
    assert phases(otel_telemetry) == ["first", "crew/solo"]
    assert tokens(otel_telemetry) == 12
    assert otel_telemetry.open_spans() == []


async def test_a_graphs_conditional_edge_runs_its_node_and_each_call_holds_what_it_sent(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A ``Graph`` whose edges out of ``first`` hold a condition on its answer: only the node
    whose condition holds runs, after a phase naming it. Each node's call holds the messages
    its request sent, not its own answer: a node streams into the graph's queue while its
    agent goes on (before, each call was told with the agent's messages as they were once its
    first event was read, its answer among them); the run's input is the task alone."""
    from strands.multiagent import GraphBuilder

    from agent_contract.sources.strands_stream import strands_events

    from ._fw_strands import agent

    builder = GraphBuilder()
    builder.add_node(agent(_says("rainy"), [], name="first"), "first")
    for name, gear in (("sunny", "shades"), ("rainy", "umbrella")):
        builder.add_node(agent(_says("take", gear), [], name=name), name)
        builder.add_edge("first", name, condition=lambda state, word=name: word in str(
            state.results["first"].result))  # fmt: skip
    builder.set_entry_point("first")
    builder.set_max_node_executions(5)
    await run_script(otel_telemetry, strands_events(builder.build(), "Go"), agent_name="graph",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent graph", [
        ["step 0", [CHAT]], ["step 1", [CHAT]],
    ]]]  # fmt: skip
    assert phases(otel_telemetry) == ["first", "rainy"]
    first, then = sorted((c for c in otel_telemetry.spans() if c.name == CHAT),
                         key=lambda c: c.start_time or 0)  # fmt: skip
    assert sent(first) == [("user", "Go")]
    assert [role for role, _ in sent(then)] == ["user"]
    assert "rainy" in sent(then)[0][1] and "umbrella" not in sent(then)[0][1]
    assert sent(otel_telemetry.span("invoke_agent graph")) == [("user", "Go")]
    assert tokens(otel_telemetry) == 20
    assert otel_telemetry.open_spans() == []


async def test_a_nodes_request_throttled_before_any_event_is_a_failed_call_of_its_own(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A node's request refused before its first event (a 429) and retried by Strands, as a
    lone agent's is: a failed chat span of its own (``ModelThrottledException``) before the
    one that answered, in the node's step. Before, it was lost: the adapter forgot the
    requests a node made before the graph's queue handed the adapter its first item."""
    from strands.multiagent import GraphBuilder
    from strands.types.exceptions import ModelThrottledException

    from agent_contract.sources.strands_stream import strands_events

    from ._fw_strands import agent

    model = _says("fine")
    answering, attempts = model.stream, []

    async def stream(*args: Any, **kwargs: Any) -> Any:
        attempts.append(1)
        if len(attempts) == 1:
            raise ModelThrottledException("429 Too Many Requests")
        async for event in answering(*args, **kwargs):
            yield event

    model.stream = stream
    builder = GraphBuilder()
    builder.add_node(agent(_says("ok"), [], name="first"), "first")
    builder.add_node(agent(model, [], name="second"), "second")
    builder.add_edge("first", "second")
    builder.set_entry_point("first")
    builder.set_max_node_executions(5)
    await run_script(otel_telemetry, strands_events(builder.build(), "Go"), agent_name="graph")

    assert len(attempts) == 2
    assert otel_telemetry.outline() == [["invoke_agent graph", [
        ["step 0", [CHAT]], ["step 1", [CHAT, CHAT]],
    ]]]  # fmt: skip
    assert _failed(otel_telemetry) == {CHAT: "ModelThrottledException"}
    assert tokens(otel_telemetry) == 20
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("kind", ["swarm", "graph"])
async def test_a_failed_node_fails_its_own_call_and_the_run(
    otel_telemetry: InMemoryTelemetry, kind: str
) -> None:
    """A Swarm keeps a node's exception in its result (no raise): the node's call and the
    run fail with its class; a Graph raises it: the same spans fail, the same object comes
    out. The steps before are untouched."""
    from strands.multiagent import GraphBuilder, Swarm

    from agent_contract.sources.strands_stream import strands_events

    from . import _script as s
    from ._fw_strands import _model, _text, agent

    handoff = {"agent_name": "second", "message": "yours"}
    first = agent(_model([_asks("h1", "handoff_to_agent", handoff, 10),
                          _turn(*_text("Handed over."))]), [], name="first")  # fmt: skip
    second = agent(_says("never", "told", "at", "all", fail=True), [], name="second")
    if kind == "swarm":
        team: Any = Swarm([first, second])
    else:
        first = agent(_says("ok", tokens_in=10), [], name="first")
        builder = GraphBuilder()
        builder.add_node(first, "first")
        builder.add_node(second, "second")
        builder.add_edge("first", "second")
        builder.set_entry_point("first")
        builder.set_max_node_executions(5)
        team = builder.build()
    source = strands_events(team, "Go")
    if kind == "swarm":
        await run_script(otel_telemetry, source, agent_name="team")
    else:
        with pytest.raises(s.Overloaded):
            await run_script(otel_telemetry, source, agent_name="team")

    [root] = otel_telemetry.outline()
    assert [step[0] for step in root[1]][-1] == "step 1" if kind == "graph" else "step 2"
    assert _failed(otel_telemetry) == {CHAT: "Overloaded", "invoke_agent team": "Overloaded"}
    [failed] = [c for c in otel_telemetry.spans() if c.name == CHAT and not c.status.is_ok]
    [last] = [c for c in otel_telemetry.spans() if c.name == root[1][-1][0]]
    assert failed.parent.span_id == last.context.span_id
    assert (last.attributes or {})["agent_otel.phase"] == "second"
    assert otel_telemetry.open_spans() == []


async def test_an_agent_tool_of_a_swarm_agent_is_a_run_nested_under_its_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from strands.multiagent import Swarm

    from agent_contract.sources.strands_stream import strands_events

    from ._fw_strands import _model, _text, agent

    expert = agent(_says("sunny", tokens_in=5), [], name="expert")
    lead = agent(_model([
        _asks("e1", "expert", {"input": "Paris?"}, 10),
        _turn(*_text("It is sunny."), tokens_in=12),
    ]), [], name="lead")  # fmt: skip
    lead.tool_registry.register_tool(expert.as_tool())
    await run_script(otel_telemetry, strands_events(Swarm([lead]), "Go"), agent_name="team")

    nested = ["invoke_agent expert", [["step 0", [CHAT]]]]
    assert otel_telemetry.outline() == [["invoke_agent team", [
        ["step 0", [CHAT, ["execute_tool expert", [nested]]]], ["step 1", [CHAT]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == 27
    assert otel_telemetry.open_spans() == []


async def test_a_swarm_handoff_to_an_agent_it_lacks_is_agent_not_found(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Strands' ``handoff_to_agent`` answers a name the swarm lacks with its own error text
    (the agent goes on): the call fails ``agent_not_found``, as a LlamaIndex handoff to an
    agent its workflow lacks does; before, the nameless ``tool_error``."""
    from strands.multiagent import Swarm

    from agent_contract.sources.strands_stream import strands_events

    from ._fw_strands import _model, _text, agent

    researcher = agent(_model([
        _asks("h1", "handoff_to_agent", {"agent_name": "nobody", "message": "yours"}, 10),
        _turn(*_text("Done myself."), tokens_in=11),
    ]), [], name="researcher")  # fmt: skip
    writer = agent(_model([_turn(*_text("The answer."), tokens_in=20)]), [], name="writer")
    await run_script(otel_telemetry, strands_events(Swarm([researcher, writer]), "Go"),
                     agent_name="team")  # fmt: skip

    assert _failed(otel_telemetry) == {"execute_tool handoff_to_agent": "agent_not_found"}
    assert phases(otel_telemetry) == ["researcher", "researcher"]
    assert otel_telemetry.open_spans() == []
