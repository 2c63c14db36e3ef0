"""The one template every SDK source streams through: start, feed each chunk, close.

A source is a *reader*: a small state machine fed the SDK's chunks one by one, returning the
contract events each chunk completes, and on ``close`` the events only the end can give
(assembled tool calls, ``Usage``, ``LLMCallEnd``). ``read_stream`` drives a reader over an
SDK stream; the SDK's own objects go to ``sink`` untouched, so the caller keeps everything
the SDK returned. An exception from the SDK (an error mid-stream, a cancellation) propagates
as the same object and ``close`` is not reached: the consumer sees the call end with it.

A chunk the reader cannot read (the SDKs build chunks without validating them, so ``null``
where a choice goes reaches the reader) is skipped: ``read_stream`` yields an ``Error``
(``error_type`` ``unreadable_chunk``, not fatal) in its place and reads on, so one odd chunk
never ends the agent's stream; what the reader assembled before it is kept. A reader whose
``close`` fails gives that ``Error`` and an ``LLMCallEnd``: the call still ends.

A stream that simply stops before the provider's end marker (a dropped connection, a proxy's
idle timeout: the SDKs end such a stream quietly) is no success: the reader's ``close`` gives
``cut_short``'s ``Error`` (``error_type`` ``stream_incomplete``, not fatal) before its
``LLMCallEnd``, which carries no finish reason, and yields no tool call whose arguments were
cut (not whole JSON; the ``Error`` names them): no agent runs a tool on half its arguments.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Sequence
from typing import Any, ClassVar, Protocol

from agent_contract.events import AgentEvent, Error, LLMCallEnd, LLMCallStart, Message, ToolCall
from agent_contract.invoke import StreamingAgent

__all__ = [
    "NOTHING",
    "OneCallAgent",
    "PlainModels",
    "STREAM_INCOMPLETE",
    "UNREADABLE_CHUNK",
    "Reader",
    "Sink",
    "closed",
    "cut_short",
    "optional_field",
    "read_events",
    "read_stream",
    "request",
    "start_event",
    "told",
    "unreadable",
]

_PRIVATE = frozenset(
    {"api_base", "api_key", "base_url", "client", "extra_headers", "headers", "http_client"}
)

Sink = Callable[[Any], object]
"""Receives every SDK chunk, the very object the SDK yielded, before it is translated."""

NOTHING: tuple[AgentEvent, ...] = ()
"""What a reader returns for a chunk that completes no event (shared: no allocation)."""


STREAM_INCOMPLETE = "stream_incomplete"
"""The ``error_type`` of ``cut_short``'s ``Error``: the stream ended before its end marker."""

UNREADABLE_CHUNK = "unreadable_chunk"
"""The ``error_type`` of the ``Error`` ``read_stream`` yields for a chunk its reader could not
read (``null`` where an object goes: the SDKs build chunks without validating them)."""
_UNREADABLE_MESSAGE = "a chunk of no shape the source reads was skipped"


def unreadable() -> Error:
    """The ``Error`` (``unreadable_chunk``, not fatal) told in place of an item a source could
    not read: ``_read``'s for a chunk or framework event its feed failed on, and that of an
    adapter reading a framework's stream with an async step of its own (which ``_read``'s
    synchronous feed cannot be)."""
    return Error(message=_UNREADABLE_MESSAGE, error_type=UNREADABLE_CHUNK)


def told(
    feed: Callable[..., Iterable[Any]],
    *item: Any,
    passing: type[BaseException] | tuple[type[BaseException], ...] = (),
) -> list[Any]:
    """What ``feed(*item)`` gives, read out, skipping the item where ``feed`` fails as ``_read``
    skips a chunk: what it gave before is kept (a generator's call start), ``unreadable()``
    follows. For an adapter that reads a framework's stream an item at a time with awaits of
    its own between items (a nested run's ``push``, a callback the framework awaits), which
    ``read_events``' synchronous feed cannot be; every read of such an item, and of a run's
    end, goes through here. An exception of ``passing`` (an adapter's own signal, raised on
    purpose to end the run) comes out as it is."""
    out: list[Any] = []
    try:
        for event in feed(*item):
            out.append(event)
    except passing:
        raise
    except Exception:
        out.append(unreadable())
    return out


