"""LangChain 1.x's ``create_agent`` through the LangGraph adapter: the graph it compiles, its
middleware's own model calls and its structured answer.

* A request LangGraph keeps out of its ``messages`` stream (tagged ``nostream``: the summary
  ``SummarizationMiddleware`` asks for, ``LLMToolSelectorMiddleware``'s choice of tools, a
  caller's own hidden call) is still a model call: a chat span of its own, with its model and
  tokens, in the step it was made in.
  Such a side call does not name the run: the ``invoke_agent`` span's model and provider are
  the agent's own (its first call that is not one), and so is its input.
* ``response_format=ToolStrategy(...)``: the model answers by calling the schema's tool and the
  model node answers that call itself (no tool runs it), so it is no tool call, as the prebuilt
  agent's structured answer is not; the run's answer is the structured one.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import tokens

pytest.importorskip("langchain.agents")

USAGE = {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13}
QUESTION = {"messages": [("user", "weather in Paris?")]}
LOOKUP = [("call-1", "lookup", '{"city": "Paris"}')]


class Weather(BaseModel):
    city: str
    sky: str


def model(turns: list[Any], name: str, *, streams: bool = True) -> Any:
    """LangChain's fake chat model named ``name``, binding tools as a real one does: each turn
    (the last repeated) a text answer or the tool calls ``(id, name, args)`` it asks for, with
    ``USAGE``; streamed, or whole when ``streams`` is false."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

    class Scripted(GenericFakeChatModel):
        turn: int = 0
        model_name: str = name  # LangChain reports it as the request's model (ls_model_name)

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self.bind(tools=tools, **kwargs)

        def _next(self) -> Any:
            step = turns[min(self.turn, len(turns) - 1)]
            self.turn += 1
            meta = {"model_name": name}
            if isinstance(step, str):
                return AIMessageChunk(content=step, usage_metadata=USAGE, response_metadata=meta)  # type: ignore[arg-type]
            ask = [{"index": i, "id": c, "name": n, "args": a} for i, (c, n, a) in enumerate(step)]
            return AIMessageChunk(content="", tool_call_chunks=ask, usage_metadata=USAGE,  # type: ignore[arg-type]
                                  response_metadata=meta)  # fmt: skip

        async def _astream(self, messages: Any, *args: Any, **kw: Any) -> Any:
            yield ChatGenerationChunk(message=self._next())

        def _stream(self, messages: Any, *args: Any, **kw: Any) -> Any:
            yield ChatGenerationChunk(message=self._next())

        def _whole(self) -> ChatResult:
            chunk = self._next()
            whole = AIMessage(content=chunk.content, tool_calls=chunk.tool_calls,
                              usage_metadata=chunk.usage_metadata,
                              response_metadata=chunk.response_metadata)  # fmt: skip
            return ChatResult(generations=[ChatGeneration(message=whole)])

        async def _agenerate(self, messages: Any, *args: Any, **kw: Any) -> ChatResult:
            return self._whole()

        def _generate(self, messages: Any, *args: Any, **kw: Any) -> ChatResult:
            return self._whole()

    return Scripted(messages=iter(()), disable_streaming=not streams)


def lookup() -> Any:
    from langchain_core.tools import tool

    @tool
    def lookup(city: str) -> str:
        """The weather in ``city``."""
        return "sunny"

    return lookup


async def _run(telemetry: InMemoryTelemetry, graph: Any, question: Any = QUESTION) -> None:
    from agent_contract.sources.langgraph_stream import langgraph_events

    await run_script(telemetry, langgraph_events(graph, question), agent_name="bot",
                     capture_content=True)  # fmt: skip


def _chat_models(telemetry: InMemoryTelemetry) -> list[tuple[str, Any, Any]]:
    """Each chat span's name, response model and input tokens, in start order."""
    chats = sorted((s for s in telemetry.spans() if s.name.startswith("chat")),
                   key=lambda s: s.start_time or 0)  # fmt: skip
    return [(s.name, (s.attributes or {}).get("gen_ai.response.model"),
             (s.attributes or {}).get("gen_ai.usage.input_tokens")) for s in chats]  # fmt: skip


