"""Step spans agree with ``collect()`` on what a step is (issue 14).

A segment (the events between ``StepBoundary`` events) is a step when it holds step content:
text, reasoning, an LLM call, a tool call or an orphan tool result. A segment of bookkeeping
only (usage, errors, call ends, markers, results of earlier calls) makes no step span: its
usage totals and errors join the step before it; before any step, usage counts for the run
only and errors wait for the first step. Providers send usage last, so this is the common
case. The property test at the end drives the wrapper and ``collect()`` with the same
streams and compares them step by step.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import (
    Error,
    FunctionCall,
    InvokeResult,
    JourneyMarker,
    LLMCallEnd,
    LLMCallStart,
    PhaseMarker,
    ReasoningDelta,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel.testing import FakeClock, InMemoryTelemetry

IN, OUT = "agent_otel.usage.input_tokens", "agent_otel.usage.output_tokens"


async def traced(telemetry: InMemoryTelemetry, events: Sequence[object]) -> InvokeResult:
    """``collect()`` over the wrapped stream: both views of one run."""
    wrapper = telemetry.wrapper(agent_name="a")
    return await ScriptedAgent(list(events)).invoke([], stream_wrapper=wrapper)


def steps(telemetry: InMemoryTelemetry) -> list[ReadableSpan]:
    found = [s for s in telemetry.spans() if s.name.startswith("step ")]
    return sorted(found, key=lambda s: s.start_time or 0)


def agent(telemetry: InMemoryTelemetry) -> ReadableSpan:
    (span,) = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    return span


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _tc(call_id: str) -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name="f", arguments="{}"))


async def test_trailing_usage_makes_no_step_and_joins_the_step_before(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    usage = Usage(input_tokens=7, output_tokens=2)
    result = await traced(otel_telemetry, [TextDelta("answer"), StepBoundary(), usage])
    (step,) = steps(otel_telemetry)
    assert result.text == "answer" and len(result.steps) == 1
    assert (step.name, attrs(step)[IN], attrs(step)[OUT]) == ("step 0", 7, 2)
    assert attrs(agent(otel_telemetry))[IN] == 7


async def test_counts_that_are_no_count_are_dropped_alike_by_invoke_and_the_trace(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    usages = [Usage(input_tokens=-1, output_tokens=2), Usage(input_tokens=3, output_tokens=1.5)]  # type: ignore[arg-type]
    result = await traced(otel_telemetry, [TextDelta("a"), TextDelta(None), *usages])  # type: ignore[arg-type]
    assert result.text == "a" and result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3, 2)
    assert (attrs(agent(otel_telemetry))[IN], attrs(agent(otel_telemetry))[OUT]) == (3, 2)


async def test_trailing_error_marks_the_step_before_not_the_agent(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    events = [TextDelta("a"), StepBoundary(), Error("late", error_type="Late"), PhaseMarker("p")]
    await traced(otel_telemetry, events)
    (step,) = steps(otel_telemetry)
    assert step.status.status_code is StatusCode.ERROR
    assert attrs(step)["error.type"] == "Late"
    assert [e.name for e in step.events] == ["agent_otel.error"]
    assert agent(otel_telemetry).status.status_code is StatusCode.UNSET


async def test_an_error_told_after_the_boundary_lies_within_its_step(
    otel_telemetry: InMemoryTelemetry, otel_clock: FakeClock
) -> None:
    # The error comes 5 s after the boundary: the step that takes it ends with it, so no
    # backend draws its event outside the span; the next step still starts after both.
    async def stream() -> AsyncIterator[Any]:
        yield TextDelta("a")
        yield StepBoundary()
        otel_clock.advance(5)
        yield Error("late", error_type="Late")
        yield StepBoundary()
        yield TextDelta("b")

    async for _ in otel_telemetry.wrapper()(stream()):
        pass
    first, second = steps(otel_telemetry)
    (event,) = first.events
    assert first.start_time is not None and first.end_time is not None
    assert first.start_time <= event.timestamp <= first.end_time
    assert second.start_time is not None and first.end_time <= second.start_time


async def test_a_held_step_still_ends_at_its_boundary(
    otel_telemetry: InMemoryTelemetry, otel_clock: FakeClock
) -> None:
    # FakeClock: every clock read advances 1 ms; the usage comes 5 s after the boundary.
    async def stream() -> AsyncIterator[Any]:
        yield TextDelta("a")
        yield StepBoundary()
        otel_clock.advance(5)
        yield Usage(input_tokens=1)
        yield TextDelta("b")

    wrapper = otel_telemetry.wrapper()
    async for _ in wrapper(stream()):
        pass
    first, second = steps(otel_telemetry)
    assert first.end_time is not None and second.start_time is not None
    assert second.start_time - first.end_time >= 5 * 10**9, "ended at the boundary"
    assert IN not in attrs(first), "that usage came with the second step's content"
    assert attrs(second)[IN] == 1


async def test_bookkeeping_between_steps_keeps_step_names_dense(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    events = [
        TextDelta("a"),
        StepBoundary(),
        Usage(input_tokens=3),
        LLMCallEnd(),
        StepBoundary(),
        JourneyMarker("j"),
        StepBoundary(),
        TextDelta("b"),
    ]
    result = await traced(otel_telemetry, events)
    names = [(s.name, attrs(s).get(IN)) for s in steps(otel_telemetry)]
    assert names == [("step 0", 3), ("step 1", None)]
    assert [(s.index, s.usage.input_tokens if s.usage else None) for s in result.steps] == [
        (0, 3),
        (1, None),
    ]


async def test_leading_bookkeeping_usage_is_the_runs_errors_wait_for_the_first_step(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    events = [Usage(input_tokens=5), Error("retry", error_type="Retry"), StepBoundary()]
    await traced(otel_telemetry, [*events, TextDelta("a")])
    (step,) = steps(otel_telemetry)
    assert IN not in attrs(step)
    assert attrs(step)["error.type"] == "Retry"
    assert attrs(agent(otel_telemetry))[IN] == 5
    assert "error.type" not in attrs(agent(otel_telemetry))


async def test_errors_without_any_step_content_make_one_step_like_collect(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    result = await traced(otel_telemetry, [Error("boom", error_type="Boom", fatal=True)])
    (step,) = steps(otel_telemetry)
    assert len(result.steps) == 1 and result.steps[0].errors
    assert attrs(step)["error.type"] == "Boom"
    assert attrs(agent(otel_telemetry))["error.type"] == "Boom", "fatal: the run failed"


async def test_an_llm_call_alone_is_a_step_in_both_views(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    result = await traced(otel_telemetry, [LLMCallStart(model="m"), LLMCallEnd(), StepBoundary()])
    assert [s.name for s in steps(otel_telemetry)] == ["step 0"]
    assert len(result.steps) == 1


# ---- the property: both views agree on any stream whose ids are consistent --------------------

OPS = ["text", "reasoning", "start", "end", "call", "result", "usage", "error", "marker", "sb"]


def build(ops: list[tuple[str, int]]) -> list[object]:
    """A well-formed stream from ``ops``: results only for open calls, at most one LLM call
    open, and every call closed before a boundary. (A call still open at a boundary is the
    ``open_at_step_boundary`` anomaly: it ends with its step, and a late result of it is
    then a result without call, recorded in a step of its own.)"""
    events: list[object] = []
    open_tools: list[str] = []
    llm_open = False
    made = 0
    for op, n in ops:
        if op == "sb":
            events += [ToolResult(tool_call_id=t) for t in open_tools]
            events += [LLMCallEnd()] if llm_open else []
            open_tools, llm_open = [], False
        if op == "text":
            events.append(TextDelta(str(n)))
        elif op == "reasoning":
            events.append(ReasoningDelta("r"))
        elif op == "start" and not llm_open:
            events.append(LLMCallStart(model="m"))
            llm_open = True
        elif op == "end" and llm_open:
            events.append(LLMCallEnd())
            llm_open = False
        elif op == "call":
            made += 1
            open_tools.append(f"t{made}")
            events.append(_tc(open_tools[-1]))
        elif op == "result" and open_tools:
            events.append(ToolResult(tool_call_id=open_tools.pop(n % len(open_tools))))
        elif op == "usage":
            events.append(Usage(input_tokens=n, output_tokens=1))
        elif op == "error":
            events.append(Error("e", error_type=f"E{len(events)}"))  # unique: a key below
        elif op == "marker":
            events.append(PhaseMarker("p"))
        elif op == "sb":
            events.append(StepBoundary())
    return events


def step_of(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> ReadableSpan | None:
    while span is not None and not span.name.startswith("step "):
        parent = span.parent
        span = by_id.get(parent.span_id) if parent is not None else None  # type: ignore[assignment]
    return span


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 9)), max_size=30))
def test_step_spans_agree_with_collect(ops: list[tuple[str, int]]) -> None:
    events = build(ops)
    telemetry = InMemoryTelemetry()
    try:
        result = asyncio.run(traced(telemetry, events))
        spans = steps(telemetry)
        assert [s.name for s in spans] == [f"step {s.index}" for s in result.steps]
        for span, step in zip(spans, result.steps):
            usage = step.usage
            assert attrs(span).get(IN) == (usage.input_tokens if usage else None)
            assert attrs(span).get(OUT) == (usage.output_tokens if usage else None)
        # each error sits in the subtree of the step collect() gives it
        by_id = {s.context.span_id: s for s in telemetry.spans() if s.context is not None}
        placed: dict[str, int] = {}
        for span in telemetry.spans():
            for event in span.events:
                if event.name == "agent_otel.error":
                    owner = step_of(span, by_id)
                    assert owner is not None, "an error outside every step"
                    placed[str((event.attributes or {})["error.type"])] = spans.index(owner)
        expected = {e.error_type: i for i, s in enumerate(result.steps) for e in s.errors}
        assert placed == expected
    finally:
        telemetry.shutdown()
