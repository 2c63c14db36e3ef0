"""Tool calls whose arguments hold values JSON has no form for, each through a framework's own
test model (or a model's text over the OpenAI SDK's mock transport), for every adapter.

Each builder runs an agent with one tool, ``book(on)``, whose model asks for it once (call id
``b1``) with such arguments, then answers "Done.". A model that hands the framework values
(Google ADK's ``FunctionCall.args``, a LangChain ``AIMessage``'s ``tool_calls``, a LlamaIndex
``ToolCallBlock``) can put any Python value there: ``VALUES``. A model that sends text, parsed
with ``json.loads`` (which reads ``NaN``) by the framework or the model's SDK, or in Agno with
``ast.literal_eval`` (which reads a set), reaches the adapter as ``NAN`` or ``PYTHON`` do.
``CASES`` pairs each builder with the JSON text the repair rule (docs/hostile.md) writes.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

VALUES: dict[str, Any] = {
    "on": {"day": datetime.date(2026, 1, 1), "seats": {7}, "score": float("nan"), (1, 2): "pair"}
}
"""A date and a set (their ``str()``), a NaN (``null``), a tuple key (its ``str()``)."""
VALUES_JSON = '{"on": {"day": "2026-01-01", "seats": "{7}", "score": null, "(1, 2)": "pair"}}'

NAN = '{"on": NaN}'
"""A model's text that ``json.loads`` reads as a NaN."""
NAN_JSON = '{"on": null}'

PYTHON = "{'on': {1, 2}}"
"""A model's text in Python's notation: Agno reads it with ``ast.literal_eval``, a set."""
PYTHON_JSON = '{"on": "{1, 2}"}'


def book(on: Any) -> str:
    """Book a day."""
    return "booked"


def langchain_asking(tool: str, call_id: str) -> Any:
    """A LangChain chat model of this test's whose first answer asks for ``tool`` once (call
    id ``call_id``) with ``VALUES`` (LangChain keeps ``args`` as the model built them), and
    whose next answers say "Done."."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Asking(BaseChatModel):
        turns: int = 0

        @property
        def _llm_type(self) -> str:
            return "asking"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> ChatResult:
            self.turns += 1
            asked = [{"name": tool, "args": VALUES, "id": call_id}] if self.turns == 1 else []
            text = "" if asked else "Done."
            message = AIMessage(content=text, tool_calls=asked, id=f"m{self.turns}")
            return ChatResult(generations=[ChatGeneration(message=message)])

    return Asking()


def langgraph_model(kept: list[Any]) -> AsyncIterator[Any]:
    """A prebuilt ReAct agent on ``langchain_asking``'s model, asking for ``book``."""
    from langgraph.prebuilt import create_react_agent

    from agent_contract.sources.langgraph_stream import langgraph_events

    graph = create_react_agent(langchain_asking("book", "b1"), [book], name="booker")
    return langgraph_events(graph, {"messages": [("user", "Book?")]}, sink=kept.append)


def langgraph_written(kept: list[Any]) -> AsyncIterator[Any]:
    """A graph whose node writes the call itself (no model), ``VALUES`` in its ``args``, and a
    ``ToolNode`` that runs it."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    from agent_contract.sources.langgraph_stream import langgraph_events

    def ask(state: Any) -> dict[str, Any]:
        call = {"name": "book", "args": VALUES, "id": "b1"}
        return {"messages": [AIMessage(content="", id="w1", tool_calls=[call])]}

    graph = StateGraph(MessagesState)
    graph.add_node("ask", ask)
    graph.add_node("tools", ToolNode([book]))
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "tools")
    graph.add_edge("tools", END)
    return langgraph_events(graph.compile(), {"messages": [("user", "Book?")]}, sink=kept.append)


def google_adk(kept: list[Any]) -> AsyncIterator[Any]:
    """An ADK agent on the scripted model, its ``FunctionCall.args`` ``VALUES``."""
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model, agent

    ask = types.Part(function_call=types.FunctionCall(id="b1", name="book", args=VALUES))
    model = _model([[ask], [types.Part(text="Done.")]])
    return google_adk_events(agent(model, [book], name="booker"), "Book?", sink=kept.append)


def strands(kept: list[Any]) -> AsyncIterator[Any]:
    """A Strands agent on the scripted model streaming the ``toolUse`` input ``NAN``."""
    from agent_contract.sources.strands_stream import strands_events

    from ._fw_strands import _model, _text, agent

    start = {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "b1", "name": "book"}}}}
    uses = [start, {"contentBlockDelta": {"delta": {"toolUse": {"input": NAN}}}},
            {"contentBlockStop": {}}]  # fmt: skip
    turns = [[{"messageStart": {"role": "assistant"}}, *uses,
              {"messageStop": {"stopReason": "tool_use"}}],
             [{"messageStart": {"role": "assistant"}}, *_text("Done."),
              {"messageStop": {"stopReason": "end_turn"}}]]  # fmt: skip
    return strands_events(agent(_model(turns), [book], name="booker"), "Book?", sink=kept.append)


def llama_index(kept: list[Any]) -> AsyncIterator[Any]:
    """A LlamaIndex ``FunctionAgent`` on its mock function-calling LLM, whose
    ``ToolCallBlock.tool_kwargs`` are ``VALUES``."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock

    from agent_contract.sources.llama_index_stream import llama_index_events

    from ._fw_llama_index import replies

    ask = ToolCallBlock(tool_call_id="b1", tool_name="book", tool_kwargs=VALUES)
    built = FunctionAgent(name="booker", tools=[book], llm=replies(ask, "Done."), streaming=True)
    return llama_index_events(built, "Book?", sink=kept.append)