def _named_by_the_agent(telemetry: InMemoryTelemetry, asked: str) -> None:
    """The run's model is the agent's (``agent``), not the side model that was asked first,
    and its input is the agent's request, whose last message is ``asked``."""
    run = dict(telemetry.span("invoke_agent bot").attributes or {})
    assert run["gen_ai.request.model"] == "agent"
    *_, last = json.loads(str(run["gen_ai.input.messages"]))
    assert last["parts"] == [{"type": "text", "content": asked}]


async def test_the_summary_call_is_a_chat_span_with_its_tokens(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The summary model's request (``nostream``) was lost with its tokens: six messages meet
    the trigger once, before the first model call, so the first step holds the summary's chat
    span, then the agent's call and its tool."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware

    history = [("user", "a"), ("ai", "b"), ("user", "c"), ("ai", "d"), ("user", "e"),
               ("user", "weather in Paris?")]  # fmt: skip
    summary = SummarizationMiddleware(model([("Earlier: a to e.")], "summarizer"),
                                      trigger=("messages", 6), keep=("messages", 2))  # fmt: skip
    agent = create_agent(model([LOOKUP, "It is sunny."], "agent"), [lookup()], middleware=[summary])
    await _run(otel_telemetry, agent, {"messages": history})

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat summarizer", "chat agent", "execute_tool lookup"]],
        ["step 1", ["chat agent"]],
    ]]]  # fmt: skip
    assert _chat_models(otel_telemetry) == [
        ("chat summarizer", "summarizer", 10), ("chat agent", "agent", 10),
        ("chat agent", "agent", 10),
    ]  # fmt: skip
    assert tokens(otel_telemetry) == 30
    assert otel_telemetry.open_spans() == []
    _named_by_the_agent(otel_telemetry, "weather in Paris?")


