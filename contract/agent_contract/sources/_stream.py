"""The one template every SDK source streams through: start, feed each chunk, close.

A source is a *reader*: a small state machine fed the SDK's chunks one by one, returning the
contract events each chunk completes, and on ``close`` the events only the end can give
(assembled tool calls, ``Usage``, ``LLMCallEnd``). ``read_stream`` drives a reader over an
SDK stream; the SDK's own objects go to ``sink`` untouched, so the caller keeps everything
the SDK returned. An exception from the SDK (an error mid-stream, a cancellation) propagates
as the same object and ``close`` is not reached: the consumer sees the call end with it.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Sequence
from typing import Any, ClassVar, Protocol

from agent_contract.events import AgentEvent, LLMCallStart, Message
from agent_contract.invoke import StreamingAgent

__all__ = [
    "NOTHING",
    "OneCallAgent",
    "Reader",
    "Sink",
    "optional_field",
    "read_stream",
    "request",
    "start_event",
]

_PRIVATE = frozenset({"api_key", "client", "extra_headers", "headers", "http_client"})

Sink = Callable[[Any], object]
"""Receives every SDK chunk, the very object the SDK yielded, before it is translated."""

NOTHING: tuple[AgentEvent, ...] = ()
"""What a reader returns for a chunk that completes no event (shared: no allocation)."""


def optional_field(obj: Any, *names: str) -> Any:
    """``getattr(obj, name, None)``, without pydantic's slow path for a missing name; with
    several names, the first truthy one (``getattr(obj, a, None) or getattr(obj, b, None)``).

    On a pydantic model a miss goes through ``BaseModel.__getattr__`` and a raised
    ``AttributeError``: about 2 µs, paid per chunk for fields most servers never send (the
    ``reasoning_content`` of OpenAI-compatible servers). A model keeps its fields in
    ``__dict__`` and undeclared ones in ``__pydantic_extra__``; what its class answers
    (properties, private attributes) and every other kind of object still go through
    ``getattr``. The class is looked at once, the model's two dicts read once for all names
    (figure 3: every attribute read of a pydantic model costs about 450 instructions).
    """
    cls = type(obj)
    known = _CLASS_NAMES.get(cls)
    if known is None:
        known = _class_names(cls)
    value = None
    if known is _GETATTR:
        for name in names:
            value = getattr(obj, name, None)
            if value:
                return value
        return value
    fields: dict[str, Any] = obj.__dict__
    extra = None
    for name in names:
        if name in known:
            value = getattr(obj, name, None)
        elif name in fields:
            value = fields[name]
        else:
            if extra is None:
                extra = getattr(obj, "__pydantic_extra__", None)
                extra = extra if type(extra) is dict else {}
            value = extra.get(name)
        if value:
            return value
    return value


_GETATTR: frozenset[str] = frozenset()
"""A class whose instances are read with ``getattr`` (anything but a pydantic model)."""
_CLASS_NAMES: dict[type, frozenset[str]] = {}
MAX_CLASSES = 256  # classes made on the fly must not pile up


def _class_names(cls: type) -> frozenset[str]:
    """What a pydantic model's class answers itself, or ``_GETATTR`` for any other class
    (remembered per class)."""
    names = _GETATTR
    owner = next((k for k in cls.__mro__ if "__getattr__" in vars(k)), None)
    if owner is not None and "__pydantic_extra__" in vars(owner) and "__dict__" in vars(owner):
        private = getattr(cls, "__private_attributes__", None)
        names = frozenset(dir(cls)) | frozenset(private if isinstance(private, dict) else ())
    if len(_CLASS_NAMES) >= MAX_CLASSES:
        _CLASS_NAMES.clear()
    _CLASS_NAMES[cls] = names
    return names


def start_event(
    model: str, provider: str, messages: list[Message], params: dict[str, Any]
) -> LLMCallStart:
    """The call's ``LLMCallStart``: request ``params`` minus credentials and clients."""
    kept = {k: v for k, v in params.items() if k not in _PRIVATE}
    return LLMCallStart(
        model=model, provider=provider, params={**kept, "stream": True}, messages=messages
    )


def request(params: dict[str, Any], **fixed: Any) -> dict[str, Any]:
    """The SDK call's keyword arguments: the caller's ``params`` beside what the source sets.

    A name both give never reaches the SDK twice (a ``TypeError`` there): a dict the source
    sets (``stream_options``) takes the caller's entries over its own, so
    ``stream_options={"include_obfuscation": False}`` still streams usage; any other value the
    source sets (``stream=True``, which its reader needs) stands.
    """
    out = dict(params)
    for name, value in fixed.items():
        theirs = out.get(name)
        if isinstance(value, dict) and isinstance(theirs, dict):
            value = {**value, **theirs}
        out[name] = value
    return out


class Reader(Protocol):
    """Turns one LLM call's SDK chunks into contract events."""

    def feed(self, chunk: Any) -> Sequence[AgentEvent]:
        """The events ``chunk`` completes, in order (often none)."""
        ...

    def close(self) -> Sequence[AgentEvent]:
        """The events the end of the stream completes, ``LLMCallEnd`` last."""
        ...


async def read_stream(
    start: LLMCallStart,
    open_stream: Callable[[], Any],
    reader: Reader,
    sink: Sink | None = None,
) -> AsyncIterator[AgentEvent]:
    """Yield ``start``, then open the SDK stream and translate it chunk by chunk.

    ``open_stream`` is called after ``start`` is yielded, so a request that fails before its
    first chunk (a refused key, a timeout) still ends an LLM call the consumer saw begin.
    It returns the SDK's async iterable, or an awaitable of it (``await create(...)``).
    """
    yield start
    chunks = open_stream()
    if not hasattr(chunks, "__aiter__"):
        chunks = await chunks
    try:
        async for chunk in chunks:
            if sink is not None:
                sink(chunk)
            for event in reader.feed(chunk):
                yield event
    finally:
        await _release(chunks)
    for event in reader.close():
        yield event


async def _release(chunks: AsyncIterable[Any]) -> None:
    """Close the SDK stream (its HTTP response), also when the consumer stopped early."""
    close = getattr(chunks, "aclose", None) or getattr(chunks, "close", None)
    if close is not None:
        result = close()
        if hasattr(result, "__await__"):
            await result


class OneCallAgent(StreamingAgent):
    """A contract agent making one streamed LLM call per run through a source function.

    ``source(client, messages, model, sink=..., **params)`` is the module's ``stream_*``;
    ``params`` go to the SDK as they are and onto ``LLMCallStart.params``.
    """

    source: ClassVar[Callable[..., AsyncIterator[AgentEvent]]]

    def __init__(self, client: Any, model: str, *, sink: Sink | None = None, **params: Any):
        self.client, self.model, self.sink, self.params = client, model, sink, params

    def stream(
        self, messages: list[Message], config: dict[str, Any] | None = None
    ) -> AsyncIterator[AgentEvent]:
        return type(self).source(self.client, messages, self.model, sink=self.sink, **self.params)