def cut_short(end: str, calls: Iterable[ToolCall] = ()) -> list[AgentEvent]:
    """What a reader's ``close`` gives, before its ``Usage`` and ``LLMCallEnd``, when the
    stream ended before ``end`` (the provider's end marker), for ``calls``, the tool calls it
    had not seen finished: each whose arguments are whole JSON (a JSON value no prefix of
    which is one: nothing was lost), then an ``Error`` (``stream_incomplete``, not fatal)
    naming the others, which are not yielded: their arguments were cut."""
    kept: list[AgentEvent] = []
    cut: list[str] = []
    for call in calls:
        if _whole(call.function.arguments):
            kept.append(call)
        else:
            cut.append(call.function.name or "?")
    message = f"the stream ended before {end}"
    if cut:
        message += f"; tool calls cut short (not yielded): {', '.join(cut)}"
    return [*kept, Error(message=message, error_type=STREAM_INCOMPLETE)]


def _whole(arguments: str | None) -> bool:
    """Whether ``arguments`` are a whole JSON object or array (a cut one never parses)."""
    text = (arguments or "").strip()
    if not text.startswith(("{", "[")):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def optional_field(obj: Any, *names: str) -> Any:
    """``getattr(obj, name, None)``, without pydantic's slow path for a missing name; with
    several names, the first truthy one (``getattr(obj, a, None) or getattr(obj, b, None)``).

    On a pydantic model a miss goes through ``BaseModel.__getattr__`` and a raised
    ``AttributeError``: about 2 µs, paid per chunk for fields most servers never send (the
    ``reasoning_content`` of OpenAI-compatible servers). A model keeps its fields in
    ``__dict__`` and undeclared ones in ``__pydantic_extra__``; what its class answers
    (properties, private attributes) and every other kind of object still go through
    ``getattr``. The class is looked at once, the model's two dicts read once for all names
    (figure 3: every attribute read of a pydantic model costs about 450 instructions). A dict
    or extras that pydantic's ``__getattr__`` would read differently (a dict naming
    ``__private_attributes__``, extras that are not a ``dict``) are read with ``getattr``.
    The Chat Completions reader does the same inline for its delta's reasoning names
    (``PlainModels``): this function's call alone costs more than the inline read.
    """
    cls = type(obj)
    entry = _CLASS_NAMES.get(id(cls))
    known = entry[1] if entry is not None and entry[0] is cls else _class_names(cls)
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
        if name in known or type(fields) is not dict or "__private_attributes__" in fields:
            value = getattr(obj, name, None)  # pydantic's __getattr__ reads that dict first
        elif name in fields:
            value = fields[name]
        else:
            if extra is None:
                extra = getattr(obj, "__pydantic_extra__", None)
                extra = {} if extra is None else extra
            # extras of another kind (set by hand) are looked up as pydantic looks them up
            value = extra.get(name) if type(extra) is dict else getattr(obj, name, None)
        if value:
            return value
    return value


_GETATTR: frozenset[str] = frozenset()
"""A class whose instances are read with ``getattr`` (anything but a pydantic model)."""
_CLASS_NAMES: dict[int, tuple[type, frozenset[str]]] = {}
"""By the class's ``id``, with the class (kept alive, so no other class takes that ``id``):
looking a class up runs no code of its metaclass (``__hash__``, ``__eq__``)."""
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
    _CLASS_NAMES[id(cls)] = (cls, names)
    return names