async def test_the_tool_selector_call_is_a_chat_span_with_its_tokens(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``LLMToolSelectorMiddleware`` asks its model which tools the agent may use before each
    agent call (``nostream``, a structured answer): each is a chat span before that call."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import LLMToolSelectorMiddleware
    from langchain_core.tools import tool

    @tool
    def forecast(city: str) -> str:
        """Tomorrow's weather in ``city``."""
        return "rain"

    chosen = [("s", "ToolSelectionResponse", '{"tools": ["lookup"]}')]
    selector = LLMToolSelectorMiddleware(model=model([chosen], "selector"), max_tools=1)
    agent = create_agent(model([LOOKUP, "It is sunny."], "agent"), [lookup(), forecast],
                         middleware=[selector])  # fmt: skip
    await _run(otel_telemetry, agent)

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat selector", "chat agent", "execute_tool lookup"]],
        ["step 1", ["chat selector", "chat agent"]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == 40
    assert otel_telemetry.open_spans() == []
    _named_by_the_agent(otel_telemetry, "weather in Paris?")


async def test_a_nostream_request_of_a_node_is_a_chat_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The class, in a plain LangGraph graph: a node's own request tagged ``nostream`` (kept
    out of the ``messages`` stream, as LangGraph documents for hiding a call) is a chat span
    with its tokens, beside the streamed one's."""
    from langgraph.graph import END, START, MessagesState, StateGraph

    hidden = model(["internal note"], "hidden").with_config(tags=["nostream"])
    shown = model(["It is sunny."], "shown")

    async def node(state: Any) -> dict[str, Any]:
        await hidden.ainvoke(state["messages"])
        return {"messages": [await shown.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", node)
    graph.add_edge(START, "model")
    graph.add_edge("model", END)
    await _run(otel_telemetry, graph.compile())

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat hidden", "chat shown"]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == 20
    run = dict(otel_telemetry.span("invoke_agent bot").attributes or {})
    [answer] = json.loads(str(run["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "text", "content": "It is sunny."}]


@pytest.mark.parametrize("streams", [True, False], ids=["streamed", "whole"])
async def test_the_tool_strategy_answer_is_no_tool_call(
    otel_telemetry: InMemoryTelemetry, streams: bool
) -> None:
    """The schema tool's call the model node answers itself was an ``execute_tool Weather``
    span no tool ran (two, streamed: its answer told before its call); now the request is one
    chat span with its tokens and the run answers with the structured response."""
    from langchain.agents import create_agent
    from langchain.agents.structured_output import ToolStrategy

    answer = [("call-2", "Weather", '{"city": "Paris", "sky": "sunny"}')]
    agent = create_agent(model([LOOKUP, answer], "agent", streams=streams), [lookup()],
                         response_format=ToolStrategy(Weather))  # fmt: skip
    await _run(otel_telemetry, agent)

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat agent", "execute_tool lookup"]], ["step 1", ["chat agent"]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == 20
    run = dict(otel_telemetry.span("invoke_agent bot").attributes or {})
    assert run["gen_ai.output.type"] == "json"
    [said] = json.loads(str(run["gen_ai.output.messages"]))
    assert said["parts"] == [{"type": "json", "content": {"city": "Paris", "sky": "sunny"}}]
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("streams", [True, False], ids=["streamed", "whole"])
async def test_a_provider_strategy_request_asks_for_json(
    otel_telemetry: InMemoryTelemetry, streams: bool
) -> None:
    """``ProviderStrategy`` binds the provider's ``response_format`` (a JSON schema) to every
    request of the model node: each chat span says the request asked for JSON
    (``gen_ai.output.type``, as the conventions ask of a request with an output format) and
    keeps the model's text; the run answers with the structured response."""
    from langchain.agents import create_agent
    from langchain.agents.structured_output import ProviderStrategy

    said = '{"city": "Paris", "sky": "sunny"}'
    agent = create_agent(model([LOOKUP, said], "agent", streams=streams), [lookup()],
                         response_format=ProviderStrategy(Weather))  # fmt: skip
    await _run(otel_telemetry, agent)

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat agent", "execute_tool lookup"]], ["step 1", ["chat agent"]],
    ]]]  # fmt: skip
    first, answer = sorted(otel_telemetry.by_name()["chat agent"], key=lambda c: c.start_time or 0)
    assert [(c.attributes or {}).get("gen_ai.output.type") for c in (first, answer)] == [
        "json", "json"
    ]  # fmt: skip
    [message] = json.loads(str((answer.attributes or {})["gen_ai.output.messages"]))
    assert message["parts"] == [{"type": "text", "content": said}]
    run = dict(otel_telemetry.span("invoke_agent bot").attributes or {})
    assert run["gen_ai.output.type"] == "json"
    [told] = json.loads(str(run["gen_ai.output.messages"]))
    assert told["parts"] == [{"type": "json", "content": {"city": "Paris", "sky": "sunny"}}]
    assert otel_telemetry.open_spans() == []


async def test_a_node_running_its_own_tools_tells_each_call_once(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The class beside it: a node that streams its request and runs the tool calls itself (a
    ``ToolNode`` inside it) hands LangGraph the results before its update ends the request, so
    each result was told before its call and the tool was two ``execute_tool`` spans; now one,
    after its chat span, with its answer."""
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    chat, tools = model([LOOKUP], "agent"), ToolNode([lookup()])

    async def node(state: Any) -> dict[str, Any]:
        asked = await chat.ainvoke(state["messages"])
        ran = await tools.ainvoke({"messages": [*state["messages"], asked]})
        return {"messages": [asked, *ran["messages"]]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", node)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    await _run(otel_telemetry, graph.compile())

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat agent", "execute_tool lookup"]],
    ]]]  # fmt: skip
    tool = dict(otel_telemetry.span("execute_tool lookup").attributes or {})
    assert tool["gen_ai.tool.call.id"] == "call-1"
    assert json.loads(str(tool["gen_ai.tool.call.result"])) == "sunny"
    assert otel_telemetry.open_spans() == []


async def test_a_rejected_call_of_the_human_in_the_loop_is_approval_rejected(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``HumanInTheLoopMiddleware`` pauses the run before the tool; resumed with a rejection, the
    call never runs and the model gets the rejection as an error result. The paused run ends
    interrupted; in the resumed one the call fails as ``approval_rejected`` (the name the
    Agents SDK and Google ADK rows give a refused approval), not a tool's ``tool_error``."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command
    from opentelemetry.trace import StatusCode

    from agent_contract.sources.langgraph_stream import langgraph_events

    ran: list[str] = []

    @tool
    async def guarded(city: str) -> str:
        """The weather in ``city``."""
        ran.append(city)
        return "sunny"

    asks = model([[("call-1", "guarded", '{"city": "Paris"}')], "Not allowed."], "agent")
    hitl = HumanInTheLoopMiddleware(interrupt_on={"guarded": True})
    agent = create_agent(asks, [guarded], middleware=[hitl], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    await run_script(otel_telemetry, langgraph_events(agent, QUESTION, config), agent_name="bot")
    rejected = Command(resume={"decisions": [{"type": "reject", "message": "not today"}]})
    await run_script(otel_telemetry, langgraph_events(agent, rejected, config), agent_name="bot")

    assert ran == []
    calls = [s for s in otel_telemetry.spans() if s.name == "execute_tool guarded"]
    paused, resumed = sorted(calls, key=lambda s: s.start_time or 0)
    assert (paused.attributes or {}).get("agent_otel.incomplete") is True
    assert paused.status.status_code is StatusCode.UNSET
    assert resumed.status.status_code is StatusCode.ERROR
    assert (resumed.attributes or {}).get("error.type") == "approval_rejected"
    assert otel_telemetry.open_spans() == []


async def test_a_retried_tool_raising_out_of_the_run_fails_each_attempt(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``ToolRetryMiddleware(on_failure="error")``: the tool raises, is run again, raises again,
    and the last exception fails the run. Each attempt is an ``execute_tool`` span failed with
    its class, as a tool raising out of the run without a retry is; the retry's span was left
    cut short, not failed (the run's failure was written on the first attempt's span after it
    had ended)."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolRetryMiddleware
    from langchain_core.tools import tool
    from opentelemetry.trace import StatusCode

    from agent_contract.sources.langgraph_stream import langgraph_events

    from ._frameworks import Overloaded

    @tool
    def flaky(city: str) -> str:
        """The weather in ``city``."""
        raise Overloaded("the weather service is overloaded")

    retry = ToolRetryMiddleware(max_retries=1, initial_delay=0, jitter=False, on_failure="error")
    agent = create_agent(model([[("call-1", "flaky", '{"city": "Paris"}')], "x"], "agent"),
                         [flaky], middleware=[retry])  # fmt: skip
    with pytest.raises(Overloaded):
        await run_script(otel_telemetry, langgraph_events(agent, QUESTION), agent_name="bot")

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat agent", "execute_tool flaky", "execute_tool flaky"]],
    ]]]  # fmt: skip
    for attempt in [s for s in otel_telemetry.spans() if s.name == "execute_tool flaky"]:
        assert attempt.status.status_code is StatusCode.ERROR
        assert (attempt.attributes or {}).get("error.type") == "Overloaded"
    run = otel_telemetry.span("invoke_agent bot")
    assert run.status.status_code is StatusCode.ERROR
    assert (run.attributes or {}).get("error.type") == "Overloaded"
    assert otel_telemetry.open_spans() == []


def _outputs(telemetry: InMemoryTelemetry) -> list[Any]:
    """Each chat span's output parts (content on), in start order."""
    chats = sorted((s for s in telemetry.spans() if s.name.startswith("chat")),
                   key=lambda s: s.start_time or 0)  # fmt: skip
    return [[part for message in json.loads(str((s.attributes or {})["gen_ai.output.messages"]))
             for part in message["parts"]] for s in chats]  # fmt: skip


@pytest.mark.parametrize("streams", [True, False], ids=["streamed", "whole"])
async def test_a_tool_strategy_answer_that_failed_validation_fails_its_step(
    otel_telemetry: InMemoryTelemetry, streams: bool
) -> None:
    """``ToolStrategy`` answers a call whose arguments fail the schema with an error result the
    node writes itself and asks the model again (``handle_errors``' default). The refused answer
    was a chat span with no output and nothing failed: the model's call of the schema's tool is
    now its chat span's output (a ``tool_call`` part, no tool span: no tool runs it), its step
    fails with the class LangChain raises when it does not retry
    (``StructuredOutputValidationError``), and the retried request is the next step."""
    from langchain.agents import create_agent
    from langchain.agents.structured_output import ToolStrategy
    from opentelemetry.trace import StatusCode

    bad = [("call-2", "Weather", '{"city": "Paris"}')]
    good = [("call-3", "Weather", '{"city": "Paris", "sky": "sunny"}')]
    agent = create_agent(model([bad, good], "agent", streams=streams), [lookup()],
                         response_format=ToolStrategy(Weather))  # fmt: skip
    await _run(otel_telemetry, agent)

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat agent"]], ["step 1", ["chat agent"]],
    ]]]  # fmt: skip
    assert _outputs(otel_telemetry) == [
        [{"type": "tool_call", "id": "call-2", "name": "Weather", "arguments": {"city": "Paris"}}],
        [{"type": "tool_call", "id": "call-3", "name": "Weather",
          "arguments": {"city": "Paris", "sky": "sunny"}}],
    ]  # fmt: skip
    first = otel_telemetry.span("step 0")
    assert first.status.status_code is StatusCode.ERROR
    assert (first.attributes or {})["error.type"] == "StructuredOutputValidationError"
    assert otel_telemetry.span("step 1").status.status_code is StatusCode.UNSET
    run = otel_telemetry.span("invoke_agent bot")
    assert run.status.status_code is StatusCode.UNSET
    [said] = json.loads(str((run.attributes or {})["gen_ai.output.messages"]))
    assert said["parts"] == [{"type": "json", "content": {"city": "Paris", "sky": "sunny"}}]
    assert tokens(otel_telemetry) == 20
    assert otel_telemetry.open_spans() == []


async def test_two_tool_strategy_answers_at_once_fail_their_step_as_multiple(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Two calls of the schema's tools in one answer: LangChain answers each with an error and
    asks again; the step fails ``MultipleStructuredOutputsError``, the class it raises when it
    does not retry, and both calls are the refused chat span's output."""
    from langchain.agents import create_agent
    from langchain.agents.structured_output import ToolStrategy

    two = [("call-2", "Weather", '{"city": "Paris", "sky": "sunny"}'),
           ("call-3", "Weather", '{"city": "Rome", "sky": "grey"}')]  # fmt: skip
    good = [("call-4", "Weather", '{"city": "Paris", "sky": "sunny"}')]
    agent = create_agent(model([two, good], "agent"), [lookup()],
                         response_format=ToolStrategy(Weather))  # fmt: skip
    await _run(otel_telemetry, agent)

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat agent"]], ["step 1", ["chat agent"]],
    ]]]  # fmt: skip
    refused, _ = _outputs(otel_telemetry)
    assert [part["id"] for part in refused] == ["call-2", "call-3"]
    first = otel_telemetry.span("step 0")
    assert (first.attributes or {})["error.type"] == "MultipleStructuredOutputsError"
    assert otel_telemetry.open_spans() == []


