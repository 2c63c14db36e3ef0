"""Instrumentation stays invisible to hostile-but-ordinary callers and agents (issue 9).

Pydantic-model agents behave as plain classes under instrument/uninstrument/is_instrumented
and double instrumentation; the redact hook gets values it may mutate; the config reaches
the agent as the caller's type; nothing of the caller's arguments is consumed; a consumer's
``athrow`` goes where a bare async generator sends it and ends the run ``closed_early`` only
if the exception comes back (an agent that handles it ends ``exhausted``); no
class or agent is kept alive by instrumentation.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from enum import Enum
from typing import Any

import pytest
from opentelemetry.trace import StatusCode
from pydantic import BaseModel

from agent_contract.agent import MessageFinal, PresetSpec, SubAgentSpec
from agent_contract.examples import NonStreamingAgent, ScriptedStreamingAgent
from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    StreamingAgent,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agent_otel import (
    ContentCapture,
    inject_context,
    instrument,
    is_instrumented,
    otel_wrapper,
    uninstrument,
)
from agent_otel.testing import InMemoryTelemetry
from hostile_types import HostileStr, LyingDict, LyingFloat, LyingInt, LyingList, LyingStr


def options(telemetry: InMemoryTelemetry, **extra: Any) -> dict[str, Any]:
    return {
        "tracer_provider": telemetry.tracer_provider,
        "meter_provider": telemetry.meter_provider,
        **extra,
    }


def _bare_then_traced(
    telemetry: InMemoryTelemetry, activate_context: bool
) -> tuple[Callable[[Any], Any], ...]:
    """No wrapper, then agent-otel's (run ``a``): a stream driven through each must behave
    the same."""
    traced = otel_wrapper(agent_name="a", activate_context=activate_context, **options(telemetry))
    return (lambda s: s, traced)


def runs(telemetry: InMemoryTelemetry) -> list[str]:
    return [s.name for s in telemetry.spans() if s.name.startswith("invoke_agent")]


class Area(str, Enum):
    """A ``str`` enum, as an agent's name or a tool's may be typed."""

    WEATHER = "weather"


# --- pydantic-model agents ------------------------------------------------------------------


class ModelAgent(BaseModel):
    """A CrewAI/LangChain-style agent: a pydantic model with an event stream."""

    name: str = "model-agent"
    calls: int = 0

    async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
        self.calls += 1
        yield TextDelta(text="hi")


class PlainAgent:
    def __init__(self) -> None:
        self.name = "plain-agent"
        self.calls = 0

    async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
        self.calls += 1
        yield TextDelta(text="hi")


async def consume(agent: Any) -> list[Any]:
    return [event async for event in agent.stream([])]


@pytest.mark.parametrize("cls", [ModelAgent, PlainAgent])
async def test_instance_instrumentation_is_the_same_for_models_and_plain_classes(
    cls: type, otel_telemetry: InMemoryTelemetry
) -> None:
    agent = cls()
    traced = instrument(agent, **options(otel_telemetry))
    assert is_instrumented(traced) and not is_instrumented(agent)
    assert isinstance(traced, cls)
    assert instrument(traced, **options(otel_telemetry)) is traced  # twice: one drop-in
    await consume(traced)
    assert runs(otel_telemetry) == [f"invoke_agent {agent.name}"]  # one span per run
    assert agent.calls == 1  # shared state
    original = uninstrument(traced)
    assert original is agent
    assert not is_instrumented(traced) and not is_instrumented(original)
    otel_telemetry.clear()
    await consume(traced)
    await consume(original)
    assert runs(otel_telemetry) == []


@pytest.mark.parametrize("base", [BaseModel, object])
async def test_class_instrumentation_is_the_same_for_models_and_plain_classes(
    base: type, otel_telemetry: InMemoryTelemetry
) -> None:
    class Agent(base):  # type: ignore[misc, valid-type]
        async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
            yield TextDelta(text="hi")

    instrument(Agent, **options(otel_telemetry))
    instrument(Agent, **options(otel_telemetry))
    assert is_instrumented(Agent) and is_instrumented(Agent())
    await consume(Agent())
    assert runs(otel_telemetry) == ["invoke_agent Agent"]
    uninstrument(Agent)
    assert not is_instrumented(Agent)
    otel_telemetry.clear()
    await consume(Agent())
    assert runs(otel_telemetry) == []


# --- memory ---------------------------------------------------------------------------------


def _made_at_run_time(base: type) -> type:
    class RunTimeAgent(base):  # type: ignore[misc, valid-type]
        async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
            yield TextDelta(text="hi")

    return RunTimeAgent


@pytest.mark.parametrize("base", [BaseModel, object])
async def test_no_class_or_agent_is_kept_alive(base: type) -> None:
    telemetry = InMemoryTelemetry()
    cls = _made_at_run_time(base)
    event_cls = type("RunTimeDelta", (), {"type": "message_delta", "text": "x"})
    agent = cls()
    traced = instrument(agent, **options(telemetry))

    await consume(traced)
    wrapped = otel_wrapper(**options(telemetry))
    assert [type(e) async for e in wrapped(one_of(event_cls))] == [event_cls]
    refs = [weakref.ref(x) for x in (cls, agent, traced, type(traced), event_cls)]
    del cls, agent, traced, event_cls
    gc.collect()
    assert [ref() for ref in refs] == [None] * len(refs)


async def one_of(cls: type) -> AsyncIterator[Any]:
    yield cls()


# --- the caller's values --------------------------------------------------------------------


class Config(dict[str, Any]):
    """A caller's own config type."""


