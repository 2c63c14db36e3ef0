"""Each framework adapter runs every tool body under its own ``execute_tool`` span.

Every tool here opens a span of another library's tracer (as an MCP client or an HTTP client
would) while it runs; the model asks for two tools at once, one of them twice, so a body
nesting under the step or under the wrong call fails. The frameworks run the tools their own
way (tasks, threads, the run's background task), through the adapter and nothing else: no
user code but the tools.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry

from ._trace import wrapper

CALLS = [("c1", "add", 1), ("c2", "add", 2), ("c3", "mul", 3)]
"""(call id, tool, argument): the model's one response; ``add`` twice, with other arguments."""


def _check_nesting(telemetry: InMemoryTelemetry, ids: dict[int, str] | None = None) -> None:
    """One trace; ``client <x>`` under the tool span of the call made with ``x``, each tool
    span under a step. ``ids``: argument to call id, when the framework makes its own ids."""
    ids = ids if ids is not None else {arg: cid for cid, _, arg in CALLS}
    names = {arg: name for _, name, arg in CALLS}
    spans = telemetry.spans()
    assert len({s.context.trace_id for s in spans}) == 1
    by_id = {s.context.span_id: s for s in spans}
    clients = {int(s.name.split()[1]): s for s in spans if s.name.startswith("client ")}
    assert sorted(clients) == sorted(ids), [s.name for s in spans]
    for arg, client in clients.items():
        assert client.parent is not None
        tool = by_id[client.parent.span_id]
        assert tool.name == f"execute_tool {names[arg]}", (client.name, tool.name)
        assert dict(tool.attributes or {})["gen_ai.tool.call.id"] == ids[arg], client.name
        assert tool.parent is not None and by_id[tool.parent.span_id].name.startswith("step ")
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert len(tools) == len(ids)  # one span per call, no early span left over


