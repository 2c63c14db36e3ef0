"""instrument(): the drop-in, classes and decorators, one span per run, nesting."""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
import pickle
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from agent_contract.agent import Agent, MessageFinal, StructuredFinal
from agent_contract.examples import (
    NonStreamingAgent,
    ScriptedAgent,
    ScriptedStreamingAgent,
)
from agent_contract.protocol import AgentProtocol, StepBoundary, StreamingAgent, TextDelta
from agent_otel.decorating._instrument import instrument, is_instrumented, uninstrument
from agent_otel.testing import InMemoryTelemetry, run_script
from test_instrument_support import (
    AGENT_CALLS,
    CALLS,
    EVENT_CALLS,
    USER,
    Delegating,
    DelegatingAgent,
    NonStreamingDelegator,
    agent_spans,
    call_run,
    call_stream,
    parent_of,
)

EVENTS = [TextDelta("a"), StepBoundary(), TextDelta("b")]


# --- the drop-in ------------------------------------------------------------------------------
def test_event_drop_in_is_the_agent(otel_telemetry: InMemoryTelemetry) -> None:
    agent = ScriptedAgent(EVENTS, name="scribe")
    agent.custom = "mine"  # type: ignore[attr-defined]
    traced = instrument(agent, **otel_telemetry.providers())
    assert traced is not agent
    assert isinstance(traced, ScriptedAgent)
    assert isinstance(traced, StreamingAgent)
    assert isinstance(traced, AgentProtocol)
    assert type(traced).__name__ == "ScriptedAgent"
    assert traced.name == "scribe"
    assert traced.custom == "mine"  # type: ignore[attr-defined]
    traced.name = "renamed"  # writes through, both ways
    assert agent.name == "renamed"
    agent.delay = 0.0
    traced.reset()
    assert agent.resets == 1
    assert traced.resets == 1


def test_agent_drop_in_is_the_agent(otel_telemetry: InMemoryTelemetry) -> None:
    agent = ScriptedStreamingAgent([MessageFinal(text="ok")])
    traced = instrument(agent, **otel_telemetry.providers())
    assert isinstance(traced, Agent)
    assert isinstance(traced, ScriptedStreamingAgent)
    assert traced.tool_name == "scripted_streaming"
    assert traced.ToolInput is agent.ToolInput
    assert traced.spec_runnable is False
    assert traced.tool_description == agent.tool_description
    traced.extra = 1  # type: ignore[attr-defined]
    assert agent.extra == 1  # type: ignore[attr-defined]


async def test_the_original_stays_untraced(otel_telemetry: InMemoryTelemetry) -> None:
    agent = ScriptedAgent(EVENTS)
    instrument(agent, **otel_telemetry.providers())
    await agent.invoke(USER)
    assert otel_telemetry.spans() == []


