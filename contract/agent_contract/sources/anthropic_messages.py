"""Anthropic Messages: a streamed ``messages.create(stream=True)`` as contract events.

Read by each event's ``type``: ``message_start`` gives the id, model and input usage (told at
once as a ``Usage`` of its own: a stream the consumer abandons keeps its prompt's tokens);
``text_delta`` / ``thinking_delta`` become ``TextDelta`` / ``ReasoningDelta``; a
``tool_use`` block is assembled from its ``input_json_delta`` parts and yielded as a
``ToolCall`` at its ``content_block_stop`` (or where another ``tool_use`` block starts at its
index: a server numbering two open blocks alike loses neither); ``message_delta`` gives the
``stop_reason`` (the provider's own word: ``end_turn``, ``tool_use``, ``max_tokens``...) and
the cumulative output usage. ``Usage.input_tokens`` is Anthropic's ``input_tokens`` plus its
cache reads and cache writes, because the GenAI conventions count cached tokens as input
(Anthropic does not); the two cache counts are kept on their own fields and
``thinking_tokens`` as reasoning tokens. A tool the provider ran (a ``server_tool_use`` block,
its input streamed as a ``tool_use``'s is, and its result block, ``web_search_tool_result``,
``code_execution_tool_result``...) ends the call with a ``ServerToolCallsEnd``: parts of its
output, no tool call.
An ``error`` event mid-stream is raised by the SDK itself, as the SDK's exception; a stream
that ends before ``message_stop`` was cut short (``cut_short``).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agent_contract.events import (
    AgentEvent,
    FunctionCall,
    LLMCallEnd,
    Message,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    Usage,
)
from agent_contract.sources._arguments import arguments_object, repaired_history
from agent_contract.sources._endpoint import at_endpoint, base_url_of
from agent_contract.sources._joined import joined
from agent_contract.sources._parts_sent import (
    ANTHROPIC,
    is_parts,
    sent_parts,
    system_text,
    untranslated,
)
from agent_contract.sources._raw_usage import counted, is_count
from agent_contract.sources._require import expect, expect_messages
from agent_contract.sources._server_tools import (
    ServerToolCallsEnd,
    anthropic_server_calls,
    item_fields,
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

__all__ = ["AnthropicAgent", "MessagesReader", "anthropic_input", "stream_messages"]

_WRITTEN = "cache_creation_input_tokens"
_INPUT_SIDE = ("input_tokens", "cache_read_input_tokens", _WRITTEN)
"""The counts of ``message_start``'s usage told at once (:meth:`MessagesReader._input_told`)."""
_SERVER_BLOCK = re.compile(r"^(server_tool_use|mcp_tool_use)$|_tool_result$")
"""The content blocks of a tool the provider runs (``server_tool_use``) and of its result
(``web_search_tool_result``, ``code_execution_tool_result``...; a ``tool_result`` is the
application's, sent, never streamed back)."""

_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


