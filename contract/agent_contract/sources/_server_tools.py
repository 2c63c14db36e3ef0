"""``ServerToolCallsEnd``: an LLM call's end whose response tells tools the provider ran itself.

A provider may run a tool on its side within one request (a web search, code execution: the
"built-in", "hosted" or "native" tools of pydantic-ai, OpenAI, Anthropic and Gemini), and its
response tells the call and its outcome beside the text. The GenAI conventions tell such a call
in the chat span's output message, as a ``server_tool_call`` part and a
``server_tool_call_response`` part (no ``execute_tool`` span, no count of the run's tool
calls: the application ran nothing). An adapter ends such a call with a
``ServerToolCallsEnd``: an ``LLMCallEnd`` to any reader, whose ``calls`` agent-otel's recorder
puts in that call's output message. A subclass of a contract event, as ``UnrunCallsEnd`` is,
so the contract keeps its eleven kinds.

Each provider's items are read here once, in the official GenAI instrumentations' shapes
(``server_tool_call`` the item's own fields, ``type`` the tool's name): the Responses API's
output items (``responses_server_call``), Anthropic's content blocks
(``anthropic_server_calls``), Gemini's parts (``gemini_server_calls``) and LangChain's
standard content blocks, whatever the provider (``langchain_server_calls``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_contract.events import LLMCallEnd

__all__ = [
    "RESPONSES_SERVER_TOOLS",
    "ServerToolCall",
    "ServerToolCallsEnd",
    "anthropic_server_calls",
    "gemini_grounding",
    "gemini_server_calls",
    "item_fields",
    "langchain_server_calls",
    "responses_server_call",
]


@dataclass(frozen=True, slots=True)
class ServerToolCall:
    """A tool the provider ran: its id and name, ``call`` the details of the call (the part's
    ``server_tool_call``, its ``type`` the tool's kind) and ``response`` those of its outcome
    (the ``server_tool_call_response``), each ``None`` when the response told none."""

    id: str | None
    name: str
    call: Mapping[str, Any] | None = None
    response: Mapping[str, Any] | None = None


@dataclass(slots=True)
class ServerToolCallsEnd(LLMCallEnd):
    """The end of an LLM call whose response tells the provider's own tool calls ``calls``."""

    calls: tuple[ServerToolCall, ...] = ()


# The Responses API's output items of the tools the provider runs, by the name each is told
# by (the official OpenAI instrumentation's). A ``computer_call``, ``local_shell_call``,
# ``shell_call`` or ``apply_patch_call`` the application runs: a tool call, not one of these.
RESPONSES_SERVER_TOOLS: Mapping[str, str] = {
    "code_interpreter_call": "code_interpreter",
    "file_search_call": "file_search",
    "image_generation_call": "image_generation",
    "mcp_call": "mcp",
    "mcp_list_tools": "mcp_list_tools",
    "tool_search_call": "tool_search",
    "web_search_call": "web_search",
}


def responses_server_call(item: Any) -> ServerToolCall | None:
    """A Responses output ``item`` of a tool the provider ran, or ``None`` for any other item.

    As the official instrumentation writes it: one ``server_tool_call`` part holding the whole
    item (its ``status``, a ``failed`` one included, its results or output, its ``error``),
    ``type`` the tool's name; its id the item's ``call_id`` or ``id``; its name the item's
    (an MCP tool's) or the tool's."""
    kind = getattr(item, "type", None)
    tool = RESPONSES_SERVER_TOOLS.get(kind) if isinstance(kind, str) else None
    if tool is None:
        return None
    if kind == "tool_search_call" and getattr(item, "execution", None) != "server":
        return None  # (a tool search the application runs)
    payload = item_fields(item)
    item_id, call_id = payload.pop("id", None), payload.pop("call_id", None)
    payload.pop("type", None)
    name = payload.pop("name", None)
    payload["type"] = tool
    part_id = call_id if isinstance(call_id, str) else item_id
    return ServerToolCall(part_id if isinstance(part_id, str) else None,
                          name if isinstance(name, str) else tool, payload)  # fmt: skip


CODE_EXECUTION = "code_execution"
"""The name of a code run, the provider's (a server tool part) or the client's (an
``execute_tool`` span of a code executor: Google ADK's, AutoGen's)."""

# Anthropic's result blocks of its server tools, by the name of the tool that gave each
_ANTHROPIC_RESULTS: Mapping[str, str] = {
    "web_search_tool_result": "web_search",
    "web_fetch_tool_result": "web_fetch",
    "code_execution_tool_result": CODE_EXECUTION,
    "bash_code_execution_tool_result": "bash_code_execution",
    "text_editor_code_execution_tool_result": "text_editor_code_execution",
    "tool_search_tool_result": "tool_search",
}


def anthropic_server_calls(blocks: Iterable[Any]) -> tuple[ServerToolCall, ...]:
    """The server tools of Anthropic content ``blocks`` (objects or dicts): each
    ``server_tool_use`` (``mcp_tool_use``) block a call, its details the block's fields
    (``input``), ``type`` its name; each ``*_tool_result`` block the response of the call its
    ``tool_use_id`` names (a result of no call told: a response alone), in order."""
    calls: dict[str, list[Any]] = {}  # id -> [name, call, response]
    for block in blocks:
        fields = item_fields(block)
        kind = fields.pop("type", None)
        if kind == "server_tool_use" or kind == "mcp_tool_use":
            call_id, name = str(fields.pop("id", "")), str(fields.pop("name", ""))
            if kind == "mcp_tool_use":
                fields = {"arguments": fields.pop("input", None), **fields}
            fields["type"] = name if kind == "server_tool_use" else kind
            calls.setdefault(call_id, [name, None, None])[1] = fields
        elif isinstance(kind, str) and kind.endswith("_tool_result"):
            call_id = str(fields.pop("tool_use_id", ""))
            fields["type"] = _ANTHROPIC_RESULTS.get(kind, kind)
            calls.setdefault(call_id, [fields["type"], None, None])[2] = fields
    return tuple(ServerToolCall(key or None, *told) for key, told in calls.items())


def gemini_server_calls(parts: Sequence[Any]) -> tuple[ServerToolCall, ...]:
    """The tools Gemini ran within the request (Google GenAI ``Part``s), as the official
    instrumentation tells them: each ``tool_call`` part (a search, URL context, maps...) a call
    named by its ``tool_type`` (lowercase), its ``args`` the ``arguments``, and the
    ``tool_response`` naming its id that call's ``response``; each ``executable_code`` part a
    ``code_execution`` call (``code``, ``language``), and the ``code_execution_result`` after
    it its response (``outcome``, ``output``), Gemini numbering neither: code with no result
    in the response is no code Gemini ran (an agent's executor runs it)."""
    out: list[ServerToolCall] = []
    ran_code = any(getattr(p, "code_execution_result", None) is not None for p in parts)
    for part in parts:
        asked, told = getattr(part, "tool_call", None), getattr(part, "tool_response", None)
        code = getattr(part, "executable_code", None)
        result = getattr(part, "code_execution_result", None)
        if asked is not None:
            name = _tool_type(asked)
            out.append(ServerToolCall(asked.id, name, {"type": name, "arguments": asked.args}))
        elif told is not None:
            name = _tool_type(told)
            detail = {"type": name, "response": told.response}
            at = next((i for i, c in enumerate(out) if told.id and c.id == told.id), None)
            if at is None:  # a response of no call told
                out.append(ServerToolCall(told.id, name, None, detail))
            else:
                out[at] = ServerToolCall(told.id, out[at].name, out[at].call, detail)
        elif code is not None and ran_code:
            call = {"type": "code_execution", "code": code.code, "language": _value(code.language)}
            out.append(ServerToolCall(getattr(code, "id", None), "code_execution", call))
        elif result is not None:
            detail = {"type": "code_execution", "outcome": _value(result.outcome),
                      "output": result.output}  # fmt: skip
            last = out[-1] if out else None
            if last is not None and last.name == "code_execution" and last.response is None:
                out[-1] = ServerToolCall(last.id, last.name, last.call, detail)
            else:
                alone = getattr(result, "id", None)
                out.append(ServerToolCall(alone, "code_execution", None, detail))
    return tuple(out)


def gemini_grounding(
    grounding: Any, told: tuple[ServerToolCall, ...] = ()
) -> tuple[ServerToolCall, ...]:
    """The Google Search Gemini grounded its answer in (a response's ``grounding_metadata``:
    its ``web_search_queries`` the ``queries`` asked, its ``grounding_chunks`` the ``result``
    found), as a ``google_search`` call; none when it searched nothing, or when its search is
    among the calls ``told`` already (a ``tool_call`` part of it)."""
    queries = getattr(grounding, "web_search_queries", None)
    if not queries or any(call.name.startswith("google_search") for call in told):
        return ()
    chunks = [item_fields(chunk) for chunk in getattr(grounding, "grounding_chunks", None) or ()]
    call = {"type": "google_search", "queries": list(queries)}
    found = {"type": "google_search", "result": chunks} if chunks else None
    return (ServerToolCall(None, "google_search", call, found),)


def langchain_server_calls(blocks: Iterable[Any]) -> tuple[ServerToolCall, ...]:
    """The server tools of a LangChain message's standard ``content_blocks`` (each provider's
    own blocks translated by LangChain): each ``server_tool_call`` block a call named by its
    ``name``, its ``args`` the ``arguments``; each ``server_tool_result`` the response of the
    call its ``tool_call_id`` names (its ``status``, ``error`` for a failed one, and its
    ``output`` as the ``result``; a result of no call told: a response alone), in order."""
    calls: dict[str, list[Any]] = {}  # id -> [name, call, response]
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "server_tool_call":
            name = str(block.get("name") or "unknown")
            told = calls.setdefault(str(block.get("id") or ""), [name, None, None])
            told[0], told[1] = name, {"type": name, "arguments": block.get("args")}
        elif kind == "server_tool_result":
            told = calls.setdefault(str(block.get("tool_call_id") or ""), ["unknown", None, None])
            detail = {"type": told[0], "status": block.get("status"), "result": block.get("output")}
            told[2] = {k: v for k, v in detail.items() if v is not None}
    return tuple(ServerToolCall(key or None, *told) for key, told in calls.items())


def _tool_type(told: Any) -> str:
    """A Gemini server tool's name: its ``tool_type``, lowercase (``unknown``: none)."""
    kind = _value(getattr(told, "tool_type", None))
    return str(kind).lower() if kind else "unknown"


def item_fields(item: Any) -> dict[str, Any]:
    """An SDK object's (or a dict's) fields as plain JSON values, those unset left out."""
    if isinstance(item, Mapping):
        return {k: v for k, v in item.items() if v is not None}
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        try:  # (a field the SDK's own types do not fit: as it came, unwarned)
            dumped = dump(exclude_none=True, mode="json", warnings=False)
        except Exception:
            dumped = None
        if isinstance(dumped, dict):
            return dumped
    fields = getattr(item, "__dict__", None)
    return {k: v for k, v in fields.items() if v is not None} if fields is not None else {}


def _value(enum: Any) -> Any:
    """An enum's value (Gemini's ``language`` and ``outcome``), anything else as it is."""
    return getattr(enum, "value", enum)
