"""A framework's model request as contract ``Message``\\ s, for ``LLMCallStart.messages``.

Adapters read what the framework sends the model (its own message objects, or OpenAI-shaped
dicts) into the contract's ``Message``; a message that does not read is kept as text in its
role, never dropped and never raised about (a request the adapter cannot read must not fail
the run). Roles outside the contract's four become ``user``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, cast

from agent_contract.events import FunctionCall, Message, Role, ToolCall

__all__ = ["as_text", "message", "openai_messages", "tool_call"]

_ROLES = frozenset({"system", "user", "assistant", "tool"})


def openai_messages(raw: Any) -> list[Message] | None:
    """OpenAI-shaped message dicts (or a bare prompt string) as ``Message``\\ s; None when
    ``raw`` is neither."""
    if isinstance(raw, str):
        return [Message(role="user", content=raw)]
    if not isinstance(raw, Iterable) or isinstance(raw, (bytes, Mapping)):
        return None
    out: list[Message] = []
    for item in raw:
        if isinstance(item, Message):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(_from_dict(item))
    return out


def _from_dict(item: Mapping[str, Any]) -> Message:
    try:
        return Message.from_dict(item)
    except (TypeError, ValueError):  # an unknown role or part: its text, in a known role
        return message(item.get("role"), as_text(item.get("content")),
                       tool_call_id=item.get("tool_call_id"))  # fmt: skip


def message(
    role: Any,
    content: str | list[dict[str, Any]] | None,
    *,
    tool_calls: list[ToolCall] | None = None,
    tool_call_id: Any = None,
) -> Message:
    """A ``Message`` whose role is one of the contract's (else ``user``)."""
    known = role if isinstance(role, str) and role in _ROLES else "user"
    return Message(
        role=cast(Role, known), content=content, tool_calls=tool_calls or None,
        tool_call_id=tool_call_id if isinstance(tool_call_id, str) else None,
    )  # fmt: skip


def tool_call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    """A requested tool call; ``arguments`` as JSON text (a dict is dumped)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
    return ToolCall(
        id=call_id if isinstance(call_id, str) else None,
        function=FunctionCall(name if isinstance(name, str) else "", text),
    )


def as_text(content: Any) -> str | None:
    """Content as plain text: a string as is, text parts joined, anything else as JSON."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, Mapping)]
        if texts and all(isinstance(t, str) for t in texts):
            return "".join(cast(list[str], texts))
    try:
        return json.dumps(content, default=str)
    except (TypeError, ValueError, RecursionError):
        return None