def _arguments(telemetry: InMemoryTelemetry, name: str) -> list[Any]:
    """Each ``execute_tool name`` span's arguments (content on), in start order."""
    calls = sorted((s for s in telemetry.spans() if s.name == f"execute_tool {name}"),
                   key=lambda s: s.start_time or 0)  # fmt: skip
    return [json.loads(str((s.attributes or {})["gen_ai.tool.call.arguments"])) for s in calls]


async def test_a_call_the_human_in_the_loop_edited_runs_with_the_edited_arguments(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Resumed with an ``edit`` decision, the tool runs with the reviewer's arguments (the
    middleware's ``wrap_tool_call`` overrides the request; the model's message keeps its own).
    The conventions' ``gen_ai.tool.call.arguments`` is what the tool was called with: the
    resumed call's span had the model's; the chat span's output still says what it asked."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    from agent_contract.sources.langgraph_stream import langgraph_events

    ran: list[str] = []

    @tool
    async def guarded(city: str) -> str:
        """The weather in ``city``."""
        ran.append(city)
        return "sunny"

    asks = model([[("call-1", "guarded", '{"city": "Paris"}')], "Sunny in Rome."], "agent")
    hitl = HumanInTheLoopMiddleware(interrupt_on={"guarded": True})
    agent = create_agent(asks, [guarded], middleware=[hitl], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    await run_script(otel_telemetry, langgraph_events(agent, QUESTION, config), agent_name="bot",
                     capture_content=True)  # fmt: skip
    edited = {"type": "edit", "edited_action": {"name": "guarded", "args": {"city": "Rome"}}}
    resume = Command(resume={"decisions": [edited]})
    await run_script(otel_telemetry, langgraph_events(agent, resume, config), agent_name="bot",
                     capture_content=True)  # fmt: skip

    assert ran == ["Rome"]
    assert _arguments(otel_telemetry, "guarded") == [{"city": "Paris"}, {"city": "Rome"}]
    asked, _ = _outputs(otel_telemetry)
    assert asked == [{"type": "tool_call", "id": "call-1", "name": "guarded",
                      "arguments": {"city": "Paris"}}]  # fmt: skip
    assert otel_telemetry.open_spans() == []


async def test_a_tool_call_a_middleware_overrides_runs_with_its_arguments(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The class in one run: a ``wrap_tool_call`` middleware handing the tool an overridden
    request (``request.override(tool_call=...)``, the documented way to change a call's
    arguments) runs the tool with those; its span records them, not the model's."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import wrap_tool_call

    @wrap_tool_call
    async def to_rome(request: Any, handler: Any) -> Any:
        edited = {**request.tool_call, "args": {"city": "Rome"}}
        return await handler(request.override(tool_call=edited))

    agent = create_agent(model([LOOKUP, "It is sunny."], "agent"), [lookup()],
                         middleware=[to_rome])  # fmt: skip
    await _run(otel_telemetry, agent)

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat agent", "execute_tool lookup"]], ["step 1", ["chat agent"]],
    ]]]  # fmt: skip
    assert _arguments(otel_telemetry, "lookup") == [{"city": "Rome"}]
    assert otel_telemetry.open_spans() == []


