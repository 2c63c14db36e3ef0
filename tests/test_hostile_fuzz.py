"""Fuzz: every field of every event of both vocabularies filled with hostile values.

The event classes and their fields come from the contract itself (``hostile_events``): every
descendant of ``AgentEvent`` and ``StreamEvent`` a contract module defines, every field each
declares, so a new event subclass or field is fuzzed without being added here, and a class
whose fields cannot be known fails the coverage test. Hostile values are those of
docs/hostile.md (lone surrogates, integers beyond 64 bits, unhashable ids, ids whose ``str()``
raises, JSON nested past the parser's limit, huge lists and strings, exceptions whose
``__str__`` raises, built-in subclasses whose own methods raise) plus wrong types and ``None``.
On every example, through ``otel_wrapper()``, an ``instrument()``-ed agent of either contract
or the testing kit's ``run_script``, with content capture off, on, or on with a tiny budget:

* the consumer receives the agent's events, the same objects, in order;
* every started span ends exactly once, and none ends after its parent;
* everything exported (spans, metric points, exemplars) encodes with the real OTLP encoders,
  and the kit's ``tree()`` and ``outline()`` read it;
* nothing raises into the agent or the consumer (only the agent's own exception escapes);
* every repair is a defined one: nothing is reported as an internal error.

``HOSTILE_FUZZ_EXAMPLES`` sets how many examples each fuzz draws (CI's default is small);
the heavy variant draws ten times more.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agent_contract import agent as agent_events
from agent_contract import events, protocol
from agent_contract.agent import events as stream_events
from agent_contract.events import AgentEvent
from agent_otel import ContentCapture, instrument, otel_wrapper
from agent_otel.testing import run_script
from hostile_events import (
    AGENT_CLASSES,
    EVENT_CLASSES,
    EVENTS,
    HOSTILE,
    LATENT_CLASSES,
    STRATEGIES,
    BrokenError,
    descendants,
    drawn_fields,
    fields_of,
)
from hostile_types import LyingDict, LyingList
from otlp_check import Exported, assert_encodes, assert_nested_in_time
from test_property import records_of

EXAMPLES = int(os.environ.get("HOSTILE_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)  # (no explain phase: over values this large it takes minutes to say what the shrink did)
HEAVY = settings(FUZZ, max_examples=10 * EXAMPLES)


# --- the fuzz covers the contract ------------------------------------------------------------
def test_every_contract_event_class_and_field_is_fuzzed() -> None:
    """The classes fuzzed are the contract's own: its eleven kinds, its Agent vocabulary and
    every subclass its modules define (those the adapters yield among them); each class's
    every field is drawn, and differs from one draw to the next."""
    names = {f"{c.__module__}.{c.__qualname__}" for c in EVENT_CLASSES}
    # (a test's own subclass, of any module but the contract's, is none of them)
    kinds = {c.__name__ for c in AgentEvent.__subclasses__() if c.__module__ == events.__name__}
    assert kinds <= {c.__name__ for c in LATENT_CLASSES} and len(kinds) == 11
    for known in (
        "agent_contract.events.SideCallStart",
        "agent_contract.sources._call_usage.CallUsage",
        "agent_contract.sources._unrun.UnrunCallsEnd",
        "agent_contract.sources._server_tools.ServerToolCallsEnd",
        "agent_contract.sources._failure.ToolResult",
        "agent_contract.sources._history.LLMCallStart",
        "agent_contract.agent.events.InterruptFinal",
    ):
        assert known in names, known
    assert {c.__name__ for c in AGENT_CLASSES} == set(stream_events.__all__) - {"StreamEvent"}
    seen: dict[type, dict[str, set[str]]] = {
        c: {n: set() for n in fields_of(c)} for c in EVENT_CLASSES
    }
    assert all(seen.values())  # an event of no field would leave nothing to fuzz

    @settings(FUZZ, max_examples=60)
    @given(data=st.data())
    def draw(data: st.DataObject) -> None:
        for cls in EVENT_CLASSES:
            event = data.draw(STRATEGIES[cls])
            assert type(event) is cls
            for name, value in drawn_fields(event).items():
                seen[cls][name].add(type(value).__name__)

    draw()
    for cls, fields in seen.items():
        assert all(len(types) > 1 for types in fields.values()), (cls, fields)


def test_a_new_subclass_or_field_is_fuzzed_unasked() -> None:
    """A subclass a contract module defines is found, with its new field; a class of no
    known kind of fields fails the fuzz's derivation instead of going unfuzzed."""
    import agent_contract.sources._unrun as module

    @dataclasses.dataclass(slots=True)
    class HostedLike(protocol.LLMCallEnd):
        hosted: tuple[protocol.ToolCall, ...] = ()

    HostedLike.__module__, HostedLike.__qualname__ = module.__name__, "HostedLike"
    module.HostedLike = HostedLike  # type: ignore[attr-defined]
    try:
        assert HostedLike in descendants(AgentEvent)
        assert fields_of(HostedLike)[-1] == "hosted"
    finally:
        del module.HostedLike  # type: ignore[attr-defined]
    assert HostedLike not in descendants(AgentEvent)  # only what the contract holds

    class Plain:
        """Neither a dataclass nor a pydantic model."""

    with pytest.raises(TypeError):
        fields_of(Plain)
    assert issubclass(agent_events.MessageDelta, BaseModel)


