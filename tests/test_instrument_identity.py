"""instrument(): an instrumented agent answers ``inspect`` as the plain one does, and the class
form traces every kind of entry point the drop-in does.

Frameworks and users branch on ``inspect.isasyncgenfunction(agent.astream)`` and its kin; a
wrapper that answered by its own code read an ``async def`` generator as a plain function.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import pickle
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from unittest.mock import AsyncMock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_contract.agent import Agent, MessageFinal
from agent_contract.examples import NonStreamingAgent, ScriptedAgent, ScriptedStreamingAgent
from agent_contract.protocol import StepBoundary, StreamingAgent, TextDelta
from agent_otel.decorating._instrument import instrument, uninstrument
from agent_otel.testing import InMemoryTelemetry
from test_instrument_support import USER, agent_spans

EVENTS = [TextDelta("a"), StepBoundary(), TextDelta("b")]
ENTRY_POINTS = ("stream", "invoke", "astream", "run")


def _source_file(method: Any) -> str | None:
    try:
        return inspect.getsourcefile(method)
    except TypeError:  # no function, as for a callable object or a partial
        return None


def _unwrapped(method: Any) -> Any:
    """The function at the end of ``method``'s wrapper chain (a partial's, by what it binds:
    each read on an instance makes a new partial)."""
    found = inspect.unwrap(getattr(method, "__func__", method))
    return getattr(found, "func", found)


def _answers(method: Any) -> dict[str, Any]:
    """What a framework reads of an entry point before calling it."""
    return {
        "isfunction": inspect.isfunction(method),
        "getsourcefile": _source_file(method),
        "isasyncgenfunction": inspect.isasyncgenfunction(method),
        "iscoroutinefunction": inspect.iscoroutinefunction(method),
        "isgeneratorfunction": inspect.isgeneratorfunction(method),
        "asyncio.iscoroutinefunction": asyncio.iscoroutinefunction(method),
        "signature": str(inspect.signature(method)),
        "__name__": getattr(method, "__name__", None),
        "__qualname__": getattr(method, "__qualname__", None),
        "__doc__": getattr(method, "__doc__", None),
        "__module__": getattr(method, "__module__", None),
        "unwrapped": _unwrapped(method),
    }


async def _scripted(messages: Any, config: Any = None) -> AsyncIterator[Any]:
    """Streams the script."""
    for event in EVENTS:
        yield event


class _Call:
    def __call__(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
        return _scripted(messages, config)


def _async_gen_methods() -> type:
    class AsyncGen(Agent):
        """Agent contract, every entry point a method."""

        tool_name = "asyncgen"

        async def astream(self, **kwargs: Any) -> AsyncIterator[Any]:
            """Streams."""
            yield MessageFinal(text="ok")

        async def run(self, **kwargs: Any) -> Any:
            """Runs."""
            return await self._drain(self.astream(**kwargs))

    return AsyncGen


def _plain_stream() -> type:
    class Plain(StreamingAgent):
        """A ``stream`` that is a plain function returning a generator's stream."""

        name = "plain"

        def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
            return _scripted(messages, config)

    return Plain


def _held(kind: str) -> Callable[[], type]:
    def make() -> type:
        held: Any = {
            "static": staticmethod(_scripted),
            "class": classmethod(lambda cls, messages, config=None: _scripted(messages, config)),
            "callable": _Call(),
            "partial": functools.partial(_scripted),
            "partialmethod": functools.partialmethod(_streamed),
        }[kind]
        return type(f"Held{kind.title()}", (StreamingAgent,), {"name": kind, "stream": held})

    return make


def _subclassed(base: type) -> Callable[[], type]:
    return lambda: type(f"Of{base.__name__}", (base,), {})


_KINDS = ("static", "class", "callable", "partial", "partialmethod")
SHAPES: dict[str, Callable[[], type]] = {
    "async-gen methods": _async_gen_methods,
    "plain stream": _plain_stream,
    "ScriptedAgent": _subclassed(ScriptedAgent),
    "ScriptedStreamingAgent": _subclassed(ScriptedStreamingAgent),
    "NonStreamingAgent": _subclassed(NonStreamingAgent),
    # A partialmethod is traced (below) but named as its unbound function, not as a partial.
    **{f"{kind} stream": _held(kind) for kind in _KINDS if kind != "partialmethod"},
}