async def test_a_tool_call_a_middleware_answers_itself_is_one_call_with_that_answer(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A ``wrap_tool_call`` middleware returning its own ``ToolMessage`` (a cache) runs no tool
    body: still one ``execute_tool`` span, ended with the answer the model gets."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import wrap_tool_call
    from langchain_core.messages import ToolMessage

    @wrap_tool_call
    async def cached(request: Any, handler: Any) -> Any:
        call = request.tool_call
        return ToolMessage(content="cached: sunny", tool_call_id=call["id"], name=call["name"])

    agent = create_agent(model([LOOKUP, "It is sunny."], "agent"), [lookup()],
                         middleware=[cached])  # fmt: skip
    await _run(otel_telemetry, agent)

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat agent", "execute_tool lookup"]], ["step 1", ["chat agent"]],
    ]]]  # fmt: skip
    tool = dict(otel_telemetry.span("execute_tool lookup").attributes or {})
    assert json.loads(str(tool["gen_ai.tool.call.result"])) == "cached: sunny"
    assert otel_telemetry.open_spans() == []


async def test_a_model_a_middleware_swaps_in_names_its_chat_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Dynamic model selection (``wrap_model_call`` handing ``request.override(model=...)``):
    each chat span names the model actually called; the run keeps its first call's model."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import wrap_model_call

    big = model(["It is sunny."], "big")

    @wrap_model_call
    async def choose(request: Any, handler: Any) -> Any:
        after_tools = any(type(m).__name__ == "ToolMessage" for m in request.messages)
        return await handler(request.override(model=big) if after_tools else request)

    agent = create_agent(model([LOOKUP], "small"), [lookup()], middleware=[choose])
    await _run(otel_telemetry, agent)

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat small", "execute_tool lookup"]], ["step 1", ["chat big"]],
    ]]]  # fmt: skip
    assert [(name, response) for name, response, _ in _chat_models(otel_telemetry)] == [
        ("chat small", "small"), ("chat big", "big"),
    ]  # fmt: skip
    run = dict(otel_telemetry.span("invoke_agent bot").attributes or {})
    assert run["gen_ai.request.model"] == "small"
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("streams", [True, False], ids=["streamed", "whole"])
async def test_a_tool_strategy_answer_refused_without_a_retry_fails_the_run_and_no_tool(
    otel_telemetry: InMemoryTelemetry, streams: bool
) -> None:
    """``ToolStrategy(handle_errors=False)``: the refused answer raises out of the run
    (``StructuredOutputValidationError``). The schema tool's call still ran no tool: no
    ``execute_tool`` span (one was told, failed with the run's error), the call a part of its
    chat span's output, which answered; the run fails with the class."""
    from langchain.agents import create_agent
    from langchain.agents.structured_output import StructuredOutputValidationError, ToolStrategy
    from opentelemetry.trace import StatusCode

    bad = [("call-2", "Weather", '{"city": "Paris"}')]
    agent = create_agent(model([bad], "agent", streams=streams), [lookup()],
                         response_format=ToolStrategy(Weather, handle_errors=False))  # fmt: skip
    with pytest.raises(StructuredOutputValidationError):
        await _run(otel_telemetry, agent)

    assert otel_telemetry.outline() == [["invoke_agent bot", [["step 0", ["chat agent"]]]]]
    assert _outputs(otel_telemetry) == [
        [{"type": "tool_call", "id": "call-2", "name": "Weather", "arguments": {"city": "Paris"}}],
    ]
    assert otel_telemetry.span("chat agent").status.status_code is StatusCode.UNSET
    run = otel_telemetry.span("invoke_agent bot")
    assert run.status.status_code is StatusCode.ERROR
    assert (run.attributes or {})["error.type"] == "StructuredOutputValidationError"
    assert otel_telemetry.open_spans() == []


