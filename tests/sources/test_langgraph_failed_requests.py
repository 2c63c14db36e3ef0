"""LangGraph model requests that raise while the graph goes on: LangChain's
``with_fallbacks`` trying the next model, ``with_retry``, a node's ``RetryPolicy`` running the
node again, a node catching the error itself.

Each request is a chat span of its own: the one that raised fails with its exception's class
(``error.type``), whether it raised before its first chunk or mid-stream, and the request
that answered succeeds with its tokens; both in the same step, as they answer one turn. The
run succeeds, as the graph did.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from ._frameworks import Overloaded
from ._trace import tokens

pytest.importorskip("langgraph")

USAGE = {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13}
QUESTION = {"messages": [("user", "hi")]}


def _chat(*, fails: str | None = None, text: str = "fine") -> Any:
    """LangChain's fake chat model streaming ``text`` and its usage; ``fails="first"`` raises
    ``Overloaded`` before its first chunk, ``fails="mid"`` after it."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessageChunk
    from langchain_core.outputs import ChatGenerationChunk

    def chunks() -> Any:
        if fails == "first":
            raise Overloaded("the provider is overloaded")
        yield ChatGenerationChunk(message=AIMessageChunk(content=text))
        if fails == "mid":
            raise Overloaded("the connection dropped")
        last = AIMessageChunk(content="", usage_metadata=USAGE, chunk_position="last")  # type: ignore[arg-type]
        yield ChatGenerationChunk(message=last)

    class Chat(GenericFakeChatModel):
        def _stream(self, messages: Any, *args: Any, **kw: Any) -> Any:
            yield from chunks()

        async def _astream(self, messages: Any, *args: Any, **kw: Any) -> Any:
            for chunk in chunks():
                yield chunk

    return Chat(messages=iter(()))


def _one_node(node: Any, **options: Any) -> Any:
    from langgraph.graph import END, START, MessagesState, StateGraph

    graph = StateGraph(MessagesState)
    graph.add_node("model", node, **options)
    graph.add_edge(START, "model")
    graph.add_edge("model", END)
    return graph.compile()


def _calling(chat: Any) -> Any:
    async def node(state: Any) -> dict[str, Any]:
        return {"messages": [await chat.ainvoke(state["messages"])]}

    return node


def _chats(telemetry: InMemoryTelemetry) -> list[Any]:
    return sorted((s for s in telemetry.spans() if s.name.startswith("chat")),
                  key=lambda s: s.start_time or 0)  # fmt: skip


def _failed_then_answered(telemetry: InMemoryTelemetry, failures: int = 1) -> None:
    """One step: the failed requests' chat spans, then the answering one's with the tokens."""
    chats = ["chat"] * (failures + 1)
    assert telemetry.outline() == [["invoke_agent fb", [["step 0", chats]]]]
    *failed_ones, answered = _chats(telemetry)
    for failed in failed_ones:
        assert failed.status.status_code is StatusCode.ERROR
        assert (failed.attributes or {}).get("error.type") == "Overloaded"
        assert "gen_ai.usage.input_tokens" not in (failed.attributes or {})
    assert answered.status.status_code is not StatusCode.ERROR
    assert (answered.attributes or {}).get("gen_ai.usage.input_tokens") == 10
    assert tokens(telemetry) == 10
    assert telemetry.span("invoke_agent fb").status.status_code is not StatusCode.ERROR
    assert telemetry.open_spans() == []


@pytest.mark.parametrize("fails", ["first", "mid"], ids=["before-output", "mid-stream"])
async def test_a_fallback_after_a_failed_model_fails_that_request_and_answers_with_the_next(
    otel_telemetry: InMemoryTelemetry, fails: str
) -> None:
    from agent_contract.sources.langgraph_stream import langgraph_events

    chat = _chat(fails=fails, text="lost").with_fallbacks([_chat()])
    source = langgraph_events(_one_node(_calling(chat)), QUESTION)
    await run_script(otel_telemetry, source, agent_name="fb")

    _failed_then_answered(otel_telemetry)


@pytest.mark.parametrize("fails", ["first", "mid"], ids=["before-output", "mid-stream"])
async def test_a_sync_node_s_fallbacks_fail_each_request_that_raised(
    otel_telemetry: InMemoryTelemetry, fails: str
) -> None:
    """A sync node (run on LangGraph's threads, whose requests may raise before the reader
    reads their chunks) falling back twice: two failed chat spans, then the answer."""
    from agent_contract.sources.langgraph_stream import langgraph_events

    chat = _chat(fails=fails).with_fallbacks([_chat(fails=fails), _chat()])

    def node(state: Any) -> dict[str, Any]:
        return {"messages": [chat.invoke(state["messages"])]}

    await run_script(otel_telemetry, langgraph_events(_one_node(node), QUESTION), agent_name="fb")

    _failed_then_answered(otel_telemetry, failures=2)