class MessagesReader:
    """Feeds on Anthropic's raw message stream events; see the module docstring."""

    __slots__ = (
        "_blocks",
        "_counts",
        "_finish",
        "_id",
        "_model",
        "_server",
        "_stopped",
        "_thinking",
        "_told",
    )

    def __init__(self) -> None:
        self._blocks: dict[int, list[Any]] = {}  # index -> [id, name, json parts]
        self._counts: dict[str, int] = {}
        self._told: dict[str, int] = {}  # the input side already told at message_start
        self._finish: str | None = None
        self._id: str | None = None
        self._model: str | None = None
        self._thinking: int | None = None
        self._server: list[tuple[Any, list[str], int]] = []  # the provider's tool blocks, in order
        self._stopped = False

    def feed(self, event: Any) -> Sequence[AgentEvent]:
        kind = event.type
        if kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                return (TextDelta(text=delta.text),) if delta.text else NOTHING
            if delta.type == "thinking_delta":
                return (ReasoningDelta(text=delta.thinking),) if delta.thinking else NOTHING
            if delta.type == "input_json_delta":
                block = self._blocks.get(event.index)
                if block is not None:
                    block[2].append(delta.partial_json)
                elif self._server and self._server[-1][2] == event.index:
                    self._server[-1][1].append(delta.partial_json)  # (input of the latest)
            return NOTHING
        if kind == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                blocks, index = self._blocks, event.index
                open_block = blocks.get(index)
                blocks[index] = [block.id, block.name, []]
                if open_block is not None:  # a block at an open one's index: that one is done
                    return (_tool_call(open_block),)
            elif isinstance(block.type, str) and _SERVER_BLOCK.search(block.type):
                # the provider's own tool, or its result
                self._server.append((block, [], event.index))
            return NOTHING
        if kind == "content_block_stop":
            done = self._blocks.pop(event.index, None)
            return NOTHING if done is None else (_tool_call(done),)
        if kind == "message_start":
            message = event.message
            self._id, self._model = message.id, message.model
            self._count(message.usage)
            return self._input_told()
        if kind == "message_delta":
            self._finish = event.delta.stop_reason or self._finish
            self._count(event.usage)
        elif kind == "message_stop":
            self._stopped = True
        return NOTHING

    def _count(self, usage: Any) -> None:
        if usage is None:
            return
        for name in _COUNTS:  # message_delta's counts are cumulative: the latest wins
            value = getattr(usage, name, None)
            if value is not None:
                self._counts[name] = value
        details = getattr(usage, "output_tokens_details", None)
        thinking = getattr(details, "thinking_tokens", None)
        self._thinking = thinking if thinking is not None else self._thinking

    def _input_told(self) -> Sequence[AgentEvent]:
        """The input side of ``message_start``'s usage as a ``Usage`` of its own, told at once:
        Anthropic bills the prompt of a stream the consumer abandons, whose last events
        (:meth:`close`'s) never come. Told only when each of its counts is a count; the
        final ``Usage`` then carries the rest (:meth:`_usage`)."""
        counts = self._counts
        given = [counts.get(name) for name in _INPUT_SIDE]
        if given[0] is None or not all(v is None or is_count(v) for v in given):
            return NOTHING
        read, written = counts.get("cache_read_input_tokens"), counts.get(_WRITTEN)
        total_in = counted(*given)
        self._told = {"input": total_in, "read": read or 0, "written": written or 0}
        return (
            Usage(
                input_tokens=total_in,
                total_tokens=total_in,
                cache_read_tokens=read,
                cache_creation_tokens=written,
                model=self._model,
            ),
        )

    def close(self) -> Sequence[AgentEvent]:
        out: list[AgentEvent]
        if not self._stopped:  # cut short: only the open blocks whose input is whole JSON
            out = cut_short("message_stop", [_tool_call(b, "") for b in self._blocks.values()])
        else:
            out = [_tool_call(block) for block in self._blocks.values()]
        self._blocks.clear()
        if self._counts:
            out.append(self._usage())
        done = {"model": self._model, "finish_reason": self._finish, "response_id": self._id}
        calls = anthropic_server_calls(_whole(block, parts) for block, parts, _ in self._server)
        self._server.clear()
        out.append(ServerToolCallsEnd(**done, calls=calls) if calls else LLMCallEnd(**done))
        return out

    def _usage(self) -> Usage:
        """The call's usage, less what :meth:`_input_told` told already (the input side a later
        count raised, as a server tool's ``message_delta`` does)."""
        counts = self._counts
        read = counts.get("cache_read_input_tokens")
        written = counts.get(_WRITTEN)
        given = counts.get("input_tokens")
        # a part that is no count adds nothing (it stays on its own field, counted there)
        total_in = counted(given, read, written) if is_count(given) else given
        out = counts.get("output_tokens")
        total = total_in + out if is_count(total_in) and is_count(out) else None
        told = self._told
        if told:
            total_in = _more(total_in, told["input"])
            read, written = _more(read, told["read"]), _more(written, told["written"])
            total = _more(total, told["input"])
        return Usage(
            input_tokens=total_in,
            output_tokens=out,
            total_tokens=total,
            cache_read_tokens=read,
            cache_creation_tokens=written,
            reasoning_tokens=self._thinking,
            model=self._model,
        )


