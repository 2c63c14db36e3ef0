"""Deltas that have nothing to do are not even dispatched (figure 1's unsampled row), and that
changes nothing anyone can see: the agent's own context variables behave exactly as without
the wrapper, and an event class read by its ``type`` field is never skipped."""

from __future__ import annotations

import gc
import weakref
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, Sampler

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel._attributes import CHUNK_COUNT
from agent_otel.testing import InMemoryTelemetry

MINE: ContextVar[str] = ContextVar("the_agents_own", default="unset")


def _script() -> list[Any]:
    return [
        TextDelta(text="before any call"),
        TextDelta(text="still outside"),
        LLMCallStart(model="m", provider="openai", call_id="c1"),
        TextDelta(text="a"),
        TextDelta(text="b"),
        TextDelta(text="c"),
        ToolCall(id="t1", function=FunctionCall(name="search", arguments="{}")),
        LLMCallEnd(model="m", call_id="c1", finish_reason="tool_calls"),
        Usage(input_tokens=3, output_tokens=2),
        ToolResult(tool_call_id="t1", content="found", name="search"),
        StepBoundary(index=0),
        TextDelta(text="after"),
        TextDelta(text="the end"),
    ]


async def _agent(seen: list[str]) -> AsyncIterator[Any]:
    """Sets its own context variable between events and notes what it reads back."""
    for i, event in enumerate(_script()):
        seen.append(MINE.get())
        MINE.set(f"agent {i}")
        yield event
    seen.append(MINE.get())


async def _consume(stream: AsyncIterator[Any], seen: list[str]) -> list[Any]:
    received = []
    MINE.set("unset")  # each run starts from the same value
    async for event in stream:
        seen.append(MINE.get())
        MINE.set(f"consumer {len(received)}")
        received.append(event)
    seen.append(MINE.get())
    return received


@pytest.mark.parametrize("sampler", [ALWAYS_ON, ALWAYS_OFF], ids=["sampled", "unsampled"])
@pytest.mark.parametrize("activate", [True, False], ids=["activation_on", "activation_off"])
async def test_the_agents_context_variables_behave_as_without_the_wrapper(
    sampler: Sampler, activate: bool
) -> None:
    bare: list[str] = []
    await _consume(_agent(bare), bare)
    telemetry = InMemoryTelemetry(sampler=sampler)
    wrapped: list[str] = []
    wrap = telemetry.wrapper(agent_name="a", activate_context=activate)
    received = await _consume(wrap(_agent(wrapped)), wrapped)
    assert received == _script()
    assert wrapped == bare  # every set, by either side, seen by the other exactly as bare
    telemetry.shutdown()


@dataclass
class _Step:
    """One class for every event of the Agent vocabulary, told apart by ``type``."""

    type: str
    text: str | None = None
    call_id: str | None = None
    tool: str | None = None
    args: Any = None
    result: Any = None


async def test_a_class_read_by_its_type_is_never_skipped() -> None:
    telemetry = InMemoryTelemetry()
    events = [
        _Step("message_delta", text="thinking"),  # outside a call: nothing to do ...
        _Step("message_delta", text="aloud"),
        _Step("tool_call_step", call_id="t1", tool="search", args={}),  # ... but this is
        _Step("tool_result_step", call_id="t1", tool="search", result="found"),
        _Step("message_delta", text="done"),
    ]

    async def agent() -> AsyncIterator[Any]:
        for event in events:
            yield event

    received = [e async for e in telemetry.wrapper(agent_name="a")(agent())]
    assert received == events
    assert telemetry.outline() == [["invoke_agent a", [["step 0", ["execute_tool search"]]]]]
    telemetry.shutdown()


async def test_skipped_deltas_record_the_same_metrics_sampled_or_not() -> None:
    """Deltas outside a call and in an unsampled one are skipped; after each structure
    change their class is dispatched again: every metric as in a sampled run, and the
    sampled call counts all its chunks."""

    async def agent() -> AsyncIterator[Any]:
        for event in _script():
            yield event

    counts = []
    for sampler in (ALWAYS_ON, ALWAYS_OFF):
        telemetry = InMemoryTelemetry(sampler=sampler)
        async for _ in telemetry.wrapper(agent_name="a")(agent()):
            pass
        histograms = telemetry.histograms()
        counts.append(
            {name: sorted(p.count for p in points) for name, points in histograms.items()}
        )
        if sampler is ALWAYS_ON:
            assert (telemetry.span("chat m").attributes or {})[CHUNK_COUNT] == 3
        telemetry.shutdown()
    assert "gen_ai.client.operation.duration" in counts[0]
    assert counts[0] == counts[1]


async def _events(events: list[Any]) -> AsyncIterator[Any]:
    for event in events:
        yield event


async def test_a_quietened_class_is_the_runs_alone_not_the_wrappers() -> None:
    """Each run's dispatch table starts as a copy of the wrapper's (figure 2): a delta class
    one run stopped dispatching (deltas outside any call) is dispatched in the next run."""
    telemetry = InMemoryTelemetry()
    wrap = telemetry.wrapper(agent_name="a")
    first = [TextDelta(text="outside"), TextDelta(text="any call")]
    second = [
        LLMCallStart(model="m", call_id="c"),
        TextDelta(text="a"),
        TextDelta(text="b"),
        TextDelta(text="c"),
        LLMCallEnd(call_id="c"),
    ]
    for events in (first, second):
        assert [e async for e in wrap(_events(events))] == events
    assert (telemetry.span("chat m").attributes or {})[CHUNK_COUNT] == 3
    telemetry.shutdown()


async def test_the_wrapper_keeps_no_event_class_made_in_a_function_alive() -> None:
    """Only a class defined at a module's top level joins the wrapper's table; one made in a
    function (a test's, one made on the fly) is forgotten with the runs that read it."""

    def made() -> type:
        @dataclass
        class TextDelta:  # a look-alike, traced as ours
            text: str

        return TextDelta

    telemetry = InMemoryTelemetry()
    wrap = telemetry.wrapper(agent_name="a")
    cls = made()
    gone = weakref.ref(cls)
    events = [LLMCallStart(model="m", call_id="c"), cls("x"), cls("y"), LLMCallEnd(call_id="c")]
    assert [e async for e in wrap(_events(events))] == events
    assert (telemetry.span("chat m").attributes or {})[CHUNK_COUNT] == 2
    del cls, events
    gc.collect()
    assert gone() is None
    telemetry.shutdown()
