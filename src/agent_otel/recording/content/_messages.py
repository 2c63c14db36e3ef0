"""Chat history and responses in the GenAI conventions' message-part JSON shape.

Messages are read by shape, like events: an object with ``role``/``content``/``tool_calls``/
``tool_call_id`` attributes (our ``Message``, LiteLLM's, a look-alike) or the same keys in a
dict. The output validates against ``gen-ai-input-messages.json`` / ``-output-messages.json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from agent_otel._guard import reads_values
from agent_otel._plain import items_of

if TYPE_CHECKING:
    from agent_otel.scrubbing import Scrub

from ._fit import fit_json, size
from ._message_parts import content_part, field

reads_values(__name__)  # its reads run the agent's code: what that raises is the agent's

# Providers' names for the conventions' finish reasons (the output message's ``FinishReason``):
# Chat Completions', Anthropic's and Bedrock's, the Responses API's status, Gemini's.
_FINISH_REASONS = {
    "tool_calls": "tool_call",
    "function_call": "tool_call",
    "tool_use": "tool_call",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "completed": "stop",
    "STOP": "stop",
    "max_tokens": "length",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
}


def parse_arguments(raw: Any, count: Callable[[str], None] | None = None) -> Any:
    """Tool-call arguments as an object when they are JSON text, else as given.

    Text nested deeper than the JSON parser's recursion limit stays text, counted (``count``)
    as ``unparseable_arguments``.
    """
    if isinstance(raw, str):
        raw = str.__str__(raw)  # a str subclass as the str it is: none of its methods runs
        try:
            return json.loads(raw)
        except ValueError:
            return raw
        except RecursionError:
            if count is not None:
                count("unparseable_arguments")
            return raw
    return raw


def _text(value: Any) -> str | None:
    """``str(value)`` (a ``str`` subclass: the ``str`` it is), or None when the value cannot
    say it (its ``__str__`` raises)."""
    if isinstance(value, str):
        return str.__str__(value)
    try:
        text = str(value)
    except Exception:
        return None
    return text if type(text) is str else None


def tool_call_part(call: Any) -> dict[str, Any]:
    """A ``tool_call`` part from a LiteLLM-shaped tool call (an id that cannot be text is
    left out, a name that cannot be is empty)."""
    function = field(call, "function")
    return called_part(field(call, "id"), field(function, "name"), field(function, "arguments"))


def called_part(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """A ``tool_call`` part from a call's id, name and arguments (as :func:`tool_call_part`)."""
    said = _text(name) if name is not None else None
    part: dict[str, Any] = {"type": "tool_call", "name": said or ""}
    call_text = _text(call_id) if call_id is not None else None
    if call_text is not None:
        part["id"] = call_text
    if arguments is not None:
        part["arguments"] = parse_arguments(arguments)
    return part


def told_part(
    call_id: Any, name: Any, arguments: Any, room: int, scrub: Scrub | None = None
) -> tuple[dict[str, Any], int]:
    """The part of a tool call the model asked for, as it was told, and the bytes it took:
    its arguments copied as JSON of at most ``room`` bytes (what the response's tool calls
    have left; scrubbed by ``scrub`` before they are cut), since the agent may change or
    reuse its objects once it told them, before the response's message is written."""
    part = called_part(call_id, name, arguments)
    if "arguments" not in part:
        return part, 0
    text = fit_json(part["arguments"], room, scrub)
    part["arguments"] = json.loads(text)
    return part, size(text)