async def test_the_config_reaches_the_agent_as_the_callers_type(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    seen: list[Any] = []

    class Agent:
        async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
            seen.append(config)
            yield TextDelta(text="hi")

    config = Config(conversation_id="c1")
    traced = instrument(Agent(), **options(otel_telemetry))
    await consume_with(traced, config)
    (received,) = seen
    assert type(received) is Config
    assert received["conversation_id"] == "c1"
    assert config == {"conversation_id": "c1"}  # the caller's own object is untouched


async def consume_with(agent: Any, config: Any) -> None:
    async for _ in agent.stream([], config):
        pass


async def test_nothing_of_the_callers_arguments_is_consumed(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    received: dict[str, Any] = {}

    class Agent:
        name = "a"

        async def run(self, **kwargs: Any) -> str:
            received.update({k: list(v) for k, v in kwargs.items()})
            return "done"

    class EventAgent:
        async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
            received["messages"] = list(messages)
            yield TextDelta(text="hi")

    def tools() -> Iterator[dict[str, str]]:
        yield {"name": "search"}

    agent = instrument(Agent(), **options(otel_telemetry, capture_content=True))
    assert await agent.run(tools=tools(), subagents=iter(["s"])) == "done"
    assert received["tools"] == [{"name": "search"}]
    assert received["subagents"] == ["s"]
    event_agent = instrument(EventAgent(), **options(otel_telemetry, capture_content=True))
    history = iter([Message(role="user", content="hi")])
    await consume_with_messages(event_agent, history)
    assert [m.content for m in received["messages"]] == ["hi"]


async def consume_with_messages(agent: Any, messages: Any) -> None:
    async for _ in agent.stream(messages):
        pass


async def test_the_redact_hook_may_mutate_what_it_gets(otel_telemetry: InMemoryTelemetry) -> None:
    history = [Message(role="user", content="secret")]
    arguments = {"key": "secret", "nested": {"key": "secret"}}
    result = {"token": "secret", "items": ["secret"]}

    def scrub(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if item == "secret":
                    value[key] = "[x]"
                scrub(item)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if item == "secret":
                    value[index] = "[x]"
                scrub(item)

    def redact(kind: Any, value: Any) -> Any:
        scrub(value)  # in place
        return value

    events = [
        LLMCallStart(model="m", call_id="c1", messages=history),
        TextDelta(text="secret"),
        LLMCallEnd(call_id="c1"),
        ToolCall(id="t1", function=FunctionCall(name="f", arguments="{}")),
        ToolResult(tool_call_id="t1", content=result),
    ]
    tool_call = events[3]
    assert isinstance(tool_call, ToolCall)
    tool_call.function.arguments = arguments  # type: ignore[assignment]  # a dict, not text

    async def agent() -> AsyncIterator[Any]:
        for event in events:
            yield event

    wrapper = otel_wrapper(**options(otel_telemetry, capture_content=ContentCapture(redact=redact)))
    received = [event async for event in wrapper(agent())]
    assert all(a is b for a, b in zip(received, events))
    assert history[0].content == "secret"
    assert arguments == {"key": "secret", "nested": {"key": "secret"}}
    assert result == {"token": "secret", "items": ["secret"]}
    recorded = " ".join(
        str(v) for s in otel_telemetry.spans() for v in (s.attributes or {}).values()
    )
    assert "[x]" in recorded and "secret" not in recorded


# --- athrow ---------------------------------------------------------------------------------


class Thrown(Exception):
    """What the consumer throws into the stream."""


def bare(log: list[Any], handle: bool) -> AsyncIterator[Any]:
    async def agent() -> AsyncIterator[Any]:
        try:
            yield TextDelta(text="a")
            yield TextDelta(text="b")
        except Thrown as exc:
            log.append(exc)
            if not handle:
                raise
            yield TextDelta(text="after")

    return agent()


@pytest.mark.parametrize("activate_context", [True, False])
@pytest.mark.parametrize("handle", [False, True])
async def test_athrow_goes_where_a_bare_generator_sends_it(
    handle: bool, activate_context: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    outcomes = []
    for wrap in _bare_then_traced(otel_telemetry, activate_context):
        log: list[Any] = []
        stream = wrap(bare(log, handle))
        await stream.__anext__()
        error = Thrown()
        try:
            answer: Any = (await stream.athrow(error)).text
        except Thrown as exc:
            answer = exc is error
        outcomes.append((answer, [e is error for e in log]))
        await stream.aclose()
    assert outcomes[0] == outcomes[1]  # the traced stream behaves as the bare one
    (root,) = [s for s in otel_telemetry.spans() if s.name == "invoke_agent a"]
    assert (root.attributes or {})["agent_otel.end_reason"] == "closed_early"
    assert root.status.status_code is not StatusCode.ERROR
    assert not [e for e in root.events if e.name == "exception"]


@pytest.mark.parametrize("activate_context", [True, False])
async def test_an_athrow_the_agent_handles_then_runs_to_its_end_is_exhausted(
    activate_context: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    """The agent catches the consumer's exception and its stream then ends as streams do:
    nothing was cut short (every event it had reached the consumer), so the run ended
    ``exhausted``, not ``closed_early``, with no ERROR; the same when the agent answers the
    exception by returning. Only the exception coming back, or the consumer closing the
    stream, makes it ``closed_early`` (the test above)."""
    wrap = otel_wrapper(
        agent_name="a", activate_context=activate_context, **options(otel_telemetry)
    )
    log: list[Any] = []
    stream = wrap(bare(log, handle=True))
    await stream.__anext__()
    error = Thrown()
    assert (await stream.athrow(error)).text == "after"
    assert [event async for event in stream] == []  # its normal end
    assert log == [error]

    async def returns() -> AsyncIterator[Any]:
        try:
            yield TextDelta(text="a")
        except Thrown:
            return

    stream = wrap(returns())
    await stream.__anext__()
    with pytest.raises(StopAsyncIteration):
        await stream.athrow(Thrown())
    roots = [s for s in otel_telemetry.spans() if s.name == "invoke_agent a"]
    assert [(r.attributes or {})["agent_otel.end_reason"] for r in roots] == ["exhausted"] * 2
    assert all(r.status.status_code is not StatusCode.ERROR for r in roots)


# --- asend ----------------------------------------------------------------------------------


def echoing(log: list[Any]) -> AsyncIterator[Any]:
    """An agent that takes values the consumer sends, as a bare async generator can."""

    async def agent() -> AsyncIterator[Any]:
        received = yield TextDelta(text="first")
        while received is not None:
            log.append(received)
            received = yield TextDelta(text=f"got {received}")
        yield TextDelta(text="last")

    return agent()


@pytest.mark.parametrize("activate_context", [True, False])
async def test_asend_goes_to_the_agent_as_on_a_bare_generator(
    activate_context: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    outcomes = []
    for wrap in _bare_then_traced(otel_telemetry, activate_context):
        log: list[Any] = []
        stream = wrap(echoing(log))
        texts = [(await stream.__anext__()).text]
        texts.append((await stream.asend("x")).text)
        texts.append((await stream.asend("y")).text)
        texts.append((await stream.asend(None)).text)
        texts += [e.text async for e in stream]
        outcomes.append((texts, log))
    assert outcomes[0] == outcomes[1] == (["first", "got x", "got y", "last"], ["x", "y"])
    (root,) = [s for s in otel_telemetry.spans() if s.name == "invoke_agent a"]
    assert (root.attributes or {})["agent_otel.end_reason"] == "exhausted"


async def test_asend_reaches_an_instrumented_agents_stream(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    log: list[Any] = []

    class Echo:
        name = "echo"

        def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
            return echoing(log)

    agent = instrument(Echo(), **options(otel_telemetry))
    stream = agent.stream([])
    assert (await stream.__anext__()).text == "first"
    assert (await stream.asend("x")).text == "got x"
    with pytest.raises(StopAsyncIteration):
        await stream.asend(None)
        await stream.__anext__()
    assert log == ["x"]
    assert runs(otel_telemetry) == ["invoke_agent echo"]


async def test_asend_to_a_stream_without_asend_is_a_plain_pull(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    class Plain:
        def __init__(self) -> None:
            self.items = iter([TextDelta(text="a"), TextDelta(text="b")])

        def __aiter__(self) -> Plain:
            return self

        async def __anext__(self) -> Any:
            try:
                return next(self.items)
            except StopIteration:
                raise StopAsyncIteration from None

    stream = otel_wrapper(agent_name="p", **options(otel_telemetry))(Plain())
    assert (await stream.__anext__()).text == "a"
    assert (await stream.asend("ignored")).text == "b"
    with pytest.raises(StopAsyncIteration):
        await stream.asend("again")
    assert runs(otel_telemetry) == ["invoke_agent p"]


# --- built-ins' subclasses, from the caller and from the agent --------------------------------
# A str enum member, or a str, int, float, dict or list subclass whose own methods raise: the
# agent's name and the call's arguments are read as the built-ins they are (nothing of a
# subclass's own runs, nothing is an internal error), and the agent gets its own objects.


class NamedEventAgent:
    async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
        yield TextDelta(text="hi")


class NamedAgent:
    async def run(self, **kwargs: Any) -> str:
        return "done"


def _named(source: str, contract: str, value: Any, telemetry: InMemoryTelemetry) -> Any:
    agent = NamedEventAgent() if contract == "event" else NamedAgent()
    extra: dict[str, Any] = {}
    if source in ("name", "agent_name"):
        extra[source] = value  # instrument(agent, name=...) or its agent_name option
    else:
        setattr(agent, source, value)
    return instrument(agent, **options(telemetry, **extra))


async def _call(agent: Any, contract: str) -> None:
    if contract == "event":
        await consume(agent)
    else:
        assert await agent.run() == "done"


@pytest.mark.parametrize("contract", ["event", "agent"])
@pytest.mark.parametrize("source", ["name", "agent_name", "tool_name", "name_attribute"])
async def test_a_str_enum_agent_name_names_the_span_by_its_value(
    source: str, contract: str, otel_telemetry: InMemoryTelemetry
) -> None:
    """``instrument(name=...)``, ``agent_name=``, the agent's ``tool_name`` or ``name`` as a
    ``str`` enum member: the span is named by its value (``format()`` of one gives
    ``Kind.WEATHER`` on Python 3.11 and later)."""
    agent = _named(
        "name" if source == "name_attribute" else source, contract, Area.WEATHER, otel_telemetry
    )
    await _call(agent, contract)
    (span,) = [s for s in otel_telemetry.spans() if s.name.startswith("invoke_agent")]
    assert span.name == "invoke_agent weather"
    name = (span.attributes or {})["gen_ai.agent.name"]
    assert type(name) is str and name == "weather"


@pytest.mark.parametrize("contract", ["event", "agent"])
@pytest.mark.parametrize(
    "source", ["name", "agent_name", "tool_name", "name_attribute", "tool_description"]
)
async def test_agent_names_of_a_str_subclass_whose_methods_raise(
    source: str, contract: str, otel_telemetry: InMemoryTelemetry
) -> None:
    """The name (or description) as a ``str`` subclass whose own length, hash, equality and
    ``str()`` raise: ``instrument()`` returns, and the run is traced under the ``str`` it is
    (``instrument()`` raised; the run went untraced, an internal error)."""
    value = LyingStr("weather")
    agent = _named(
        "name" if source == "name_attribute" else source, contract, value, otel_telemetry
    )
    await _call(agent, contract)
    (span,) = [s for s in otel_telemetry.spans() if s.name.startswith("invoke_agent")]
    attributes = span.attributes or {}
    if source == "tool_description":
        assert attributes["gen_ai.agent.description"] == "weather"
        return
    assert span.name == "invoke_agent weather"
    assert type(attributes["gen_ai.agent.name"]) is str


def _carrier(telemetry: InMemoryTelemetry) -> tuple[dict[str, str], int]:
    tracer = telemetry.tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("caller") as span:
        return inject_context(), span.get_span_context().span_id


@pytest.mark.parametrize("entry", ["stream", "invoke"])
async def test_event_call_arguments_of_builtin_subclasses(
    entry: str, otel_telemetry: InMemoryTelemetry
) -> None:
    """Messages as a ``list`` subclass, the config as a ``dict`` subclass (whose own ``items``,
    ``get``, iteration and length raise), its ids as ``str`` subclasses and its
    ``otel_context`` carrier as a ``dict`` subclass: the run is recorded with all of them (each
    was an internal error: the run went untraced), and the agent gets the very messages, and
    the config as its own type."""
    seen: list[Any] = []

    class Agent(StreamingAgent):
        async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
            seen.append((messages, config))
            yield TextDelta(text="hi")

    carrier, parent = _carrier(otel_telemetry)
    messages = LyingList([Message(role="user", content="question")])
    config = LyingDict(
        conversation_id=LyingStr("c1"),
        session_id=LyingStr("s1"),
        user_id=LyingStr("u1"),
        otel_context=LyingDict({k: LyingStr(v) for k, v in carrier.items()}),
    )
    agent = instrument(Agent(), **options(otel_telemetry, capture_content=True))
    if entry == "stream":
        async for _ in agent.stream(messages, config):
            pass
    else:
        await agent.invoke(messages, config=config)
    ((received, received_config),) = seen
    assert received is messages
    assert type(received_config) is LyingDict
    assert dict.get(received_config, "conversation_id") is dict.get(config, "conversation_id")
    (span,) = runs_of(otel_telemetry)
    attributes = span.attributes or {}
    assert attributes["gen_ai.conversation.id"] == "c1"
    assert attributes["session.id"] == "s1"
    assert attributes["user.id"] == "u1"
    assert "question" in str(attributes["gen_ai.input.messages"])
    assert span.parent is not None and span.parent.span_id == parent


@pytest.mark.parametrize("kind", [LyingStr, LyingDict])
async def test_messages_that_are_no_history_are_not_read(
    kind: type, otel_telemetry: InMemoryTelemetry
) -> None:
    """Messages that are a string or a mapping (a ``str`` or ``dict`` subclass whose own
    iteration raises), content capture on: no history is recorded, the run is traced, and the
    agent gets them (iterating them was an internal error: the run went untraced)."""
    agent = MessagesAgent()
    messages = kind("hi") if kind is LyingStr else kind(role="user", content="hi")
    traced = instrument(agent, **options(otel_telemetry, capture_content=True))
    async for _ in traced.stream(messages):
        pass
    assert agent.received is messages
    (span,) = runs_of(otel_telemetry)
    assert "gen_ai.input.messages" not in (span.attributes or {})


class MessagesAgent(StreamingAgent):
    received: Any = None

    async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
        self.received = messages
        yield TextDelta(text="hi")


class Tool:
    def __init__(self, name: str) -> None:
        self.name = name


def _agent_kwargs(carrier: dict[str, str]) -> dict[str, Any]:
    return {
        "tools": LyingList([Tool(LyingStr("search")), LyingDict(name="fetch"), LyingStr("a")]),
        "tool_names": (HostileStr("lookup"), Area.WEATHER),
        "presets": [PresetSpec.model_construct(name=HostileStr("p1"), base_tool="flow")],
        "subagents": LyingList([SubAgentSpec(name="helper")]),
        "skills": LyingList([LyingStr("summarise")]),
        "inline_skills": [LyingDict(name="inline", content="c")],
        "llm_kwargs": LyingDict(
            model=LyingStr("gpt-4o"),
            temperature=LyingFloat(0.5),
            top_p=LyingFloat(0.9),
            max_tokens=LyingInt(256),
        ),
        "strategy": LyingStr("react"),
        "recursion_limit": LyingInt(12),
        "thread_id": LyingStr("t1"),
        "llm_provider": LyingStr("openai"),
        "user_message": LyingStr("question"),
        "system_message": LyingStr("be brief"),
        "otel_context": LyingDict({k: LyingStr(v) for k, v in carrier.items()}),
    }


@pytest.mark.parametrize("entry", ["run", "astream"])
@pytest.mark.parametrize("streaming", [True, False])
async def test_agent_call_arguments_of_builtin_subclasses(
    entry: str, streaming: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    """Every allow-listed argument of an Agent-contract call as a built-in's subclass whose own
    methods raise (``tools`` a ``list`` subclass, a tool's name a ``str`` subclass,
    ``llm_kwargs`` a ``dict`` subclass, counts ``int`` and ``float`` subclasses...): each is
    recorded as the plain value it is (each was an internal error: the run went untraced), and
    the agent gets the very objects it was given."""
    raw: Any = (
        ScriptedStreamingAgent([MessageFinal(text="ok")]) if streaming else NonStreamingAgent("ok")
    )
    agent = instrument(raw, **options(otel_telemetry, capture_content=True))
    carrier, parent = _carrier(otel_telemetry)
    call = _agent_kwargs(carrier)
    if entry == "run":
        assert await agent.run(**call) == "ok"
    else:
        [e async for e in agent.astream(**call)]
    received = raw.last_kwargs
    assert all(received[k] is v for k, v in call.items() if k != "otel_context")
    (span,) = runs_of(otel_telemetry)
    attributes = dict(span.attributes or {})
    expected = {
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.request.temperature": 0.5,
        "gen_ai.request.top_p": 0.9,
        "gen_ai.request.max_tokens": 256,
        "agent_otel.strategy": "react",
        "agent_otel.recursion_limit": 12,
        "agent_otel.tool_names": ("search", "fetch", "a", "lookup", "weather"),
        "agent_otel.preset_names": ("p1",),
        "agent_otel.subagent_names": ("helper",),
        "agent_otel.skill_names": ("summarise", "inline"),
        "gen_ai.conversation.id": "t1",
        "gen_ai.provider.name": "openai",
    }
    for key, value in expected.items():
        assert attributes[key] == value, key
        kinds = value if isinstance(value, tuple) else (value,)
        assert all(type(v) in (str, int, float) for v in kinds), key
    assert "be brief" in str(attributes["gen_ai.system_instructions"])
    assert "question" in str(attributes["gen_ai.input.messages"])
    assert span.parent is not None and span.parent.span_id == parent


def runs_of(telemetry: InMemoryTelemetry) -> list[Any]:
    return [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
