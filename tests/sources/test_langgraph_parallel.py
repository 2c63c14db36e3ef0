"""LangGraph model calls that stream at the same time, or whose message the graph never returns.

Parallel branches, ``Send`` fan-out and sub-agents run side by side stream their requests'
chunks interleaved; a node may keep a model's answer out of the ``messages`` state (its own
state keys) or call the model twice before it returns. Each request is one chat span with its
own text, tool calls and tokens, counted once, whatever the graph's shape.
"""

from __future__ import annotations

import asyncio
import json
import operator
from typing import Annotated, Any, TypedDict

import pytest

from agent_contract.protocol import LLMCallEnd, LLMCallStart, TextDelta
from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import tokens

pytest.importorskip("langgraph")

USAGE = {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13}
QUESTION = {"messages": [("user", "hi")]}


def model(tag: str, barrier: asyncio.Barrier | None = None, *, streams: bool = True) -> Any:
    """LangChain's fake chat model answering ``<tag>:one <tag>:two`` in two chunks, then its
    usage; with a ``barrier`` it waits there between its chunks (the requests sharing it
    interleave, whatever the scheduler does)."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

    class Interleaved(GenericFakeChatModel):
        async def _astream(self, messages: Any, *args: Any, **kw: Any) -> Any:
            yield ChatGenerationChunk(message=AIMessageChunk(content=f"{tag}:one "))
            if barrier is not None:
                await barrier.wait()
            yield ChatGenerationChunk(message=AIMessageChunk(content=f"{tag}:two"))
            last = AIMessageChunk(content="", usage_metadata=USAGE, chunk_position="last")  # type: ignore[arg-type]
            yield ChatGenerationChunk(message=last)

        async def _agenerate(self, messages: Any, *args: Any, **kw: Any) -> ChatResult:
            if barrier is not None:
                await barrier.wait()
            answer = AIMessage(content=f"{tag}:whole", usage_metadata=USAGE)  # type: ignore[arg-type]
            return ChatResult(generations=[ChatGeneration(message=answer)])

    return Interleaved(messages=iter(()), disable_streaming=not streams)


def _node(chat: Any) -> Any:
    async def node(state: Any) -> dict[str, Any]:
        return {"messages": [await chat.ainvoke(state["messages"])]}

    return node


def _branches(**nodes: Any) -> Any:
    """A graph running ``nodes`` in parallel, from the start to the end."""
    from langgraph.graph import END, START, MessagesState, StateGraph

    graph = StateGraph(MessagesState)
    for name, node in nodes.items():
        graph.add_node(name, node)
        graph.add_edge(START, name)
        graph.add_edge(name, END)
    return graph.compile()


class _Topics(TypedDict):
    topics: list[str]
    out: Annotated[list[str], operator.add]


def _fan_out(work: Any) -> Any:
    """A graph sending each of its input's ``topics`` to ``work`` (``Send``), all at once."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    graph = StateGraph(_Topics)
    graph.add_node("work", work)
    graph.add_conditional_edges(
        START, lambda state: [Send("work", {"topic": t}) for t in state["topics"]], ["work"]
    )
    graph.add_edge("work", END)
    return graph.compile()


def _answers(telemetry: InMemoryTelemetry) -> list[str]:
    """Each chat span's answer text (content captured), in the order the spans started."""
    chats = sorted((s for s in telemetry.spans() if s.name.startswith("chat")),
                   key=lambda s: s.start_time or 0)  # fmt: skip
    return [
        "".join(part.get("content", "") for message in
                json.loads(str((s.attributes or {})["gen_ai.output.messages"]))
                for part in message["parts"])
        for s in chats
    ]  # fmt: skip


def _each_call_told_whole(events: list[Any]) -> list[str]:
    """The text of each call, as the events told it: every delta inside its own call."""
    texts: list[str] = []
    open_call = False
    for event in events:
        if isinstance(event, LLMCallStart):
            assert not open_call, "a call started inside another"
            open_call = True
            texts.append("")
        elif isinstance(event, LLMCallEnd):
            open_call = False
        elif isinstance(event, TextDelta):
            assert open_call, "text outside any call"
            texts[-1] += event.text
    return texts


@pytest.mark.parametrize("streams", [True, False], ids=["streamed", "whole"])
async def test_parallel_branches_streaming_at_once_are_one_chat_span_each(
    otel_telemetry: InMemoryTelemetry, streams: bool
) -> None:
    from agent_contract.sources.langgraph_stream import langgraph_events

    barrier = asyncio.Barrier(2)
    graph = _branches(a=_node(model("a", barrier, streams=streams)),
                      b=_node(model("b", barrier, streams=streams)))  # fmt: skip
    events = await run_script(
        otel_telemetry, langgraph_events(graph, QUESTION), agent_name="par", capture_content=True
    )

    expected = ["a:one a:two", "b:one b:two"] if streams else ["a:whole", "b:whole"]
    assert sorted(_each_call_told_whole(events)) == expected
    assert otel_telemetry.outline() == [["invoke_agent par", [["step 0", ["chat", "chat"]]]]]
    assert sorted(_answers(otel_telemetry)) == expected
    assert tokens(otel_telemetry) == 20
    assert tokens(otel_telemetry, "gen_ai.usage.output_tokens") == 6
    assert otel_telemetry.open_spans() == []


