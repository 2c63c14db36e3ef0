"""Message / ToolCall construction and conversion to and from the OpenAI/LiteLLM dict shape."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from agent_contract.protocol import FunctionCall, Message, TextDelta, ToolCall, ToolResult


def _call(call_id: str | None = "call_1", name: str | None = "search") -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments='{"q": "x"}'))


def test_toolcall_to_dict_is_litellm_shape() -> None:
    assert _call().to_dict() == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "search", "arguments": '{"q": "x"}'},
    }


@pytest.mark.parametrize("with_type", [True, False])
def test_toolcall_from_dict_accepts_missing_type(with_type: bool) -> None:
    data: dict[str, Any] = {"id": "c", "function": {"name": "f", "arguments": "{}"}}
    if with_type:
        data["type"] = "function"
    call = ToolCall.from_dict(data)
    assert call == ToolCall(id="c", type="function", function=FunctionCall("f", "{}"))


def test_toolcall_from_dict_normalises_arguments() -> None:
    call = ToolCall.from_dict({"id": None, "function": {"name": None, "arguments": {"a": 1}}})
    assert call.function.arguments == '{"a": 1}'
    assert call.id is None
    assert ToolCall.from_dict({"id": "x", "function": {"name": "f"}}).function.arguments == ""


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "x"},
        {"id": "x", "function": "not a mapping"},
        {"id": "x", "type": "code", "function": {"name": "f", "arguments": ""}},
        {"id": 3, "function": {"name": "f", "arguments": ""}},
    ],
)
def test_toolcall_from_dict_rejects_malformed(bad: dict[str, Any]) -> None:
    with pytest.raises((TypeError, ValueError)):
        ToolCall.from_dict(bad)


def test_toolcall_roundtrip_and_is_an_event_and_history_value() -> None:
    call = _call()
    assert ToolCall.from_dict(call.to_dict()) == call
    message = Message(role="assistant", tool_calls=[call])
    assert message.tool_calls is not None and message.tool_calls[0] is call


def test_message_to_dict_omits_none_keys() -> None:
    assert Message(role="user", content="hi").to_dict() == {"role": "user", "content": "hi"}
    assistant = Message(role="assistant", tool_calls=[_call()])
    assert assistant.to_dict() == {"role": "assistant", "tool_calls": [_call().to_dict()]}
    tool = Message(role="tool", content="42", tool_call_id="call_1", name="search")
    assert tool.to_dict() == {
        "role": "tool",
        "content": "42",
        "tool_call_id": "call_1",
        "name": "search",
    }
    # An empty string is a value, not an absence.
    assert Message(role="assistant", content="").to_dict() == {"role": "assistant", "content": ""}


@pytest.mark.parametrize(
    "message",
    [
        Message(role="system", content="be brief"),
        Message(role="user", content="hello", name="alice"),
        Message(role="assistant", content="thinking", tool_calls=[_call(), _call("call_2")]),
        Message(role="tool", content='{"ok": true}', tool_call_id="call_2"),
    ],
)
def test_message_roundtrip(message: Message) -> None:
    assert Message.from_dict(message.to_dict()) == message


def test_message_from_dict_litellm_extras() -> None:
    data = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": ""}}],
        "provider_specific_fields": {"x": 1},
    }
    message = Message.from_dict(data)
    assert message.content is None
    assert message.tool_calls == [ToolCall(id="a", function=FunctionCall("f", ""))]
    parts = {
        "role": "user",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    }
    assert Message.from_dict(parts).content == parts["content"], "parts are kept, not joined"


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "developer", "content": "x"},
        {"content": "x"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": 5}}]},
        {"role": "user", "content": [{"type": "text"}]},
        {"role": "user", "content": ["not a part"]},
        {"role": "user", "content": 42},
    ],
)
def test_message_from_dict_rejects_malformed(bad: dict[str, Any]) -> None:
    with pytest.raises((TypeError, ValueError)):
        Message.from_dict(bad)


def test_events_use_slots() -> None:
    delta = TextDelta(text="a")
    with pytest.raises((AttributeError, TypeError)):
        delta.txt = "b"  # type: ignore[attr-defined]
    result = ToolResult(tool_call_id="c")
    assert (result.content, result.name, result.is_error) == (None, None, False)
    assert dataclasses.replace(result, content=1).content == 1
