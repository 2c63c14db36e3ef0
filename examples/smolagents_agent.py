"""A smolagents agent with two tools, one of which fails, traced: its steps become a span tree.

Extra: ``smolagents``.

    pip install 'agent-otel[smolagents]' && python examples/smolagents_agent.py

No API key: smolagents' own ``OpenAIModel`` talks through the OpenAI SDK to a mock HTTP
transport serving two canned answers (the model calls ``weather`` and ``forecast`` in
parallel, then gives its final answer). ``forecast`` raises: smolagents hands the error to the
model, and the trace marks that tool span as an error. Drop ``client_kwargs=`` (and set
``OPENAI_API_KEY``) to talk to the real API; nothing else changes. smolagents runs the agent
as a plain generator: the adapter pulls it on a thread, so the event loop stays free.
``configure()`` prints the trace tree.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

try:
    import httpx2
    from smolagents import OpenAIModel, ToolCallingAgent, tool
except ImportError:
    sys.exit("needs smolagents and the OpenAI SDK: pip install 'agent-otel[smolagents]'")

from agent_contract.sources.smolagents_stream import smolagents_events
from agent_otel import configure, otel_wrapper


@tool
def weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: the city.
    """
    return f"sunny in {city}"


@tool
def forecast(city: str) -> str:
    """Tomorrow's forecast for a city.

    Args:
        city: the city.
    """
    time.sleep(0.05)  # smolagents drops the results of a step one tool failed: weather first
    raise LookupError(f"no forecast for {city}")


def canned(calls: list[tuple[str, str, dict[str, Any]]], usage: tuple[int, int]) -> bytes:
    """A Chat Completions answer calling ``calls`` (id, name, arguments), as the server sends it."""
    tool_calls = [{"id": i, "type": "function",
                   "function": {"name": name, "arguments": json.dumps(args)}}
                  for i, name, args in calls]  # fmt: skip
    return json.dumps({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "finish_reason": "tool_calls",
                     "message": {"role": "assistant", "content": None, "tool_calls": tool_calls}}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                  "total_tokens": sum(usage)},
    }).encode()  # fmt: skip


def offline_client() -> dict[str, Any]:
    bodies = iter([
        canned([("call_0", "weather", {"city": "Paris"}),
                ("call_1", "forecast", {"city": "Paris"})], (60, 12)),
        canned([("call_2", "final_answer", {"answer": "It is sunny in Paris; no forecast."})],
               (95, 9)),
    ])  # fmt: skip
    transport = httpx2.MockTransport(
        lambda request: httpx2.Response(200, headers={"content-type": "application/json"},
                                        content=next(bodies))
    )  # fmt: skip
    return {"http_client": httpx2.Client(transport=transport), "max_retries": 0}


async def main() -> None:
    telemetry = configure("smolagents-example")
    model = OpenAIModel("gpt-4o-mini", api_key="offline", api_base="http://mock.invalid/v1",
                        client_kwargs=offline_client())  # fmt: skip
    agent = ToolCallingAgent(tools=[weather, forecast], model=model, verbosity_level=0)
    steps: list[Any] = []
    events = smolagents_events(agent, "Weather in Paris, and tomorrow?", sink=steps.append)
    async for _ in otel_wrapper(agent_name="weatherbot")(events):
        pass
    print(f"answer: {steps[-1].output}")  # the FinalAnswerStep
    telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
