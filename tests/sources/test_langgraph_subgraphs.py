"""LangGraph sub-graphs, every way a user builds them: each model call and tool call once, with
its tokens once, under the span it ran in.

A compiled sub-graph used as a node (shared keys, or its own state behind a node that invokes
it) is steps of the run; a graph a tool body runs (``ainvoke``, ``invoke``) is a run of its own
under that tool's span, at any depth; a sub-graph that raises marks the span it raised in. The
caller's own ``stream_mode`` and ``subgraphs`` shape what ``sink`` receives, not the trace.
"""

from __future__ import annotations

import asyncio
import functools
import operator
import threading
from typing import Any, TypedDict

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import phases, tokens

pytest.importorskip("langgraph")

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

USAGE = {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13}
QUESTION = {"messages": [("user", "hi")]}
OWN_QUESTION = {"question": "hi", "answer": ""}


class Boom(RuntimeError):
    """The scripted model's failure."""


def model(tag: str, tool: str | list[str] = "lookup", args: str = "{}", *,
          fail: bool = False) -> Any:  # fmt: skip
    """LangChain's fake chat model asking for ``tool`` (call id ``<tag>-call``; a list: each,
    ``<tag>-<index>``, in parallel), then answering ``<tag> done``, each turn with ``USAGE``;
    ``fail``: its first turn raises after a chunk. Streams sync and async."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessageChunk, message_chunk_to_message
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

    class Asking(GenericFakeChatModel):
        turns: int = 0

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _chunks(self) -> list[Any]:
            self.turns += 1
            first = self.turns == 1
            ask = [{"index": 0, "id": f"{tag}-call", "name": tool, "args": args}]
            if isinstance(tool, list):
                ask = [{"index": i, "id": f"{tag}-{i}", "name": name, "args": args}
                       for i, name in enumerate(tool)]  # fmt: skip
            last = AIMessageChunk(
                content="" if first else f"{tag} done", usage_metadata=USAGE,  # type: ignore[arg-type]
                tool_call_chunks=ask if first else [], chunk_position="last",  # type: ignore[arg-type]
            )  # fmt: skip
            return [ChatGenerationChunk(message=AIMessageChunk(content=f"{tag} ")),
                    ChatGenerationChunk(message=last)]  # fmt: skip

        def _stream(self, messages: Any, *a: Any, **kw: Any) -> Any:
            first, last = self._chunks()
            yield first
            if fail:
                raise Boom("down")
            yield last

        async def _astream(self, messages: Any, *a: Any, **kw: Any) -> Any:
            for chunk in self._stream(messages):
                yield chunk

        def _generate(self, messages: Any, *a: Any, **kw: Any) -> ChatResult:
            whole = functools.reduce(operator.add, self._stream(messages))
            return ChatResult(
                generations=[ChatGeneration(message=message_chunk_to_message(whole.message))]
            )

    return Asking(messages=iter(()))


def agent(tag: str, tools: list[Any], *, fail: bool = False, **options: Any) -> Any:
    """A prebuilt ReAct agent named ``tag`` asking for its first tool once, then answering."""
    from langgraph.prebuilt import create_react_agent

    name = getattr(tools[0], "name", "lookup")
    args = '{"q": "x"}' if name != "lookup" else "{}"
    return create_react_agent(model(tag, name, args, fail=fail), tools, name=tag, **options)


def lookup() -> Any:
    from langchain_core.tools import tool

    @tool
    def lookup() -> str:
        """Look it up (sync: run on LangGraph's executor thread)."""
        return "found"

    return lookup


def asks(graph: Any, *, sync: bool = False) -> Any:
    """A tool ``ask_<graph name>`` running ``graph`` to its answer (``invoke`` on a thread with
    ``sync``, else ``ainvoke``)."""
    from langchain_core.tools import StructuredTool

    def run(q: str) -> str:
        return str(graph.invoke({"messages": [("user", q)]})["messages"][-1].content)

    async def arun(q: str) -> str:
        return str((await graph.ainvoke({"messages": [("user", q)]}))["messages"][-1].content)

    name = f"ask_{graph.name}"
    if sync:
        return StructuredTool.from_function(run, name=name, description="Ask.")
    return StructuredTool.from_function(coroutine=arun, name=name, description="Ask.")


def around(node: str, graph: Any, **compiled: Any) -> Any:
    """A graph whose one node is ``graph`` (a compiled sub-graph sharing its ``messages``)."""
    from langgraph.graph import END, START, MessagesState, StateGraph

    outer = StateGraph(MessagesState)
    outer.add_node(node, graph)
    outer.add_edge(START, node)
    outer.add_edge(node, END)
    return outer.compile(**compiled)


def agent_steps(tool: str = "lookup") -> list[Any]:
    return [["step 0", ["chat", f"execute_tool {tool}"]], ["step 1", ["chat"]]]


def _no_incomplete(telemetry: InMemoryTelemetry) -> None:
    assert not [
        s.name for s in telemetry.spans() if (s.attributes or {}).get("agent_otel.incomplete")
    ]
    assert telemetry.open_spans() == []


def _chats_start_before_their_tools(telemetry: InMemoryTelemetry) -> None:
    """In every step of every run, the chat that asked for the step's tools started no later
    than any of them (a model call begins before the tools it asks for)."""
    spans = telemetry.spans()
    for step in (s for s in spans if s.name.startswith("step ")):
        under = [s for s in spans if s.parent is not None
                 and s.parent.span_id == step.context.span_id]  # fmt: skip
        chats = [s.start_time or 0 for s in under if s.name.startswith("chat")]
        tools = [(s.start_time or 0, s.name) for s in under if s.name.startswith("execute_tool")]
        if tools:
            assert chats and min(chats) <= min(tools)[0], (step.name, tools)


def _as_node(kind: str) -> Any:
    sub = agent("sub", [lookup()])
    if kind == "node":
        return around("worker", sub)
    if kind == "two levels":
        return around("team", around("worker", sub))
    if kind == "checkpointer":
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.prebuilt import create_react_agent

        sub = create_react_agent(model("sub"), [lookup()], name="sub", checkpointer=True)
        return around("worker", sub, checkpointer=InMemorySaver())
    from langgraph.graph import END, START, StateGraph

    class Own(TypedDict):
        question: str
        answer: str

    async def ask(state: Own) -> dict[str, str]:  # its own state: a node running the graph
        question = {"messages": [("user", state["question"])]}
        if kind == "on a thread":  # the whole graph ahead of the consumer, on a worker thread
            out = await asyncio.to_thread(sub.invoke, question)
        elif kind == "astream_events":
            async for event in sub.astream_events(question, version="v2"):
                if event["event"] == "on_chain_end" and event["name"] == sub.name:
                    out = event["data"]["output"]
        elif kind == "astream":
            modes = ["updates", "messages"]
            async for _, mode, item in sub.astream(question, stream_mode=modes, subgraphs=True):
                if mode == "updates" and "agent" in item:
                    out = item["agent"]
        else:
            out = await sub.ainvoke(question)
        return {"answer": str(out["messages"][-1].content)}

    graph = StateGraph(Own)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph.compile()


@pytest.mark.parametrize(
    "kind", ["node", "two levels", "checkpointer", "own state", "on a thread", "astream_events",
             "astream"],
)  # fmt: skip
async def test_a_sub_graph_used_as_a_node_is_steps_of_the_run(
    otel_telemetry: InMemoryTelemetry, kind: str
) -> None:
    """A node running the graph on a thread (``asyncio.to_thread``) ran its tool before the
    consumer had read the graph's first model call: the tool's span opened under the run, beside
    the steps; now the step it runs in starts with it, and the call lands there."""
    from agent_contract.sources.langgraph_stream import langgraph_events

    graph = _as_node(kind)
    question = QUESTION if kind in {"node", "two levels", "checkpointer"} else OWN_QUESTION
    config = {"configurable": {"thread_id": "t-1"}} if kind == "checkpointer" else None
    await run_script(otel_telemetry, langgraph_events(graph, question, config), agent_name="top")

    outline, expected = otel_telemetry.outline(), [["invoke_agent top", agent_steps()]]
    if kind == "on a thread":  # the tool body may start before or after the reader reads its
        # call: which comes first inside the step is the threads' timing, where it lands is not
        outline, expected = _steps_unordered(outline), _steps_unordered(expected)
    assert outline == expected
    assert tokens(otel_telemetry) == 20
    _no_incomplete(otel_telemetry)


def _steps_unordered(outline: list[Any]) -> list[Any]:
    """The run's outline with each step's children sorted by name."""
    return [[run, [[step, sorted(children, key=str)] for step, children in steps]]
            for run, steps in outline]  # fmt: skip


@pytest.mark.parametrize("sync", [False, True], ids=["ainvoke", "invoke"])
async def test_a_graph_a_tool_runs_is_a_run_under_that_tool(
    otel_telemetry: InMemoryTelemetry, sync: bool
) -> None:
    """Its calls were steps of the outer run, splitting the tool's span in two (both left
    incomplete); now the graph is a run of its own, named after it, inside the tool's span."""
    from agent_contract.sources.langgraph_stream import langgraph_events

    inner = agent("inner", [lookup()])
    outer = agent("outer", [asks(inner, sync=sync)])
    await run_script(otel_telemetry, langgraph_events(outer, QUESTION), agent_name="top")

    nested = ["invoke_agent inner", agent_steps()]
    expected = [["invoke_agent top", [
        ["step 0", ["chat", ["execute_tool ask_inner", [nested]]]], ["step 1", ["chat"]],
    ]]]  # fmt: skip
    if not sync:
        assert otel_telemetry.outline() == expected
    # A graph run on a thread may run its tool before the consumer has read its chat: which
    # starts first inside the inner step is the threads' timing, where each lands is not
    assert _nested_unordered(otel_telemetry.outline()) == _nested_unordered(expected)
    assert tokens(otel_telemetry) == 40
    _no_incomplete(otel_telemetry)


def _ahead(started: threading.Event) -> Any:
    """A ``lookup`` tool telling ``started`` as its body starts."""
    from langchain_core.tools import tool

    @tool
    def lookup() -> str:
        """Look it up."""
        started.set()
        return "found"

    return lookup


def _nested_unordered(spans: list[Any]) -> list[Any]:
    """An outline's spans with every span's children sorted, at any depth (a span is its name,
    or ``[name, children]``)."""
    return sorted(
        (span if isinstance(span, str) else [span[0], _nested_unordered(span[1])]
         for span in spans), key=str,
    )  # fmt: skip


@pytest.mark.parametrize("how", ["sync tool", "to_thread"])
async def test_a_graph_a_tool_runs_on_a_thread_ahead_of_the_reader_nests_its_tools(
    otel_telemetry: InMemoryTelemetry, how: str
) -> None:
    """A graph a tool runs on a worker thread (a sync tool's ``invoke``, on LangGraph's
    executor, or ``await asyncio.to_thread(graph.invoke, ...)`` in an async tool) runs its own
    tool before the reader has read that graph's first item (here, for sure: the reader waits
    on that item until the tool started). Its run started only at that item, so the tool's
    span opened under the outer run's step; now the run starts with the graph, on its thread,
    and the tool is in its step."""
    from langchain_core.tools import StructuredTool

    from agent_contract.sources.langgraph_stream import langgraph_events

    started = threading.Event()
    inner = agent("inner", [_ahead(started)])

    def run(q: str) -> str:
        return str(inner.invoke({"messages": [("user", q)]})["messages"][-1].content)

    async def arun(q: str) -> str:
        return await asyncio.to_thread(run, q)

    if how == "sync tool":
        tool = StructuredTool.from_function(run, name="ask_inner", description="Ask.")
    else:
        tool = StructuredTool.from_function(coroutine=arun, name="ask_inner", description="Ask.")
    outer = agent("outer", [tool])

    def sink(item: Any) -> None:  # the reader, at the inner graph's first item: held back
        if item[0]:
            assert started.wait(10)

    source = langgraph_events(outer, QUESTION, sink=sink, subgraphs=True)
    await run_script(otel_telemetry, source, agent_name="top")

    nested = ["invoke_agent inner", agent_steps()]
    assert _nested_unordered(otel_telemetry.outline()) == _nested_unordered([["invoke_agent top", [
        ["step 0", ["chat", ["execute_tool ask_inner", [nested]]]], ["step 1", ["chat"]],
    ]]])  # fmt: skip
    assert tokens(otel_telemetry) == 40
    _chats_start_before_their_tools(otel_telemetry)  # the inner chat's chunks were read late
    _no_incomplete(otel_telemetry)


async def test_graphs_two_sync_tools_run_ahead_at_once_each_nest_their_tools(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Two sync tools of one ``ToolNode`` (each on its own executor thread) each run a graph
    whose tool starts before the reader has read either graph's first item: each tool lands in
    its own graph's run, under its own call (before: both under the outer step)."""
    from langgraph.prebuilt import ToolNode, create_react_agent

    from agent_contract.sources.langgraph_stream import langgraph_events

    started = threading.Event(), threading.Event()
    first, second = agent("first", [_ahead(started[0])]), agent("second", [_ahead(started[1])])
    tools = [asks(first, sync=True), asks(second, sync=True)]
    lead = model("lead", [t.name for t in tools], '{"q": "x"}')
    graph = create_react_agent(lead, ToolNode(tools), name="lead", version="v1")

    def sink(item: Any) -> None:  # the reader, at the first inner item: held back
        if item[0]:
            assert all(event.wait(10) for event in started)

    source = langgraph_events(graph, QUESTION, sink=sink, subgraphs=True)
    await run_script(otel_telemetry, source, agent_name="top")

    asked = [["execute_tool ask_first", [["invoke_agent first", agent_steps()]]],
             ["execute_tool ask_second", [["invoke_agent second", agent_steps()]]]]  # fmt: skip
    assert _nested_unordered(otel_telemetry.outline()) == _nested_unordered(
        [["invoke_agent top", [["step 0", ["chat", *asked]], ["step 1", ["chat"]]]]]
    )
    assert tokens(otel_telemetry) == 60
    _chats_start_before_their_tools(otel_telemetry)
    _no_incomplete(otel_telemetry)


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
async def test_a_runnable_a_tool_body_runs_that_asks_no_model_is_no_run(
    otel_telemetry: InMemoryTelemetry, sync: bool
) -> None:
    """Only a graph that runs tools or asks a model is a run under the tool: a plain runnable
    the body invokes (a chain with no model) leaves the tree as it is."""
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import StructuredTool

    from agent_contract.sources.langgraph_stream import langgraph_events

    chain = RunnableLambda(lambda q: q.upper()) | RunnableLambda(lambda q: f"{q}!")

    def run(q: str) -> str:
        return str(chain.invoke(q))

    async def arun(q: str) -> str:
        return str(await chain.ainvoke(q))

    tool = StructuredTool.from_function(run if sync else None, coroutine=None if sync else arun,
                                        name="shout", description="Shout.")  # fmt: skip
    await run_script(otel_telemetry, langgraph_events(agent("outer", [tool]), QUESTION),
                     agent_name="top")  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent top", agent_steps("shout")]]
    _no_incomplete(otel_telemetry)


async def test_graphs_two_tools_run_in_one_tool_node_each_nest_under_their_own_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A plain ``ToolNode`` runs both calls in one task (one namespace): each graph's items
    are told apart by the tool body they ran in."""
    from langgraph.prebuilt import ToolNode, create_react_agent

    from agent_contract.sources.langgraph_stream import langgraph_events

    first, second = agent("first", [lookup()]), agent("second", [lookup()])
    tools = [asks(first), asks(second)]
    lead = model("lead", [t.name for t in tools], '{"q": "x"}')
    graph = create_react_agent(lead, ToolNode(tools), name="lead", version="v1")
    await run_script(otel_telemetry, langgraph_events(graph, QUESTION), agent_name="top")

    [root] = otel_telemetry.outline()
    step0 = root[1][0]
    assert step0[0] == "step 0"
    nested = {tool[0]: tool[1] for tool in step0[1][1:]}
    assert nested == {
        "execute_tool ask_first": [["invoke_agent first", agent_steps()]],
        "execute_tool ask_second": [["invoke_agent second", agent_steps()]],
    }
    assert tokens(otel_telemetry) == 60
    _no_incomplete(otel_telemetry)


async def test_graphs_run_by_tools_of_graphs_run_by_tools_nest_at_each_level(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agent_contract.sources.langgraph_stream import langgraph_events

    clerk = agent("clerk", [lookup()])
    expert = agent("expert", [asks(clerk)])
    lead = agent("lead", [asks(expert)])
    await run_script(otel_telemetry, langgraph_events(lead, QUESTION), agent_name="lead")

    clerk_run = ["invoke_agent clerk", agent_steps()]
    expert_run = ["invoke_agent expert", [
        ["step 0", ["chat", ["execute_tool ask_clerk", [clerk_run]]]], ["step 1", ["chat"]],
    ]]  # fmt: skip
    assert otel_telemetry.outline() == [["invoke_agent lead", [
        ["step 0", ["chat", ["execute_tool ask_expert", [expert_run]]]], ["step 1", ["chat"]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == 60
    _no_incomplete(otel_telemetry)


async def test_a_graph_a_tool_runs_that_raises_fails_its_own_call_and_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The tool node hands the error to the model: the inner call that raised and the inner
    run fail with the graph's own exception, the tool's span with its class; the outer run
    goes on."""
    from langgraph.prebuilt import ToolNode, create_react_agent

    from agent_contract.sources.langgraph_stream import langgraph_events

    inner = agent("inner", [lookup()], fail=True)
    tools = ToolNode([asks(inner)], handle_tool_errors=True)
    outer = create_react_agent(model("outer", "ask_inner", '{"q": "x"}'), tools, name="outer")
    await run_script(otel_telemetry, langgraph_events(outer, QUESTION), agent_name="top")

    assert otel_telemetry.outline() == [["invoke_agent top", [
        ["step 0", ["chat", ["execute_tool ask_inner", [["invoke_agent inner", [
            ["step 0", ["chat"]]]]]]]],
        ["step 1", ["chat"]],
    ]]]  # fmt: skip
    failed = {s.name: (s.attributes or {}).get("error.type") for s in otel_telemetry.spans()
              if s.status.status_code is StatusCode.ERROR}  # fmt: skip
    assert failed == {
        "chat": "Boom",
        "invoke_agent inner": "Boom",
        "execute_tool ask_inner": "Boom",
    }
    assert otel_telemetry.open_spans() == []


async def test_a_graph_a_tool_runs_that_raises_through_the_run_ends_every_level_failed(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agent_contract.sources.langgraph_stream import langgraph_events

    inner = agent("inner", [lookup()], fail=True)
    outer = agent("outer", [asks(inner)])
    with pytest.raises(Boom):
        await run_script(otel_telemetry, langgraph_events(outer, QUESTION), agent_name="top")

    failed = {s.name for s in otel_telemetry.spans() if s.status.status_code is StatusCode.ERROR}
    assert {"invoke_agent top", "execute_tool ask_inner", "invoke_agent inner"} <= failed
    inner = otel_telemetry.span("invoke_agent inner")
    [inner_step] = [s for s in otel_telemetry.spans()
                    if s.parent and s.parent.span_id == inner.context.span_id]  # fmt: skip
    [inner_chat] = [s for s in otel_telemetry.spans() if s.name == "chat"
                    and s.parent and s.parent.span_id == inner_step.context.span_id]  # fmt: skip
    assert (inner_chat.attributes or {})["error.type"] == "Boom"
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize(
    ("mode", "subgraphs", "shape"),
    [
        ("values", False, dict),
        ("values", True, tuple),
        (["updates"], False, tuple),
        ("messages", False, tuple),
        (["custom", "values"], True, tuple),
    ],
)
async def test_the_callers_stream_mode_shapes_the_sink_not_the_trace(
    otel_telemetry: InMemoryTelemetry, mode: Any, subgraphs: bool, shape: type
) -> None:
    """A caller's ``stream_mode`` was passed twice to ``astream`` (a ``TypeError`` before the
    first item); now ``sink`` gets what LangGraph yields for the caller's arguments, and the
    trace is the same whatever the caller asked for."""
    from agent_contract.sources.langgraph_stream import langgraph_events

    graph, plain_graph = (around("worker", agent("sub", [lookup()])) for _ in range(2))
    kept: list[Any] = []
    source = langgraph_events(graph, QUESTION, sink=kept.append, stream_mode=mode,
                              subgraphs=subgraphs)  # fmt: skip
    await run_script(otel_telemetry, source, agent_name="top")

    items = plain_graph.astream(QUESTION, stream_mode=mode, subgraphs=subgraphs)
    plain = [item async for item in items]
    assert kept and all(isinstance(item, shape) for item in kept)
    assert {_shape(item) for item in kept} == {_shape(item) for item in plain}
    assert otel_telemetry.outline() == [["invoke_agent top", agent_steps()]]
    assert tokens(otel_telemetry) == 20


def _shape(item: Any) -> Any:
    """An item's structure: its mode names, each namespace's depth, each payload's kind (a
    message is one kind: the adapter makes the model stream, chunks where LangGraph alone may
    give the whole message)."""
    if isinstance(item, tuple):
        return tuple(part if isinstance(part, str) else len(part) if isinstance(part, tuple)
                     else _shape(part) for part in item)  # fmt: skip
    return "message" if hasattr(item, "content") else type(item).__name__


def _handoff(to: str) -> Any:
    """A swarm's handoff tool, as LangGraph's docs write it: a ``Command`` to the parent graph
    going to agent ``to``, with the conversation and the tool's own answer."""
    from typing import Annotated

    from langchain_core.messages import ToolMessage
    from langchain_core.tools import InjectedToolCallId, tool
    from langgraph.prebuilt import InjectedState
    from langgraph.types import Command

    def handoff(state: Any, tool_call_id: str) -> Any:
        answer = ToolMessage(f"transferred to {to}", name=f"transfer_to_{to}",
                             tool_call_id=tool_call_id)  # fmt: skip
        update = {"messages": [*state["messages"], answer]}
        return Command(goto=to, graph=Command.PARENT, update=update)

    # the injected arguments, as objects (this module's annotations are strings)
    handoff.__annotations__ = {
        "state": Annotated[dict, InjectedState],
        "tool_call_id": Annotated[str, InjectedToolCallId],
        "return": Command,
    }
    return tool(f"transfer_to_{to}", description=f"Hand the conversation to {to}.")(handoff)


async def test_a_swarm_handoff_to_the_parent_graph_tells_its_tool_once(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A handoff's answer reaches the parent without an id, then comes back in the next
    agent's final state with the one the parent's ``add_messages`` gave it: it was told twice,
    a second ``execute_tool`` of the handoff left incomplete in the last step; now once."""
    from langgraph.graph import START, MessagesState, StateGraph

    from agent_contract.sources.langgraph_stream import langgraph_events

    swarm = StateGraph(MessagesState)
    swarm.add_node("alice", agent("alice", [_handoff("bob")]), destinations=("bob",))
    swarm.add_node("bob", agent("bob", [lookup()]))
    swarm.add_edge(START, "alice")
    await run_script(otel_telemetry, langgraph_events(swarm.compile(), QUESTION),
                     agent_name="swarm")  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent swarm", [
        ["step 0", ["chat", "execute_tool transfer_to_bob"]],
        ["step 1", ["chat", "execute_tool lookup"]],
        ["step 2", ["chat"]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == 30
    _no_incomplete(otel_telemetry)


@pytest.mark.parametrize("nested", [False, True], ids=["agent", "sub-graph"])
async def test_a_model_answer_the_prebuilt_agent_replaces_near_the_limit_keeps_its_tokens(
    otel_telemetry: InMemoryTelemetry, nested: bool
) -> None:
    """Near ``recursion_limit`` the prebuilt agent puts "need more steps" (no usage, no tool
    calls) in place of the model's answer, under its id: the call ended with that message and
    its chat span lost the tokens the request spent; now they are the request's own, and the
    tool the graph never ran is not told."""
    from agent_contract.sources.langgraph_stream import langgraph_events

    graph = agent("sub", [lookup()])
    graph = around("worker", graph) if nested else graph
    source = langgraph_events(graph, QUESTION, {"recursion_limit": 2})
    await run_script(otel_telemetry, source, agent_name="top")

    assert otel_telemetry.outline() == [["invoke_agent top", [["step 0", ["chat"]]]]]
    assert tokens(otel_telemetry) == 10
    _no_incomplete(otel_telemetry)


async def test_a_supervisor_speaking_after_its_agents_answer_starts_a_step_of_its_own(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """LangGraph's supervisor recipe: the supervisor hands off to an agent, whose answer comes
    back to it. The supervisor's next call was in the step of the agent's answer, under the
    agent's phase; now each agent's turn is steps of its own, each named by its phase."""
    from langgraph.graph import END, START, MessagesState, StateGraph

    from agent_contract.sources.langgraph_stream import langgraph_events

    team = StateGraph(MessagesState)
    team.add_node("boss", agent("boss", [_handoff("bob")]), destinations=("bob", END))
    team.add_node("bob", agent("bob", [lookup()]))
    team.add_edge(START, "boss")
    team.add_edge("bob", "boss")
    await run_script(otel_telemetry, langgraph_events(team.compile(), QUESTION),
                     agent_name="team")  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent team", [
        ["step 0", ["chat", "execute_tool transfer_to_bob"]],
        ["step 1", ["chat", "execute_tool lookup"]],
        ["step 2", ["chat"]],
        ["step 3", ["chat"]],
    ]]]  # fmt: skip
    assert phases(otel_telemetry) == ["boss", "bob", "bob", "boss"]
    assert tokens(otel_telemetry) == 40
    _no_incomplete(otel_telemetry)