async def test_a_node_retried_by_its_retry_policy_fails_the_request_it_retried(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from langgraph.types import RetryPolicy

    from agent_contract.sources.langgraph_stream import langgraph_events

    chats = iter([_chat(fails="first"), _chat()])

    async def node(state: Any) -> dict[str, Any]:
        return {"messages": [await next(chats).ainvoke(state["messages"])]}

    policy = RetryPolicy(initial_interval=0.0, jitter=False, retry_on=Overloaded)
    source = langgraph_events(_one_node(node, retry_policy=policy), QUESTION)
    await run_script(otel_telemetry, source, agent_name="fb")

    _failed_then_answered(otel_telemetry)


async def test_a_request_whose_error_the_node_catches_fails_alone(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agent_contract.sources.langgraph_stream import langgraph_events

    primary, backup = _chat(fails="mid", text="lost"), _chat()

    async def node(state: Any) -> dict[str, Any]:
        try:
            return {"messages": [await primary.ainvoke(state["messages"])]}
        except Overloaded:
            return {"messages": [await backup.ainvoke(state["messages"])]}

    await run_script(otel_telemetry, langgraph_events(_one_node(node), QUESTION), agent_name="fb")

    _failed_then_answered(otel_telemetry)


@pytest.mark.parametrize("sync", [False, True], ids=["async-tool", "sync-tool"])
async def test_a_tool_node_retried_by_its_retry_policy_fails_the_attempt_it_retried(
    sync: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    """The tools node has a ``RetryPolicy`` and its tool raises once: LangGraph runs the node
    again, the same call, which answers. Each attempt is an ``execute_tool`` span of that call:
    the first failed with its exception's class, the retry's with the answer; the run
    succeeds."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessageChunk
    from langchain_core.outputs import ChatGenerationChunk
    from langchain_core.tools import StructuredTool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    from langgraph.types import RetryPolicy

    from agent_contract.sources.langgraph_stream import langgraph_events

    class Asking(GenericFakeChatModel):
        turns: int = 0

        async def _astream(self, messages: Any, *args: Any, **kw: Any) -> Any:
            self.turns += 1
            ask = [{"index": 0, "id": "w", "name": "weather", "args": '{"city": "Paris"}'}]
            first = self.turns == 1
            message = AIMessageChunk(content="" if first else "sunny", usage_metadata=USAGE,  # type: ignore[arg-type]
                                     tool_call_chunks=ask if first else [],  # type: ignore[arg-type]
                                     chunk_position="last")  # fmt: skip
            yield ChatGenerationChunk(message=message)

    tries: list[str] = []

    def weather(city: str) -> str:
        """Current weather of a city."""
        tries.append(city)
        if len(tries) == 1:
            raise Overloaded("the weather service is overloaded")
        return "sunny"

    async def aweather(city: str) -> str:
        """Current weather of a city."""
        return weather(city)

    tool = (StructuredTool.from_function(func=weather, name="weather") if sync
            else StructuredTool.from_function(coroutine=aweather, name="weather"))  # fmt: skip
    model = Asking(messages=iter(()))

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    policy = RetryPolicy(initial_interval=0.0, jitter=False, retry_on=Overloaded)
    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([tool], handle_tool_errors=False), retry_policy=policy)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    source = langgraph_events(graph.compile(), QUESTION)
    await run_script(otel_telemetry, source, agent_name="fb", capture_content=True)

    assert tries == ["Paris", "Paris"]
    assert otel_telemetry.outline() == [
        ["invoke_agent fb", [["step 0", ["chat", "execute_tool weather", "execute_tool weather"]],
                             ["step 1", ["chat"]]]],
    ]  # fmt: skip
    failed, answered = sorted((s for s in otel_telemetry.spans() if s.name.startswith("execute")),
                              key=lambda s: s.start_time or 0)  # fmt: skip
    for span in (failed, answered):
        assert (span.attributes or {})["gen_ai.tool.call.id"] == "w"
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "Overloaded"
    assert answered.status.status_code is not StatusCode.ERROR
    assert "error.type" not in (answered.attributes or {})
    assert (answered.attributes or {})["gen_ai.tool.call.result"] == '"sunny"'
    assert otel_telemetry.span("invoke_agent fb").status.status_code is not StatusCode.ERROR
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("depth", [0, 2], ids=["root", "two_sub_graphs_down"])
async def test_a_node_raising_after_its_request_answered_keeps_that_calls_answer(
    otel_telemetry: InMemoryTelemetry, depth: int
) -> None:
    """A node whose request answered and then raised itself (its own code, after the model):
    the request ended well, billed, so its chat span ends with its answer and tokens, not failed
    and cut short by the node's error, which fails the step and the run (also in a sub-graph
    two levels down, streamed with ``subgraphs=True``)."""
    from agent_contract.sources.langgraph_stream import langgraph_events

    chat = _chat(text="hi")

    async def node(state: Any) -> dict[str, Any]:
        await chat.ainvoke(state["messages"])
        raise ValueError("the node's own bug")

    graph = _one_node(node)
    for _ in range(depth):
        graph = _one_node(graph)
    with pytest.raises(ValueError, match="own bug"):
        await run_script(otel_telemetry, langgraph_events(graph, QUESTION), agent_name="fb")

    assert otel_telemetry.outline() == [["invoke_agent fb", [["step 0", ["chat"]]]]]
    [answered] = _chats(otel_telemetry)
    attributes = dict(answered.attributes or {})
    assert answered.status.status_code is StatusCode.UNSET
    assert "agent_otel.incomplete" not in attributes
    assert attributes.get("gen_ai.usage.input_tokens") == 10
    for failed in ("step 0", "invoke_agent fb"):
        span = otel_telemetry.span(failed)
        assert span.status.status_code is StatusCode.ERROR
        assert (span.attributes or {}).get("error.type") == "ValueError"
    assert otel_telemetry.open_spans() == []
