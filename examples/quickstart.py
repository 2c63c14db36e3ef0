"""Quickstart: trace a scripted multi-step agent with tools, no API key, no Docker.

Extra: none (the quickstart's install, ``pip install -e .``).

    python examples/quickstart.py

``configure()`` with no OTLP endpoint set prints each finished trace as a tree in the
terminal (stderr) and a token summary per model at exit. Set OTEL_EXPORTER_OTLP_ENDPOINT
(e.g. http://localhost:4318 with docker-compose.otel.yml running) to send it to Jaeger/Tempo
instead.
"""

from __future__ import annotations

import asyncio

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import configure, otel_wrapper

SCRIPT = [
    # Step 0: the model asks for two tools at once.
    LLMCallStart(model="gpt-4o-mini", provider="openai", call_id="call-1"),
    TextDelta(text="Let me look that up."),
    ToolCall(id="t1", function=FunctionCall(name="web_search", arguments='{"q": "otel genai"}')),
    ToolCall(id="t2", function=FunctionCall(name="read_docs", arguments='{"page": "spans"}')),
    Usage(input_tokens=412, output_tokens=38),
    LLMCallEnd(model="gpt-4o-mini-2024-07-18", call_id="call-1", finish_reason="tool_calls"),
    ToolResult(tool_call_id="t2", content="Spans nest: agent > step > chat / tool."),
    ToolResult(tool_call_id="t1", content="3 results"),
    StepBoundary(index=0),
    # Step 1: the answer.
    LLMCallStart(model="gpt-4o-mini", provider="openai", call_id="call-2"),
    TextDelta(text="agent-otel turns "),
    TextDelta(text="agent events into spans."),
    Usage(input_tokens=655, output_tokens=21),
    LLMCallEnd(model="gpt-4o-mini-2024-07-18", call_id="call-2", finish_reason="stop"),
    StepBoundary(index=1),
]


async def main() -> None:
    telemetry = configure("quickstart")
    agent = ScriptedAgent(SCRIPT, delay=0.02)  # 20 ms between events: a visible timeline
    result = await agent.invoke(
        [Message(role="user", content="What does agent-otel do?")],
        stream_wrapper=otel_wrapper(agent_name="researcher"),
    )
    print(f"answer: {result.text}")
    telemetry.shutdown()  # flush now (it also happens at exit) so the summary follows


if __name__ == "__main__":
    asyncio.run(main())