# --- the events through each way in ------------------------------------------------------------
CAPTURE = st.sampled_from(
    [
        False,
        True,
        ContentCapture(max_bytes=64),
        ContentCapture(events=True, history="new", max_run_bytes=512),
    ]
)
WAYS = st.sampled_from(["wrapper", "instrument", "astream", "kit"])


class ScriptAgent(protocol.StreamingAgent):
    """A contract agent streaming a script, then raising ``error`` when one is given."""

    def __init__(self, script: list[Any], error: BaseException | None) -> None:
        self.script, self.error = script, error

    async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
        for event in self.script:
            yield event
        if self.error is not None:
            raise self.error


class ScriptToolAgent(agent_events.Agent):
    """An ``Agent`` of the ABC streaming the same script from its ``astream``."""

    tool_name = "scripted"

    def __init__(self, agent: ScriptAgent) -> None:
        self.agent = agent

    async def run(self, **kwargs: Any) -> Any:
        return "done"

    async def astream(self, **kwargs: Any) -> AsyncIterator[Any]:
        async for event in self.agent.stream([]):
            yield event


async def _through(
    way: str, agent: ScriptAgent, exported: Exported, options: Any, received: list[Any]
) -> None:
    """Consume the agent's events by ``way`` into ``received`` (as they come: an exception
    leaves what came before it)."""
    if way == "wrapper":
        async for event in otel_wrapper(**options)(agent.stream([])):
            received.append(event)
    elif way == "instrument":
        async for event in instrument(agent, **options).stream([]):
            received.append(event)
    elif way == "astream":
        async for event in instrument(ScriptToolAgent(agent), **options).astream(q="look"):
            received.append(event)
    elif agent.error is None:
        received += await run_script(exported, agent.script, **options)
    else:  # the kit hands on the stream's exception: what came before it is its to check
        received += agent.script
        await run_script(exported, agent.stream([]), **options)


def check_events(
    script: list[Any],
    capture: Any,
    agent_error: type[BaseException] | None,
    names: Any,
    way: str,
    steps: bool,
) -> None:
    exported = Exported()
    error = agent_error() if agent_error is not None else None
    agent = ScriptAgent(script, error)
    options = {
        "agent_name": names if isinstance(names, str) else None,
        "tracer_provider": exported.tracer_provider,
        "meter_provider": exported.meter_provider,
        "logger_provider": exported.logger_provider,
        "capture_content": capture,
        "step_spans": steps,
        "chunk_metric": not steps,
        "scrub": steps,  # unscrubbed strings are made encodable all the same
    }

    async def main() -> list[Any]:
        received: list[Any] = []
        escaped: BaseException | None = None
        try:
            await _through(way, agent, exported, options, received)
        except BaseException as exc:
            escaped = exc
        assert escaped is error  # only the agent's own exception, as the same object
        return received

    with records_of("agent_otel", logging.DEBUG) as records:
        received = asyncio.run(main())
    # the agent's value raising when read is a defined repair (``unreadable_event``); an
    # event whose type field names no event is told as an unknown event (by its class)
    repaired = ("the agent's value raised when read", "agent-otel: a run's stream yielded")
    assert not [m for m in records.messages if not m.startswith(repaired)], records.messages
    assert len(received) == len(script)  # every event, before the agent's failure too
    assert all(a is b for a, b in zip(received, script, strict=True))
    ledger = exported.ledger
    assert ledger.started, "the run was traced"
    assert not ledger.double_ends
    assert sorted(ledger.ended) == sorted(ledger.started)
    assert_nested_in_time(exported.spans())
    assert_encodes(exported.spans(), exported.metric_reader.get_metrics_data(), exported.logs())
    assert exported.tree() and exported.outline()  # the kit reads what it holds


FUZZED_RUN = {
    "script": st.lists(EVENTS, max_size=12),
    "capture": CAPTURE,
    "agent_error": st.sampled_from(
        [None, BrokenError, ValueError, asyncio.CancelledError, KeyboardInterrupt]
    ),
    "names": HOSTILE,
    "way": WAYS,
    "steps": st.booleans(),
}


@FUZZ
@given(**FUZZED_RUN)
def test_hostile_events_never_cost_a_span_a_batch_or_the_agent(
    script: list[Any],
    capture: Any,
    agent_error: type[BaseException] | None,
    names: Any,
    way: str,
    steps: bool,
) -> None:
    check_events(script, capture, agent_error, names, way, steps)


@pytest.mark.heavy
@HEAVY
@given(**FUZZED_RUN)
def test_hostile_events_hold_over_many_more_examples(
    script: list[Any],
    capture: Any,
    agent_error: type[BaseException] | None,
    names: Any,
    way: str,
    steps: bool,
) -> None:
    check_events(script, capture, agent_error, names, way, steps)


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


@FUZZ
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
