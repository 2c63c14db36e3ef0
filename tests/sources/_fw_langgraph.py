"""LangGraph's conformance builder: a prebuilt ReAct agent on a chat model that calls the real
OpenAI SDK over its mock transport (the script's Chat Completions bodies, ``_script_chat``).

The model is this test's own small LangChain chat model (no LangChain OpenAI package in the
environment), streaming the SDK's chunks as ``AIMessageChunk``\\ s with tool-call chunks and
usage, so provider instrumentations of the OpenAI SDK see its requests. ``forecast`` fails;
``ToolNode(handle_tool_errors=True)`` hands its error back to the model as an error message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from opentelemetry.trace import Tracer

from agent_contract.protocol import AgentEvent, TextDelta
from agent_contract.sources.langgraph_stream import langgraph_events
from agent_otel.testing import InMemoryTelemetry

from . import _parallel as p
from . import _script as s
from . import _script_chat as chat
from ._http import openai_client
from ._sdk_row import chat_bodies


def chat_model(client: Any) -> Any:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessageChunk
    from langchain_core.outputs import ChatGenerationChunk, ChatResult

    class SdkChat(BaseChatModel):
        """A LangChain chat model streaming ``client.chat.completions`` (the OpenAI SDK)."""

        client: Any
        model_name: str = "gpt-4o-mini"

        @property
        def _llm_type(self) -> str:
            return "openai"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kw: Any) -> ChatResult:  # fmt: skip
            raise NotImplementedError  # the graph streams

        async def _astream(self, messages: Any, stop: Any = None, run_manager: Any = None,
                           **kw: Any) -> AsyncIterator[ChatGenerationChunk]:  # fmt: skip
            stream = await self.client.chat.completions.create(
                model=self.model_name, messages=[{"role": "user", "content": s.QUESTION}],
                stream=True, stream_options={"include_usage": True},
            )  # fmt: skip
            async for chunk in stream:
                message = _message(AIMessageChunk, chunk)
                generation = ChatGenerationChunk(message=message)
                if run_manager is not None:
                    await run_manager.on_llm_new_token(str(message.content), chunk=generation)
                yield generation

    return SdkChat(client=client)


def _message(kind: type, chunk: Any) -> Any:
    """One Chat Completions chunk as LangChain's ``AIMessageChunk``."""
    fields: dict[str, Any] = {"content": "", "id": chunk.id}
    if chunk.usage is not None:
        usage = chunk.usage
        fields["usage_metadata"] = {
            "input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
            "input_token_details": {"cache_read": usage.prompt_tokens_details.cached_tokens},
            "output_token_details": {
                "reasoning": usage.completion_tokens_details.reasoning_tokens},
        }  # fmt: skip
        fields["response_metadata"] = {"model_name": chunk.model}
        fields["chunk_position"] = "last"
    for choice in chunk.choices:
        delta = choice.delta
        fields["content"] = delta.content or ""
        reasoning = getattr(delta, "reasoning_content", None)
        if reasoning:
            fields["additional_kwargs"] = {"reasoning_content": reasoning}
        fields["tool_call_chunks"] = [
            {"index": c.index, "id": c.id, "name": c.function.name if c.function else None,
             "args": c.function.arguments if c.function else None}
            for c in delta.tool_calls or ()
        ]  # fmt: skip
        if choice.finish_reason:
            fields["response_metadata"] = {"finish_reason": choice.finish_reason}
    return kind(**fields)


def graph(run: s.Run) -> Any:
    from langgraph.prebuilt import ToolNode, create_react_agent

    tools = ToolNode([s.weather_tool(hang=run.hang), s.forecast_tool()], handle_tool_errors=True)
    model = chat_model(openai_client(*chat_bodies(run)))
    return create_react_agent(model, tools, name="weatherbot")


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    question = {"messages": [("user", s.QUESTION)]}
    return langgraph_events(graph(run), question, sink=run.kept.append)