async def test_send_fan_out_gives_each_request_its_chat_span_and_tokens(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agent_contract.sources.langgraph_stream import langgraph_events

    barrier = asyncio.Barrier(3)
    chats = {topic: model(topic, barrier) for topic in ("x", "y", "z")}

    async def work(state: dict[str, str]) -> dict[str, list[str]]:
        answer = await chats[state["topic"]].ainvoke(state["topic"])
        return {"out": [str(answer.content)]}

    source = langgraph_events(_fan_out(work), {"topics": ["x", "y", "z"]})
    events = await run_script(otel_telemetry, source, agent_name="fan", capture_content=True)

    expected = ["x:one x:two", "y:one y:two", "z:one z:two"]
    assert sorted(_each_call_told_whole(events)) == expected
    assert otel_telemetry.outline() == [["invoke_agent fan", [["step 0", ["chat"] * 3]]]]
    assert sorted(_answers(otel_telemetry)) == expected
    assert tokens(otel_telemetry) == 30
    assert otel_telemetry.open_spans() == []


async def test_sync_nodes_whose_requests_end_before_the_reader_reads_them_keep_one_span_each(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``Send`` fan-out to a sync node (LangGraph runs it on its executor's threads): each
    request may end before the reader has read its chunks, interleaved with the others'. An
    ended request was taken as done at the next request's chunk, so its chunks still to come
    opened a chat span of their own, with no tokens (four spans for three calls, now and then);
    now a request is done once its chunks are read. The sink holds the reader, at the first
    chunk, until every request ended."""
    import threading

    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessageChunk
    from langchain_core.outputs import ChatGenerationChunk

    from agent_contract.sources.langgraph_stream import langgraph_events

    class Sync(GenericFakeChatModel):
        def _stream(self, messages: Any, *args: Any, **kw: Any) -> Any:
            topic = messages[0].content
            yield ChatGenerationChunk(message=AIMessageChunk(content=f"{topic}:one "))
            between.wait(2)  # the requests' chunks interleave
            last = AIMessageChunk(content=f"{topic}:two", usage_metadata=USAGE,  # type: ignore[arg-type]
                                  chunk_position="last")  # fmt: skip
            yield ChatGenerationChunk(message=last)

    topics, lock, ended = ["x", "y", "z"], threading.Lock(), threading.Event()
    between = threading.Barrier(len(topics))
    answered: list[str] = []

    def work(state: dict[str, str]) -> dict[str, list[str]]:
        answer = Sync(messages=iter(())).invoke(state["topic"])
        with lock:
            answered.append(state["topic"])
            if len(answered) == len(topics):
                ended.set()
        return {"out": [str(answer.content)]}

    source = langgraph_events(_fan_out(work), {"topics": topics}, stream_mode="messages",
                              sink=lambda item: ended.wait(2))  # fmt: skip
    events = await run_script(otel_telemetry, source, agent_name="fan", capture_content=True)

    expected = ["x:one x:two", "y:one y:two", "z:one z:two"]
    assert sorted(_each_call_told_whole(events)) == expected
    assert otel_telemetry.outline() == [["invoke_agent fan", [["step 0", ["chat"] * 3]]]]
    assert tokens(otel_telemetry) == 30
    assert otel_telemetry.open_spans() == []


async def test_sub_agents_run_side_by_side_keep_their_calls_tools_and_tokens(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Two prebuilt ReAct agents as parallel nodes, each asking for a tool and then
    answering: four chat spans, both tool spans, each result on its own call."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessageChunk
    from langchain_core.outputs import ChatGenerationChunk
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    from agent_contract.sources.langgraph_stream import langgraph_events

    barrier = asyncio.Barrier(2)

    class Asking(GenericFakeChatModel):
        tag: str
        turns: int = 0

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        async def _astream(self, messages: Any, *args: Any, **kw: Any) -> Any:
            self.turns += 1
            ask = [{"index": 0, "id": f"call-{self.tag}", "name": "lookup", "args": "{}"}]
            yield ChatGenerationChunk(message=AIMessageChunk(content=f"{self.tag} "))
            await barrier.wait()  # both agents' requests stream at once, each turn
            chunk = AIMessageChunk(
                content="" if self.turns == 1 else "done", usage_metadata=USAGE,  # type: ignore[arg-type]
                tool_call_chunks=ask if self.turns == 1 else [], chunk_position="last",  # type: ignore[arg-type]
            )  # fmt: skip
            yield ChatGenerationChunk(message=chunk)

    @tool
    async def lookup() -> str:
        """Look it up."""
        return "found"

    agents = {name: create_react_agent(Asking(messages=iter(()), tag=name), [lookup], name=name)
              for name in ("ra", "rb")}  # fmt: skip
    events = await run_script(
        otel_telemetry, langgraph_events(_branches(**agents), QUESTION), agent_name="team"
    )

    assert sorted(_each_call_told_whole(events)) == ["ra ", "ra done", "rb ", "rb done"]
    spans = otel_telemetry.spans()
    assert [s.name for s in spans].count("chat") == 4
    tools = [s for s in spans if s.name == "execute_tool lookup"]
    assert sorted(str((s.attributes or {})["gen_ai.tool.call.id"]) for s in tools) == [
        "call-ra", "call-rb",
    ]  # fmt: skip
    assert not any((s.attributes or {}).get("agent_otel.incomplete") for s in spans)
    assert tokens(otel_telemetry) == 40
    assert otel_telemetry.open_spans() == []


async def test_a_call_whose_message_the_node_keeps_out_of_the_messages_keeps_its_usage(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A node storing the answer under its own key, and a node calling the model twice before
    it returns: the callbacks' final message of each request closes its call, with usage."""
    from langgraph.graph import END, START, StateGraph

    from agent_contract.sources.langgraph_stream import langgraph_events

    class State(TypedDict):
        q: str
        answers: list[str]

    chat = model("m")

    async def twice(state: dict[str, Any]) -> dict[str, list[str]]:
        first, second = await chat.ainvoke(state["q"]), await chat.ainvoke(state["q"])
        return {"answers": [str(first.content), str(second.content)]}

    graph = StateGraph(State)
    graph.add_node("answer", twice)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    source = langgraph_events(graph.compile(), {"q": "hi", "answers": []})
    events = await run_script(otel_telemetry, source, agent_name="plain")

    assert _each_call_told_whole(events) == ["m:one m:two", "m:one m:two"]
    assert otel_telemetry.outline() == [["invoke_agent plain", [["step 0", ["chat", "chat"]]]]]
    assert tokens(otel_telemetry) == 20
    assert tokens(otel_telemetry, "gen_ai.usage.output_tokens") == 6
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("sent", [False, True], ids=["two subgraphs", "one sent twice"])
async def test_a_branchs_tool_still_running_when_the_other_speaks_again_keeps_its_step(
    otel_telemetry: InMemoryTelemetry, sent: bool
) -> None:
    """Branch ``ra``'s tool is still running when branch ``rb``, its tool done, makes its next
    model call: ``ra``'s call stays open in its step (no step ends while a branch beside the
    one speaking waits for its tools) and its result ends it, complete, once. The branches are
    two subgraphs, or one sent twice (``Send``: the same node path, told apart only by the
    task ids in their namespaces)."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessageChunk
    from langchain_core.outputs import ChatGenerationChunk
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import create_react_agent
    from langgraph.types import Send

    from agent_contract.sources.langgraph_stream import langgraph_events

    spoke_again = asyncio.Event()

    class Asking(GenericFakeChatModel):
        tag: str = ""  # else the branch's question names it

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        async def _astream(self, messages: Any, *args: Any, **kw: Any) -> Any:
            tag = self.tag or str(messages[0].content)
            if len(messages) == 1:
                tool = "slow" if tag == "ra" else "fast"
                ask = [{"index": 0, "id": f"call-{tag}", "name": tool, "args": "{}"}]
                last = AIMessageChunk(content=f"{tag} asks", usage_metadata=USAGE,  # type: ignore[arg-type]
                                      tool_call_chunks=ask, chunk_position="last")  # type: ignore[arg-type]  # fmt: skip
                yield ChatGenerationChunk(message=last)
                return
            yield ChatGenerationChunk(message=AIMessageChunk(content=f"{tag} "))
            if tag == "rb":
                spoke_again.set()  # ra's tool returns only now
            last = AIMessageChunk(content="done", usage_metadata=USAGE, chunk_position="last")  # type: ignore[arg-type]
            yield ChatGenerationChunk(message=last)

    @tool
    async def slow() -> str:
        """Waits for the other branch."""
        await asyncio.wait_for(spoke_again.wait(), 30)  # a hang guard
        return "late"

    @tool
    async def fast() -> str:
        """Answers at once."""
        return "soon"

    def agent(tag: str = "") -> Any:
        return create_react_agent(Asking(messages=iter(()), tag=tag), [slow, fast])

    if sent:
        builder = StateGraph(MessagesState)
        builder.add_node("worker", agent())
        builder.add_conditional_edges(
            START, lambda _: [Send("worker", {"messages": [("user", t)]}) for t in ("ra", "rb")]
        )
        graph = builder.compile()
    else:
        graph = _branches(ra=agent("ra"), rb=agent("rb"))
    await run_script(otel_telemetry, langgraph_events(graph, QUESTION), agent_name="team")
    spans = otel_telemetry.spans()
    tools = sorted(s.name for s in spans if s.name.startswith("execute_tool"))
    assert tools == ["execute_tool fast", "execute_tool slow"]
    assert not any((s.attributes or {}).get("agent_otel.incomplete") for s in spans)
    assert [s.name for s in spans].count("chat") == 4
    assert tokens(otel_telemetry) == 40