class PlainModels:
    """The pydantic model classes whose ``names`` may be read from the instance's own dicts.

    For such a class, ``getattr(obj, name, None)`` is ``obj.__dict__[name]`` when that dict (an
    exact ``dict``, not naming ``__private_attributes__``) holds the name, else the extras'
    entry (``__pydantic_extra__``, an exact ``dict`` or None), else None: nothing on the class,
    its bases or its metaclass answers the name first (``_plain_model``). A hot reader can so
    read a name a model lacks without pydantic's ``__getattr__`` raising an ``AttributeError``
    for it (about 2,000 instructions a name; the Chat Completions reader's two reasoning names
    on every chunk). Reading a name the model has from ``__dict__`` saves nothing: the dict's
    read and its subscript cost about what one attribute read does (figure 3, 2026-12-02).

    ``plain`` maps the ``id`` of each class found so to the class (kept alive, so that no
    other class can take that ``id`` while it is there): ``id(type(obj)) in models.plain`` is
    the whole per-object class check, and it runs no code of the object's (a set of classes
    would call a metaclass's ``__hash__`` and ``__eq__``, which a hostile one may define). A
    class is looked at the first time the slow path meets it (``admit``) and remembered, at
    most ``MAX_CLASSES`` of them; a class changed after that (a property added at run time to
    an SDK model) is not looked at again, as with ``optional_field``'s memory.
    """

    __slots__ = ("names", "other", "plain")

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)
        self.plain: dict[int, type] = {}
        self.other: dict[int, type] = {}

    def admit(self, cls: type) -> bool:
        """Whether ``cls`` is plain for ``names`` (looked at once, then remembered)."""
        key = id(cls)
        if self.plain.get(key) is cls:
            return True
        if self.other.get(key) is cls:
            return False
        plain = _plain_model(cls, self.names)
        if len(self.plain) + len(self.other) >= MAX_CLASSES:
            self.plain.clear()  # cleared, not replaced: readers hold the dict
            self.other.clear()
        (self.plain if plain else self.other)[key] = cls
        return plain


def _plain_model(cls: type, names: frozenset[str]) -> bool:
    """Whether ``getattr(obj, name)`` is ``obj.__dict__[name]`` for an instance of ``cls``
    holding ``name`` in its (exact ``dict``) ``__dict__``, for every one of ``names``; and
    whether, for a name the instance lacks, ``getattr`` only looks in ``__pydantic_extra__``
    (unless the instance's own ``__dict__`` names ``__private_attributes__``).

    That holds for a pydantic model whose class, metaclass and bases are pydantic's own in
    everything attribute lookup consults: ``__getattribute__`` is ``object``'s, ``__getattr__``
    is ``BaseModel``'s, ``__dict__``, ``__pydantic_extra__`` and ``__class__`` are the slots
    and descriptors ``BaseModel`` and ``object`` define, the metaclass is pydantic's own, and no
    class in the MRO defines any of ``names`` (a property, a slot, a class attribute) nor
    declares one as a private attribute.
    """
    construction = sys.modules.get("pydantic._internal._model_construction")
    main = sys.modules.get("pydantic.main")
    if construction is None or main is None:  # no pydantic model exists yet
        return False
    base = getattr(main, "BaseModel", None)
    if type(cls) is not getattr(construction, "ModelMetaclass", None) or base not in cls.__mro__:
        return False

    def resolved(name: str) -> Any:
        return next((vars(k)[name] for k in cls.__mro__ if name in vars(k)), _ABSENT)

    own = vars(base)
    if (
        resolved("__getattribute__") is not vars(object)["__getattribute__"]
        or resolved("__getattr__") is not own.get("__getattr__")
        or resolved("__dict__") is not own.get("__dict__")
        or resolved("__pydantic_extra__") is not own.get("__pydantic_extra__")
        or resolved("__class__") is not vars(object)["__class__"]
    ):
        return False
    private = resolved("__private_attributes__")
    if type(private) is not dict or not names.isdisjoint(private):
        return False
    return not any(resolved(name) is not _ABSENT or hasattr(cls, name) for name in names)


_ABSENT = object()


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


def read_stream(
    start: LLMCallStart,
    open_stream: Callable[[], Any],
    reader: Reader,
    sink: Sink | None = None,
    *,
    told: Sequence[AgentEvent] = NOTHING,
) -> AsyncIterator[AgentEvent]:
    """Yield ``start`` (and ``told``: what building the request repaired), then open the SDK
    stream and translate it chunk by chunk.

    ``open_stream`` is called after ``start`` is yielded, so a request that fails before its
    first chunk (a refused key, a timeout) still ends an LLM call the consumer saw begin.
    It returns the SDK's async iterable, or an awaitable of it (``await create(...)``).
    """
    return _read((start, *told), open_stream, reader.feed, sink, reader.close)


