"""OpenAI Chat Completions: a streamed ``chat.completions.create`` as contract events.

``ChatCompletionsReader`` reads chunks by attribute name, so the OpenAI SDK's
``ChatCompletionChunk`` and LiteLLM's ``ModelResponseStream`` (the same shape) share it.
Per chunk of the first choice: ``reasoning_content`` / ``reasoning`` (the OpenAI-compatible
servers' reasoning field) becomes ``ReasoningDelta``, ``content`` a ``TextDelta``; tool-call
deltas are assembled by ``index`` (by ``id`` when a server sends none) and become one
``ToolCall`` each, in index order, when the stream ends (a stream ending with no
``finish_reason`` was cut short: ``cut_short``'s ``Error``, and only the calls whose arguments
are whole JSON). The last chunk's ``usage``
(``stream_options={"include_usage": True}``) becomes ``Usage`` with ``cached_tokens`` as
cache reads and ``reasoning_tokens``; ``LLMCallEnd`` carries the response ``model``, ``id``
and ``finish_reason`` as the provider names them.

Every field is read as ``getattr`` reads it. The reasoning names, which OpenAI's own deltas
never declare, are the costly ones: on a pydantic model each missing name runs pydantic's
``__getattr__`` and raises an ``AttributeError``, about 2,000 instructions, twice a chunk. So a
delta whose class ``PlainModels`` has found plain (nothing on it answers either name) has
them read from its own ``__dict__`` and extras, where ``getattr`` would find them, when those
are exact dicts; every other object, and every other field, is read by attribute (reading a
field a model has from ``__dict__`` costs as much here as the attribute read).

Needs the ``openai`` package (extra ``openai``) only for ``OpenAIChatAgent``'s client.
"""

from __future__ import annotations

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
from agent_contract.sources._arguments import arguments_text
from agent_contract.sources._endpoint import at_endpoint, base_url_of
from agent_contract.sources._joined import joined
from agent_contract.sources._provider_names import openai_client_provider
from agent_contract.sources._require import expect, expect_messages
from agent_contract.sources._stream import (
    NOTHING,
    OneCallAgent,
    PlainModels,
    Sink,
    cut_short,
    optional_field,
    read_stream,
    request,
    start_event,
)

__all__ = ["ChatCompletionsReader", "OpenAIChatAgent", "chat_usage", "stream_chat"]


class _Call:
    """One tool call being assembled from its deltas; ``order`` places it among the others."""

    __slots__ = ("arguments", "id", "name", "order")

    def __init__(self, order: tuple[float, int]) -> None:
        self.id: Any = None
        self.name = ""
        self.arguments = ""
        self.order = order


class ChatCompletionsReader:
    """Feeds on Chat Completions chunks (OpenAI's or LiteLLM's); see the module docstring."""

    __slots__ = ("_calls", "_finish", "_id", "_model", "_replaced", "_usage")

    def __init__(self) -> None:
        self._calls: dict[Any, _Call] = {}  # by index, else by id (or arrival)
        self._replaced: list[_Call] = []  # calls a later call took the key of
        self._finish: str | None = None
        self._id: str | None = None
        self._model: str | None = None
        self._usage: Any = None

    def feed(self, chunk: Any) -> Sequence[AgentEvent]:
        self._id = chunk.id or self._id
        self._model = chunk.model or self._model
        try:
            usage = chunk.usage
        except AttributeError:  # getattr(chunk, "usage", None), without the builtin's call
            usage = None
        if usage is not None:
            self._usage = usage
        out: Sequence[AgentEvent] = NOTHING
        for choice in chunk.choices or ():
            if choice.index:  # n > 1: the contract has one answer per call (None counts as 0)
                continue
            delta = choice.delta
            if delta is not None:
                if (
                    id(type(delta)) in _PLAIN
                    and type(fields := delta.__dict__) is dict
                    and "reasoning_content" not in fields
                    and "reasoning" not in fields
                    and "__private_attributes__" not in fields  # pydantic's __getattr__ reads it
                ):
                    # A plain model (PlainModels) lacking both names: getattr finds them in its
                    # extras or nowhere, so they are read there, without pydantic's __getattr__
                    # raising an AttributeError per missing name (about 2,000 instructions each).
                    try:
                        extra = delta.__pydantic_extra__
                    except AttributeError:  # not set: pydantic reads no extras either
                        extra = None
                    if extra is None or type(extra) is dict:
                        reasoning = (
                            (extra.get("reasoning_content") or extra.get("reasoning"))
                            if extra
                            else None
                        )
                    else:  # extras of another kind (set by hand): as getattr reads them
                        reasoning = optional_field(delta, "reasoning_content", "reasoning")
                else:
                    reasoning = _reasoning(delta)
                if reasoning and isinstance(reasoning, str):
                    out = (*out, ReasoningDelta(reasoning))
                content = delta.content
                if content:
                    text = TextDelta(content)  # positional: no kwargs dict
                    out = (*out, text) if out else (text,)  # a 1-tuple, not a list, mostly
                if delta.tool_calls:
                    self._assemble(delta.tool_calls)
            if choice.finish_reason:
                self._finish = choice.finish_reason
        return out

    def _assemble(self, deltas: Any) -> None:
        calls = self._calls
        for delta in deltas:
            if delta is None:  # a null among the deltas (the SDK builds chunks unvalidated)
                continue
            ident, index = delta.id, delta.index
            if type(ident) is not str and issubclass(type(ident), str):  # a str subclass: its str
                ident = str.__str__(ident)
            named = type(ident) is str and ident != ""
            if type(index) is not int:  # an int subclass as its int; a bool is no index
                is_int = issubclass(type(index), int) and type(index) is not bool
                index = int.__int__(index) if is_int else None
            if index is not None:
                key: Any = index
            elif named:  # some compatible servers send no index: by id
                key = ident
            elif ident is None or type(ident) is str:  # a later delta of the call before it
                key = next(reversed(calls)) if calls else 0
            else:  # an id of another type (a list) names a call of its own
                key = len(calls) + len(self._replaced), "unkeyed"
            call = calls.get(key)
            if call is not None and named and type(call.id) is str and call.id != ident:
                self._replaced.append(call)  # a new call under the same index: both are kept
                call = None
            if call is None:
                arrival = len(calls) + len(self._replaced)
                call = calls[key] = _Call((index if index is not None else _LAST, arrival))
            if named or (ident is not None and type(ident) is not str):
                call.id = ident
            function = delta.function
            if function is not None:
                call.name += _part(function.name)
                call.arguments += _part(function.arguments, json_value=True)

    def close(self) -> Sequence[AgentEvent]:
        calls = [
            ToolCall(
                id=call.id,
                function=FunctionCall(joined(call.name) or None, joined(call.arguments)),
            )
            for call in sorted([*self._replaced, *self._calls.values()], key=_index_order)
        ]
        # no finish_reason: cut short (or a server that sends none), so whole calls only
        out: list[AgentEvent] = (
            [*calls] if self._finish is not None else cut_short("a finish_reason", calls)
        )
        if self._usage is not None:
            out.append(chat_usage(self._usage, self._model))
        out.append(LLMCallEnd(model=self._model, finish_reason=self._finish, response_id=self._id))
        return out


