"""A framework's model request as contract messages: what ``LLMCallStart.messages`` carries.

Each framework hands its model a history in its own classes; these functions read them by
attribute name (nothing of a framework is imported) and build ``Message``\\ s, OpenAI/LiteLLM
shaped, so a tracer shows each chat span's input and the run's input like a contract agent's.

Reading a history costs 3 to 4 µs a message (a tool call's arguments become JSON text), paid
on every model call of a growing history: a waste when nobody reads the input (a tracer with
content capture off). So an adapter yields :func:`call_start`'s event, an ``LLMCallStart``
whose ``messages`` are read from a copy of the request's list the first time they are read,
then kept: a consumer sees a ``list[Message]`` as the contract says, and one that never reads
them pays one list copy per call.

Strings and content-part payloads are shared, never copied: a message costs one small object.
A value of a shape a function does not know is kept as text (``str()``), a role it does not
know is ``user``, and anything that cannot be read at all makes the request ``None`` (no input
shown): reading a request never fails the agent's run.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from agent_contract import events
from agent_contract.events import FunctionCall, Message, Role, ToolCall
from agent_contract.sources._arguments import arguments_text

__all__ = [
    "LLMCallStart",
    "SideCallStart",
    "agno_messages",
    "autogen_messages",
    "call_start",
    "remade",
    "converse_text",
    "crewai_messages",
    "google_adk_messages",
    "langchain_messages",
    "llama_index_messages",
    "openai_messages",
    "pydantic_ai_messages",
    "responses_messages",
    "smolagents_messages",
    "strands_messages",
]

# Each framework's role names, as the contract's four.
_ROLES: dict[str, Role] = {
    "system": "system", "developer": "system", "user": "user", "human": "user",
    "assistant": "assistant", "ai": "assistant", "model": "assistant", "chatbot": "assistant",
    "tool": "tool", "function": "tool",
}  # fmt: skip


def _role(value: Any) -> Role:
    """A role by its name (an enum's ``value`` too); ``user`` for one not known."""
    name = getattr(value, "value", value)
    return _ROLES.get(name, "user") if isinstance(name, str) else "user"


def _get(obj: Any, key: str) -> Any:
    """``obj[key]`` of a mapping, else ``obj.key`` (None when absent)."""
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def _text(value: Any) -> str:
    """A tool result or a part of unknown shape as text: a str as is, else JSON, else str()."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)


def _call(call_id: Any, name: Any, args: Any) -> ToolCall:
    return ToolCall(
        id=call_id if isinstance(call_id, str) else None,
        function=FunctionCall(name if isinstance(name, str) else None, arguments_text(args)),
    )


def _chat_call(call: Any) -> ToolCall:
    """A tool call of the Chat Completions shape (``id``, ``function.name`` and
    ``.arguments``), a mapping's or an object's."""
    function = _get(call, "function")
    return _call(_get(call, "id"), _get(function, "name"), _get(function, "arguments"))


def _safely(read: Callable[..., list[Message]]) -> Callable[..., list[Message] | None]:
    """``read``, returning None instead of raising (a request of a shape it cannot read)."""

    def guarded(*args: Any) -> list[Message] | None:
        try:
            return read(*args)
        except Exception:
            return None

    guarded.__doc__, guarded.__name__ = read.__doc__, read.__name__
    return guarded


def _content(
    content: Any, part: Callable[[Any], dict[str, Any] | None]
) -> str | list[dict[str, Any]] | None:
    """A message's content: text (or None) as it is; a list (or tuple) of blocks as the parts
    ``part`` reads from each (None: left out); anything else as its text."""
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, (list, tuple)):
        return _text(content)
    parts = [part(block) for block in content]
    return [p for p in parts if p is not None]


# --- LangChain (LangGraph): BaseMessage ----------------------------------------------------------
def _langchain_part(block: Any) -> dict[str, Any]:
    if isinstance(block, str):
        return {"type": "text", "text": block}
    if isinstance(block, dict) and isinstance(block.get("type"), str):
        return block
    return {"type": "text", "text": _text(block)}


@_safely
def langchain_messages(messages: Iterable[Any]) -> list[Message]:
    """LangChain messages (``on_chat_model_start``'s), or the prompt strings of a text LLM."""
    out: list[Message] = []
    for message in messages:
        if isinstance(message, str):  # a text LLM's prompt (on_llm_start)
            out.append(Message(role="user", content=message))
            continue
        kind = getattr(message, "type", None)
        role = _role(getattr(message, "role", None) if kind == "chat" else kind)
        name = getattr(message, "name", None)
        entry = Message(
            role=role,
            content=_content(getattr(message, "content", None), _langchain_part),
            name=name if isinstance(name, str) else None,
        )
        if role == "assistant":
            calls = getattr(message, "tool_calls", None)
            if calls:
                entry.tool_calls = [_call(c.get("id"), c.get("name"), c.get("args")) for c in calls]
        elif role == "tool":
            call_id = getattr(message, "tool_call_id", None)
            entry.tool_call_id = call_id if isinstance(call_id, str) else None
        out.append(entry)
    return out


# --- OpenAI Responses input items (the Agents SDK's on_llm_start) --------------------------------
_RESPONSES_TEXT = frozenset({"input_text", "output_text", "text", "refusal"})


def _responses_part(part: Any) -> dict[str, Any] | None:
    kind = _get(part, "type")
    if kind in _RESPONSES_TEXT:
        text = _get(part, "text") if kind != "refusal" else _get(part, "refusal")
        return {"type": "text", "text": text if isinstance(text, str) else _text(text)}
    if kind == "input_image" and isinstance(_get(part, "image_url"), str):
        return {"type": "image_url", "image_url": {"url": _get(part, "image_url")}}
    if isinstance(kind, str):
        return {"type": kind}  # a file, an audio clip: its kind, not its payload
    return None


@_safely
def responses_messages(instructions: Any, items: Iterable[Any]) -> list[Message]:
    """A Responses request: ``instructions`` (a system message) and its input items.

    Messages keep their role; ``function_call`` items join the assistant message before them
    as its tool calls, ``function_call_output`` items are tool messages; reasoning and
    hosted-tool items (web search, file search, computer) are left out: they are no chat turn.
    """
    out: list[Message] = []
    if isinstance(instructions, str) and instructions:
        out.append(Message(role="system", content=instructions))
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items:
        kind = _get(item, "type")
        if kind == "function_call":
            call = _call(_get(item, "call_id"), _get(item, "name"), _get(item, "arguments"))
            last = out[-1] if out else None
            if last is not None and last.role == "assistant":
                last.tool_calls = [*(last.tool_calls or ()), call]
            else:
                out.append(Message(role="assistant", tool_calls=[call]))
        elif kind == "function_call_output":
            call_id = _get(item, "call_id")
            out.append(
                Message(
                    role="tool",
                    content=_text(_get(item, "output")),
                    tool_call_id=call_id if isinstance(call_id, str) else None,
                )
            )
        elif kind in (None, "message"):
            content = _content(_get(item, "content"), _responses_part)
            out.append(Message(role=_role(_get(item, "role")), content=content))
    return out


# --- pydantic-ai: ModelRequest / ModelResponse --------------------------------------------------
def _pydantic_ai_part(item: Any) -> dict[str, Any]:
    if isinstance(item, str):
        return {"type": "text", "text": item}
    if type(item).__name__ == "ImageUrl" and isinstance(getattr(item, "url", None), str):
        return {"type": "image_url", "image_url": {"url": item.url}}
    kind = getattr(item, "kind", None)
    return {"type": kind if isinstance(kind, str) else type(item).__name__}


def _pydantic_ai_request(request: Any, out: list[Message]) -> None:
    instructions = getattr(request, "instructions", None)
    if isinstance(instructions, str) and instructions:
        out.append(Message(role="system", content=instructions))
    for part in getattr(request, "parts", ()):
        kind = getattr(part, "part_kind", None)
        if kind == "system-prompt":
            out.append(Message(role="system", content=_text(part.content)))
        elif kind == "user-prompt":
            out.append(Message(role="user", content=_content(part.content, _pydantic_ai_part)))
        elif kind in ("tool-return", "retry-prompt", "retry-feedback"):
            answer = getattr(part, "model_response", None)  # a retry: what the model is told
            content = answer() if kind != "tool-return" and callable(answer) else part.content
            call_id = getattr(part, "tool_call_id", None)
            if kind == "retry-feedback" or getattr(part, "tool_name", None) is None:
                out.append(Message(role="user", content=_text(content)))  # no tool: a reprompt
                continue
            out.append(
                Message(
                    role="tool", content=_text(content),
                    tool_call_id=call_id if isinstance(call_id, str) else None,
                    name=getattr(part, "tool_name", None),
                )
            )  # fmt: skip


def _pydantic_ai_response(response: Any, out: list[Message]) -> None:
    text: list[str] = []
    calls: list[ToolCall] = []
    for part in getattr(response, "parts", ()):
        kind = getattr(part, "part_kind", None)
        if kind == "text" and isinstance(part.content, str):
            text.append(part.content)
        elif kind == "tool-call":
            calls.append(_call(part.tool_call_id, part.tool_name, part.args))
    out.append(Message(role="assistant", content="".join(text) or None, tool_calls=calls or None))


@_safely
def pydantic_ai_messages(history: Iterable[Any], request: Any = None) -> list[Message]:
    """pydantic-ai's message history, then ``request`` (the one about to be sent) if given.

    A request's ``instructions`` (when set) become a system message before its parts.
    """
    out: list[Message] = []
    for message in (*history, request) if request is not None else history:
        if getattr(message, "kind", None) == "response":
            _pydantic_ai_response(message, out)
        else:
            _pydantic_ai_request(message, out)
    return out


# --- Agno: agno.models.message.Message ---------------------------------------------------------
@_safely
def agno_messages(messages: Iterable[Any]) -> list[Message]:
    """Agno's messages (OpenAI shaped already: ``tool_calls`` as dicts)."""
    out: list[Message] = []
    for message in messages:
        role = _role(getattr(message, "role", None))
        content = getattr(message, "content", None)
        if content is not None and not isinstance(content, (str, list)):
            content = _text(content)
        entry = Message(role=role, content=content)
        if role == "assistant":
            calls = getattr(message, "tool_calls", None)
            if calls:
                entry.tool_calls = [_chat_call(c) for c in calls]
        elif role == "tool":
            call_id = getattr(message, "tool_call_id", None)
            entry.tool_call_id = call_id if isinstance(call_id, str) else None
            name = getattr(message, "tool_name", None)
            entry.name = name if isinstance(name, str) else None
        out.append(entry)
    return out


# --- LlamaIndex: ChatMessage -------------------------------------------------------------------
def _llama_index_content(message: Any) -> tuple[str | list[dict[str, Any]] | None, list[ToolCall]]:
    """A ChatMessage's text (or parts, when it holds more than text) and its tool-call blocks."""
    blocks = getattr(message, "blocks", None)
    if not isinstance(blocks, list):
        content = getattr(message, "content", None)
        return (content if content is None or isinstance(content, str) else _text(content)), []
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    for block in blocks:
        kind = getattr(block, "block_type", None)
        if kind == "text":
            texts.append(block.text)
            parts.append({"type": "text", "text": block.text})
        elif kind == "tool_call":
            calls.append(_call(block.tool_call_id, block.tool_name, block.tool_kwargs))
        elif kind == "image" and getattr(block, "url", None) is not None:  # a URL, not inline
            parts.append({"type": "image_url", "image_url": {"url": str(block.url)}})
        elif kind not in ("thinking", "cache"):
            parts.append({"type": kind if isinstance(kind, str) else type(block).__name__})
    if len(parts) == len(texts):
        return "".join(texts) or None, calls
    return parts, calls


@_safely
def llama_index_messages(messages: Iterable[Any]) -> list[Message]:
    """LlamaIndex chat messages: text blocks as text, ``tool_call`` blocks (or OpenAI-shaped
    ``additional_kwargs["tool_calls"]``, each call once where both hold it) as tool calls,
    ``tool_call_id`` from the kwargs."""
    out: list[Message] = []
    for message in messages:
        role = _role(getattr(message, "role", None))
        content, calls = _llama_index_content(message)
        extra = getattr(message, "additional_kwargs", None) or {}
        entry = Message(role=role, content=content)
        if role == "assistant":
            held = {c.id for c in calls}  # a provider may keep a call both ways (the OpenAI LLM)
            for call in extra.get("tool_calls") or ():
                read = _chat_call(call)
                if read.id is None or read.id not in held:
                    calls.append(read)
            entry.tool_calls = calls or None
        elif role == "tool":
            call_id = extra.get("tool_call_id")
            entry.tool_call_id = call_id if isinstance(call_id, str) else None
            name = extra.get("name")
            entry.name = name if isinstance(name, str) else None
        out.append(entry)
    return out


# --- OpenAI-shaped dicts (CrewAI) -------------------------------------------------------------
@_safely
def openai_messages(messages: Any) -> list[Message]:
    """OpenAI-shaped message dicts (CrewAI's ``LLMCallStartedEvent.messages``), or a bare
    prompt string."""
    if isinstance(messages, str):
        return [Message(role="user", content=messages)]
    out: list[Message] = []
    for message in messages:
        role = _role(_get(message, "role"))
        content = _get(message, "content")
        if content is not None and not isinstance(content, (str, list)):
            content = _text(content)
        entry = Message(role=role, content=content)
        if role == "assistant":
            calls = _get(message, "tool_calls") or ()
            entry.tool_calls = [
                _call(_get(c, "id"), _get(_get(c, "function"), "name"),
                      _get(_get(c, "function"), "arguments"))
                for c in calls
            ] or None  # fmt: skip
        elif role == "tool":
            call_id = _get(message, "tool_call_id")
            entry.tool_call_id = call_id if isinstance(call_id, str) else None
        out.append(entry)
    return out


def _unrepr(value: Any) -> Any:
    """A value CrewAI's event serializer cut to its ``repr()`` (it reprs what lies five levels
    deep: a tool call's function name and arguments), read back; anything else as given."""
    if isinstance(value, str) and len(value) > 1 and value[0] == value[-1] == "'":
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    return value


@_safely
def crewai_messages(messages: Any) -> list[Message]:
    """CrewAI's ``LLMCallStartedEvent.messages``: OpenAI-shaped dicts whose tool calls' names
    and arguments CrewAI's serializer turned into their ``repr()`` (read back here; its provider
    sends them as they were)."""
    read = openai_messages(messages)
    if read is None:
        return []
    for message in read:
        for call in message.tool_calls or ():
            name, arguments = _unrepr(call.function.name), _unrepr(call.function.arguments)
            call.function.name = name if isinstance(name, str) else call.function.name
            call.function.arguments = arguments_text(arguments)
    return read


# --- AutoGen: autogen_core.models LLMMessage ---------------------------------------------------
_AUTOGEN_ROLES: dict[str, Role] = {"SystemMessage": "system", "AssistantMessage": "assistant"}


@_safely
def autogen_messages(messages: Iterable[Any]) -> list[Message]:
    """AutoGen's ``LLMMessage``\\ s by class name: a ``FunctionExecutionResultMessage`` is one
    tool message per result, an ``AssistantMessage`` of ``FunctionCall``\\ s the calls (its
    ``thought`` the text); a user message's images are left out."""
    out: list[Message] = []
    for message in messages:
        kind, content = type(message).__name__, message.content
        if kind == "FunctionExecutionResultMessage":
            out += [Message(role="tool", content=_text(r.content), tool_call_id=r.call_id)
                    for r in content]  # fmt: skip
        elif kind == "AssistantMessage" and isinstance(content, list):
            calls = [_call(c.id, c.name, c.arguments) for c in content]
            thought = getattr(message, "thought", None)
            out.append(Message(role="assistant", content=thought, tool_calls=calls or None))
        else:
            if not isinstance(content, str):  # a user message's text and images
                content = "".join(part for part in content if isinstance(part, str))
            out.append(Message(role=_AUTOGEN_ROLES.get(kind, "user"), content=content))
    return out


# --- Google ADK: google.genai Content ----------------------------------------------------------
def _genai_text(parts: Any) -> str:
    return "".join(p.text for p in parts or () if isinstance(p.text, str) and not p.thought)


@_safely
def google_adk_messages(system: Any, contents: Iterable[Any]) -> list[Message]:
    """An ``LlmRequest``'s system instruction (text or ``Content``) and contents: a
    ``function_response`` part is a tool message of its own, ``function_call`` parts the
    model's calls, thoughts left out."""
    out: list[Message] = []
    if system is not None:
        text = system if isinstance(system, str) else _genai_text(getattr(system, "parts", None))
        if text:
            out.append(Message(role="system", content=text))
    for content in contents:
        parts = content.parts or ()
        calls = [_call(p.function_call.id, p.function_call.name, p.function_call.args or {})
                 for p in parts if p.function_call is not None]  # fmt: skip
        text = _genai_text(parts)
        if text or calls:
            role: Role = "assistant" if content.role == "model" else "user"
            out.append(Message(role=role, content=text or None, tool_calls=calls or None))
        for part in parts:
            response = part.function_response
            if response is not None:
                out.append(Message(role="tool", content=_text(response.response),
                                   tool_call_id=response.id))  # fmt: skip
    return out


# --- Strands: Bedrock Converse messages --------------------------------------------------------
def converse_text(blocks: Iterable[Any]) -> Any:
    """Converse content blocks' text joined when every block is text, else the blocks."""
    blocks = list(blocks)
    texts = [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return "".join(texts) if len(texts) == len(blocks) else blocks


@_safely
def strands_messages(system: Any, messages: Iterable[Any]) -> list[Message]:
    """The agent's system prompt and its Converse ``messages``: ``toolUse`` blocks are the
    model's calls, each ``toolResult`` a tool message of its own."""
    out: list[Message] = []
    if isinstance(system, str) and system:
        out.append(Message(role="system", content=system))
    for message in messages:
        blocks = [b for b in message.get("content") or () if isinstance(b, dict)]
        texts = [b["text"] for b in blocks if isinstance(b.get("text"), str)]
        calls = [_call(u.get("toolUseId"), u.get("name"), u.get("input") or {})
                 for b in blocks if isinstance(u := b.get("toolUse"), dict)]  # fmt: skip
        if texts or calls:
            out.append(Message(role=_role(message.get("role")), content="".join(texts) or None,
                               tool_calls=calls or None))  # fmt: skip
        for block in blocks:
            result = block.get("toolResult")
            if isinstance(result, dict):
                content = _text(converse_text(result.get("content") or ()))
                call_id = result.get("toolUseId")
                out.append(
                    Message(
                        role="tool",
                        content=content,
                        tool_call_id=call_id if isinstance(call_id, str) else None,
                    )
                )
    return out


# --- smolagents: ChatMessage -------------------------------------------------------------------
_SMOLAGENTS_ROLES: dict[str, Role] = {"tool-call": "assistant", "tool-response": "user"}


@_safely
def smolagents_messages(messages: Iterable[Any]) -> list[Message]:
    """smolagents' ``ChatMessage``\\ s (or their dicts) in the roles its API models send them:
    its memory writes tool calls and observations as text, a ``tool-call`` message going out as
    the assistant's, a ``tool-response`` one as the user's; text parts joined, an image part
    kept as a part."""
    out: list[Message] = []
    for message in messages:
        role = _get(message, "role")
        name = getattr(role, "value", role)
        content = _get(message, "content")
        if isinstance(content, list):
            texts = [_get(p, "text") for p in content]
            if all(isinstance(text, str) for text in texts):
                content = "".join(texts)
            else:
                content = [p if isinstance(p, dict) else {"type": "text", "text": _text(p)}
                           for p in content]  # fmt: skip
        elif content is not None and not isinstance(content, str):
            content = _text(content)
        entry = Message(role=_SMOLAGENTS_ROLES.get(name) or _role(name), content=content)
        calls = _get(message, "tool_calls")
        if calls:
            entry.tool_calls = [_chat_call(c) for c in calls]
        out.append(entry)
    return out


# --- the event ---------------------------------------------------------------------------------
_MESSAGES = events.LLMCallStart.__dict__["messages"]  # the base class's slot


class _ReadWhenRead:
    """The ``messages`` of a start event read from the framework's request when first read
    (module doc); setting them replaces the request. No layout of its own (each subclass has
    the ``_request`` slot), so that a start event and a side call's, each with fields of its
    own, can both have it."""

    __slots__ = ()

    @property
    def messages(self) -> list[Message] | None:
        event: Any = self  # (its subclass's slot)
        request = getattr(event, "_request", None)
        if request is not None:
            event._request = None
            read, args = request
            _MESSAGES.__set__(event, read(*args))
        value: list[Message] | None = _MESSAGES.__get__(event, type(event))
        return value

    @messages.setter
    def messages(self, value: list[Message] | None) -> None:
        event: Any = self
        event._request = None
        _MESSAGES.__set__(event, value)


class LLMCallStart(_ReadWhenRead, events.LLMCallStart):
    """``events.LLMCallStart`` whose ``messages`` are read from the framework's request when
    first read (module doc). Still named ``LLMCallStart``: consumers read events by class
    name, and ``collect()`` by ``isinstance``. Setting ``messages`` replaces the request."""

    __slots__ = ("_request",)
    _request: tuple[Callable[..., list[Message] | None], tuple[Any, ...]] | None


class SideCallStart(_ReadWhenRead, events.SideCallStart):
    """``events.SideCallStart`` (a request beside the agent's own) whose ``messages`` are read
    when first read, as ``LLMCallStart``'s here."""

    __slots__ = ("_request",)
    _request: tuple[Callable[..., list[Message] | None], tuple[Any, ...]] | None


def call_start(
    model: Any,
    provider: Any,
    params: dict[str, Any],
    read: Callable[..., list[Message] | None],
    *request: Any,
    side: bool = False,
) -> LLMCallStart | SideCallStart:
    """An ``LLMCallStart`` whose ``messages`` are ``read(*request)``, computed when first read;
    a ``SideCallStart`` when ``side`` (a request beside the agent's own).

    Pass the framework's lists as copies (``tuple(history)``): a framework may grow its own
    list after the call (the next call's messages), and the event must keep this call's.
    """
    kind = SideCallStart if side else LLMCallStart
    start = kind(model=model, provider=provider, params=params)
    start._request = (read, request)
    return start


_Start = TypeVar("_Start", bound=LLMCallStart)


def remade(start: events.LLMCallStart, kind: type[_Start], **fields: Any) -> _Start:
    """``start`` made again as a ``kind``, a start of this module's with ``fields`` of its own
    (a call's server, its conversation): its model, provider, call id, params and messages
    kept, a request read only when first read staying so."""
    request = getattr(start, "_request", None)
    out = kind(
        model=start.model,
        provider=start.provider,
        call_id=start.call_id,
        params=start.params,
        messages=None if request is not None else start.messages,
        **fields,
    )
    out._request = request
    return out
