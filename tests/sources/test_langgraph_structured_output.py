"""The prebuilt agent's structured answer (``create_react_agent(response_format=...)``): after
its loop the graph asks the model once more, through ``with_structured_output``, and keeps the
answer in ``structured_response``. That request is a chat span with its tokens; the tool call
that carries the answer (a model answering structured output through tool calling) is the
answer, not a tool the graph runs; the run's answer is the structured one, as JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import tokens
from .test_langgraph_subgraphs import QUESTION, USAGE, lookup

pytest.importorskip("langgraph")

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")


class Weather(BaseModel):
    city: str
    sky: str


def model(*, streams: bool) -> Any:
    """LangChain's fake chat model, binding tools as a real one does (``bind``: what
    ``with_structured_output`` asks for reaches the request): it asks for ``lookup``, answers,
    then answers the structured request by calling the ``Weather`` tool; each turn with
    ``USAGE``."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

    turns = [("lookup", "{}"), "It is sunny.", ("Weather", '{"city": "Paris", "sky": "sunny"}')]

    class Structured(GenericFakeChatModel):
        turn: int = 0

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self.bind(tools=tools, **kwargs)

        def _next(self) -> Any:
            self.turn += 1
            step = turns[self.turn - 1]
            if isinstance(step, str):
                return AIMessageChunk(content=step, usage_metadata=USAGE)  # type: ignore[arg-type]
            name, args = step
            ask = [{"index": 0, "id": f"call-{self.turn}", "name": name, "args": args}]
            return AIMessageChunk(content="", tool_call_chunks=ask, usage_metadata=USAGE)  # type: ignore[arg-type]

        async def _astream(self, messages: Any, *args: Any, **kw: Any) -> Any:
            yield ChatGenerationChunk(message=self._next())

        async def _agenerate(self, messages: Any, *args: Any, **kw: Any) -> ChatResult:
            chunk = self._next()
            whole = AIMessage(content=chunk.content, tool_calls=chunk.tool_calls,
                              usage_metadata=chunk.usage_metadata)  # fmt: skip
            return ChatResult(generations=[ChatGeneration(message=whole)])

    return Structured(messages=iter(()), disable_streaming=not streams)


@pytest.mark.parametrize("streams", [True, False], ids=["streamed", "whole"])
async def test_the_structured_response_call_is_a_chat_span_and_its_answer_the_runs(
    otel_telemetry: InMemoryTelemetry, streams: bool
) -> None:
    """The structured request's tool call was an ``execute_tool Weather`` span, a tool that
    never ran, left without a result; now the request is one chat span with its tokens and
    the run answers with the structured response."""
    from langgraph.prebuilt import create_react_agent

    from agent_contract.sources.langgraph_stream import langgraph_events

    graph = create_react_agent(model(streams=streams), [lookup()], response_format=Weather)
    await run_script(otel_telemetry, langgraph_events(graph, QUESTION), agent_name="bot",
                     capture_content=True)  # fmt: skip

    assert otel_telemetry.outline() == [["invoke_agent bot", [
        ["step 0", ["chat", "execute_tool lookup"]], ["step 1", ["chat", "chat"]],
    ]]]  # fmt: skip
    assert tokens(otel_telemetry) == 30
    run = dict(otel_telemetry.span("invoke_agent bot").attributes or {})
    assert run["gen_ai.output.type"] == "json"
    [answer] = json.loads(str(run["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "json", "content": {"city": "Paris", "sky": "sunny"}}]
    assert otel_telemetry.open_spans() == []
