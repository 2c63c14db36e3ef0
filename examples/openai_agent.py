"""A real LLM agent: one streaming chat completion through the OpenAI SDK, traced.

    OPENAI_API_KEY=sk-... python examples/openai_agent.py     # optional: OPENAI_BASE_URL, MODEL

Without ``OPENAI_API_KEY`` it says so and exits. ``OpenAIChatAgent`` is a small adapter: it
turns the SDK's stream chunks into contract events (``LLMCallStart``, a ``TextDelta`` per
content chunk, ``ToolCall`` for each completed tool call, ``Usage``, ``LLMCallEnd``) so
``otel_wrapper()`` can trace it. Needs the ``openai`` package (``pip install openai``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

from agent_contract.invoke import StreamingAgent
from agent_contract.protocol import (
    AgentEvent,
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    TextDelta,
    ToolCall,
    Usage,
)
from agent_otel import configure, otel_wrapper


class OpenAIChatAgent(StreamingAgent):
    """One streaming chat-completions call per run, as contract events."""

    def __init__(self, client: Any, model: str, **params: Any) -> None:
        self.client, self.model, self.params = client, model, params

    async def stream(
        self, messages: list[Message], config: dict[str, Any] | None = None
    ) -> AsyncIterator[AgentEvent]:
        yield LLMCallStart(
            model=self.model, provider="openai", params={**self.params, "stream": True},
            messages=messages,
        )  # fmt: skip
        stream = await self.client.chat.completions.create(
            model=self.model,
            messages=[m.to_dict() for m in messages],
            stream=True,
            stream_options={"include_usage": True},
            **self.params,
        )
        calls: dict[int, dict[str, Any]] = {}  # tool-call deltas, assembled by index
        finish = response_id = response_model = usage = None
        async for chunk in stream:
            response_id, response_model = chunk.id, chunk.model
            usage = chunk.usage or usage
            for choice in chunk.choices[:1]:
                if choice.delta.content:
                    yield TextDelta(text=choice.delta.content)
                for delta in choice.delta.tool_calls or ():
                    call = calls.setdefault(delta.index, {"id": None, "name": "", "args": ""})
                    call["id"] = delta.id or call["id"]
                    if delta.function is not None:
                        call["name"] += delta.function.name or ""
                        call["args"] += delta.function.arguments or ""
                finish = choice.finish_reason or finish
        for call in calls.values():
            yield ToolCall(id=call["id"], function=FunctionCall(call["name"], call["args"]))
        if usage is not None:
            yield Usage(
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.completion_tokens,
                total_tokens=usage.total_tokens,
                model=response_model,
            )
        yield LLMCallEnd(model=response_model, finish_reason=finish, response_id=response_id)


async def main() -> None:
    if not os.environ.get("OPENAI_API_KEY"):
        print("OPENAI_API_KEY is not set: skipping the real-LLM example.")
        return
    import openai  # only needed for the real call

    telemetry = configure("openai-example")
    agent = OpenAIChatAgent(openai.AsyncOpenAI(), os.environ.get("MODEL", "gpt-4o-mini"))
    result = await agent.invoke(
        [Message(role="user", content="In one sentence: what is OpenTelemetry?")],
        stream_wrapper=otel_wrapper(agent_name="openai-example"),
    )
    print(f"answer: {result.text}")
    telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
