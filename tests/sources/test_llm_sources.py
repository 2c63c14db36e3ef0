"""The four LLM SDK sources, each driven by its real SDK over a mock HTTP transport.

Every source gets the same scripted conversation (``_recorded``) in its provider's own
stream shape and must produce the same contract events, keep the SDK's objects for the
caller, and trace to the same tree with tokens counted once, whatever way the run ends.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agent_contract.protocol import (
    AgentEvent,
    Error,
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    Usage,
)
from agent_otel.testing import InMemoryTelemetry

from . import _recorded
from ._http import Body, anthropic_client, openai_client, split, sse
from ._trace import ToolLoop, attributes, shape, tokens, watch, wrapper

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map fetch at import

pytest.importorskip("openai")
pytest.importorskip("anthropic")

HISTORY = [Message(role="system", content="Be brief."), Message(role="user", content="Weather?")]
Source = Callable[[list[Message]], AsyncIterator[AgentEvent]]


@dataclass
class Case:
    """One SDK source with what its provider reports for the scripted conversation."""

    name: str
    body: Callable[[bool], bytes]
    client: Callable[..., Any]
    source: Callable[..., Source]
    request_model: str
    response_model: str
    response_id: str
    provider: str
    finish: tuple[str, str]  # (with tool calls, with text only)
    sdk_type: str
    input_tokens: int = 120
    cache_creation: int | None = None
    error: Callable[[], bytes] = lambda: sse([{"error": {"message": "overloaded", "type": "x"}}])


def _chat(client: Any, sink: Any = None) -> Source:
    from agent_contract.sources.openai_chat import stream_chat

    return lambda history: stream_chat(client, history, "gpt-4o-mini", sink=sink, temperature=0.2)


def _responses(client: Any, sink: Any = None) -> Source:
    from agent_contract.sources.openai_responses import stream_responses

    return lambda history: stream_responses(
        client, history, "gpt-5-mini", sink=sink, temperature=0.2
    )


def _anthropic(client: Any, sink: Any = None) -> Source:
    from agent_contract.sources.anthropic_messages import stream_messages

    return lambda history: stream_messages(
        client, history, "claude-sonnet-4-5", sink=sink, max_tokens=512
    )


def _litellm(client: Any, sink: Any = None) -> Source:
    from agent_contract.sources.litellm_chat import stream_litellm

    return lambda history: stream_litellm(
        client,
        history,
        "openai/gpt-4o-mini",
        sink=sink,
        api_key="sk-never-recorded",
        temperature=0.2,
    )


def _anthropic_error() -> bytes:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    return sse([error], named=True)


CASES = [
    Case("openai_chat", lambda t: sse(_recorded.chat(tools=t), done=True), openai_client, _chat,
         "gpt-4o-mini", "gpt-4o-mini-2024-07-18", "chatcmpl-A1", "openai",
         ("tool_calls", "stop"), "ChatCompletionChunk"),
    Case("openai_responses", lambda t: sse(_recorded.responses(tools=t), named=True),
         openai_client, _responses, "gpt-5-mini", "gpt-5-mini-2025-08-07", "resp_1", "openai",
         ("completed", "completed"), "ResponseCompletedEvent"),
    Case("anthropic_messages", lambda t: sse(_recorded.messages(tools=t), named=True),
         anthropic_client, _anthropic, "claude-sonnet-4-5", "claude-sonnet-4-5-20250929",
         "msg_01A", "anthropic", ("tool_use", "end_turn"), "RawMessageStartEvent",
         cache_creation=36, error=_anthropic_error),
    # LiteLLM reports the model it was asked for (its routing name), not the server's.
    Case("litellm_chat", lambda t: sse(_recorded.chat(tools=t), done=True), openai_client,
         _litellm, "openai/gpt-4o-mini", "gpt-4o-mini", "chatcmpl-A1", "openai",
         ("tool_calls", "stop"), "ModelResponseStream"),
]  # fmt: skip
ids = [case.name for case in CASES]


def _after_text(parts: list[bytes]) -> int:
    """The index just past the first SSE event carrying answer text."""
    return next(i for i, part in enumerate(parts) if b"Sunny" in part or b"Checking" in part) + 1


def _weather(arguments: str) -> str:
    return "sunny in " + json.loads(arguments)["city"]


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_one_call_becomes_contract_events_with_the_providers_names(case: Case) -> None:
    events = [e async for e in case.source(case.client(case.body(True)))(HISTORY)]

    assert [type(e) for e in events] == [
        LLMCallStart, ReasoningDelta, TextDelta, TextDelta, ToolCall, ToolCall, Usage, LLMCallEnd,
    ]  # fmt: skip
    start, reasoning, *texts, paris, rome, usage, end = events
    assert isinstance(start, LLMCallStart) and start.messages is HISTORY
    assert (start.model, start.provider) == (case.request_model, case.provider)
    assert start.params["stream"] is True
    assert start.params.get("temperature", start.params.get("max_tokens")) in (0.2, 512)
    assert "api_key" not in start.params  # credentials never ride on the event
    assert isinstance(reasoning, ReasoningDelta) and reasoning.text == "Two cities."
    assert "".join(t.text for t in texts if isinstance(t, TextDelta)) == "Checking both."
    assert isinstance(paris, ToolCall) and isinstance(rome, ToolCall)
    assert (paris.function.name, paris.function.arguments) == ("weather", _recorded.PARIS)
    assert (rome.function.name, rome.function.arguments) == ("weather", _recorded.ROME)
    assert paris.id and rome.id and paris.id != rome.id
    assert usage == Usage(
        input_tokens=case.input_tokens, output_tokens=30, total_tokens=150,
        cache_read_tokens=64, cache_creation_tokens=case.cache_creation, reasoning_tokens=12,
        model=case.response_model,
    )  # fmt: skip
    assert end == LLMCallEnd(
        model=case.response_model, finish_reason=case.finish[0], response_id=case.response_id
    )


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_the_caller_keeps_every_sdk_object_and_every_event_passes_unchanged(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    kept: list[Any] = []
    produced: list[AgentEvent] = []
    source = case.source(case.client(case.body(True)), kept.append)

    async def tap() -> AsyncIterator[AgentEvent]:
        async for event in source(HISTORY):
            produced.append(event)
            yield event

    seen = [e async for e in wrapper(otel_telemetry)(tap())]

    assert len(seen) == len(produced) == 8
    assert all(a is b for a, b in zip(seen, produced))  # the very objects, in order
    assert case.sdk_type in {type(chunk).__name__ for chunk in kept}
    assert len(kept) >= 8  # every SDK object streamed reaches the sink


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_a_tool_loop_traces_the_same_tree_with_tokens_counted_once(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    open_spans = watch(otel_telemetry)
    client = case.client(case.body(True), case.body(False))
    agent = ToolLoop(case.source(client), {"weather": _weather})

    result = await agent.invoke(HISTORY, stream_wrapper=wrapper(otel_telemetry))

    assert result.text == "Sunny in both."
    assert [m.content for m in result.steps[0].tool_messages] == ["sunny in Paris", "sunny in Rome"]
    chat = f"chat {case.request_model}"
    assert shape(otel_telemetry) == [
        ["invoke_agent agent", [
            ["step 0", [chat, "execute_tool weather", "execute_tool weather"]],
            ["step 1", [chat]],
        ]],
    ]  # fmt: skip
    assert tokens(otel_telemetry) == 2 * case.input_tokens  # on chat spans only: counted once
    assert tokens(otel_telemetry, "gen_ai.usage.output_tokens") == 60
    agent_span = attributes(otel_telemetry, "invoke_agent")
    assert agent_span["agent_otel.usage.input_tokens"] == 2 * case.input_tokens
    assert agent_span["agent_otel.end_reason"] == "exhausted"
    chats = [dict(s.attributes or {}) for s in otel_telemetry.spans() if s.name == chat]
    assert [c["gen_ai.response.finish_reasons"] for c in chats] == [
        (case.finish[0],),
        (case.finish[1],),
    ]
    assert {c["gen_ai.provider.name"] for c in chats} == {case.provider}
    assert {c["gen_ai.response.model"] for c in chats} == {case.response_model}
    assert {c["gen_ai.response.id"] for c in chats} == {case.response_id}
    assert {c["gen_ai.usage.cache_read.input_tokens"] for c in chats} == {64}
    assert {c["gen_ai.usage.reasoning.output_tokens"] for c in chats} == {12}
    assert open_spans.open == {}


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_an_error_mid_stream_comes_out_as_the_sdks_own_exception(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    open_spans = watch(otel_telemetry)
    parts = split(case.body(False))
    body = b"".join(parts[: _after_text(parts)]) + case.error()  # some text, then the error
    raised: list[BaseException] = []

    async def recorded() -> AsyncIterator[AgentEvent]:
        try:
            async for event in case.source(case.client(body))(HISTORY):
                yield event
        except Exception as error:
            raised.append(error)
            raise

    seen: list[AgentEvent] = []
    with pytest.raises(Exception) as caught:
        async for event in wrapper(otel_telemetry)(recorded()):
            seen.append(event)

    assert [caught.value] == raised  # the same object the SDK raised
    assert type(caught.value).__module__.split(".")[0] in {"openai", "anthropic", "litellm"}
    assert any(isinstance(e, TextDelta) for e in seen)  # what came before was delivered
    chat = attributes(otel_telemetry, "chat ")
    assert chat["error.type"] == type(caught.value).__qualname__
    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.end_reason"] == "error"
    assert open_spans.open == {}


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_a_consumer_stopping_early_closes_the_http_response(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    open_spans = watch(otel_telemetry)
    body = Body(split(case.body(True)))
    events = wrapper(otel_telemetry)(case.source(case.client(body.response))(HISTORY))

    async for event in events:
        if isinstance(event, TextDelta):
            break
    await events.aclose()

    assert body.closed and body.sent < len(body.events)
    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.end_reason"] == "closed_early"
    assert open_spans.open == {}


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_cancelling_a_stalled_stream_ends_every_span(
    case: Case, otel_telemetry: InMemoryTelemetry
) -> None:
    open_spans = watch(otel_telemetry)
    parts = split(case.body(True))
    body = Body(parts, hang_after=_after_text(parts))
    first_text = asyncio.Event()

    async def consume() -> None:
        async for event in wrapper(otel_telemetry)(
            case.source(case.client(body.response))(HISTORY)
        ):
            if isinstance(event, TextDelta):
                first_text.set()

    task = asyncio.ensure_future(consume())
    await asyncio.wait_for(first_text.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert body.closed
    assert attributes(otel_telemetry, "invoke_agent")["agent_otel.end_reason"] == "cancelled"
    assert attributes(otel_telemetry, "chat ")["error.type"] == "CancelledError"
    assert open_spans.open == {}


async def test_chat_without_reported_usage_yields_no_usage_event() -> None:
    from agent_contract.sources.openai_chat import stream_chat

    chunks = [c for c in _recorded.chat(tools=False) if c["choices"]]
    client = openai_client(sse(chunks, done=True))
    events = [e async for e in stream_chat(client, HISTORY, "gpt-4o-mini")]

    assert not any(isinstance(e, Usage) for e in events)
    assert isinstance(events[-1], LLMCallEnd) and events[-1].finish_reason == "stop"


async def test_responses_failed_in_band_becomes_an_error_event(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agent_contract.sources.openai_responses import stream_responses

    events = _recorded.responses(tools=False)[:4]
    failed = events[0]["response"] | {"status": "failed", "error": {"code": "server_error",
                                                                   "message": "boom"}}  # fmt: skip
    body = sse([*events, {"type": "response.failed", "response": failed, "sequence_number": 9}])
    source = stream_responses(openai_client(body), HISTORY, "gpt-5-mini")
    seen = [e async for e in wrapper(otel_telemetry)(source)]

    assert Error(message="boom", error_type="server_error") in seen
    assert isinstance(seen[-1], LLMCallEnd) and seen[-1].finish_reason == "failed"
    assert attributes(otel_telemetry, "chat ")["error.type"] == "server_error"


async def test_responses_incomplete_names_the_reason() -> None:
    from agent_contract.sources.openai_responses import stream_responses

    events = _recorded.responses(tools=False)
    last = events[-1]
    last["type"] = "response.incomplete"
    last["response"] |= {
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
    }
    source = stream_responses(openai_client(sse(events)), HISTORY, "gpt-5-mini")
    seen = [e async for e in source]

    assert isinstance(seen[-1], LLMCallEnd) and seen[-1].finish_reason == "max_output_tokens"


async def test_history_with_tool_turns_reaches_each_provider_in_its_own_shape() -> None:
    from agent_contract.sources.anthropic_messages import stream_messages
    from agent_contract.sources.openai_responses import stream_responses

    call = ToolCall(id="call_p", function=FunctionCall("weather", _recorded.PARIS))
    history = [*HISTORY, Message(role="assistant", tool_calls=[call]),
               Message(role="tool", tool_call_id="call_p", content="sunny")]  # fmt: skip
    seen: list[Any] = []
    anthropic = anthropic_client(sse(_recorded.messages(tools=False), named=True), seen=seen)
    openai = openai_client(sse(_recorded.responses(tools=False), named=True), seen=seen)
    [_ async for _ in stream_messages(anthropic, history, "claude", max_tokens=9)]
    [_ async for _ in stream_responses(openai, history, "gpt-5-mini")]

    sent_anthropic, sent_openai = (json.loads(r.content) for r in seen)
    assert sent_anthropic["system"] == "Be brief."
    assert sent_anthropic["messages"][1]["content"][0] == {
        "type": "tool_use", "id": "call_p", "name": "weather", "input": {"city": "Paris"},
    }  # fmt: skip
    assert sent_anthropic["messages"][2]["content"][0]["tool_use_id"] == "call_p"
    assert sent_openai["instructions"] == "Be brief."
    assert [i.get("type") for i in sent_openai["input"]] == [
        None,
        "function_call",
        "function_call_output",
    ]