def parallel(tracer: Tracer) -> AsyncIterator[AgentEvent]:
    """The tool-scope script (``_parallel``) on LangChain's fake chat model; ``mul`` sync, run
    on LangGraph's executor thread."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessageChunk
    from langchain_core.outputs import ChatGenerationChunk
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

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
                    for i, (cid, name, arg) in enumerate(p.CALLS)
                ]
                yield ChatGenerationChunk(
                    message=AIMessageChunk(content="", tool_call_chunks=chunks, id="r1")  # type: ignore[arg-type]
                )
            else:
                yield ChatGenerationChunk(message=AIMessageChunk(content="done", id="r2"))

    tools = [tool(body) for body in p.tools(tracer)]
    graph = create_react_agent(Scripted(messages=iter(())), tools, name=p.AGENT)
    return langgraph_events(graph, {"messages": [("user", "go")]})


def react(name: str, tool_name: str, args: str, tools: list[Any]) -> Any:
    """A prebuilt ReAct agent named ``name`` on LangChain's fake chat model (with ``s.TURNS``
    usage): it asks for ``tool_name`` with ``args`` (its id ``_deep.CALL_IDS[name]``), then
    answers ``_deep.ANSWERS[name]``."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessageChunk
    from langchain_core.outputs import ChatGenerationChunk
    from langgraph.prebuilt import create_react_agent

    from . import _deep as d

    class Scripted(GenericFakeChatModel):
        turns: int = 0

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        async def _astream(self, messages: Any, *a: Any, **kw: Any) -> Any:
            turn = min(self.turns, 1)
            self.turns += 1
            used = s.TURNS[turn]
            usage = {"input_tokens": used.input, "output_tokens": used.output,
                     "total_tokens": used.total}  # fmt: skip
            ask = [{"index": 0, "id": d.CALL_IDS[name], "name": tool_name, "args": args}]
            message = AIMessageChunk(
                content=d.ANSWERS[name] if turn else "", id=f"{name}-{turn}",
                tool_call_chunks=[] if turn else ask, usage_metadata=usage,  # type: ignore[arg-type]
                chunk_position="last",
            )  # fmt: skip
            yield ChatGenerationChunk(message=message)

    return create_react_agent(Scripted(messages=iter(())), tools, name=name)


async def three_levels(telemetry: Any, tracer: Tracer) -> tuple[str, str]:
    """The three-level script (``_deep``): a prebuilt ReAct agent per level, each tool
    streaming the agent below through the adapter and its own ``otel_wrapper`` (LangGraph has
    no agent tool of its own), on LangChain's fake chat model with usage."""
    from langchain_core.tools import tool

    from agent_otel.testing import run_script

    from . import _deep as d

    level = react

    async def delegate(graph: Any, q: str) -> str:
        events = langgraph_events(graph, {"messages": [("user", q)]})
        await run_script(telemetry, events, agent_name=graph.name)
        return "on file"

    clerk = level("clerk", "lookup", '{"term": "Paris"}', [tool(d.lookup(tracer))])

    @tool
    async def ask_clerk(q: str) -> str:
        """Ask the clerk."""
        return await delegate(clerk, q)

    expert = level("expert", "ask_clerk", '{"q": "Paris?"}', [ask_clerk])

    @tool
    async def ask_expert(q: str) -> str:
        """Ask the expert."""
        return await delegate(expert, q)

    lead = level("lead", "ask_expert", '{"q": "Paris?"}', [ask_expert])
    await run_script(telemetry, langgraph_events(lead, {"messages": [("user", d.QUESTION)]}),
                     agent_name="lead")  # fmt: skip
    return "ask_expert", "ask_clerk"


async def subagent(telemetry: InMemoryTelemetry) -> None:
    """A lead whose tool streams the expert's graph through the adapter and its own
    ``otel_wrapper`` (LangGraph has no agent tool of its own), both on the SDK's model."""
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    from agent_otel.testing import run_script

    def model(*bodies: bytes) -> Any:
        return chat_model(openai_client(*bodies))

    expert = create_react_agent(model(chat.answer("sunny")), [], name="expert")

    @tool
    async def ask_expert(q: str) -> str:
        """Ask the expert."""
        inner = langgraph_events(expert, {"messages": [("user", q)]})
        events = await run_script(telemetry, inner, agent_name="expert")
        return "".join(e.text for e in events if isinstance(e, TextDelta))

    ask = chat.call("ask_expert", {"q": "Paris?"}, "call_e")
    lead = create_react_agent(model(ask, chat.answer("It is sunny.")), [ask_expert], name="lead")
    await run_script(telemetry, langgraph_events(lead, {"messages": [("user", s.QUESTION)]}),
                     agent_name="lead")  # fmt: skip