def _instance(cls: type) -> Any:
    if issubclass(cls, ScriptedAgent):
        return cls(EVENTS)
    if issubclass(cls, ScriptedStreamingAgent):
        return cls([MessageFinal(text="ok")])
    if issubclass(cls, NonStreamingAgent):
        return cls("v")
    return cls()


@pytest.mark.parametrize("form", ["instance", "class"])
@pytest.mark.parametrize("shape", SHAPES)
def test_every_entry_point_answers_inspect_as_the_plain_one(
    otel_telemetry: InMemoryTelemetry, shape: str, form: str
) -> None:
    """Read on the agent and on its class, each entry point answers ``inspect``,
    ``asyncio.iscoroutinefunction``, its signature, names, doc and ``__wrapped__`` chain as the
    plain agent's does: an ``async def`` that yields is an async generator function."""
    cls = SHAPES[shape]()
    plain = _instance(cls)
    before = {
        name: (_answers(getattr(plain, name)), _answers(getattr(cls, name)))
        for name in ENTRY_POINTS
        if hasattr(plain, name)
    }
    if form == "class":
        traced = _instance(instrument(cls, **otel_telemetry.providers()))
        classes = cls
    else:
        traced = instrument(plain, **otel_telemetry.providers())
        classes = type(traced)
    try:
        for name, answers in before.items():
            after = (_answers(getattr(traced, name)), _answers(getattr(classes, name)))
            for on, read, plain_answers in zip(("agent", "class"), after, answers, strict=True):
                for key, value in plain_answers.items():
                    if value is None and key in ("__name__", "__qualname__"):
                        continue  # a partial has no name: the wrapper takes its function's
                    if (key, on, shape) == ("isfunction", "agent", "static stream"):
                        continue  # read on the agent, ours is bound to it: a method
                    assert read[key] == value, (name, key)
    finally:
        uninstrument(cls)


