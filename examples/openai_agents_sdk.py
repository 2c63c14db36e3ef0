"""An OpenAI Agents SDK agent, traced: ``Runner.run_streamed`` events become a span tree.

Extra: ``openai-agents``.

    pip install 'agent-otel[openai-agents]' && python examples/openai_agents_sdk.py

No API key: the SDK's own ``OpenAIResponsesModel`` talks to a mock HTTP transport that
serves one canned Responses stream. Drop ``model=`` (and set ``OPENAI_API_KEY``) to talk to
the real API; nothing else changes. ``configure()`` prints the trace tree to the terminal.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

try:
    import httpx2
    import openai
    from agents import Agent, OpenAIResponsesModel, set_tracing_disabled
except ImportError:  # the extra is not installed: say what to run, no traceback
    raise SystemExit(
        "This example needs the OpenAI Agents SDK: pip install 'agent-otel[openai-agents]'"
    ) from None

from agent_contract.sources.openai_agents import openai_agents_events
from agent_otel import configure, otel_wrapper


def canned_stream(text: str) -> bytes:
    """A Responses API stream answering ``text``, as the server sends it."""
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip
    usage = {"input_tokens": 42, "output_tokens": 7, "total_tokens": 49,
             "input_tokens_details": {"cached_tokens": 0},
             "output_tokens_details": {"reasoning_tokens": 0}}  # fmt: skip
    response = {"id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-5-mini",
                "status": "in_progress", "output": [], "usage": None, "error": None,
                "incomplete_details": None, "tools": [], "parallel_tool_calls": True}  # fmt: skip
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.output_item.added", "output_index": 0,
         "item": message | {"content": []}},
        *({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
           "content_index": 0, "delta": text[i : i + 6]} for i in range(0, len(text), 6)),
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        {"type": "response.completed",
         "response": response | {"status": "completed", "output": [message], "usage": usage}},
    ]  # fmt: skip
    lines = (f"event: {e['type']}\ndata: {json.dumps(e | {'sequence_number': n})}\n\n"
             for n, e in enumerate(events))  # fmt: skip
    return "".join(lines).encode()


def offline_model() -> OpenAIResponsesModel:
    body = canned_stream("It is sunny in Paris.")
    transport = httpx2.MockTransport(
        lambda request: httpx2.Response(200, headers={"content-type": "text/event-stream"},
                                        content=body)
    )  # fmt: skip
    client = openai.AsyncOpenAI(api_key="offline", base_url="http://mock.invalid/v1",
                                http_client=httpx2.AsyncClient(transport=transport))  # fmt: skip
    return OpenAIResponsesModel(model="gpt-5-mini", openai_client=client)


async def main() -> None:
    set_tracing_disabled(True)  # the SDK's own traces would go to the vendor's endpoint
    telemetry = configure("openai-agents-example")
    agent = Agent(name="weatherbot", instructions="Be brief.", model=offline_model())
    runs: list[Any] = []
    events = openai_agents_events(agent, "Weather in Paris?", on_result=runs.append)
    async for _ in otel_wrapper(agent_name="weatherbot")(events):
        pass
    print(f"answer: {runs[0].final_output}")
    telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
