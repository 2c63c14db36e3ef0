"""An OpenAI Agents SDK agent, traced: ``Runner.run_streamed`` events become a span tree.

Extra: ``openai-agents``.

    pip install 'agent-otel[openai-agents]' && python examples/openai_agents_sdk.py

No API key: the SDK's own ``OpenAIResponsesModel`` talks to a mock HTTP transport that
serves canned Responses streams: the model asks for ``weather`` and ``forecast``, then
answers. ``forecast`` raises; the SDK's default failure handler turns that into text for the
model, and the trace shows that tool's span as an error named by the exception. Drop
``model=`` (and set ``OPENAI_API_KEY``) to talk to the real API; nothing else changes.
``configure()`` prints the trace tree to the terminal.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

try:
    import httpx2
    import openai
    from agents import Agent, OpenAIResponsesModel, function_tool, set_tracing_disabled
except ImportError:  # the extra is not installed: say what to run, no traceback
    raise SystemExit(
        "This example needs the OpenAI Agents SDK: pip install 'agent-otel[openai-agents]'"
    ) from None

from agent_contract.sources.openai_agents import openai_agents_events
from agent_otel import configure, otel_wrapper


def canned_stream(output: list[dict[str, Any]], used: tuple[int, int]) -> bytes:
    """A Responses API stream whose response is ``output`` (items), as the server sends it."""
    usage = {"input_tokens": used[0], "output_tokens": used[1], "total_tokens": sum(used),
             "input_tokens_details": {"cached_tokens": 0},
             "output_tokens_details": {"reasoning_tokens": 0}}  # fmt: skip
    response = {"id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-5-mini",
                "status": "in_progress", "output": [], "usage": None, "error": None,
                "incomplete_details": None, "tools": [], "parallel_tool_calls": True}  # fmt: skip
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
    for index, item in enumerate(output):
        added = item | {"content": []} if item["type"] == "message" else item
        events.append({"type": "response.output_item.added", "output_index": index, "item": added})
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events += [{"type": "response.output_text.delta", "item_id": item["id"],
                        "output_index": index, "content_index": 0, "delta": text[i : i + 6]}
                       for i in range(0, len(text), 6)]  # fmt: skip
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    done = response | {"status": "completed", "output": output, "usage": usage}
    events.append({"type": "response.completed", "response": done})
    lines = (f"event: {e['type']}\ndata: {json.dumps(e | {'sequence_number': n})}\n\n"
             for n, e in enumerate(events))  # fmt: skip
    return "".join(lines).encode()


def offline_model() -> OpenAIResponsesModel:
    """The SDK's model over a mock transport: it asks for both tools, then answers."""
    calls = [{"id": f"fc_{name}", "type": "function_call", "call_id": f"call_{name}",
              "name": name, "arguments": '{"city": "Paris"}', "status": "completed"}
             for name in ("weather", "forecast")]  # fmt: skip
    text = "It is sunny in Paris."
    answer = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
              "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip
    bodies = iter([canned_stream(calls, (60, 12)), canned_stream([answer], (95, 9))])
    transport = httpx2.MockTransport(
        lambda request: httpx2.Response(200, headers={"content-type": "text/event-stream"},
                                        content=next(bodies))
    )  # fmt: skip
    client = openai.AsyncOpenAI(api_key="offline", base_url="http://mock.invalid/v1",
                                http_client=httpx2.AsyncClient(transport=transport))  # fmt: skip
    return OpenAIResponsesModel(model="gpt-5-mini", openai_client=client)


class ForecastUnavailable(RuntimeError):
    """The forecast service has nothing for that city."""


@function_tool
def weather(city: str) -> str:
    """Today's weather in ``city``."""
    return f"sunny in {city}"


@function_tool
def forecast(city: str) -> str:
    """Tomorrow's forecast for ``city``."""
    raise ForecastUnavailable(f"no forecast for {city} today")


async def main() -> None:
    set_tracing_disabled(True)  # the SDK's own traces would go to the vendor's endpoint
    logging.getLogger("openai.agents").setLevel(logging.CRITICAL)  # it logs the tool's error
    telemetry = configure("openai-agents-example")
    agent = Agent(name="weatherbot", instructions="Be brief.", model=offline_model(),
                  tools=[weather, forecast])  # fmt: skip
    runs: list[Any] = []
    events = openai_agents_events(agent, "Weather in Paris?", on_result=runs.append)
    async for _ in otel_wrapper(agent_name="weatherbot")(events):
        pass
    print(f"answer: {runs[0].final_output}")
    telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