async def test_an_emulated_tools_request_is_a_chat_span_under_its_tool_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``LLMToolEmulator`` answers each tool call with a model in place of the tool (its
    ``wrap_tool_call``, no body running): that request does the tool's work, so its chat span
    is the child of the call's ``execute_tool`` span, not a sibling in the step. Two calls at
    once: each request sits under the call whose arguments it was sent, and the tool span
    ends with that request's answer; the emulator's tokens are counted, the run is the
    agent's."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import LLMToolEmulator

    both = [("call-1", "lookup", '{"city": "Paris"}'), ("call-2", "lookup", '{"city": "Rome"}')]
    emulator = LLMToolEmulator(model=model(["cloudy", "rainy"], "emulator"))
    agent = create_agent(model([both, "It is sunny."], "agent"), [lookup()],
                         middleware=[emulator])  # fmt: skip
    await _run(otel_telemetry, agent)

    tool = ["execute_tool lookup", ["chat emulator"]]
    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat agent", tool, tool]], ["step 1", ["chat agent"]],
    ]]]  # fmt: skip
    spans = otel_telemetry.spans()
    for span in otel_telemetry.by_name()["execute_tool lookup"]:
        tool_attributes = dict(span.attributes or {})
        (chat,) = [s for s in spans if s.parent is not None and span.context is not None
                   and s.parent.span_id == span.context.span_id]  # fmt: skip
        chat_attributes = dict(chat.attributes or {})
        city = json.loads(str(tool_attributes["gen_ai.tool.call.arguments"]))["city"]
        assert f"'city': '{city}'" in str(chat_attributes["gen_ai.input.messages"])
        (answer,) = json.loads(str(chat_attributes["gen_ai.output.messages"]))
        assert (
            json.loads(str(tool_attributes["gen_ai.tool.call.result"]))
            == answer["parts"][0]["content"]
        )
    assert tokens(otel_telemetry) == 40
    assert otel_telemetry.open_spans() == []
    _named_by_the_agent(otel_telemetry, "weather in Paris?")


