"""LangGraph messages a node writes itself: a canned reply, answers joined from parallel
requests, a handoff's "Transferring back", a tool call a node makes without asking a model.

LangGraph streams every ``AIMessage`` a node returns. One the callbacks saw no request make is
a model call only when it carries what a model's message carries (usage, the model, why it
stopped, the id LangChain's chat models give their answers): a raw SDK call or a model given
other callbacks is still told. One a node wrote is no chat span: its text is the agent's, and
its tool calls have ``execute_tool`` spans only when a tool ran them.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_contract.protocol import TextDelta
from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import tokens
from .test_langgraph_subgraphs import QUESTION, USAGE, lookup, model

pytest.importorskip("langgraph")

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

SORRY = "Sorry, we are closed today."


def _chain(*nodes: tuple[str, Any]) -> Any:
    """A graph running ``nodes`` one after the other."""
    from langgraph.graph import END, START, MessagesState, StateGraph

    graph = StateGraph(MessagesState)
    names = [START]
    for name, node in nodes:
        graph.add_node(name, node)
        graph.add_edge(names[-1], name)
        names.append(name)
    graph.add_edge(names[-1], END)
    return graph.compile()


def langgraph_run(graph: Any) -> Any:
    from agent_contract.sources.langgraph_stream import langgraph_events

    return langgraph_events(graph, QUESTION)


def _text(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def _chats(telemetry: InMemoryTelemetry) -> list[Any]:
    return [s for s in telemetry.spans() if s.name.startswith("chat")]


def _canned(**fields: Any) -> Any:
    from langchain_core.messages import AIMessage

    async def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(SORRY, **fields)]}

    return reply


@pytest.mark.parametrize("fields", [{}, {"id": "reply-1", "name": "bot"}], ids=["bare", "named"])
async def test_a_reply_a_node_writes_is_the_agents_text_not_a_model_call(
    otel_telemetry: InMemoryTelemetry, fields: dict[str, Any]
) -> None:
    """A node answering with a message of its own made a chat span with no model and no
    tokens: a model call that never happened. Now its text is the run's answer, in no call."""
    events = await run_script(otel_telemetry, langgraph_run(_chain(("reply", _canned(**fields)))),
                              agent_name="bot")  # fmt: skip

    assert _chats(otel_telemetry) == []
    assert _text(events) == SORRY
    assert otel_telemetry.open_spans() == []


async def test_a_sign_off_a_node_adds_after_the_models_answer_is_no_second_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The model answers, then a node appends its own line: one chat span, the model's."""
    chat = model("bot", [])

    async def answer(state: Any) -> dict[str, Any]:
        return {"messages": [await chat.ainvoke(state["messages"])]}

    graph = _chain(("answer", answer), ("sign_off", _canned()))
    events = await run_script(otel_telemetry, langgraph_run(graph), agent_name="bot")

    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", ["chat"]]]]]
    assert tokens(otel_telemetry) == 10
    assert _text(events) == f"bot {SORRY}"


