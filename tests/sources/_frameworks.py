"""The scripted conversation for each framework, on the framework's own test models.

Turn 1: reasoning, "Checking both.", two parallel ``weather`` calls (Paris, Rome); turn 2:
"Sunny in both.". ``fail`` makes the model raise ``Overloaded`` after its first words.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from . import _recorded
from ._http import Answer, openai_client, sse


class Overloaded(RuntimeError):
    """The scripted model's error mid-stream."""


def weather_tool(*, hang: bool = False) -> Any:
    """The ``weather`` tool; with ``hang`` it never returns (to cancel a run mid-tool)."""

    async def weather(city: str) -> str:
        """Weather of a city."""
        if hang:
            await asyncio.Event().wait()
        return f"sunny in {city}"

    return weather


# --- pydantic-ai: FunctionModel with a stream function -------------------------------------


def pydantic_agent(*, fail: bool = False, hang: bool = False, capabilities: Any = ()) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.function import (
        AgentInfo,
        DeltaThinkingPart,
        DeltaToolCall,
        FunctionModel,
    )

    async def stream(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {0: DeltaThinkingPart(content="Two cities.")}
            yield {
                1: DeltaToolCall(
                    name="weather", json_args=_recorded.PARIS[:9], tool_call_id="call_p"
                )
            }
            if fail:
                raise Overloaded("overloaded")
            yield {1: DeltaToolCall(json_args=_recorded.PARIS[9:])}
            yield {
                2: DeltaToolCall(name="weather", json_args=_recorded.ROME, tool_call_id="call_r")
            }
        else:
            yield "Sunny "
            yield "in both."

    model = FunctionModel(stream_function=stream, model_name="scripted-model")
    agent = Agent(model, name="weatherbot", model_settings={"temperature": 0.2},
                  capabilities=list(capabilities))  # fmt: skip
    agent.tool_plain(weather_tool(hang=hang))
    return agent


# --- OpenAI Agents SDK: the real OpenAIResponsesModel over a mock transport -----------------


def _handoff_body() -> bytes:
    events = json.dumps(_recorded.responses(tools=True))
    events = events.replace('"name": "weather"', '"name": "transfer_to_weatherbot"')
    events = events.replace(json.dumps(_recorded.PARIS), json.dumps("{}"))
    events = events.replace('"call_p"', '"call_h"').replace('"resp_1"', '"resp_0"')
    parsed = json.loads(events)
    drop = {"fc_2"}  # one handoff call, not two
    kept = [
        e
        for e in parsed
        if e.get("item_id") not in drop and (e.get("item") or {}).get("id") not in drop
    ]
    for event in kept:
        if event["type"] == "response.completed":
            event["response"]["output"] = [
                o for o in event["response"]["output"] if o.get("id") not in drop
            ]
        if event.get("item_id") == "fc_1" and "delta" in event:
            event["delta"] = "{}" if event["delta"].startswith("{") else ""
    return sse(kept, named=True)


def agents_agent(
    *bodies: Answer, handoff: bool = False, hang: bool = False, tracing: bool = False
) -> Any:
    from agents import Agent, OpenAIResponsesModel, function_tool, set_tracing_disabled

    set_tracing_disabled(not tracing)  # tests: no export to the vendor's trace endpoint
    if not bodies:
        bodies = (sse(_recorded.responses(tools=True), named=True),
                  sse(_recorded.responses(tools=False), named=True))  # fmt: skip
        if handoff:
            bodies = (_handoff_body(), *bodies)
    model = OpenAIResponsesModel(model="gpt-5-mini", openai_client=openai_client(*bodies))
    worker = Agent(
        name="weatherbot",
        instructions="Be brief.",
        tools=[function_tool(weather_tool(hang=hang))],
        model=model,
    )
    if not handoff:
        return worker
    return Agent(name="triage", instructions="Hand off.", handoffs=[worker], model=model)


# --- LangGraph: a fake chat model streaming scripted chunks ---------------------------------


def langgraph_graph(
    *,
    fail: bool = False,
    hang: bool = False,
    model_name: str = "",
    tools: Any = None,
    ids: str = "lc_run",
    refuse: bool = False,
    own_ids: bool = False,
) -> Any:
    """``model_name``: the name the model reports in its invocation params (none by default);
    ``tools``: what ``create_react_agent`` runs (default: ``weather``); ``ids``: the prefix of
    its messages' ids (two graphs sharing a state need their own); ``refuse``: turn 2 fails
    before its first chunk (a refused request); ``own_ids``: the model sets its chunks' ids
    itself (the provider's response id) and marks no last chunk."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
    from langgraph.prebuilt import create_react_agent

    usage = {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}
    usage |= {"input_token_details": {"cache_read": 64}, "output_token_details": {"reasoning": 12}}

    def turn(n: int) -> list[AIMessageChunk]:
        meta = {"model_name": "gpt-4o-mini-2024-07-18", "id": f"chatcmpl-{n}"}
        if n == 1:
            calls = [
                {"index": 0, "id": "call_p", "name": "weather", "args": _recorded.PARIS[:9]},
                {"index": 0, "id": None, "name": None, "args": _recorded.PARIS[9:]},
                {"index": 1, "id": "call_r", "name": "weather", "args": _recorded.ROME},
            ]
            return [
                AIMessageChunk(content="", additional_kwargs={"reasoning_content": "Two cities."}),
                AIMessageChunk(content="Checking "),
                AIMessageChunk(content="both."),
                *(AIMessageChunk(content="", tool_call_chunks=[c]) for c in calls),
                AIMessageChunk(content="", usage_metadata=usage,  # type: ignore[arg-type]
                               response_metadata=meta | {"finish_reason": "tool_calls"},
                               chunk_position="last"),
            ]  # fmt: skip
        return [
            AIMessageChunk(content="Sunny "),
            AIMessageChunk(content="in both."),
            AIMessageChunk(content="", usage_metadata=usage,  # type: ignore[arg-type]
                           response_metadata=meta | {"finish_reason": "stop"},
                           chunk_position="last"),
        ]  # fmt: skip

    class Scripted(GenericFakeChatModel):
        """LangChain's fake chat model, streaming scripted chunks (tool calls and usage too)."""

        turns: int = 0
        model_name: str = ""

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            raise NotImplementedError  # the graph streams

        async def _astream(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            self.turns += 1
            run_id = f"{ids}-{self.turns}"
            if refuse and self.turns == 2:
                raise Overloaded("rate limited")  # before any chunk, as a 429 would
            for i, chunk in enumerate(turn(self.turns)):
                if fail and i == 2:
                    raise Overloaded("overloaded")
                if own_ids:
                    chunk.id = f"chatcmpl-{self.turns}" if i else None
                    chunk.chunk_position = None
                else:
                    chunk.id = run_id
                generation = ChatGenerationChunk(message=chunk)
                if run_manager is not None:
                    await run_manager.on_llm_new_token(str(chunk.content), chunk=generation)
                yield generation

    _ = (AIMessage, ChatGeneration)
    model = Scripted(messages=iter(()), model_name=model_name)
    tools = [weather_tool(hang=hang)] if tools is None else tools
    return create_react_agent(model, tools, name="weatherbot")


def failing_body() -> bytes:
    """A Responses stream that breaks off with an error event after its first words."""
    events = _recorded.responses(tools=True)
    first = next(i for i, e in enumerate(events) if e["type"] == "response.output_text.delta")
    return sse(events[: first + 1], named=True) + sse([{"error": {"message": "overloaded"}}])
