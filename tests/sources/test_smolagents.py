"""smolagents specifics the conformance script does not reach: streamed outputs, the sink."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_contract.protocol import AgentEvent, LLMCallStart, TextDelta, ToolCall, ToolResult
from agent_otel.testing import InMemoryTelemetry

from . import _recorded
from ._http import sse
from ._trace import tokens


def _final(answer: str) -> list[dict[str, Any]]:
    """A streamed turn calling smolagents' ``final_answer`` tool, usage last."""
    head = {"id": "chatcmpl-B", "object": "chat.completion.chunk", "created": 0,
            "model": "gpt-4o-mini-2024-07-18"}  # fmt: skip
    call = {
        "index": 0,
        "id": "call_a",
        "type": "function",
        "function": {"name": "final_answer", "arguments": json.dumps({"answer": answer})},
    }
    usage = {"prompt_tokens": 200, "completion_tokens": 12, "total_tokens": 212}
    return [
        {**head, "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {**head, "choices": [], "usage": usage},
    ]  # fmt: skip


def _agent() -> Any:
    pytest.importorskip("smolagents")
    import httpx2 as httpx
    from smolagents import OpenAIModel, ToolCallingAgent, tool

    bodies = iter([sse(_recorded.chat(tools=True), done=True), sse(_final("Sunny."), done=True)])

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=next(bodies))  # fmt: skip

    @tool
    def weather(city: str) -> str:
        """Current weather of a city.

        Args:
            city: the city.
        """
        return f"sunny in {city}"

    client = {"http_client": httpx.Client(transport=httpx.MockTransport(respond)),
              "max_retries": 0}  # fmt: skip
    model = OpenAIModel("gpt-4o-mini", api_key="offline", api_base="http://mock.invalid/v1",
                        client_kwargs=client)  # fmt: skip
    return ToolCallingAgent(tools=[weather], model=model, verbosity_level=0, stream_outputs=True)


async def test_streamed_outputs_are_text_deltas_and_usage_comes_once_per_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agent_contract.sources.smolagents_stream import smolagents_events

    kept: list[Any] = []
    events: list[AgentEvent] = [
        e
        async for e in otel_telemetry.wrapper(agent_name="agent")(
            smolagents_events(_agent(), "?", sink=kept.append)
        )
    ]

    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Checking both.Sunny."  # streamed words, then the final answer
    starts = [e for e in events if isinstance(e, LLMCallStart)]
    assert [s.params["stream"] for s in starts] == [True, True]
    assert [e.id for e in events if isinstance(e, ToolCall)] == ["call_p", "call_r"]
    assert sorted(str(e.content) for e in events if isinstance(e, ToolResult)) == [
        "sunny in Paris", "sunny in Rome"]  # fmt: skip
    assert otel_telemetry.outline() == [
        ["invoke_agent agent", [
            ["step 0", ["chat gpt-4o-mini", "execute_tool weather", "execute_tool weather"]],
            ["step 1", ["chat gpt-4o-mini"]],
        ]],
    ]  # fmt: skip
    assert tokens(otel_telemetry) == 120 + 200  # smolagents' own counts, once per call
    assert type(kept[-1]).__name__ == "FinalAnswerStep" and kept[-1].output == "Sunny."
    assert otel_telemetry.open_spans() == []