def read_events(
    items: AsyncIterable[Any],
    feed: Callable[[Any], Iterable[Any]],
    sink: Sink | None = None,
) -> AsyncIterator[Any]:
    """A framework's stream ``items`` read by an adapter's ``feed``, as ``read_stream`` reads
    an SDK's: each item goes to ``sink`` untouched, then ``feed`` gives its events. An item
    ``feed`` cannot read (a framework event of odd fields, a model chunk in it that the nested
    reader cannot read) is skipped: an ``Error`` (``unreadable_chunk``, not fatal) comes in
    its place and the items after it are read. A ``feed`` that is a generator loses only the
    events after the point it failed (a call's start it yielded is kept). Exceptions of the
    framework's stream, of ``sink`` or thrown in by the consumer come out as the same object;
    ``items`` is left to the caller to close.
    """
    return _read(NOTHING, lambda: items, feed, sink, None)


async def _read(
    first: Sequence[AgentEvent],
    open_stream: Callable[[], Any],
    feed: Callable[[Any], Iterable[Any]],
    sink: Sink | None,
    close: Callable[[], Sequence[AgentEvent]] | None,
) -> AsyncIterator[Any]:
    """The one loop ``read_stream`` and ``read_events`` are: ``first``, then each item of the
    stream ``open_stream`` opens, fed; an item ``feed`` fails on skipped and told. With
    ``close`` (an SDK source's reader), the stream is released at its end and ``close``
    gives the call's last events (an ``LLMCallEnd`` even when it fails)."""
    for event in first:
        yield event
    chunks = open_stream()
    if not hasattr(chunks, "__aiter__"):
        if not hasattr(chunks, "__await__"):  # a synchronous client's stream, already open
            await _release(chunks)
            raise TypeError(
                f"the client's create() returned {type(chunks).__qualname__}, not an async "
                "stream: the client is synchronous; pass the SDK's async client "
                "(openai.AsyncOpenAI, anthropic.AsyncAnthropic)"
            )
        chunks = await chunks
    iterator = chunks.__aiter__()
    if not hasattr(iterator, "__aiter__"):  # an iterator of __anext__ alone
        iterator = _over(iterator)
    code = _code(feed)
    try:
        while True:
            try:  # entered once per stream (and per skipped chunk): nothing added per chunk
                async for chunk in iterator:
                    if sink is not None:
                        sink(chunk)
                    for event in feed(chunk):
                        yield event
                break
            except Exception as error:
                if not _raised_by(error, code):  # the SDK's, the sink's, the consumer's
                    raise
            yield unreadable()
    finally:
        if close is not None:
            await _release(chunks)
    if close is None:
        return
    for event in closed(close):
        yield event


def closed(close: Callable[[], Sequence[AgentEvent]]) -> Sequence[AgentEvent]:
    """``close()``'s events, a reader's last; when ``close`` fails (a part the reader kept
    that it cannot join), an ``Error`` (``unreadable_chunk``, not fatal) and an ``LLMCallEnd``:
    the call still ends."""
    try:
        return close()
    except Exception:
        return (unreadable(), LLMCallEnd())


def _code(feed: Callable[..., Any]) -> Any:
    """The code object ``feed`` runs (a bound method's function's, a function's own)."""
    return getattr(getattr(feed, "__func__", feed), "__code__", None)


def _raised_by(error: BaseException, code: Any) -> bool:
    """Whether ``error`` came out of the feed running ``code``, called by ``_read`` itself:
    the frame ``_read`` called last is that feed's (an exception of the SDK's or the
    framework's stream, of the sink or thrown in by the consumer has another frame there, or
    none). A feed that is a generator has its frame there too, when iterated."""
    called = error.__traceback__.tb_next if error.__traceback__ is not None else None
    return code is not None and called is not None and called.tb_frame.f_code is code


async def _over(iterator: Any) -> AsyncIterator[Any]:
    """An async iterator that has only ``__anext__``, as something ``async for`` can resume."""
    while True:
        try:
            chunk = await iterator.__anext__()
        except StopAsyncIteration:
            return
        yield chunk


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