def _reasoning(delta: Any) -> Any:
    """A delta's reasoning text as ``getattr`` reads it (the first truthy of the two names);
    its class is looked at once for ``feed``'s read from the extras."""
    _MODELS.admit(type(delta))
    return optional_field(delta, "reasoning_content", "reasoning")


_MODELS = PlainModels(("reasoning_content", "reasoning"))
"""The delta classes ``feed`` reads the two reasoning names of from the model's extras."""
_PLAIN = _MODELS.plain


_LAST = float("inf")


def _index_order(call: _Call) -> tuple[float, int]:
    """Calls by index, one index's calls in arrival order; calls a server gave no index keep
    their first-seen order, after."""
    return call.order


def _part(value: Any, *, json_value: bool = False) -> str:
    """A name's or arguments' part as text: a ``str`` as it is; with ``json_value``, a JSON
    object or array (arguments some servers send parsed) as its JSON text, by the adapters'
    one rule (``arguments_text``: a ``NaN`` the SDK read as ``null``, nesting past the
    encoder cut); anything else (a number, a ``null``) adds nothing."""
    if type(value) is str:
        return value
    if issubclass(type(value), str):  # a str subclass as the str it is
        return str.__str__(value)
    if json_value and type(value) in (dict, list):
        return arguments_text(value)
    return ""


def chat_usage(usage: Any, model: str | None) -> Usage:
    """A Chat Completions ``usage`` object as ``Usage`` (``prompt_tokens`` include cached);
    a count it lacks (a usage that is no object: a string, a number) is not reported."""
    prompt = getattr(usage, "prompt_tokens_details", None)
    completion = getattr(usage, "completion_tokens_details", None)
    return Usage(
        input_tokens=getattr(usage, "prompt_tokens", None),
        output_tokens=getattr(usage, "completion_tokens", None),
        total_tokens=getattr(usage, "total_tokens", None),
        cache_read_tokens=getattr(prompt, "cached_tokens", None),
        cache_creation_tokens=getattr(usage, "cache_creation_input_tokens", None),
        reasoning_tokens=getattr(completion, "reasoning_tokens", None),
        model=model,
    )


OPENAI_CLIENT = "an openai.AsyncOpenAI client"
OPENAI_CLIENT_HINT = "Make one with openai.AsyncOpenAI(); a model name goes in model=."


def stream_chat(
    client: Any,
    messages: list[Message],
    model: str,
    *,
    sink: Sink | None = None,
    provider: str | None = None,
    **params: Any,
) -> AsyncIterator[AgentEvent]:
    """One streamed ``client.chat.completions.create`` call (an ``AsyncOpenAI``), as events.

    ``params`` go to the SDK as they are (``temperature``, ``tools``, ...) and onto
    ``LLMCallStart.params``; ``sink`` receives every ``ChatCompletionChunk``. ``provider``
    names the call's provider; by default ``azure.ai.openai`` for the SDK's Azure client, else
    ``openai``.
    """
    expect(
        client,
        "stream_chat",
        OPENAI_CLIENT,
        "chat.completions.create",
        hint=OPENAI_CLIENT_HINT,
        sdk="openai",
    )
    expect_messages(messages, "stream_chat")
    named = provider if provider is not None else openai_client_provider(client)
    start = at_endpoint(start_event(model, named, messages, params), base_url_of(client))
    return read_stream(
        start,
        lambda: client.chat.completions.create(
            model=model,
            messages=[m.to_dict() for m in messages],
            **request(params, stream=True, stream_options={"include_usage": True}),
        ),
        ChatCompletionsReader(),
        sink,
    )


class OpenAIChatAgent(OneCallAgent):
    """A contract agent making one streamed Chat Completions call per run."""

    source = staticmethod(stream_chat)
