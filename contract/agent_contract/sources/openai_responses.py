"""The OpenAI Responses API: a streamed ``responses.create`` as contract events.

Read by each event's ``type``: ``response.output_text.delta`` (and ``refusal.delta``, the
visible answer too) become ``TextDelta``; ``response.reasoning_summary_text.delta`` and
``response.reasoning_text.delta`` become ``ReasoningDelta``. A function call is assembled
from ``output_item.added`` and its ``function_call_arguments.delta`` events and yielded as
a ``ToolCall`` (id = the ``call_id`` its output must name) at ``output_item.done``, whose
item is authoritative. A tool the provider ran (a ``web_search_call``, ``file_search_call``,
``code_interpreter_call``, ``mcp_call``, ``image_generation_call``... item, done or in the
terminal event's whole response) ends the call with a ``ServerToolCallsEnd``: a
``server_tool_call`` part of its output, no tool call; one the application runs (a
``computer_call``, ``local_shell_call``, ``shell_call``, ``apply_patch_call``) is a ``ToolCall``
named ``computer``, ``local_shell``, ``shell``, ``apply_patch``, its ``action`` (``operation``)
the arguments. ``response.completed`` /
``incomplete`` / ``failed`` carry usage (cached input and reasoning tokens included) and the
status: ``LLMCallEnd.finish_reason``
is the provider's own word, ``incomplete_details.reason`` when incomplete, else ``status``.
A ``response.failed`` or ``error`` event also becomes an ``Error`` event (not fatal: the
agent decides); the SDK raises for HTTP-level stream errors itself.

A request continuing a conversation the provider keeps (its ``conversation``) starts as a
``ConversationCallStart`` naming it (``agent_contract.sources._conversation``).

``ResponsesReader`` is shared with the OpenAI Agents SDK adapter, whose raw events are these.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agent_contract.events import (
    AgentEvent,
    Error,
    FunctionCall,
    LLMCallEnd,
    Message,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    Usage,
)
from agent_contract.sources._arguments import json_text
from agent_contract.sources._conversation import in_conversation, requested_conversation
from agent_contract.sources._endpoint import at_endpoint, base_url_of
from agent_contract.sources._joined import joined
from agent_contract.sources._parts_sent import (
    RESPONSES_ASSISTANT,
    RESPONSES_INPUT,
    is_parts,
    sent_parts,
    system_text,
    untranslated,
)
from agent_contract.sources._provider_names import openai_client_provider
from agent_contract.sources._require import expect, expect_messages
from agent_contract.sources._server_tools import (
    RESPONSES_SERVER_TOOLS,
    ServerToolCall,
    ServerToolCallsEnd,
    item_fields,
    responses_server_call,
)
from agent_contract.sources._stream import (
    NOTHING,
    OneCallAgent,
    Sink,
    cut_short,
    read_stream,
    request,
    start_event,
)
from agent_contract.sources._turns import fields, is_empty
from agent_contract.sources.openai_chat import OPENAI_CLIENT, OPENAI_CLIENT_HINT

__all__ = ["OpenAIResponsesAgent", "ResponsesReader", "response_input", "stream_responses"]

_TEXT = frozenset({"response.output_text.delta", "response.refusal.delta"})
_REASONING = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})
_ENDS = frozenset({"response.completed", "response.incomplete", "response.failed"})
_CLIENT_TOOLS = {
    "computer_call": ("computer", "action"),
    "local_shell_call": ("local_shell", "action"),
    "shell_call": ("shell", "action"),
    "apply_patch_call": ("apply_patch", "operation"),
}
"""The items of the built-in tools the application runs (the model asks, the client answers
with their ``*_output`` item): each a tool call by the tool's name, and the field it asks with."""


class ResponsesReader:
    """Feeds on Responses stream events; see the module docstring."""

    __slots__ = ("_calls", "_done", "_finish", "_id", "_model", "_server", "_usage")

    def __init__(self) -> None:
        self._calls: dict[str, list[str]] = {}  # item id -> [call_id, name, arguments]
        self._done = False
        self._finish: str | None = None
        self._id: str | None = None
        self._model: str | None = None
        self._server: dict[Any, ServerToolCall] = {}  # the provider's tool items, by item id
        self._usage: Any = None

    @property
    def done(self) -> bool:
        """Whether the stream reached its terminal ``response.*`` event."""
        return self._done

    def feed(self, event: Any) -> Sequence[AgentEvent]:
        kind = event.type
        if kind in _TEXT:
            return (TextDelta(text=event.delta),) if event.delta else NOTHING
        if kind in _REASONING:
            return (ReasoningDelta(text=event.delta),) if event.delta else NOTHING
        if kind == "response.function_call_arguments.delta":
            call = self._calls.get(event.item_id)
            if call is not None:
                call[2] += event.delta or ""
            return NOTHING
        if kind == "response.output_item.added" or kind == "response.output_item.done":
            return self._item(event.item, kind == "response.output_item.done")
        if kind == "response.created" or kind == "response.in_progress":
            self._response(event.response)
            return NOTHING
        if kind in _ENDS:
            return self._end(event.response)
        if kind == "error":
            return (Error(message=str(event.message), error_type=event.code),)
        return NOTHING

    def _item(self, item: Any, done: bool) -> Sequence[AgentEvent]:
        kind = getattr(item, "type", None)
        if kind != "function_call":
            if done and kind in _CLIENT_TOOLS:
                return (_client_call(item, *_CLIENT_TOOLS[kind]),)
            if done:
                self._ran(item)
            return NOTHING
        key = item.id or item.call_id
        if not done:
            self._calls[key] = [item.call_id, item.name, item.arguments or ""]
            return NOTHING
        self._calls.pop(key, None)
        return (ToolCall(id=item.call_id, function=FunctionCall(item.name, item.arguments)),)

    def _ran(self, item: Any) -> None:
        """Keeps ``item`` if it tells a tool the provider ran (the latest told of an id)."""
        call = responses_server_call(item)
        if call is not None:
            self._server[call.id if call.id is not None else len(self._server)] = call

    def _response(self, response: Any) -> None:
        self._id = response.id or self._id
        self._model = response.model or self._model

    def _end(self, response: Any) -> Sequence[AgentEvent]:
        self._response(response)
        self._done = True
        self._usage = response.usage
        for item in response.output or ():  # the whole response: its items none streamed
            if getattr(item, "type", None) in RESPONSES_SERVER_TOOLS:
                self._ran(item)
        details = response.incomplete_details
        self._finish = (details.reason if details is not None else None) or response.status
        error = response.error
        if error is None:
            return NOTHING
        return (Error(message=str(error.message), error_type=str(error.code)),)

    def close(self) -> Sequence[AgentEvent]:
        calls = [  # calls never done: as they arrived when a terminal event came
            ToolCall(id=call_id, function=FunctionCall(name, joined(arguments)))
            for call_id, name, arguments in self._calls.values()
        ]
        # no terminal event: cut short, so only the calls whose arguments are whole
        out: list[AgentEvent] = [*calls] if self._done else cut_short("response.completed", calls)
        self._calls.clear()
        if self._usage is not None:
            out.append(responses_usage(self._usage, self._model))
        done = {"model": self._model, "finish_reason": self._finish, "response_id": self._id}
        ran = tuple(self._server.values())
        self._server.clear()
        out.append(ServerToolCallsEnd(**done, calls=ran) if ran else LLMCallEnd(**done))
        return out


