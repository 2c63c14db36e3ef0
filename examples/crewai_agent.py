"""A CrewAI agent with two tools, one of which fails, traced: its steps become a span tree.

Extra: ``crewai``.

    pip install 'agent-otel[crewai]' && python examples/crewai_agent.py

No API key: CrewAI's own OpenAI LLM talks through the OpenAI SDK to a mock HTTP transport
serving two canned answers (the model calls ``weather`` and ``forecast`` in parallel, then
answers). ``forecast`` raises: CrewAI hands the error to the model, and the trace marks that
tool span as an error. Drop the ``llm._client`` line (and set ``OPENAI_API_KEY``) to talk to
the real API; nothing else changes. CrewAI reports on its event bus, not as a stream: the
adapter runs ``kickoff`` on a thread and turns the run's events into the trace.
``configure()`` prints the trace tree.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

try:
    import httpx
    import openai
    from crewai import LLM, Agent
    from crewai.tools import tool
except ImportError:
    sys.exit("needs crewai: pip install 'agent-otel[crewai]'")

from agent_contract.sources.crewai_stream import crewai_events
from agent_otel import configure, otel_wrapper


@tool("weather")
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


@tool("forecast")
def forecast(city: str) -> str:
    """Tomorrow's forecast for a city."""
    raise LookupError(f"no forecast for {city}")


def canned(content: str | None, calls: list[tuple[str, str, dict[str, Any]]],
           usage: tuple[int, int]) -> dict[str, Any]:  # fmt: skip
    """A Chat Completions answer (text, or calls as id, name, arguments), as the server sends it."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"id": i, "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}
                                 for i, name, args in calls]  # fmt: skip
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                  "total_tokens": sum(usage)},
    }  # fmt: skip


def offline_client() -> openai.OpenAI:
    bodies = iter([
        canned(None, [("call_0", "weather", {"city": "Paris"}),
                      ("call_1", "forecast", {"city": "Paris"})], (60, 12)),
        canned("It is sunny in Paris; no forecast.", [], (95, 9)),
    ])  # fmt: skip

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/input_tokens"):  # CrewAI counts the prompt first
            return httpx.Response(200, json={"object": "response.input_tokens", "input_tokens": 9})
        return httpx.Response(200, json=next(bodies))

    transport = httpx.MockTransport(answer)
    return openai.OpenAI(api_key="offline", http_client=httpx.Client(transport=transport),
                         max_retries=0)  # fmt: skip


async def main() -> None:
    telemetry = configure("crewai-example")
    llm = LLM(model="gpt-4o-mini", api_key="offline")
    llm._client = offline_client()
    agent = Agent(role="weatherbot", goal="Answer about the weather.", backstory="A forecaster.",
                  llm=llm, tools=[weather, forecast], verbose=False)  # fmt: skip
    kept: list[Any] = []
    events = crewai_events(agent, "Weather in Paris, and tomorrow?", sink=kept.append)
    async for _ in otel_wrapper(agent_name="weatherbot")(events):
        pass
    print(f"answer: {kept[-1].raw}")  # the kickoff's result
    telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