def _more(value: Any, told: int) -> Any:
    """What ``value`` (a final count) adds to the ``told`` part of it: ``None`` for nothing
    more; a value that is no count as it is (the recorder drops and counts it)."""
    if not is_count(value):
        return value
    return value - told if value > told else None


def _whole(block: Any, parts: list[str]) -> Any:
    """A server tool's block as a dict, its ``input`` the JSON its deltas streamed (when any
    came, and it reads whole)."""
    fields = item_fields(block)
    if parts:
        try:
            fields["input"] = json.loads("".join(parts))
        except ValueError:
            fields["input"] = "".join(parts)  # (cut short: the text it got)
    return fields


def _tool_call(block: list[Any], empty: str = "{}") -> ToolCall:
    """A ``tool_use`` block's call; its input ``empty`` when no JSON part came."""
    arguments = joined("".join(block[2])) or empty
    return ToolCall(id=block[0], function=FunctionCall(block[1], arguments))


def anthropic_input(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """Contract history as Anthropic ``(system, messages)``.

    System messages join into ``system``; an assistant's tool calls become ``tool_use``
    blocks (their ``input`` by ``arguments_object``: arguments that are no JSON object go as
    ``{"INVALID_JSON": text}``) and tool messages ``tool_result`` blocks of a user turn (with
    no ``content`` when the message has none: Anthropic takes it optional, not ``null``).
    Content parts go as Anthropic's blocks (``_parts_sent``: ``text``, ``image`` with a
    ``base64`` or ``url`` source, ``document``), a part it has no form for (audio) as a text
    block saying so.
    """
    system, turns, _, _ = _request(messages)
    return system, turns


def _request(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]], bool, bool]:
    """``anthropic_input``'s pair, whether a call's arguments were repaired, and whether a
    part went as ``mark`` (untranslated)."""
    out: list[dict[str, Any]] = []
    repaired = False
    system, marked = system_text(messages)
    for m in messages:
        role, content, calls = fields(m)
        if isinstance(content, list) and content and (role != "tool" or is_parts(content)):
            content, unsent = sent_parts(content, ANTHROPIC)  # a tool's non-parts: as given
            marked = marked or unsent
        if role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id}
            if content is not None:  # optional, never null: a result of no content has none
                block["content"] = content
            out.append({"role": "user", "content": [block]})
        elif role == "assistant" and calls:
            blocks: list[dict[str, Any]] = (
                list(content)  # parts, as a user turn's go: its blocks (the agent's list kept)
                if isinstance(content, list)
                else [{"type": "text", "text": content}] * (not is_empty(content))
            )
            for call in calls:
                given, fixed = arguments_object(call.function.arguments)
                repaired = repaired or fixed
                blocks.append(
                    {"type": "tool_use", "id": call.id, "name": call.function.name, "input": given}
                )
            out.append({"role": "assistant", "content": blocks})
        elif role != "system":
            out.append({"role": role, "content": "" if is_empty(content) else content})
    return system, out, repaired, marked


_TAKES = "an anthropic.AsyncAnthropic client"
_HINT = "Make one with anthropic.AsyncAnthropic(); a model name goes in model=."


def stream_messages(
    client: Any, messages: list[Message], model: str, *, sink: Sink | None = None, **params: Any
) -> AsyncIterator[AgentEvent]:
    """One streamed ``client.messages.create`` call (an ``AsyncAnthropic``), as events.

    ``max_tokens`` is required by Anthropic: pass it in ``params``.
    """
    expect(client, "stream_messages", _TAKES, "messages.create", hint=_HINT, sdk="anthropic")
    expect_messages(messages, "stream_messages")
    start = at_endpoint(start_event(model, "anthropic", messages, params), base_url_of(client))
    system, turns, repaired, marked = _request(messages)
    if system is not None:
        params = {"system": system, **params}
    return read_stream(
        start,
        lambda: client.messages.create(model=model, messages=turns, **request(params, stream=True)),
        MessagesReader(),
        sink,
        told=(repaired_history(),) * repaired + (untranslated(),) * marked,
    )


class AnthropicAgent(OneCallAgent):
    """A contract agent making one streamed Anthropic Messages call per run."""

    source = staticmethod(stream_messages)