def smolagents(kept: list[Any]) -> AsyncIterator[Any]:
    """A ``ToolCallingAgent`` on smolagents' ``OpenAIModel`` over the SDK's mock transport,
    the model's arguments ``NAN``."""
    from smolagents import OpenAIModel, ToolCallingAgent, tool

    from agent_contract.sources.smolagents_stream import smolagents_events

    from ._fw_smolagents import MODEL, answer, client
    from ._script_chat import completion

    @tool
    def book(on: float) -> str:
        """Book a day.

        Args:
            on: the day.
        """
        return "booked"

    turns: list[int] = []

    def respond(messages: list[dict[str, Any]]) -> Any:
        turns.append(len(turns))
        if len(turns) == 1:
            return completion(0, None, [("b1", "book", NAN)])
        return completion(1, None, answer("Done."))

    model = OpenAIModel(MODEL, api_key="offline", api_base="http://mock.invalid/v1",
                        client_kwargs=client(respond), retry=False)  # fmt: skip
    built = ToolCallingAgent(tools=[book], model=model, verbosity_level=0)
    return smolagents_events(built, "Book?", sink=kept.append)


def pydantic_ai(kept: list[Any]) -> AsyncIterator[Any]:
    """A pydantic-ai agent on its ``GoogleModel``, the Google Gen AI SDK over its mock
    transport: the streamed ``functionCall``'s ``args`` hold the server's ``NaN`` (the SDK
    reads it with ``json.loads``; pydantic-ai keeps the call's ``args`` as the dict it is)."""
    import httpx
    from google import genai
    from pydantic_ai import Agent
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.providers.google import GoogleProvider

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    def respond(request: httpx.Request) -> httpx.Response:
        kept.append(request)  # (the adapter takes no sink: the model's requests are kept)
        call = {"functionCall": {"id": "b1", "name": "book", "args": {"on": "NaN"}}}
        part = call if len(kept) == 1 else {"text": "Done."}
        body = {"candidates": [{"content": {"role": "model", "parts": [part]},
                                "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2,
                                  "totalTokenCount": 5},
                "modelVersion": "gemini-2.5-flash"}  # fmt: skip
        text = json.dumps(body).replace('"NaN"', "NaN")  # the server's bare NaN
        headers = {"content-type": "text/event-stream"}
        return httpx.Response(200, content=f"data: {text}\n\n".encode(), headers=headers)

    transport = httpx.AsyncClient(transport=httpx.MockTransport(respond))
    client = genai.Client(api_key="test", http_options={"httpx_async_client": transport})
    built = Agent(GoogleModel("gemini-2.5-flash", provider=GoogleProvider(client=client)))
    built.tool_plain(book)
    return pydantic_ai_events(built, "Book?")


def agno(kept: list[Any]) -> AsyncIterator[Any]:
    """An Agno agent on ``OpenAIChat`` over the SDK's mock transport, the model's arguments
    ``PYTHON``."""
    from agent_contract.sources.agno_stream import agno_events

    from ._fw_agno import agent
    from ._script_chat import answer, call

    built = agent(call("book", PYTHON, "b1"), answer("Done."), tools=[book], name="booker")
    return agno_events(built, "Book?", sink=kept.append)


@dataclass(frozen=True)
class Case:
    """An adapter's run (``build(kept)``, the framework's items going to ``kept``, or the
    model's requests where the adapter takes no sink), the package it needs, and the
    arguments text its ``ToolCall`` must carry."""

    build: Callable[[list[Any]], AsyncIterator[Any]]
    needs: str
    arguments: str


CASES: dict[str, Case] = {
    "langgraph_model": Case(langgraph_model, "langgraph", VALUES_JSON),
    "langgraph_written": Case(langgraph_written, "langgraph", VALUES_JSON),
    "google_adk": Case(google_adk, "google.adk", VALUES_JSON),
    "strands": Case(strands, "strands", NAN_JSON),
    "llama_index": Case(llama_index, "llama_index.core", VALUES_JSON),
    "smolagents": Case(smolagents, "smolagents", NAN_JSON),
    "pydantic_ai": Case(pydantic_ai, "pydantic_ai.models.google", NAN_JSON),
    "agno": Case(agno, "agno", PYTHON_JSON),
}


def strict(text: str) -> Any:
    """``text`` read as strict JSON (``NaN`` and ``Infinity`` refused, as other parsers do)."""

    def refuse(word: str) -> Any:
        raise ValueError(f"not JSON: {word}")

    return json.loads(text, parse_constant=refuse)
