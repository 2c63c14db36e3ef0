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

from agent_contract._parts import parse_content

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
    "SideCallStart",
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


def _arguments_text(arguments: Any) -> Any:
    """LiteLLM's rule for ``arguments``: None is ``""``, a dict (or list) its JSON text, any
    other value as given (one that cannot be serialised is also kept as given)."""
    if arguments is None:
        return ""
    if isinstance(arguments, (Mapping, list)):
        try:
            return json.dumps(arguments, default=str)
        except Exception:  # an unprintable value inside: LiteLLM would keep it too
            return arguments
    return arguments


@dataclass(slots=True)
class FunctionCall:
    """LiteLLM's function chunk of a tool call: ``arguments`` is the JSON text of the args.

    As lenient as LiteLLM's ``Function``: both fields may be left out (``arguments`` is then
    ``""``), and ``arguments`` given as a dict (or list) is stored as its JSON text.
    """

    name: str | None = None
    arguments: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.arguments, str):
            self.arguments = _arguments_text(self.arguments)

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"name": ..., "arguments": ...}`` (both keys always present, as LiteLLM)."""
        return {"name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FunctionCall:
        """Build from LiteLLM's dict: missing ``arguments`` falls back to ``parameters``
        (LiteLLM's legacy key), then ``""``; dict args become JSON text."""
        arguments = data.get("arguments")
        if arguments is None:
            arguments = data.get("parameters")
        name = data.get("name")
        if name is not None and not isinstance(name, str):
            raise TypeError("FunctionCall name must be a str or None")
        return cls(name=name, arguments=_arguments_text(arguments))


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


@dataclass(slots=True)
class Message:
    """One chat-history entry, OpenAI/LiteLLM shaped.

    Tool results are ``Message(role="tool", tool_call_id=..., content=...)``, so persisting a
    step into history is a plain ``list.extend``. ``content`` is a str, None, or a list of
    OpenAI/LiteLLM content parts (text, image_url, input_audio, file; see ``_parts``).
    """

    role: Role
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the OpenAI/LiteLLM message dict; keys whose value is None are omitted.

        A content part that is no mapping (a bare string, bytes) is handed on as it is, for
        the SDK to send or refuse as it does: copying it raised our exception into the run."""
        out: dict[str, Any] = {"role": self.role}
        content = self.content
        if isinstance(content, list):  # fresh part dicts; large payloads are shared, not copied
            out["content"] = [dict(part) if isinstance(part, Mapping) else part for part in content]
        elif content is not None:
            out["content"] = content
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
        of content parts, kept as a list of dicts (so ``to_dict``/``from_dict`` round-trip); a
        malformed part raises ``TypeError``. ``tool_calls`` entries may be dicts or
        ``ToolCall`` objects.
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
            content=parse_content(data.get("content")),
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
class SideCallStart(LLMCallStart):
    """A model request the framework makes beside the agent's own (a conversation summary, a
    choice of tools, a judge on an auxiliary model): a call like any, which a consumer reading
    by ``isinstance`` takes as an ``LLMCallStart``, but not the agent's, so it does not name the
    run (the run's model, provider and input are its first own call's). ``tool_call_id``: the
    tool call whose work the request does in place of its tool (a middleware answering the
    call with a model: LangChain's ``LLMToolEmulator``); its span nests under that call's."""

    tool_call_id: str | None = None


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


USAGE_COUNTS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "reasoning_tokens",
)
"""The token counts of :class:`Usage`, by field name, in its order: what is summed field by
field across a run (``model`` is no count)."""


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
