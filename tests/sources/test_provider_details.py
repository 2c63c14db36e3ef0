"""Provider details: usage not reported, in-band failures, incomplete responses, history shapes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_contract.protocol import (
    Error,
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    TextDelta,
    ToolCall,
    Usage,
)
from agent_otel.testing import InMemoryTelemetry, run_script

from . import _recorded
from ._cases import HISTORY
from ._http import anthropic_client, openai_client, sse
from ._trace import attributes

pytest.importorskip("openai")
pytest.importorskip("anthropic")


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
    seen = await run_script(otel_telemetry, source, agent_name="agent")

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


async def test_compatible_servers_without_choice_or_tool_call_indexes_still_assemble() -> None:
    from agent_contract.sources.openai_chat import stream_chat

    base = {"id": "c-1", "object": "chat.completion.chunk", "created": 0, "model": "local"}

    def chunk(delta: dict[str, Any]) -> dict[str, Any]:
        return {**base, "choices": [{"delta": delta, "finish_reason": None}]}  # no "index"

    call = {"id": "t1", "type": "function", "function": {"name": "f", "arguments": '{"a":'}}
    body = sse([
        chunk({"content": "Hi"}),
        chunk({"tool_calls": [call]}),
        chunk({"tool_calls": [{"function": {"arguments": " 1}"}}]}),
        chunk({"tool_calls": [{"id": "t2", "function": {"name": "g", "arguments": "{}"}}]}),
    ], done=True)  # fmt: skip
    events = [e async for e in stream_chat(openai_client(body), HISTORY, "local")]

    calls = [
        (e.id, e.function.name, e.function.arguments) for e in events if isinstance(e, ToolCall)
    ]
    assert calls == [("t1", "f", '{"a": 1}'), ("t2", "g", "{}")]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hi"]


async def test_litellm_names_its_routing_provider_or_itself_for_a_model_it_cannot_route() -> None:
    pytest.importorskip("litellm")
    from agent_contract.sources.litellm_chat import stream_litellm

    for model, provider in (("anthropic/claude-sonnet-4-5", "anthropic"),
                            ("no-such-model-anywhere", "litellm")):  # fmt: skip
        events = stream_litellm(None, HISTORY, model, api_key="sk-never-recorded")
        start = await events.__anext__()  # the call itself is never made
        await events.aclose()
        assert isinstance(start, LLMCallStart) and start.provider == provider
        assert start.params == {"stream": True}  # the key is not a request parameter