async def test_answers_a_node_joins_from_parallel_requests_are_their_calls_only(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Two models run side by side (``RunnableParallel``) and a node writes one message joining
    their answers: that message was a third chat span; now there are the two requests' own."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.runnables import RunnableParallel

    both = RunnableParallel(
        a=FakeMessagesListChatModel(responses=[AIMessage("Sunny.", usage_metadata=USAGE)]),  # type: ignore[arg-type]
        b=FakeMessagesListChatModel(responses=[AIMessage("Warm.", usage_metadata=USAGE)]),  # type: ignore[arg-type]
    )

    async def join(state: Any) -> dict[str, Any]:
        out = await both.ainvoke(state["messages"])
        return {"messages": [AIMessage(f"{out['a'].content} {out['b'].content}")]}

    await run_script(otel_telemetry, langgraph_run(_chain(("join", join))), agent_name="bot")

    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", ["chat", "chat"]]]]]
    assert tokens(otel_telemetry) == 20


def _handing_back(state: Any) -> dict[str, Any]:
    """The pair ``langgraph-supervisor`` writes when an agent is done (its
    ``create_handoff_back_messages``): a "Transferring back" message asking for the handoff
    tool, and that tool's answer, both written by the node; no tool runs."""
    from langchain_core.messages import AIMessage, ToolMessage

    meta = {"__is_handoff_back": True}
    call = {"name": "transfer_back_to_boss", "args": {}, "id": "back-1", "type": "tool_call"}
    return {"messages": [
        AIMessage("Transferring back to boss", name="bot", tool_calls=[call],
                  response_metadata=meta),
        ToolMessage("Successfully transferred back to boss", name="transfer_back_to_boss",
                    tool_call_id="back-1", response_metadata=meta),
    ]}  # fmt: skip


async def test_a_handoff_back_a_node_writes_is_no_call_and_runs_no_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An agent's answer, then the handoff back its node writes: that was a chat span and an
    ``execute_tool transfer_back_to_boss`` for a tool that never ran; now the agent's own."""
    from langgraph.prebuilt import create_react_agent

    agent = create_react_agent(model("bot"), [lookup()], name="bot")
    graph = _chain(("bot", agent), ("back", _handing_back))
    await run_script(otel_telemetry, langgraph_run(graph), agent_name="team")

    assert otel_telemetry.outline() == [["invoke_agent team", [
        ["step 0", ["chat", "execute_tool lookup"]], ["step 1", ["chat"]],
    ]]]  # fmt: skip
    assert otel_telemetry.open_spans() == []


async def test_a_tool_call_a_node_writes_is_told_when_its_tool_runs(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A node asking for a tool without a model (LangGraph's "call the tool first" recipe),
    ``ToolNode`` running it: a chat span came before the tool's; now the tool's span alone,
    with what its body opens under it, then the model's call in the next step."""
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.prebuilt import ToolNode

    tracer = otel_telemetry.tracer_provider.get_tracer("app")

    @tool
    def lookup() -> str:
        """Look it up."""
        with tracer.start_as_current_span("looked up"):
            return "found"

    async def first(state: Any) -> dict[str, Any]:
        call = {"name": "lookup", "args": {}, "id": "first-1", "type": "tool_call"}
        return {"messages": [AIMessage("", tool_calls=[call])]}

    chat = model("bot", [])

    async def answer(state: Any) -> dict[str, Any]:
        return {"messages": [await chat.ainvoke(state["messages"])]}

    graph = _chain(("first", first), ("tools", ToolNode([lookup])), ("answer", answer))
    await run_script(otel_telemetry, langgraph_run(graph), agent_name="bot")

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", [["execute_tool lookup", ["looked up"]]]], ["step 1", ["chat"]],
    ]]]  # fmt: skip
    [span] = [s for s in otel_telemetry.spans() if s.name == "execute_tool lookup"]
    assert (span.attributes or {})["gen_ai.tool.call.id"] == "first-1"


async def test_a_tool_call_a_node_writes_for_a_tool_the_graph_lacks_fails_as_not_found(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``ToolNode`` answers a call of a tool it does not have itself (no tool runs): the call
    is still told, failed ``tool_not_found``, with no chat span before it."""
    from langchain_core.messages import AIMessage
    from langgraph.prebuilt import ToolNode

    async def first(state: Any) -> dict[str, Any]:
        call = {"name": "missing", "args": {}, "id": "first-1", "type": "tool_call"}
        return {"messages": [AIMessage("", tool_calls=[call])]}

    graph = _chain(("first", first), ("tools", ToolNode([lookup()])))
    await run_script(otel_telemetry, langgraph_run(graph), agent_name="bot")

    assert otel_telemetry.outline() == [
        ["invoke_agent bot", [["step 0", ["execute_tool missing"]]]]
    ]
    span = otel_telemetry.span("execute_tool missing")
    assert (span.attributes or {})["error.type"] == "tool_not_found"


@pytest.mark.parametrize("kind", ["usage", "run id", "finish reason"])
async def test_a_model_called_outside_the_callbacks_is_still_a_call(
    otel_telemetry: InMemoryTelemetry, kind: str
) -> None:
    """What a model's message carries keeps it a call when no callback saw the request: a
    chat model given callbacks of its own (its usage, or only the id LangChain gives its
    answer), a raw SDK response a node turned into a message (why it stopped)."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage

    usage = {"usage_metadata": USAGE} if kind == "usage" else {}
    chat = FakeMessagesListChatModel(responses=[AIMessage("Sunny.", **usage)])

    async def ask(state: Any) -> dict[str, Any]:
        if kind == "finish reason":
            return {"messages": [AIMessage("Sunny.", response_metadata={"finish_reason": "stop"})]}
        return {"messages": [await chat.ainvoke(state["messages"], {"callbacks": []})]}

    await run_script(otel_telemetry, langgraph_run(_chain(("ask", ask))), agent_name="bot")

    [span] = _chats(otel_telemetry)
    assert tokens(otel_telemetry) == (10 if kind == "usage" else 0)
    if kind == "finish reason":
        assert (span.attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