def test_an_instrumented_classs_methods_are_still_found_as_functions(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``inspect.getmembers(cls, inspect.isfunction)`` (how frameworks find an agent's
    methods) finds the same names once the class is instrumented, each from the agent's file."""
    cls = _async_gen_methods()
    before = [
        (name, inspect.getsourcefile(fn))
        for name, fn in inspect.getmembers(cls, inspect.isfunction)
    ]
    instrument(cls, **otel_telemetry.providers())
    try:
        after = [
            (name, inspect.getsourcefile(fn))
            for name, fn in inspect.getmembers(cls, inspect.isfunction)
        ]
        assert after == before
        assert ("astream", __file__) in after
    finally:
        uninstrument(cls)


def test_an_async_generator_astream_reads_as_one(otel_telemetry: InMemoryTelemetry) -> None:
    """The case frameworks branch on, named: ``inspect.isasyncgenfunction`` on the drop-in's
    and on an instrumented class's ``astream`` and ``stream``."""
    traced = instrument(ScriptedStreamingAgent([MessageFinal(text="ok")]))
    assert inspect.isasyncgenfunction(traced.astream)
    assert inspect.iscoroutinefunction(traced.run)
    cls = _async_gen_methods()
    instrument(cls, **otel_telemetry.providers())
    try:
        assert inspect.isasyncgenfunction(cls().astream)
        assert inspect.isasyncgenfunction(cls.astream)
    finally:
        uninstrument(cls)


@pytest.mark.parametrize("form", ["instance", "class"])
async def test_langchain_streams_an_instrumented_agents_stream(
    otel_telemetry: InMemoryTelemetry, form: str
) -> None:
    """LangChain's ``RunnableLambda`` picks how to call a function by
    ``inspect.isasyncgenfunction``: given an instrumented agent's ``stream`` it returned the
    async generator object as the value, never ran the agent, and no run was recorded."""
    runnables = pytest.importorskip("langchain_core.runnables")
    cls = type("Streamer", (StreamingAgent,), {"name": "streamer", "stream": _streamed})
    try:
        if form == "class":
            traced = instrument(cls, **otel_telemetry.providers())()
        else:
            traced = instrument(cls(), **otel_telemetry.providers())
        chunks = [c async for c in runnables.RunnableLambda(traced.stream).astream(USER)]
        assert [id(c) for c in chunks] == [id(e) for e in EVENTS]
        assert await runnables.RunnableLambda(traced.stream).ainvoke(USER) is EVENTS[-1]
        assert [s.name for s in agent_spans(otel_telemetry)] == ["invoke_agent streamer"] * 2
    finally:
        uninstrument(cls)


async def _streamed(self: Any, messages: Any, config: Any = None) -> AsyncIterator[Any]:
    for event in EVENTS:
        yield event


@pytest.mark.parametrize("kind", _KINDS)
async def test_the_class_form_traces_every_kind_of_entry_point(
    otel_telemetry: InMemoryTelemetry, kind: str
) -> None:
    """``instrument(cls)`` traces a ``stream`` held as a static or class method, a callable
    object or a ``partial``, as the drop-in does (it was left untraced); a class-level call
    still works, untraced; ``uninstrument`` puts back what the class held."""
    cls = _held(kind)()
    held = cls.__dict__["stream"]
    instrument(cls, **otel_telemetry.providers())
    try:
        events = [e async for e in cls().stream(USER)]
        assert [id(e) for e in events] == [id(e) for e in EVENTS]
        assert [s.name for s in agent_spans(otel_telemetry)] == [f"invoke_agent {kind}"]
        if kind in ("static", "class"):  # a class-level call, as without instrument()
            assert [id(e) async for e in cls.stream(USER)] == [id(e) for e in EVENTS]
            assert len(agent_spans(otel_telemetry)) == 1
    finally:
        uninstrument(cls)
    assert cls.__dict__["stream"] is held


@pytest.mark.parametrize("form", ["instance", "class"])
def test_marks_on_the_agents_function_read_through(
    otel_telemetry: InMemoryTelemetry, form: str
) -> None:
    """An attribute a framework or decorator set on the agent's function (before or after
    instrumenting) reads the same on the instrumented agent and class: it was missing."""
    cls = _async_gen_methods()
    astream, run = vars(cls)["astream"], vars(cls)["run"]
    astream.marked = "before"
    try:
        if form == "class":
            traced, classes = instrument(cls, **otel_telemetry.providers())(), cls
        else:
            traced = instrument(cls(), **otel_telemetry.providers())
            classes = type(traced)
        run.marked = "after"
        for read in (traced, classes):
            assert read.astream.marked == "before"
            assert read.run.marked == "after"
            assert not hasattr(read.astream, "unmarked")
    finally:
        uninstrument(cls)


@pytest.mark.parametrize("kind", ["staticmethod", "classmethod", "function"])
async def test_a_drop_in_of_an_instrumented_classs_agent_is_one_run(
    otel_telemetry: InMemoryTelemetry, kind: str
) -> None:
    """``instrument(agent)`` over an agent whose class is instrumented too: one run, whatever
    kind of ``run`` the class holds (a static or class method was traced twice)."""

    async def run(*args: Any, **kwargs: Any) -> str:
        return "done"

    held = {"staticmethod": staticmethod(run), "classmethod": classmethod(run), "function": run}
    cls = type("Both", (Agent,), {"tool_name": "both", "run": held[kind]})
    instrument(cls, **otel_telemetry.providers())
    try:
        assert await instrument(cls(), **otel_telemetry.providers()).run() == "done"
        assert [s.name for s in agent_spans(otel_telemetry)] == ["invoke_agent both"]
    finally:
        uninstrument(cls)


@pytest.mark.parametrize("form", ["instance", "class"])
async def test_a_mocked_run_is_traced(otel_telemetry: InMemoryTelemetry, form: str) -> None:
    """A ``run`` that is an ``AsyncMock`` (a user's test double) is traced in both forms: the
    class form took the mock for a wrapper of ours (a Mock answers any attribute asked) and
    left it untraced."""
    cls = type("Mocked", (Agent,), {"tool_name": "mocked", "run": AsyncMock(return_value="v")})
    try:
        if form == "class":
            traced = instrument(cls, **otel_telemetry.providers())()
        else:
            traced = instrument(cls(), **otel_telemetry.providers())
        assert inspect.iscoroutinefunction(traced.run)
        assert await traced.run(user_message="x") == "v"
        assert [s.name for s in agent_spans(otel_telemetry)] == ["invoke_agent mocked"]
    finally:
        uninstrument(cls)
    assert isinstance(vars(cls)["run"], AsyncMock)


class _Hostile:
    """A callable entry point every attribute read of which raises (but the ABC's own)."""

    def __getattr__(self, name: str) -> Any:
        if name == "__isabstractmethod__":
            raise AttributeError(name)
        raise RuntimeError(f"no {name}")

    def __call__(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
        return _scripted(messages, config)


@pytest.mark.parametrize("form", ["instance", "class"])
async def test_an_entry_point_whose_attributes_raise_is_traced(
    otel_telemetry: InMemoryTelemetry, form: str
) -> None:
    """What the agent holds is read, never trusted: a callable ``stream`` whose every
    attribute read raises made ``instrument()`` raise (drop-in) or go untraced (class form)."""
    cls = type("Hostile", (StreamingAgent,), {"name": "hostile", "stream": _Hostile()})
    try:
        if form == "class":
            traced = instrument(cls, **otel_telemetry.providers())()
        else:
            traced = instrument(cls(), **otel_telemetry.providers())
        assert [id(e) async for e in traced.stream(USER)] == [id(e) for e in EVENTS]
        assert [s.name for s in agent_spans(otel_telemetry)] == ["invoke_agent hostile"]
    finally:
        uninstrument(cls)


async def test_a_subclass_of_an_instrumented_class_with_a_static_stream_is_traced(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A subclass made after ``instrument(Base)`` whose ``stream`` is a static method: traced
    once, its class-level call still the plain one."""
    base = _plain_stream()
    instrument(base, **otel_telemetry.providers())
    try:
        sub = type("Sub", (base,), {"name": "sub", "stream": staticmethod(_scripted)})
        assert [id(e) async for e in sub().stream(USER)] == [id(e) for e in EVENTS]
        assert [id(e) async for e in sub.stream(USER)] == [id(e) for e in EVENTS]
        assert [s.name for s in agent_spans(otel_telemetry)] == ["invoke_agent sub"]
    finally:
        uninstrument(base)


def test_an_instrumented_classs_entry_points_pickle_by_name(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A wrapped entry point pickles (and copies) as the function it stands in for: by name."""
    instrument(_Pickled, **otel_telemetry.providers())
    try:
        assert pickle.loads(pickle.dumps(_Pickled.stream)) is _Pickled.stream
        bound = pickle.loads(pickle.dumps(_Pickled().stream))
        assert bound.__func__ is vars(_Pickled)["stream"]
    finally:
        uninstrument(_Pickled)


class _Pickled(StreamingAgent):
    name = "pickled"

    async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
        yield TextDelta("a")

    def __eq__(self, other: object) -> bool:
        return type(other) is _Pickled

    __hash__ = object.__hash__


_DEFAULTS = st.one_of(st.none(), st.integers(), st.text(max_size=5), st.booleans())


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(default=_DEFAULTS, generator=st.sampled_from(["async-gen", "gen", "coroutine", "plain"]))
def test_any_stream_kind_and_default_reads_the_same(default: Any, generator: str) -> None:
    """Whatever kind of function ``stream`` is (async generator, generator, coroutine, plain)
    and whatever its defaults, the drop-in's reads the same through ``inspect``."""

    def values() -> Iterator[Any]:
        yield from EVENTS

    bodies: dict[str, Any] = {
        "async-gen": _scripted,
        "gen": lambda messages, config=default: values(),
        "coroutine": asyncio.sleep,
        "plain": lambda messages, config=default: _scripted(messages, config),
    }

    def stream(self: Any, messages: Any, config: Any = default) -> Any:
        return bodies[generator](messages, config)

    source = {
        "async-gen": _scripted,
        "gen": _gen_stream,
        "coroutine": _coroutine_stream,
        "plain": stream,
    }[generator]
    cls = type("Kind", (StreamingAgent,), {"name": "kind", "stream": source})
    plain = cls()
    traced = instrument(plain)
    assert _answers(traced.stream) == _answers(plain.stream)
    assert _answers(type(traced).stream) == _answers(cls.stream)


def _gen_stream(self: Any, messages: Any, config: Any = None) -> Iterator[Any]:
    yield from EVENTS


async def _coroutine_stream(self: Any, messages: Any, config: Any = None) -> Any:
    return EVENTS
