"""The event-stream vocabulary (seed 000): ``Message``, ``AgentEvent`` and its eleven kinds.

Every class is a ``@dataclass(slots=True)``: cheap to build on a hot streaming path and
closed to misspelt attributes. ``ToolCall`` and ``FunctionCall`` mirror LiteLLM's
``ChatCompletionAssistantToolCall`` field for field, so the same ``ToolCall`` instance is both
the event an agent yields and the value stored on ``Message.tool_calls``. ``to_dict`` /
``from_dict`` convert to and from the OpenAI/LiteLLM dict shape.

Error messages raised here are constant text: they never interpolate input values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

__all__ = [
    "AgentEvent",
    "Error",
    "FunctionCall",
    "JourneyMarker",
    "LLMCallEnd",
    "LLMCallStart",
    "Message",
    "PhaseMarker",
    "ReasoningDelta",
    "Role",
    "StepBoundary",
    "TextDelta",
    "ToolCall",
    "ToolResult",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]
_ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})


@dataclass(slots=True)
class AgentEvent:
    """Common base of every streamed event. Carries no fields of its own."""


@dataclass(slots=True)
class FunctionCall:
    """LiteLLM's function chunk of a tool call: ``arguments`` is the JSON text of the args."""

    name: str | None
    arguments: str

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"name": ..., "arguments": ...}`` (both keys always present, as LiteLLM)."""
        return {"name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FunctionCall:
        """Build from LiteLLM's dict: missing ``arguments`` is ``""``, non-text args become JSON."""
        arguments = data.get("arguments", "")
        if arguments is None:
            arguments = ""
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, default=str)
        name = data.get("name")
        if name is not None and not isinstance(name, str):
            raise TypeError("FunctionCall name must be a str or None")
        return cls(name=name, arguments=arguments)


# Identity sentinel: ``ToolCall.function`` needs a default so that ``type`` (which has one)
# can precede it positionally, yet a ToolCall without a function is meaningless. The factory
# hands out this one object and ``__post_init__`` rejects it, so ``function`` is required in
# practice while ``ToolCall(id=..., function=...)`` and ``ToolCall(id, "function", fn)`` work.
_NO_FUNCTION = FunctionCall(name=None, arguments="")


def _no_function() -> FunctionCall:
    return _NO_FUNCTION


@dataclass(slots=True)
class ToolCall(AgentEvent):
    """The agent decided to call a tool; also the value stored on ``Message.tool_calls``.

    Field layout is LiteLLM's: ``id``, ``type`` (always ``"function"``), ``function``.
    ``function`` is required (a missing one raises ``TypeError``); ``type`` may be omitted.
    """

    id: str | None
    type: Literal["function"] = "function"
    function: FunctionCall = field(default_factory=_no_function)

    def __post_init__(self) -> None:
        if self.function is _NO_FUNCTION:
            raise TypeError("ToolCall requires a 'function' (a FunctionCall)")

    def to_dict(self) -> dict[str, Any]:
        """Return LiteLLM's shape: ``{"id", "type": "function", "function": {name, arguments}}``."""
        return {"id": self.id, "type": self.type, "function": self.function.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        """Build from LiteLLM's dict shape; a missing ``type`` means ``"function"``."""
        function = data.get("function")
        if isinstance(function, FunctionCall):
            fn = function
        elif isinstance(function, Mapping):
            fn = FunctionCall.from_dict(function)
        else:
            raise TypeError("tool call dict needs a 'function' mapping")
        kind = data.get("type") or "function"
        if kind != "function":
            raise ValueError("tool call 'type' must be 'function'")
        call_id = data.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise TypeError("tool call 'id' must be a str or None")
        return cls(id=call_id, function=fn)


def _content_text(content: object) -> str | None:
    """Normalise an OpenAI ``content`` value: a str, None, or a list of text parts (joined)."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if not isinstance(part, Mapping) or part.get("type") != "text":
                raise TypeError("Message content parts must all be text parts")
            text = part.get("text")
            if not isinstance(text, str):
                raise TypeError("Message text part needs a str 'text'")
            texts.append(text)
        return "".join(texts)
    raise TypeError("Message content must be a str, None or a list of text parts")


@dataclass(slots=True)
class Message:
    """One chat-history entry, OpenAI/LiteLLM shaped.

    Tool results are ``Message(role="tool", tool_call_id=..., content=...)``, so persisting a
    step into history is a plain ``list.extend``.
    """

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the OpenAI/LiteLLM message dict; keys whose value is None are omitted."""
        out: dict[str, Any] = {"role": self.role}
        if self.content is not None:
            out["content"] = self.content
        if self.tool_calls is not None:
            out["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """Build from an OpenAI/LiteLLM message dict.

        Unknown keys (``refusal``, provider extras, ...) are ignored. ``content`` may be a list
        of text parts, which are joined; any other part kind raises ``TypeError`` rather than
        being dropped silently. ``tool_calls`` entries may be dicts or ``ToolCall`` objects.
        """
        role = data.get("role")
        if role not in _ROLES:
            raise ValueError("Message role must be one of: system, user, assistant, tool")
        raw_calls = data.get("tool_calls")
        tool_calls: list[ToolCall] | None = None
        if raw_calls is not None:
            tool_calls = [
                call if isinstance(call, ToolCall) else ToolCall.from_dict(call)
                for call in raw_calls
            ]
        return cls(
            role=cast(Role, role),
            content=_content_text(data.get("content")),
            tool_calls=tool_calls,
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
        )


@dataclass(slots=True)
class ToolResult(AgentEvent):
    """What one tool call returned; belongs to the ``ToolCall`` whose ``id`` is ``tool_call_id``."""

    tool_call_id: str
    content: Any = None
    name: str | None = None
    is_error: bool = False


@dataclass(slots=True)
class TextDelta(AgentEvent):
    """A chunk of assistant text."""

    text: str


@dataclass(slots=True)
class ReasoningDelta(AgentEvent):
    """A chunk of model reasoning ("thinking")."""

    text: str


@dataclass(slots=True)
class LLMCallStart(AgentEvent):
    """A model request begins. ``params`` holds request parameters (temperature, max_tokens...)."""

    model: str | None = None
    provider: str | None = None
    call_id: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    messages: list[Message] | None = None


@dataclass(slots=True)
class LLMCallEnd(AgentEvent):
    """That request finished. ``model`` is the response model; no ``call_id`` closes the latest."""

    model: str | None = None
    call_id: str | None = None
    finish_reason: str | None = None
    response_id: str | None = None


@dataclass(slots=True)
class Usage(AgentEvent):
    """Token counts of the LLM call they belong to. Every field may be None (not reported)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    reasoning_tokens: int | None = None
    model: str | None = None


@dataclass(slots=True)
class StepBoundary(AgentEvent):
    """The current step (one model call plus the tool calls it asked for) is complete."""

    index: int | None = None


@dataclass(slots=True)
class Error(AgentEvent):
    """The agent reports an error without raising. ``fatal`` marks one that ended the run."""

    message: str
    error_type: str | None = None
    fatal: bool = False


@dataclass(slots=True)
class JourneyMarker(AgentEvent):
    """This run belongs to a named user journey."""

    name: str
    journey_id: str | None = None


@dataclass(slots=True)
class PhaseMarker(AgentEvent):
    """The agent enters a named phase (planning, retrieval, answer, ...)."""

    name: str