def _client_call(item: Any, name: str, asks: str) -> ToolCall:
    """A call of a built-in tool the application runs (its ``call_id`` the id its output
    names), its arguments the item's ``asks`` field (the action, the patch) as JSON."""
    asked = item_fields(item).get(asks)
    return ToolCall(id=item.call_id, function=FunctionCall(name, json.dumps(asked)))


def responses_usage(usage: Any, model: str | None) -> Usage:
    """A Responses ``usage`` object as ``Usage`` (``input_tokens`` include cached); a count it
    lacks (a usage that is no object: a string, a number) is not reported."""
    cached = getattr(getattr(usage, "input_tokens_details", None), "cached_tokens", None)
    reasoning = getattr(getattr(usage, "output_tokens_details", None), "reasoning_tokens", None)
    return Usage(
        input_tokens=getattr(usage, "input_tokens", None),
        output_tokens=getattr(usage, "output_tokens", None),
        total_tokens=getattr(usage, "total_tokens", None),
        cache_read_tokens=cached,
        reasoning_tokens=reasoning,
        model=model,
    )


def response_input(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """Contract history as Responses ``(instructions, input items)``.

    System messages join into ``instructions``; an assistant's tool calls become
    ``function_call`` items and tool messages ``function_call_output`` items (a result that
    is no text nor parts as ``json_text`` writes it: strict JSON, whatever it holds). Content
    parts go in the Responses API's forms (``_parts_sent``: ``input_text``, ``input_image``,
    ``input_file``; an assistant's ``output_text`` and ``refusal``), a part it has no form for
    (audio; an image or a file in an assistant message) as a text part saying so.
    """
    instructions, items, _ = _request(messages)
    return instructions, items


def _request(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]], bool]:
    """``response_input``'s pair, and whether a part went as ``mark`` (untranslated)."""
    items: list[dict[str, Any]] = []
    instructions, marked = system_text(messages)
    for m in messages:
        role, content, calls = fields(m)
        if role == "tool":
            if isinstance(content, str):
                output: Any = content
            elif not is_empty(content) and is_parts(content):
                output, unsent = sent_parts(content, RESPONSES_INPUT)
                marked = marked or unsent
            else:
                output = json_text(content)[0]
            items.append(
                {"type": "function_call_output", "call_id": m.tool_call_id, "output": output}
            )
        elif role != "system":
            if isinstance(content, list) and content:
                target = RESPONSES_ASSISTANT if role == "assistant" else RESPONSES_INPUT
                content, unsent = sent_parts(content, target)
                marked = marked or unsent
            if not is_empty(content):
                items.append({"role": role, "content": content})
            for call in calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.function.name,
                        "arguments": call.function.arguments,
                    }
                )
    return instructions, items, marked


def stream_responses(
    client: Any, messages: list[Message], model: str, *, sink: Sink | None = None, **params: Any
) -> AsyncIterator[AgentEvent]:
    """One streamed ``client.responses.create`` call (an ``AsyncOpenAI``), as events."""
    expect(
        client,
        "stream_responses",
        OPENAI_CLIENT,
        "responses.create",
        hint=OPENAI_CLIENT_HINT,
        sdk="openai",
    )
    expect_messages(messages, "stream_responses")
    start = in_conversation(
        at_endpoint(
            start_event(model, openai_client_provider(client), messages, params),
            base_url_of(client),
        ),
        requested_conversation(params),
    )
    instructions, items, marked = _request(messages)
    if instructions is not None:
        params = {"instructions": instructions, **params}
    return read_stream(
        start,
        lambda: client.responses.create(model=model, input=items, **request(params, stream=True)),
        ResponsesReader(),
        sink,
        told=(untranslated(),) if marked else NOTHING,
    )


class OpenAIResponsesAgent(OneCallAgent):
    """A contract agent making one streamed Responses API call per run."""

    source = staticmethod(stream_responses)
