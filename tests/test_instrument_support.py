"""Agents and helpers shared by the instrument() tests (no tests here).

``Delegating`` (event contract) and ``DelegatingAgent`` (Agent contract) call a sub-agent from
inside a tool call; ``NonStreamingDelegator`` does so from inside an opaque ``run``. The
sub-agent defaults to the agent itself (the same instance, one level deep).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from agent_contract.agent import Agent, MessageFinal, ToolCallStep, ToolResultStep
from agent_contract.protocol import (
    FunctionCall,
    Message,
    StreamingAgent,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agent_otel.testing import InMemoryTelemetry

Call = Callable[[Any], Awaitable[Any]]
USER = [Message(role="user", content="hello")]


def agent_spans(telemetry: InMemoryTelemetry) -> list[ReadableSpan]:
    return [
        s
        for s in telemetry.spans()
        if (s.attributes or {}).get("gen_ai.operation.name") == "invoke_agent"
    ]


def parent_of(telemetry: InMemoryTelemetry, span: ReadableSpan) -> ReadableSpan | None:
    if span.parent is None:
        return None
    for candidate in telemetry.spans():
        if candidate.context is not None and candidate.context.span_id == span.parent.span_id:
            return candidate
    return None


# --- how a sub-agent is called ------------------------------------------------------------------
async def call_stream(agent: Any) -> Any:
    return [e async for e in agent.stream(USER)]


async def call_invoke(agent: Any) -> Any:
    return (await agent.invoke(USER)).text


async def call_run(agent: Any) -> Any:
    return await agent.run(user_message="sub")


async def call_astream(agent: Any) -> Any:
    return [e async for e in agent.astream(user_message="sub")]


EVENT_CALLS: dict[str, Call] = {"stream": call_stream, "invoke": call_invoke}
AGENT_CALLS: dict[str, Call] = {"run": call_run, "astream": call_astream}
CALLS: dict[str, Call] = {**EVENT_CALLS, **AGENT_CALLS}


class Delegating(StreamingAgent):
    """Event contract: a tool call whose execution runs ``call(delegate or self)``."""

    def __init__(self, call: Call, delegate: Any = None, name: str = "outer") -> None:
        self.call = call
        self.delegate = delegate
        self.name = name
        self.depth = 0

    async def stream(
        self, messages: list[Message], config: dict[str, Any] | None = None
    ) -> AsyncIterator[Any]:
        if self.depth:
            yield TextDelta("leaf")
            return
        yield ToolCall(id="c1", function=FunctionCall(name="delegate", arguments="{}"))
        self.depth += 1
        try:
            result = await self.call(self.delegate if self.delegate is not None else self)
        finally:
            self.depth -= 1
        yield ToolResult(tool_call_id="c1", content=str(result))
        yield TextDelta("done")


class DelegatingAgent(Agent):
    """Agent contract, streaming: a tool call whose execution runs ``call(delegate or self)``."""

    tool_name = "delegating"
    tool_description = "Delegates to a sub-agent (test agent)."

    def __init__(self, call: Call, delegate: Any = None) -> None:
        self.call = call
        self.delegate = delegate
        self.depth = 0

    async def astream(self, **kwargs: Any) -> AsyncIterator[Any]:
        if self.depth:
            yield MessageFinal(text="leaf")
            return
        yield ToolCallStep(tool="delegate", args={}, call_id="c1")
        self.depth += 1
        try:
            result = await self.call(self.delegate if self.delegate is not None else self)
        finally:
            self.depth -= 1
        yield ToolResultStep(tool="delegate", call_id="c1", result=str(result))
        yield MessageFinal(text="done")

    async def run(self, **kwargs: Any) -> Any:
        return await self._drain(self.astream(**kwargs))


class NonStreamingDelegator(Agent):
    """Agent contract, non-streaming: its opaque ``run`` calls ``call(delegate or self)``."""

    tool_name = "opaque"
    tool_description = "Runs a sub-agent inside run (test agent)."

    def __init__(self, call: Call, delegate: Any = None) -> None:
        self.call = call
        self.delegate = delegate
        self.depth = 0

    async def run(self, **kwargs: Any) -> Any:
        if self.depth:
            return "leaf"
        self.depth += 1
        try:
            await self.call(self.delegate if self.delegate is not None else self)
        finally:
            self.depth -= 1
        return "done"
