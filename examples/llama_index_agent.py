"""A LlamaIndex agent with two tools, one of which fails, traced: its run becomes a span tree.

Extra: ``llama-index``.

    pip install 'agent-otel[llama-index]' && python examples/llama_index_agent.py

No API key: the ``FunctionAgent`` runs on LlamaIndex's own ``MockFunctionCallingLLM``,
scripted to call ``weather`` and ``forecast`` in parallel, then answer. ``forecast`` raises:
LlamaIndex hands the error to the model as the tool's output, and the trace marks that tool
span as an error. Swap in a real LLM (``llm=OpenAI(model="gpt-4o-mini")`` from
``llama-index-llms-openai``) and nothing else changes: the chat spans then also carry the
token counts the provider reports (the mock LLM reports none). ``configure()`` prints the
trace tree.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

try:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
    from llama_index.core.llms.mock import MockFunctionCallingLLM
except ImportError:
    sys.exit("needs LlamaIndex: pip install 'agent-otel[llama-index]'")

from agent_contract.sources.llama_index_stream import llama_index_events
from agent_otel import configure, otel_wrapper


async def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


async def forecast(city: str) -> str:
    """Tomorrow's forecast for a city."""
    raise LookupError(f"no forecast for {city}")


def scripted(messages: Any, **kwargs: Any) -> ChatMessage:
    """The mock LLM's answers: both tools first, then the answer once their results are in."""
    if any(message.role == "tool" for message in messages):
        return ChatMessage(role="assistant", content="It is sunny in Paris; no forecast.")
    reply = ChatMessage(role="assistant", content="")
    reply.blocks += [ToolCallBlock(tool_call_id=f"call_{i}", tool_name=name,
                                   tool_kwargs={"city": "Paris"})
                     for i, name in enumerate(("weather", "forecast"))]  # fmt: skip
    return reply


async def main() -> None:
    telemetry = configure("llama-index-example")
    llm = MockFunctionCallingLLM(response_generator=scripted)
    agent = FunctionAgent(name="weatherbot", tools=[weather, forecast], llm=llm)
    handlers: list[Any] = []
    question = "Weather in Paris, and tomorrow?"
    events = llama_index_events(agent, question, on_handler=handlers.append)
    async for _ in otel_wrapper(agent_name="weatherbot")(events):
        pass
    print(f"answer: {await handlers[0]}")
    telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