def server_parts(
    call_id: Any, name: Any, call: Any, response: Any, room: int, scrub: Scrub | None = None
) -> tuple[list[dict[str, Any]], int]:
    """The parts of a tool the provider ran: a ``server_tool_call`` part when ``call`` (its
    details) was told, a ``server_tool_call_response`` part when ``response`` was, and the
    bytes they took. Each detail keeps its ``type`` (the tool's kind: the tool's name when it
    has none); its other fields are copied as JSON within ``room`` (scrubbed by ``scrub``
    first), a detail that is no mapping as its ``content``."""
    said = _text(name) if name is not None else None
    call_text = _text(call_id) if call_id is not None else None
    ident = {"id": call_text} if call_text is not None else {}
    parts: list[dict[str, Any]] = []
    used = 0
    for key, detail in (("server_tool_call", call), ("server_tool_call_response", response)):
        if detail is None:
            continue
        fields = dict(detail) if isinstance(detail, Mapping) else {"content": detail}
        given = fields.pop("type", None)  # read as text only: its own truth may raise
        kind = (_text(given) if given is not None else None) or said or ""
        text = fit_json(fields, max(room - used, 0), scrub)
        used += size(text)
        kept = json.loads(text)
        told = {"type": kind, **kept} if isinstance(kept, dict) else {"type": kind, "content": kept}
        part = {"type": key, **ident, "name": said or kind, key: told}
        if key == "server_tool_call_response":
            del part["name"]  # (the conventions' response part names no tool)
        parts.append(part)
    return parts, used


def _content_parts(content: Any, budget: int) -> list[dict[str, Any]]:
    """A message's content as parts (a subclass of ``str`` or ``list`` read by the base type;
    content whose ``str()`` raises: no part)."""
    if content is None:
        return []
    if isinstance(content, str):
        text = str.__str__(content)
        return [{"type": "text", "content": text}] if text else []
    if isinstance(content, list):  # OpenAI/LiteLLM content parts: text, image, audio, file
        return [content_part(block, budget) for block in items_of(content)]
    said = _text(content)
    return [{"type": "text", "content": said}] if said is not None else []


def _calls(calls: Any) -> list[Any]:
    """A message's tool calls: a list's or tuple's items (read by the base type), another
    collection's; none for what holds no calls (``None``, a bool, a number, text, one call's
    mapping, an object) or is a one-shot iterator, which reading would take from the agent."""
    if isinstance(calls, (list, tuple)):
        return items_of(calls)
    if calls is None or isinstance(calls, (str, bytes, Mapping)):
        return []
    if not isinstance(calls, Iterable) or iter(calls) is calls:
        return []
    return list(calls)


def input_messages(messages: Iterable[Any], budget: int) -> list[dict[str, Any]]:
    """The chat history as ``gen_ai.input.messages`` items; inline data cut to ``budget``."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = field(message, "role")
        role = (_text(role) if role is not None else None) or "user"
        if role == "tool":
            part: dict[str, Any] = {
                "type": "tool_call_response",
                "response": field(message, "content"),
            }
            call_id = field(message, "tool_call_id")
            call_id = _text(call_id) if call_id is not None else None
            if call_id is not None:
                part["id"] = call_id
            parts = [part]
        else:
            parts = _content_parts(field(message, "content"), budget)
            parts += [tool_call_part(c) for c in _calls(field(message, "tool_calls"))]
        item: dict[str, Any] = {"role": role, "parts": parts}
        name = field(message, "name")
        name = _text(name) if name is not None else None
        if name is not None:
            item["name"] = name
        out.append(item)
    return out


def output_message(
    text: str, reasoning: str, calls: list[dict[str, Any]], finish_reason: str | None
) -> list[dict[str, Any]]:
    """One assistant response as ``gen_ai.output.messages``: its reasoning, text and the tool
    calls it asked for (their parts, :func:`told_part`), and why it finished (the conventions'
    name where a provider's is known; ``tool_call`` when it asked for tools and named no other
    reason than stopping)."""
    parts: list[dict[str, Any]] = []
    if reasoning:
        parts.append({"type": "reasoning", "content": reasoning})
    if text:
        parts.append({"type": "text", "content": text})
    parts += calls
    reason = _FINISH_REASONS.get(finish_reason or "", finish_reason) or "stop"
    if calls and reason == "stop" and any(part["type"] == "tool_call" for part in calls):
        reason = "tool_call"  # it stopped to call tools (Gemini, a framework: no name), not
        # only told the tools its provider ran (server_tool_call: it answered)
    return [{"role": "assistant", "parts": parts, "finish_reason": reason}]