async def test_uninstrument_instance_returns_the_original(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    agent = ScriptedAgent(EVENTS)
    traced = instrument(agent, **otel_telemetry.providers())
    assert is_instrumented(traced)
    assert uninstrument(traced) is agent
    assert not is_instrumented(traced)
    await traced.invoke(USER)  # the old drop-in is plain again too
    await agent.invoke(USER)
    assert otel_telemetry.spans() == []
    assert uninstrument(agent) is agent


async def test_instrumenting_twice_is_one_span(otel_telemetry: InMemoryTelemetry) -> None:
    traced = instrument(ScriptedAgent(EVENTS), **otel_telemetry.providers())
    assert instrument(traced, name="other") is traced
    await traced.invoke(USER)
    assert [s.name for s in agent_spans(otel_telemetry)] == ["invoke_agent scripted"]


def test_pickle_and_copy_give_the_plain_agent(otel_telemetry: InMemoryTelemetry) -> None:
    traced = instrument(NonStreamingAgent("v"), **otel_telemetry.providers())
    for clone in (pickle.loads(pickle.dumps(traced)), copy.copy(traced), copy.deepcopy(traced)):
        assert type(clone) is NonStreamingAgent
        assert clone.result == "v"


def test_refuses_what_is_not_an_agent() -> None:
    with pytest.raises(TypeError):
        instrument(object())


async def _scripted_stream(messages: Any, config: Any = None) -> AsyncIterator[Any]:
    for event in EVENTS:
        yield event


class _StreamCallable:
    def __call__(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
        return _scripted_stream(messages, config)


class _StaticStream:
    name = "static"
    stream = staticmethod(_scripted_stream)

    @classmethod
    async def invoke(cls, messages: Any, stream_wrapper: Any = None, config: Any = None) -> Any:
        events = cls.stream(messages, config)
        return [e async for e in (stream_wrapper(events) if stream_wrapper else events)]


class _CallableStream:
    name = "callable"
    stream = _StreamCallable()


class _PartialStream:
    name = "partial"
    stream = functools.partial(_scripted_stream)


class _Proxy:
    """Forwards every attribute it lacks to the agent it holds."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.mark.parametrize(
    "make", [_StaticStream, _CallableStream, _PartialStream, lambda: _Proxy(ScriptedAgent(EVENTS))]
)
async def test_drop_in_calls_entry_points_as_the_agent_does(
    otel_telemetry: InMemoryTelemetry, make: Any
) -> None:
    """An entry point that is no plain method (a static or class method, a callable object, a
    partial, a proxy's ``__getattr__``) is called as the agent's own, traced, same signature."""
    agent = make()
    traced = instrument(agent, **otel_telemetry.providers())
    events = [e async for e in traced.stream(USER)]
    assert [id(e) for e in events] == [id(e) for e in EVENTS]
    assert len(agent_spans(otel_telemetry)) == 1
    for name in ("stream", "invoke", "run"):
        assert hasattr(traced, name) == hasattr(agent, name)
        if hasattr(agent, name):
            assert inspect.signature(getattr(traced, name)) == inspect.signature(
                getattr(agent, name)
            )


async def test_drop_in_invokes_a_class_method_invoke(otel_telemetry: InMemoryTelemetry) -> None:
    traced = instrument(_StaticStream(), **otel_telemetry.providers())
    assert [id(e) for e in await traced.invoke(USER)] == [id(e) for e in EVENTS]
    assert [s.name for s in agent_spans(otel_telemetry)] == ["invoke_agent static"]


class _SyncCall:
    def __call__(self, **kwargs: Any) -> str:
        return "done"


def _done(**kwargs: Any) -> str:
    return "done"


@pytest.mark.parametrize("held", [_SyncCall(), functools.partial(_done)], ids=["object", "partial"])
def test_drop_in_of_a_synchronous_callable_run_returns_its_value(
    otel_telemetry: InMemoryTelemetry, held: Any
) -> None:
    """A ``run`` held as a callable object or ``partial`` of a plain function returns its value
    to the caller, as without instrument(): it was awaited, so the call raised ``TypeError``."""
    agent = type("Held", (Agent,), {"run": held, "tool_name": "held"})()
    assert instrument(agent, **otel_telemetry.providers()).run() == "done"
    assert [s.name for s in agent_spans(otel_telemetry)] == ["invoke_agent held"]


def test_refuses_slots_only_agents() -> None:
    class Slotted:
        __slots__ = ("x",)

        async def run(self, **kwargs: Any) -> Any:
            return None

    with pytest.raises(TypeError):
        instrument(Slotted())


# --- classes and decorators ------------------------------------------------------------------
@pytest.fixture
def restore() -> Iterator[list[type]]:
    classes: list[type] = []
    yield classes
    for cls in classes:
        uninstrument(cls)


async def test_class_every_instance_traced(
    otel_telemetry: InMemoryTelemetry, restore: list[type]
) -> None:
    class Mine(ScriptedAgent):
        pass

    original_stream = Mine.stream
    restore.append(instrument(Mine, name="mine", **otel_telemetry.providers()))
    assert instrument(Mine) is Mine  # twice: a no-op
    await Mine(EVENTS).invoke(USER)
    await Mine(EVENTS).invoke(USER)
    assert [s.name for s in agent_spans(otel_telemetry)] == ["invoke_agent mine"] * 2
    await ScriptedAgent(EVENTS).invoke(USER)  # the base class is not affected
    assert len(agent_spans(otel_telemetry)) == 2
    uninstrument(Mine)
    assert Mine.stream is original_stream
    await Mine(EVENTS).invoke(USER)
    assert len(agent_spans(otel_telemetry)) == 2


async def test_decorator_forms(otel_telemetry: InMemoryTelemetry, restore: list[type]) -> None:
    @instrument
    class Bare(NonStreamingAgent):
        pass

    @instrument(name="named", **otel_telemetry.providers())
    class Named(NonStreamingAgent):
        pass

    restore.extend([Bare, Named])
    assert await Named("x").run() == "x"
    assert [s.name for s in agent_spans(otel_telemetry)] == ["invoke_agent named"]
    assert is_instrumented(Bare)


async def test_class_covers_subclasses_old_and_new(
    otel_telemetry: InMemoryTelemetry, restore: list[type]
) -> None:
    class Base(ScriptedStreamingAgent):
        pass

    class Old(Base):
        async def astream(self, **kwargs: Any) -> Any:
            async for event in super().astream(**kwargs):  # super chain: still one span
                yield event

    restore.append(instrument(Base, **otel_telemetry.providers()))

    class New(Old):
        async def run(self, **kwargs: Any) -> Any:
            return await super().run(**kwargs)

    for cls in (Base, Old, New):
        assert await cls([MessageFinal(text="ok")]).run() == "ok"
    assert len(agent_spans(otel_telemetry)) == 3


async def test_explicit_class_options_win(
    otel_telemetry: InMemoryTelemetry, restore: list[type]
) -> None:
    class Inner(NonStreamingAgent):
        pass

    restore.append(instrument(NonStreamingAgent, name="base", **otel_telemetry.providers()))
    restore.insert(0, instrument(Inner, name="inner", **otel_telemetry.providers()))
    await Inner().run()
    await NonStreamingAgent().run()
    assert [s.name for s in agent_spans(otel_telemetry)] == [
        "invoke_agent inner",
        "invoke_agent base",
    ]


async def test_instance_of_instrumented_class_is_one_span(
    otel_telemetry: InMemoryTelemetry, restore: list[type]
) -> None:
    class Mine(ScriptedAgent):
        pass

    restore.append(instrument(Mine, name="class", **otel_telemetry.providers()))
    traced = instrument(Mine(EVENTS), name="instance", **otel_telemetry.providers())
    await traced.invoke(USER)
    [e async for e in traced.stream(USER)]
    assert [s.name for s in agent_spans(otel_telemetry)] == ["invoke_agent instance"] * 2


def test_abstract_methods_stay_abstract(restore: list[type]) -> None:
    restore.extend([instrument(Agent), instrument(StreamingAgent)])

    class NoRun(Agent):
        pass

    class NoStream(StreamingAgent):
        pass

    with pytest.raises(TypeError):
        NoRun()  # type: ignore[abstract]
    with pytest.raises(TypeError):
        NoStream()  # type: ignore[abstract]


# --- exactly one invoke_agent span per run ---------------------------------------------------
AGENT_FACTORIES = {
    "event": lambda: ScriptedAgent(EVENTS),
    "streaming": lambda: ScriptedStreamingAgent([MessageFinal(text="ok")]),
    "non_streaming": lambda: NonStreamingAgent("ok"),
}
ENTRIES = [
    ("event", "stream"),
    ("event", "invoke"),
    ("streaming", "run"),
    ("streaming", "astream"),
    ("non_streaming", "run"),
    ("non_streaming", "astream"),
]


@pytest.mark.parametrize("how", ["instance", "class"])
@pytest.mark.parametrize(("kind", "entry"), ENTRIES)
async def test_one_span_per_run(
    otel_telemetry: InMemoryTelemetry, restore: list[type], kind: str, entry: str, how: str
) -> None:
    agent = AGENT_FACTORIES[kind]()
    if how == "class":
        restore.append(instrument(type(agent), **otel_telemetry.providers()))
    else:
        agent = instrument(agent, **otel_telemetry.providers())
    await CALLS[entry](agent)
    await CALLS[entry](agent)
    spans = agent_spans(otel_telemetry)
    assert len(spans) == 2
    assert all(s.parent is None for s in spans)
    assert spans[0].context.trace_id != spans[1].context.trace_id  # type: ignore[union-attr]


class SelfTracing(ScriptedAgent):
    """An agent whose author traced its stream already (``otel_wrapper()`` inside ``stream``)."""

    def __init__(self, events: list[Any], wrap: Any) -> None:
        super().__init__(events)
        self.wrap = wrap

    def stream(self, messages: Any, config: Any = None) -> Any:
        return self.wrap(super().stream(messages, config))


class SelfTracingStreaming(ScriptedStreamingAgent):
    """The Agent contract's kind of :class:`SelfTracing`."""

    def __init__(self, events: list[Any], wrap: Any) -> None:
        super().__init__(events)
        self.wrap = wrap

    def astream(self, **kwargs: Any) -> Any:
        return self.wrap(super().astream(**kwargs))


LAYERED = {
    "instrument() and stream_wrapper=otel_wrapper()": lambda t: instrument(
        ScriptedAgent(EVENTS), **t.providers()
    ).invoke(USER, stream_wrapper=t.wrapper()),
    "a stream wrapped twice": lambda t: _consume(
        t.wrapper()(t.wrapper()(ScriptedAgent(EVENTS).stream(USER)))
    ),
    "a self-tracing agent instrumented, stream": lambda t: _consume(
        instrument(SelfTracing(EVENTS, t.wrapper()), **t.providers()).stream(USER)
    ),
    "a self-tracing agent instrumented, invoke": lambda t: instrument(
        SelfTracing(EVENTS, t.wrapper()), **t.providers()
    ).invoke(USER),
    "a self-tracing agent instrumented, astream": lambda t: _consume(
        instrument(
            SelfTracingStreaming([MessageFinal(text="ok")], t.wrapper()), **t.providers()
        ).astream()
    ),
    "a self-tracing agent instrumented, run": lambda t: instrument(
        SelfTracingStreaming([MessageFinal(text="ok")], t.wrapper()), **t.providers()
    ).run(),
}


async def _consume(stream: Any) -> list[Any]:
    return [event async for event in stream]


@pytest.mark.parametrize("how", list(LAYERED))
async def test_a_run_traced_by_two_layers_is_one_run(
    otel_telemetry: InMemoryTelemetry, how: str
) -> None:
    """A stream agent-otel already traces is not traced again: the layers used to nest two
    ``invoke_agent`` spans over two copies of every step and chat span (its tokens counted
    twice). The outermost layer records the run; the inner one passes its events through."""
    await LAYERED[how](otel_telemetry)
    assert len(agent_spans(otel_telemetry)) == 1, [s.name for s in otel_telemetry.spans()]
    names = [s.name for s in otel_telemetry.spans()]
    assert len(names) == len(set(names)), names  # every step once
    assert otel_telemetry.open_spans() == []


async def test_the_outermost_layer_records_the_run_with_its_own_options(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The layer nearest the caller is the one the caller chose for this call: a test kit's
    ``run_script`` over an agent instrumented elsewhere, or ``stream_wrapper=`` at the call
    site over an agent instrumented at start-up, records the run with its options and
    providers; the inner layer records nothing."""
    elsewhere = InMemoryTelemetry()
    agent = instrument(ScriptedAgent(EVENTS), **elsewhere.providers())
    await run_script(otel_telemetry, agent.stream(USER), agent_name="mine")
    await agent.invoke(USER, stream_wrapper=otel_telemetry.wrapper(agent_name="call-site"))
    assert [s.name for s in agent_spans(otel_telemetry)] == [
        "invoke_agent mine",
        "invoke_agent call-site",
    ]
    assert elsewhere.spans() == []
    elsewhere.shutdown()


async def test_passthrough_same_objects_and_values(otel_telemetry: InMemoryTelemetry) -> None:
    agent = instrument(ScriptedAgent(EVENTS), **otel_telemetry.providers())
    seen = [e async for e in agent.stream(USER)]
    assert len(seen) == len(EVENTS)
    assert all(a is b for a, b in zip(seen, EVENTS))
    data = {"k": [1, 2]}
    finals = [StructuredFinal(data=data)]
    streaming = instrument(ScriptedStreamingAgent(finals), **otel_telemetry.providers())
    assert await streaming.run() is data
    [event] = [e async for e in streaming.astream()]
    assert event is finals[0]
    assert await instrument(NonStreamingAgent(data), **otel_telemetry.providers()).run() is data


# --- a run started inside another run's tool call nests under that tool span ----------------
def _check_nested(telemetry: InMemoryTelemetry, outer_tool: bool) -> None:
    spans = agent_spans(telemetry)
    assert len(spans) == 2, [s.name for s in telemetry.spans()]
    inner, outer = spans  # the inner run ends first
    assert outer.parent is None
    parent = parent_of(telemetry, inner)
    assert parent is not None
    if outer_tool:
        assert parent.name == "execute_tool delegate"
        assert parent_of(telemetry, parent) is not None
    else:
        assert parent is outer or parent.context == outer.context
    assert inner.context.trace_id == outer.context.trace_id  # type: ignore[union-attr]


@pytest.mark.parametrize("outer_entry", list(EVENT_CALLS))
@pytest.mark.parametrize("inner_entry", list(EVENT_CALLS))
async def test_event_nested_same_instance(
    otel_telemetry: InMemoryTelemetry, outer_entry: str, inner_entry: str
) -> None:
    agent = instrument(Delegating(EVENT_CALLS[inner_entry]), **otel_telemetry.providers())
    await EVENT_CALLS[outer_entry](agent)
    _check_nested(otel_telemetry, outer_tool=True)


@pytest.mark.parametrize("outer_entry", list(AGENT_CALLS))
@pytest.mark.parametrize("inner_entry", list(AGENT_CALLS))
async def test_agent_nested_same_instance(
    otel_telemetry: InMemoryTelemetry, outer_entry: str, inner_entry: str
) -> None:
    agent = instrument(DelegatingAgent(AGENT_CALLS[inner_entry]), **otel_telemetry.providers())
    await AGENT_CALLS[outer_entry](agent)
    _check_nested(otel_telemetry, outer_tool=True)


@pytest.mark.parametrize("outer_entry", list(AGENT_CALLS))
@pytest.mark.parametrize("inner_entry", list(AGENT_CALLS))
async def test_non_streaming_nested_same_instance(
    otel_telemetry: InMemoryTelemetry, outer_entry: str, inner_entry: str
) -> None:
    agent = instrument(
        NonStreamingDelegator(AGENT_CALLS[inner_entry]), **otel_telemetry.providers()
    )
    await AGENT_CALLS[outer_entry](agent)
    _check_nested(otel_telemetry, outer_tool=False)


SUB_AGENTS = {
    "event": (lambda: ScriptedAgent(EVENTS), list(EVENT_CALLS)),
    "streaming": (lambda: ScriptedStreamingAgent([MessageFinal(text="ok")]), list(AGENT_CALLS)),
    "non_streaming": (lambda: NonStreamingAgent("ok"), list(AGENT_CALLS)),
}
OTHER_CASES = [
    (outer, sub, inner)
    for outer in ("event_stream", "event_invoke", "agent_run", "agent_astream")
    for sub, (_, entries) in SUB_AGENTS.items()
    for inner in entries
]


@pytest.mark.parametrize(("outer", "sub", "inner"), OTHER_CASES)
async def test_nested_other_agent(
    otel_telemetry: InMemoryTelemetry, outer: str, sub: str, inner: str
) -> None:
    delegate = instrument(SUB_AGENTS[sub][0](), **otel_telemetry.providers())
    contract, entry = outer.split("_")
    if contract == "event":
        agent: Any = Delegating(CALLS[inner], delegate)
    else:
        agent = DelegatingAgent(CALLS[inner], delegate)
    await CALLS[entry](instrument(agent, **otel_telemetry.providers()))
    _check_nested(otel_telemetry, outer_tool=True)


async def test_sub_agent_uninstrumented_makes_no_span(otel_telemetry: InMemoryTelemetry) -> None:
    agent = instrument(DelegatingAgent(call_run, NonStreamingAgent()), **otel_telemetry.providers())
    assert await agent.run() == "done"
    assert len(agent_spans(otel_telemetry)) == 1


async def test_concurrent_runs_of_one_instance(otel_telemetry: InMemoryTelemetry) -> None:
    agent = instrument(ScriptedAgent(EVENTS, delay=0.001), **otel_telemetry.providers())
    streaming = instrument(
        ScriptedStreamingAgent([MessageFinal(text="ok")]), **otel_telemetry.providers()
    )
    await asyncio.gather(
        agent.invoke(USER), agent.invoke(USER), call_stream(agent), streaming.run(), streaming.run()
    )
    spans = agent_spans(otel_telemetry)
    assert len(spans) == 5
    assert all(s.parent is None for s in spans)
    assert len({s.context.trace_id for s in spans if s.context}) == 5