async def test_a_streamed_request_a_tool_middleware_makes_is_under_its_tool_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The class beyond the emulator: a ``wrap_tool_call`` middleware asking a model about the
    tool's result (streamed, not ``nostream``) makes that request for the call: a chat span
    under its ``execute_tool`` span, a side call that does not name the run. The request ends
    before the call's result is returned, so its span ends within the tool's (it outlived it:
    the result was told before the request's end)."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import wrap_tool_call
    from langchain_core.messages import HumanMessage

    judge = model(["fine"], "judge")

    @wrap_tool_call
    async def judged(request: Any, handler: Any) -> Any:
        result = await handler(request)
        await judge.ainvoke([HumanMessage(f"Is {result.content} plausible?")])
        return result

    agent = create_agent(model([LOOKUP, "It is sunny."], "agent"), [lookup()],
                         middleware=[judged])  # fmt: skip
    await _run(otel_telemetry, agent)

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat agent", ["execute_tool lookup", ["chat judge"]]]],
        ["step 1", ["chat agent"]],
    ]]]  # fmt: skip
    tool, chat = otel_telemetry.span("execute_tool lookup"), otel_telemetry.span("chat judge")
    assert (chat.end_time or 0) <= (tool.end_time or 0)
    assert (chat.attributes or {})["gen_ai.usage.output_tokens"] > 0  # its answer's, not cut
    assert tokens(otel_telemetry) == 30
    assert otel_telemetry.open_spans() == []
    _named_by_the_agent(otel_telemetry, "weather in Paris?")


