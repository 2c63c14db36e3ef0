"""An Agno agent with two tools, one of which fails, traced: its run events become a span tree.

Extras: ``agno``, ``openai``.

    pip install 'agent-otel[agno,openai]' && python examples/agno_agent.py

No API key: Agno's own ``OpenAIChat`` model talks through the OpenAI SDK to a mock HTTP
transport serving two canned streams (the model calls ``weather`` and ``forecast`` in
parallel, then answers). ``forecast`` raises: Agno hands the error to the model, and the
trace marks that tool span as an error. Drop ``async_client=`` (and set ``OPENAI_API_KEY``)
to talk to the real API; nothing else changes. ``configure()`` prints the trace tree.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

try:
    import httpx2
    import openai
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat
except ImportError:
    sys.exit("needs Agno and the OpenAI SDK: pip install 'agent-otel[agno,openai]'")

from agent_contract.sources.agno_stream import agno_events
from agent_otel import configure, otel_wrapper


def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


def forecast(city: str) -> str:
    """Tomorrow's forecast for a city."""
    raise LookupError(f"no forecast for {city}")


def canned(deltas: list[dict[str, Any]], finish: str, usage: tuple[int, int]) -> bytes:
    """A Chat Completions stream of ``deltas``, as the server sends it (usage last)."""
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
            "model": "gpt-4o-mini-2024-07-18"}  # fmt: skip
    chunks = [{**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
              for d in deltas]  # fmt: skip
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    chunks.append({**head, "choices": [], "usage": {"prompt_tokens": usage[0],
                   "completion_tokens": usage[1], "total_tokens": sum(usage)}})  # fmt: skip
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


def offline_client() -> openai.AsyncOpenAI:
    asked = [("weather", "Paris"), ("forecast", "Paris")]
    calls = [{"index": i, "id": f"call_{i}", "type": "function",
              "function": {"name": name, "arguments": json.dumps({"city": city})}}
             for i, (name, city) in enumerate(asked)]  # fmt: skip
    bodies = iter([
        canned([{"content": "Checking."}, {"tool_calls": calls}], "tool_calls", (60, 12)),
        canned([{"content": "It is sunny in Paris; no forecast."}], "stop", (95, 9)),
    ])  # fmt: skip
    transport = httpx2.MockTransport(
        lambda request: httpx2.Response(200, headers={"content-type": "text/event-stream"},
                                        content=next(bodies))
    )  # fmt: skip
    return openai.AsyncOpenAI(api_key="offline", base_url="http://mock.invalid/v1",
                              http_client=httpx2.AsyncClient(transport=transport))  # fmt: skip


async def main() -> None:
    logging.getLogger("agno").setLevel(logging.CRITICAL)  # Agno logs the tool's traceback too
    telemetry = configure("agno-example")
    model = OpenAIChat(id="gpt-4o-mini", async_client=offline_client())
    agent = Agent(model=model, tools=[weather, forecast], name="weatherbot", telemetry=False)
    text: list[str] = []
    async for event in otel_wrapper(agent_name="weatherbot")(agno_events(agent, "Weather?")):
        if type(event).__name__ == "TextDelta":
            text.append(event.text)  # type: ignore[attr-defined]
    print(f"answer: {''.join(text)}")
    telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