async def test_pydantic_ai_parallel_tools_async_and_sync_nest_under_their_own_spans(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")

    async def model(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {
                i: DeltaToolCall(name=name, json_args=f'{{"x": {arg}}}', tool_call_id=cid)
                for i, (cid, name, arg) in enumerate(CALLS)
            }
        else:
            yield "done"

    agent = Agent(FunctionModel(stream_function=model, model_name="m"), name="calc")

    @agent.tool_plain
    async def add(x: int) -> int:
        with tracer.start_as_current_span(f"client {x}"):
            return x + 1

    @agent.tool_plain
    def mul(x: int) -> int:  # sync: pydantic-ai runs it on a thread
        with tracer.start_as_current_span(f"client {x}"):
            return x * 2

    async for _ in wrapper(otel_telemetry, "calc")(pydantic_ai_events(agent, "go")):
        pass

    _check_nesting(otel_telemetry)


def agents_scripted(*steps: Any) -> Any:
    """The Agents SDK's own scripted test model (its tracing off: no vendor export)."""
    from agents import set_tracing_disabled
    from agents.testing import ScriptedModel

    set_tracing_disabled(True)
    return ScriptedModel(list(steps))


async def test_agents_sdk_parallel_tools_async_and_sync_nest_under_their_own_spans(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("agents")
    from agents import Agent, function_tool
    from agents.testing import assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")

    @function_tool
    async def add(x: int) -> int:
        with tracer.start_as_current_span(f"client {x}"):
            return x + 1

    @function_tool
    def mul(x: int) -> int:  # sync: the SDK runs it on a thread
        with tracer.start_as_current_span(f"client {x}"):
            return x * 2

    model = agents_scripted(
        [function_call(name, {"x": arg}, call_id=cid) for cid, name, arg in CALLS],
        [assistant_message("done")],
    )
    agent = Agent(name="calc", tools=[add, mul], model=model)

    async for _ in wrapper(otel_telemetry, "calc")(openai_agents_events(agent, "go")):
        pass

    _check_nesting(otel_telemetry)


async def test_langgraph_parallel_tools_async_and_sync_nest_under_their_own_spans(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("langgraph")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessageChunk
    from langchain_core.outputs import ChatGenerationChunk
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    from agent_contract.sources.langgraph_stream import langgraph_events

    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")

    class Scripted(GenericFakeChatModel):
        """LangChain's fake chat model asking for ``CALLS``, then answering."""

        turns: int = 0

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        async def _astream(self, messages: Any, *args: Any, **kw: Any) -> Any:
            self.turns += 1
            if self.turns == 1:
                chunks = [
                    {"index": i, "id": cid, "name": name, "args": f'{{"x": {arg}}}'}
                    for i, (cid, name, arg) in enumerate(CALLS)
                ]
                yield ChatGenerationChunk(
                    message=AIMessageChunk(content="", tool_call_chunks=chunks, id="r1")  # type: ignore[arg-type]
                )
            else:
                yield ChatGenerationChunk(message=AIMessageChunk(content="done", id="r2"))

    @tool
    async def add(x: int) -> int:
        """Add one."""
        with tracer.start_as_current_span(f"client {x}"):
            return x + 1

    @tool
    def mul(x: int) -> int:  # sync: LangGraph runs it on its executor's thread
        """Double."""
        with tracer.start_as_current_span(f"client {x}"):
            return x * 2

    graph = create_react_agent(Scripted(messages=iter(())), [add, mul])
    stream = langgraph_events(graph, {"messages": [("user", "go")]})
    async for _ in wrapper(otel_telemetry, "calc")(stream):
        pass

    _check_nesting(otel_telemetry)


async def test_agno_parallel_tools_async_and_sync_nest_under_their_own_spans(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("agno")
    from agent_contract.sources.agno_stream import agno_events

    from . import _fw_agno
    from . import _script_chat as chat

    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")

    async def add(x: int) -> int:
        """Add one."""
        with tracer.start_as_current_span(f"client {x}"):
            return x + 1

    def mul(x: int) -> int:
        """Double."""
        with tracer.start_as_current_span(f"client {x}"):
            return x * 2

    first = chat.calls([(cid, name, {"x": arg}) for cid, name, arg in CALLS])
    agent = _fw_agno.agent(first, chat.answer("done"), tools=[add, mul], name="calc")
    async for _ in wrapper(otel_telemetry, "calc")(agno_events(agent, "go")):
        pass

    _check_nesting(otel_telemetry)


async def test_autogen_parallel_async_tools_nest_under_their_own_spans(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("autogen_agentchat")
    from agent_contract.sources.autogen_stream import autogen_events

    from . import _fw_autogen
    from . import _script as s

    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")

    async def add(x: int) -> int:
        """Add one."""
        with tracer.start_as_current_span(f"client {x}"):
            return x + 1

    # async: AutoGen runs a sync tool on the loop's executor, whose threads get no context
    # (docs/adapters.md says so), so nothing a sync tool opens can nest under its span
    async def mul(x: int) -> int:
        """Double."""
        with tracer.start_as_current_span(f"client {x}"):
            return x * 2

    first = _fw_autogen._calls(*(s.Call(cid, name, {"x": arg}) for cid, name, arg in CALLS))
    agent = _fw_autogen.agent([first, "done"], [add, mul], name="calc")
    async for _ in wrapper(otel_telemetry, "calc")(autogen_events(agent, "go")):
        pass

    _check_nesting(otel_telemetry)


async def test_smolagents_parallel_tools_on_its_threads_nest_under_their_own_spans(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("smolagents")
    import json

    from smolagents import OpenAIModel, ToolCallingAgent, tool

    from agent_contract.sources.smolagents_stream import smolagents_events

    from . import _fw_smolagents as fw

    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")

    @tool
    def add(x: int) -> int:
        """Add one.

        Args:
            x: a number.
        """
        with tracer.start_as_current_span(f"client {x}"):
            return x + 1

    @tool
    def mul(x: int) -> int:
        """Double.

        Args:
            x: a number.
        """
        with tracer.start_as_current_span(f"client {x}"):
            return x * 2

    turns: list[int] = []

    def respond(messages: list[dict[str, Any]]) -> bytes:
        turns.append(1)
        if len(turns) == 1:  # smolagents runs parallel calls on a thread pool
            return fw.completion(0, None, [(c, n, json.dumps({"x": a})) for c, n, a in CALLS])
        return fw.completion(1, None, fw.answer("done"))

    model = OpenAIModel(fw.MODEL, api_key="offline", api_base="http://mock.invalid/v1",
                        client_kwargs=fw.client(respond))  # fmt: skip
    agent = ToolCallingAgent(tools=[add, mul], model=model, verbosity_level=0)
    async for _ in wrapper(otel_telemetry, "calc")(smolagents_events(agent, "go")):
        pass

    _check_nesting(otel_telemetry)


async def test_llama_index_parallel_tools_async_and_sync_nest_under_their_own_spans(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import (
        ChatMessage,
        ChatResponse,
        LLMMetadata,
        ToolCallBlock,
    )
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    from agent_contract.sources.llama_index_stream import llama_index_events

    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")

    class Scripted(MockFunctionCallingLLM):
        """LlamaIndex's mock function-calling LLM asking for ``CALLS``, then answering."""

        turns: int = 0

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(is_function_calling_model=True, model_name="m")

        async def astream_chat(self, messages: Any, **kwargs: Any) -> Any:
            self.turns += 1
            first = self.turns == 1

            async def stream() -> AsyncIterator[Any]:
                message = ChatMessage(role="assistant", content="" if first else "done")
                if first:
                    message.blocks.extend(
                        ToolCallBlock(tool_call_id=cid, tool_name=name, tool_kwargs={"x": arg})
                        for cid, name, arg in CALLS
                    )
                yield ChatResponse(message=message, delta="" if first else "done")

            return stream()

    async def add(x: int) -> int:
        """Add one."""
        with tracer.start_as_current_span(f"client {x}"):
            return x + 1

    def mul(x: int) -> int:
        """Double."""
        with tracer.start_as_current_span(f"client {x}"):
            return x * 2

    agent = FunctionAgent(name="calc", tools=[add, mul], llm=Scripted(), streaming=True)
    async for _ in wrapper(otel_telemetry, "calc")(llama_index_events(agent, "go")):
        pass

    _check_nesting(otel_telemetry)


async def test_google_adk_parallel_tools_async_and_sync_nest_under_their_own_spans(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("google.adk")
    from google.adk.agents import LlmAgent
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from . import _fw_google_adk as fw

    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")

    async def add(x: int) -> int:
        """Add one."""
        with tracer.start_as_current_span(f"client {x}"):
            return x + 1

    def mul(x: int) -> int:
        """Double."""
        with tracer.start_as_current_span(f"client {x}"):
            return x * 2

    calls = [
        types.Part(function_call=types.FunctionCall(id=cid, name=name, args={"x": arg}))
        for cid, name, arg in CALLS
    ]
    model = fw._model([calls, [types.Part(text="done")]])
    agent = LlmAgent(name="calc", model=model, tools=[add, mul])
    async for _ in wrapper(otel_telemetry, "calc")(google_adk_events(agent, "go")):
        pass

    _check_nesting(otel_telemetry)


async def test_strands_parallel_tools_async_and_sync_nest_under_their_own_spans(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("strands")
    from agent_contract.sources.strands_stream import strands_events

    from . import _fw_strands as fw
    from . import _script as s

    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")

    async def add(x: int) -> int:
        """Add one."""
        with tracer.start_as_current_span(f"client {x}"):
            return x + 1

    def mul(x: int) -> int:
        """Double."""
        with tracer.start_as_current_span(f"client {x}"):
            return x * 2

    first = [{"messageStart": {"role": "assistant"}},
             *fw._uses(*(s.Call(cid, name, {"x": arg}) for cid, name, arg in CALLS)),
             {"messageStop": {"stopReason": "tool_use"}}]  # fmt: skip
    second = [{"messageStart": {"role": "assistant"}}, *fw._text("done"),
              {"messageStop": {"stopReason": "end_turn"}}]  # fmt: skip
    agent = fw.agent(fw._model([first, second]), [add, mul], name="calc")
    async for _ in wrapper(otel_telemetry, "calc")(strands_events(agent, "go")):
        pass

    _check_nesting(otel_telemetry)


async def test_crewai_parallel_tools_on_its_threads_nest_under_their_own_spans(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("crewai")
    import json

    from crewai.tools import tool

    from agent_contract.sources.crewai_stream import crewai_events

    from . import _fw_crewai as fw

    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")

    @tool("add")
    def add(x: int) -> int:
        """Add one."""
        with tracer.start_as_current_span(f"client {x}"):
            return x + 1

    @tool("mul")
    def mul(x: int) -> int:
        """Double."""
        with tracer.start_as_current_span(f"client {x}"):
            return x * 2

    def respond(turn: int) -> bytes:
        if turn == 0:  # CrewAI runs a turn's native calls in parallel, on threads
            return fw.completion(0, None, [(c, n, json.dumps({"x": a})) for c, n, a in CALLS])
        return fw.completion(1, "done", [])

    agent = fw.agent(fw.llm(respond), [add, mul], role="calc")
    async for _ in wrapper(otel_telemetry, "calc")(crewai_events(agent, "go")):
        pass

    _check_nesting(otel_telemetry)