def _answer_of_the_run(telemetry: InMemoryTelemetry) -> Any:
    run = dict(telemetry.span("invoke_agent bot").attributes or {})
    (answer,) = json.loads(str(run["gen_ai.output.messages"]))
    return answer["parts"]


async def test_the_prebuilt_agents_hooks_own_requests_are_side_calls(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``create_react_agent``'s ``pre_model_hook`` summarising the history with a model of its
    own (before each agent call) and ``post_model_hook`` asking a checker (after it): each is
    a chat span in its step, but neither is the agent's: the run's model and input are the
    agent's first request's (the summary it was sent included), its answer the agent's."""
    from langgraph.prebuilt import create_react_agent

    summarizer, checker = model(["Earlier: nothing."], "summarizer"), model(["fine"], "checker")

    async def summarise(state: Any) -> dict[str, Any]:
        summary = await summarizer.ainvoke(state["messages"])
        return {"llm_input_messages": [summary, *state["messages"][-1:]]}

    async def check(state: Any) -> dict[str, Any]:
        await checker.ainvoke(state["messages"][-1:])
        return {}

    with pytest.warns(DeprecationWarning, match="create_react_agent"):  # (still documented)
        agent = create_react_agent(model([LOOKUP, "It is sunny."], "agent"), [lookup()],
                                   pre_model_hook=summarise, post_model_hook=check)  # fmt: skip
    await _run(otel_telemetry, agent)

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat summarizer", "chat agent", "execute_tool lookup", "chat checker"]],
        ["step 1", ["chat summarizer", "chat agent", "chat checker"]],
    ]]]  # fmt: skip
    _named_by_the_agent(otel_telemetry, "weather in Paris?")
    assert _answer_of_the_run(otel_telemetry) == [{"type": "text", "content": "It is sunny."}]
    assert tokens(otel_telemetry) == 60


async def test_a_middleware_hooks_own_request_is_a_side_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The class in ``create_agent``: a ``before_model`` middleware's own request (its node is
    ``<middleware>.before_model``) is a side call; the run is named by the agent's."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import before_model

    noter = model(["noted"], "noter")

    @before_model
    async def note(state: Any, runtime: Any) -> None:
        await noter.ainvoke(state["messages"][-1:])

    agent = create_agent(model(["It is sunny."], "agent"), [lookup()], middleware=[note])
    await _run(otel_telemetry, agent)

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat noter", "chat agent"]],
    ]]]  # fmt: skip
    _named_by_the_agent(otel_telemetry, "weather in Paris?")
    assert _answer_of_the_run(otel_telemetry) == [{"type": "text", "content": "It is sunny."}]
