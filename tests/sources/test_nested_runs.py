"""Nested graphs and agents used as tools keep their calls, tokens and answer in the trace.

A framework can run an agent inside another: LangGraph a compiled sub-graph as a node (the
supervisor pattern), the Agents SDK an agent as a tool. Its model calls are real calls: each
must have its chat span, its tokens counted once, its answer kept.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_contract.protocol import PhaseMarker, TextDelta
from agent_otel.testing import InMemoryTelemetry

from . import _frameworks as fw
from ._trace import attributes, shape, tokens, watch, wrapper

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


async def test_a_langgraph_sub_graph_used_as_a_node_keeps_its_calls_tokens_and_answer(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("langgraph")
    from agent_contract.sources.langgraph_stream import langgraph_events

    open_spans = watch(otel_telemetry)
    kept: list[Any] = []
    graph = _supervisor(("worker", fw.langgraph_graph()))
    source = langgraph_events(graph, QUESTION, sink=kept.append)
    events = [e async for e in wrapper(otel_telemetry)(source)]

    assert (
        "".join(e.text for e in events if isinstance(e, TextDelta))
        == "Checking both.Sunny in both."
    )
    assert shape(otel_telemetry) == REACT
    assert not any(s.attributes and s.attributes.get("agent_otel.incomplete")
                   for s in otel_telemetry.spans())  # fmt: skip
    assert tokens(otel_telemetry) == _usage_in(kept) == 240
    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.usage.input_tokens"] == 240
    assert [e.name for e in events if isinstance(e, PhaseMarker)] == ["worker"]
    assert all(len(item) == 2 for item in kept)  # the sink gets what astream gives by default
    assert open_spans.open == {}


async def test_langgraph_with_subgraphs_streams_the_nested_items_to_the_sink(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("langgraph")
    from agent_contract.sources.langgraph_stream import langgraph_events

    kept: list[Any] = []
    graph = _supervisor(("worker", fw.langgraph_graph()))
    source = langgraph_events(graph, QUESTION, sink=kept.append, subgraphs=True)
    [_ async for _ in wrapper(otel_telemetry)(source)]

    assert shape(otel_telemetry) == REACT
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
    events = [e async for e in wrapper(otel_telemetry)(langgraph_events(graph, QUESTION))]

    assert [e.name for e in events if isinstance(e, PhaseMarker)] == ["researcher", "writer"]
    chats = [s for s in otel_telemetry.spans() if s.name == "chat"]
    assert len(chats) == 4 and tokens(otel_telemetry) == 480
    [root] = shape(otel_telemetry)
    assert [step[0] for step in root[1]] == ["step 0", "step 1", "step 2"]  # 2nd agent after tools


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
    events = [e async for e in wrapper(otel_telemetry)(langgraph_events(compiled, QUESTION))]

    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Sunny."
    [chat] = [s for s in otel_telemetry.spans() if s.name.startswith("chat")]
    assert (chat.attributes or {})["gen_ai.usage.input_tokens"] == 70
    assert (chat.attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
