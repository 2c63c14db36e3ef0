"""A real LLM agent: one streaming chat completion through the OpenAI SDK, traced.

Extra: ``openai``.

    pip install 'agent-otel[openai]'
    OPENAI_API_KEY=sk-... python examples/openai_agent.py     # optional: OPENAI_BASE_URL, MODEL

Without ``OPENAI_API_KEY`` it says so and exits. ``OpenAIChatAgent`` is the Chat Completions
source (``agent_contract.sources.openai_chat``): it turns the SDK's stream chunks into contract
events (``LLMCallStart``, a ``TextDelta`` per content chunk, ``ToolCall`` for each completed
tool call, ``Usage``, ``LLMCallEnd``) so ``otel_wrapper()`` can trace it.
"""

from __future__ import annotations

import asyncio
import os

try:
    import openai
except ImportError:  # the extra is not installed: say what to run, no traceback
    raise SystemExit(
        "This example needs the OpenAI SDK: pip install 'agent-otel[openai]'"
    ) from None

from agent_contract.protocol import Message
from agent_contract.sources.openai_chat import OpenAIChatAgent
from agent_otel import configure, otel_wrapper


async def main() -> None:
    if not os.environ.get("OPENAI_API_KEY"):
        print("OPENAI_API_KEY is not set: skipping the real-LLM example.")
        return
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
