"""One agent run, told twice: as agent-otel sees it and as the reference instrumentation would.

The run: an ``invoke_agent`` run in a conversation, a streamed chat call that asks for two
tools, the two tools (``get_time`` fails), a second streamed chat call, the final answer.
:func:`run_agent_otel` streams it through ``otel_wrapper()``; :func:`run_reference` drives
``opentelemetry-util-genai``'s ``TelemetryHandler`` through the same run the way a provider
instrumentation does (its stream wrapper for the chat calls, ``handler.tool()`` for the
tools). The oracle test diffs what the two emit; the backend tests export the first.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry._logs import LoggerProvider
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

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
from agent_otel import otel_wrapper

AGENT, PROVIDER, MODEL, RESPONSE_MODEL = "weather", "openai", "gpt-4o", "gpt-4o-2024-08-06"
CONVERSATION = "conv-42"
QUESTION = "What is the weather in Paris, and what time is it there?"
ANSWER = "It is 21°C in Paris; the clock service is down."
HISTORY = [Message(role="user", content=QUESTION)]
PARAMS = {"temperature": 0.2, "max_tokens": 200}
TOOLS: list[tuple[str, str, dict[str, Any], Any, bool]] = [
    ("call_1", "get_weather", {"city": "Paris"}, {"temp_c": 21}, False),
    ("call_2", "get_time", {"city": "Paris"}, "clock service unavailable", True),
]
FIRST_TEXT = ["Let me ", "check."]
ANSWER_CHUNKS = [f"{word} " for word in ANSWER.split(" ")[:-1]] + ANSWER.split(" ")[-1:]
USAGE = [(40, 12), (60, 9)]


def agent_events() -> list[Any]:
    """The run as agent-otel's event stream."""
    calls = [ToolCall(id=i, function=FunctionCall(n, json.dumps(a))) for i, n, a, _, _ in TOOLS]
    second = [*HISTORY, Message(role="assistant", content="".join(FIRST_TEXT), tool_calls=calls)]
    second += [
        Message(role="tool", tool_call_id=i, content=json.dumps(r)) for i, _, _, r, _ in TOOLS
    ]
    return [
        _start("llm_1", HISTORY),
        *(TextDelta(text) for text in FIRST_TEXT),
        *calls,
        _end("llm_1", "tool_calls", "resp_1"),
        Usage(input_tokens=USAGE[0][0], output_tokens=USAGE[0][1]),
        *(ToolResult(tool_call_id=i, content=r, is_error=e) for i, _, _, r, e in TOOLS),
        StepBoundary(index=0),
        _start("llm_2", second),
        *(TextDelta(part) for part in ANSWER_CHUNKS),
        _end("llm_2", "stop", "resp_2"),
        Usage(input_tokens=USAGE[1][0], output_tokens=USAGE[1][1]),
        StepBoundary(index=1),
    ]


def _start(call_id: str, messages: list[Message]) -> LLMCallStart:
    return LLMCallStart(
        model=MODEL, provider=PROVIDER, call_id=call_id, params=PARAMS, messages=messages
    )


def _end(call_id: str, finish_reason: str, response_id: str) -> LLMCallEnd:
    return LLMCallEnd(
        call_id=call_id, model=RESPONSE_MODEL, finish_reason=finish_reason, response_id=response_id
    )


async def _replay(events: list[Any]) -> AsyncIterator[Any]:
    for event in events:
        yield event


async def run_agent_otel(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    logger_provider: LoggerProvider | None = None,
    **options: Any,
) -> list[Any]:
    """Stream the run through ``otel_wrapper()``; what the consumer received."""
    wrap = otel_wrapper(
        agent_name=AGENT,
        provider=PROVIDER,
        conversation_id=CONVERSATION,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
        **options,
    )
    events = agent_events()
    received = [event async for event in wrap(_replay(events))]
    assert received == events
    return received


async def run_reference(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    logger_provider: LoggerProvider | None = None,
) -> None:
    """The same run through ``opentelemetry-util-genai`` (reads the capture variable itself)."""
    from opentelemetry.util.genai import types as T
    from opentelemetry.util.genai.handler import TelemetryHandler

    handler = TelemetryHandler(tracer_provider, meter_provider, logger_provider)
    history = [T.InputMessage("user", [T.Text(QUESTION)])]
    requests = [T.ToolCallRequest(a, n, i) for i, n, a, _, _ in TOOLS]
    with handler.invoke_local_agent(agent_name=AGENT) as agent:
        agent.conversation_id = CONVERSATION
        agent.input_messages = history
        first = T.OutputMessage("assistant", [T.Text("".join(FIRST_TEXT)), *requests], "tool_calls")
        await _reference_chat(handler, history, FIRST_TEXT, first, "resp_1", USAGE[0])
        for call_id, name, arguments, result, failed in TOOLS:
            tool = handler.tool(name, tool_call_id=call_id, tool_type="function")
            tool.arguments = arguments
            if failed:
                tool.fail(RuntimeError(result))
            else:
                tool.tool_result = result
                tool.stop()
        second = [
            *history,
            T.InputMessage("assistant", [T.Text("".join(FIRST_TEXT)), *requests]),
            *(T.InputMessage("tool", [T.ToolCallResponse(r, i)]) for i, _, _, r, _ in TOOLS),
        ]
        answer = T.OutputMessage("assistant", [T.Text(ANSWER)], "stop")
        await _reference_chat(handler, second, ANSWER_CHUNKS, answer, "resp_2", USAGE[1])
        agent.output_messages = [answer]


async def _reference_chat(
    handler: Any,
    messages: list[Any],
    chunks: list[str],
    output: Any,
    response_id: str,
    usage: tuple[int, int],
) -> None:
    """One streamed chat call as a provider instrumentation reports it."""
    from opentelemetry.util.genai.stream import AsyncStreamWrapper

    invocation = handler.inference(PROVIDER, request_model=MODEL)
    invocation.attributes["gen_ai.conversation.id"] = CONVERSATION
    invocation.input_messages = messages
    invocation.temperature = PARAMS["temperature"]
    invocation.max_tokens = PARAMS["max_tokens"]

    class Stream(AsyncStreamWrapper[str]):
        def _process_chunk(self, chunk: str) -> None:
            invocation.response_model_name = RESPONSE_MODEL

        def _on_stream_end(self) -> None:
            invocation.response_id = response_id
            invocation.input_tokens, invocation.output_tokens = usage
            invocation.output_messages = [output]
            invocation.stop()

        def _on_stream_error(self, error: BaseException) -> None:
            invocation.fail(error)

    async for _ in Stream(_replay(chunks), invocation):
        pass
