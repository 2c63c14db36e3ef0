"""Fuzz: every field of every event of both vocabularies filled with hostile values (issue 9).

Hostile values are the classes of issue 9 (lone surrogates, integers beyond 64 bits,
unhashable ids, ids whose ``str()`` raises, JSON nested past the parser's limit, huge lists
and strings, exceptions whose ``__str__`` raises) plus wrong types and ``None``. On every
example, with content capture off, on, or on with a tiny budget:

* the consumer receives the agent's events, the same objects, in order;
* every started span ends exactly once, and none ends after its parent;
* everything exported (spans, metric points, exemplars) encodes with the real OTLP encoders;
* nothing raises into the agent or the consumer (only the agent's own exception escapes);
* every repair is a defined one: nothing is reported as an internal error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
from collections.abc import AsyncIterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_contract import agent as agent_events
from agent_contract import protocol
from agent_contract.sources._unrun import UnrunCallsEnd
from agent_otel import ContentCapture, instrument, otel_wrapper
from hostile_types import (
    BadHash,
    HostileStr,
    LyingDict,
    LyingFloat,
    LyingInt,
    LyingList,
    LyingStr,
    NoStr,
)
from otlp_check import Exported, assert_nested_in_time
from test_property import records_of


class BrokenError(Exception):
    """An exception whose ``__init__`` skips ``super().__init__()`` and whose ``__str__`` fails."""

    def __init__(self) -> None:
        pass

    def __str__(self) -> str:
        raise AttributeError("message")


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


SURROGATES = st.sampled_from(["\udc80", "a\ud800b", "tool\udfff", "\ud83d"])
HOSTILE_SCALARS: list[Any] = [
    None,
    True,
    0,
    -1,
    2**63,
    2**64,
    -(2**70),
    10**5000,
    math.nan,
    math.inf,
    -0.0,
    b"\xff\xfe",
    "",
    "x" * 100_000,
    "[" * 50_000 + "]" * 50_000,
    '{"a": ' * 5_000 + "1" + "}" * 5_000,
]
HOSTILE_OBJECTS = st.sampled_from(
    [
        lambda: NoStr(),
        lambda: BadHash(),
        lambda: ["unhashable", "id"],
        lambda: {"a": ["b"]},
        lambda: {1: "int key", None: "none key", (1, 2): "tuple key"},
        lambda: _nested(3_000),
        lambda: [0.5] * 30_000,
        lambda: [{"role": "user", "content": "m"}] * 5_000,
        lambda: [protocol.Message(role="user", content="\udc80")],
        lambda: object(),
        lambda: BrokenError(),
        lambda: iter([1, 2]),
        lambda: HostileStr("search"),
        lambda: LyingStr("t1"),
        lambda: LyingInt(3),
        lambda: LyingFloat(0.5),
        lambda: LyingDict(temperature=0.5, role="user", content="hi"),
        lambda: LyingList([{"role": "user", "content": "hi"}]),
    ]
).map(lambda make: make())
HOSTILE = st.one_of(
    st.sampled_from(HOSTILE_SCALARS),
    SURROGATES,
    HOSTILE_OBJECTS,
    st.text(max_size=20),
    st.integers(),
    st.sampled_from(["c1", "c2", "t1", "t2"]),  # ids that collide, so calls match
)

LATENT = [
    protocol.TextDelta,
    protocol.ReasoningDelta,
    protocol.LLMCallStart,
    protocol.LLMCallEnd,
    protocol.ToolCall,
    protocol.ToolResult,
    protocol.StepBoundary,
    protocol.Usage,
    protocol.Error,
    protocol.JourneyMarker,
    protocol.PhaseMarker,
    UnrunCallsEnd,  # an adapter's call whose tool calls never ran (agent_contract.sources._unrun)
]
AGENT = [
    agent_events.MessageDelta,
    agent_events.ReasoningStep,
    agent_events.ToolCallStep,
    agent_events.ToolResultStep,
    agent_events.RunUsage,
    agent_events.MessageFinal,
    agent_events.StructuredFinal,
    agent_events.InterruptFinal,
]


def _latent(cls: type, values: dict[str, Any]) -> Any:
    event = object.__new__(cls)  # every field hostile, validation included
    for field in dataclasses.fields(cls):
        object.__setattr__(event, field.name, values.get(field.name))
    if cls is protocol.ToolCall and values.get("function_shape"):
        event.function = protocol.FunctionCall(name=values.get("id"), arguments=values.get("type"))
    if cls is UnrunCallsEnd and values.get("function_shape"):  # its calls as hostile as a call
        object.__setattr__(event, "unrun", (_latent(protocol.ToolCall, values),))
    return event


def _agent(cls: Any, values: dict[str, Any]) -> Any:
    fields = {name: values.get(name) for name in cls.model_fields if name != "type"}
    return cls.model_construct(**fields)


@st.composite
def events(draw: st.DrawFn) -> Any:
    cls = draw(st.sampled_from(LATENT + AGENT))
    names = [f.name for f in dataclasses.fields(cls)] if cls in LATENT else list(cls.model_fields)
    values = {name: draw(HOSTILE) for name in names}
    values["function_shape"] = draw(st.booleans())
    return _latent(cls, values) if cls in LATENT else _agent(cls, values)


CAPTURE = st.sampled_from([False, True, ContentCapture(max_bytes=64)])


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    script=st.lists(events(), max_size=12),
    capture=CAPTURE,
    agent_error=st.sampled_from([None, BrokenError, ValueError]),
    names=HOSTILE,
)
def test_hostile_events_never_cost_a_span_a_batch_or_the_agent(
    script: list[Any], capture: Any, agent_error: type[BaseException] | None, names: Any
) -> None:
    exported = Exported()
    error = agent_error() if agent_error is not None else None

    async def agent() -> AsyncIterator[Any]:
        for event in script:
            yield event
        if error is not None:
            raise error

    async def main() -> list[Any]:
        wrapper = otel_wrapper(
            agent_name=names if isinstance(names, str) else None,
            tracer_provider=exported.tracer_provider,
            meter_provider=exported.meter_provider,
            capture_content=capture,
        )
        received: list[Any] = []
        escaped: BaseException | None = None
        try:
            async for event in wrapper(agent()):
                received.append(event)
        except BaseException as exc:
            escaped = exc
        assert escaped is error  # only the agent's own exception, as the same object
        return received

    with records_of("agent_otel", logging.DEBUG) as records:
        received = asyncio.run(main())
    assert not records.messages, records.messages
    assert len(received) == len(script)
    assert all(a is b for a, b in zip(received, script))
    ledger = exported.ledger
    assert ledger.started, "the run was traced"
    assert not ledger.double_ends
    assert sorted(ledger.ended) == sorted(ledger.started)
    assert_nested_in_time(exported.spans())
    exported.assert_encodes()


# --- instrumented agents: the caller's arguments and the agent's own name -----------------------
ARGUMENTS = ("tools", "tool_names", "presets", "subagents", "skills", "inline_skills")
ARGUMENTS += ("llm_kwargs", "strategy", "recursion_limit", "thread_id", "llm_provider")
ARGUMENTS += ("user_message", "system_message", "resume", "otel_context")
IN_A_LIST = st.one_of(
    HOSTILE, st.lists(HOSTILE, max_size=3), st.lists(HOSTILE, max_size=3).map(LyingList)
)
IN_A_DICT = st.dictionaries(
    st.sampled_from(
        ["model", "temperature", "max_tokens", "name", "conversation_id", "otel_context"]
    ),
    HOSTILE,
    max_size=4,
)


class FuzzedAgent(agent_events.Agent):
    tool_name = "fuzzed"

    async def run(self, **kwargs: Any) -> Any:
        self.received = kwargs
        return "done"


class FuzzedEventAgent(protocol.StreamingAgent):
    async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
        self.received = (messages, config)
        yield protocol.TextDelta(text="hi")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    names=st.fixed_dictionaries(dict.fromkeys(("name", "tool_name", "agent_name"), HOSTILE)),
    arguments=st.dictionaries(
        st.sampled_from(ARGUMENTS), st.one_of(IN_A_LIST, IN_A_DICT, IN_A_DICT.map(LyingDict))
    ),
    messages=st.one_of(HOSTILE, IN_A_LIST),
    config=st.one_of(HOSTILE, IN_A_DICT, IN_A_DICT.map(LyingDict)),
    capture=CAPTURE,
    entry=st.sampled_from(["run", "astream", "stream", "invoke"]),
)
def test_hostile_arguments_never_cost_an_instrumented_agent_its_run(
    names: dict[str, Any],
    arguments: dict[str, Any],
    messages: Any,
    config: Any,
    capture: Any,
    entry: str,
) -> None:
    """An instrumented agent of either contract, its name (``name=``, ``agent_name=``, its own
    ``tool_name``) and every argument of its call hostile: the run is traced, nothing is an
    internal error or raises into the caller, the agent gets the very objects it was given, and
    everything exported encodes."""
    exported = Exported()
    agent: Any = FuzzedEventAgent() if entry in ("stream", "invoke") else FuzzedAgent()
    agent.tool_name = names["tool_name"]
    traced = instrument(
        agent,
        name=names["name"],
        agent_name=names["agent_name"] if isinstance(names["agent_name"], str) else None,
        tracer_provider=exported.tracer_provider,
        meter_provider=exported.meter_provider,
        capture_content=capture,
    )

    async def main() -> None:
        if entry == "run":
            assert await traced.run(**arguments) == "done"
        elif entry == "astream":
            [e async for e in traced.astream(**arguments)]
        elif entry == "stream":
            [e async for e in traced.stream(messages, config)]
        else:
            await traced.invoke(messages, config=config)

    with records_of("agent_otel", logging.DEBUG) as records:
        asyncio.run(main())
    assert not records.messages, records.messages
    if entry in ("run", "astream"):
        given = {k: v for k, v in arguments.items() if k != "otel_context"}
        assert all(agent.received[k] is v for k, v in given.items())
    else:
        assert agent.received[0] is messages
    assert [s.name for s in exported.spans() if s.name.startswith("invoke_agent")], "traced"
    assert sorted(exported.ledger.ended) == sorted(exported.ledger.started)
    exported.assert_encodes()
