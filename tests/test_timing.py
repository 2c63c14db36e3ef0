"""Streaming timings, made exact with a fake clock and worked out by hand.

``FakeClock`` returns start + 1 ms more on every reading, and ``advance()`` jumps ahead. The
agents below advance the clock while "computing" an event, so that a gap between two events
is the advance plus the 1 ms readings the recorder itself takes. Times below are in ms after
the clock's start; the recorder reads the clock, in order:

* the run's start (when the wrapper first pulls);
* ``LLMCallStart``: the step span's start (first event of a step), then the call's start;
* a text or reasoning delta inside a call: one reading, except on the steady path (a delta of
  the same kind after the first visible one, with no content capture and no chunk metric),
  which only counts the chunk;
* ``LLMCallEnd``: one reading (the response's end); ``StepBoundary``: one (the step's end);
* the run's end: one reading.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint

from agent_contract.agent import MessageDelta, MessageFinal
from agent_contract.protocol import (
    LLMCallEnd,
    LLMCallStart,
    ReasoningDelta,
    StepBoundary,
    TextDelta,
    Usage,
)
from agent_otel.testing import FakeClock, InMemoryTelemetry, run_script

MS = 1e-3
TTFC = "gen_ai.response.time_to_first_chunk"
TTFT = "agent_otel.response.time_to_first_text"
COUNT = "agent_otel.response.chunk_count"
MEAN = "agent_otel.response.chunk_interval_mean"
METRIC_TTFC = "gen_ai.client.operation.time_to_first_chunk"
METRIC_TPOC = "gen_ai.client.operation.time_per_output_chunk"


def approx(ms: float) -> Any:
    return pytest.approx(ms * MS, rel=1e-9, abs=1e-12)


async def reasoning_then_text(clock: FakeClock) -> AsyncIterator[Any]:
    """Reasoning arrives first, the visible text 200 ms later (t = ms after the clock's start).

    run start 1 | step start 2 | call start 3 | reasoning 104 | "a" 305 | "b" (counted, no
    reading) | call end 346 | usage (no reading) | step end 347 | run end 348
    """
    yield LLMCallStart(model="m", provider="openai", call_id="c1")
    clock.advance(0.100)
    yield ReasoningDelta("hmm")
    clock.advance(0.200)
    yield TextDelta("a")
    clock.advance(0.010)
    yield TextDelta("b")
    clock.advance(0.030)
    yield LLMCallEnd(call_id="c1", finish_reason="stop")
    yield Usage(input_tokens=1, output_tokens=2)
    yield StepBoundary()


def points(telemetry: InMemoryTelemetry, name: str) -> list[HistogramDataPoint]:
    return telemetry.histograms().get(name, [])


async def test_reasoning_first_sets_the_first_chunk_and_text_the_first_text(
    otel_telemetry: InMemoryTelemetry, otel_clock: FakeClock
) -> None:
    start = otel_clock.now
    await run_script(otel_telemetry, reasoning_then_text(otel_clock), agent_name="timed")
    chat, agent = otel_telemetry.span("chat m"), otel_telemetry.span("invoke_agent timed")
    step = otel_telemetry.span("step 0")

    def at(ms: int) -> int:
        return start + ms * 1_000_000

    assert (chat.start_time, chat.end_time) == (at(3), at(346))
    assert (agent.start_time, agent.end_time) == (at(1), at(348))
    assert (step.start_time, step.end_time) == (at(2), at(347))

    c = chat.attributes or {}
    assert c[TTFC] == approx(104 - 3)  # the reasoning chunk is the first chunk
    assert c[TTFT] == approx(305 - 3)  # the first text came later
    assert c[COUNT] == 3
    # From the first chunk to the response's end, over the 3 intervals that end at the 2
    # later chunks and at the end of the response.
    assert c[MEAN] == approx((346 - 104) / 3)
    a = agent.attributes or {}
    assert a[TTFT] == approx(305 - 1)  # from the run's start
    assert TTFC not in a  # the chunk timings belong to the call

    (ttfc,) = points(otel_telemetry, METRIC_TTFC)
    assert (ttfc.count, ttfc.sum) == (1, approx(101))
    assert (ttfc.attributes or {})["gen_ai.operation.name"] == "chat"
    assert (ttfc.attributes or {})["gen_ai.request.model"] == "m"
    assert (ttfc.attributes or {})["gen_ai.provider.name"] == "openai"
    # off by default: one record per token is a cost the span attributes above avoid
    assert sum(p.count for p in points(otel_telemetry, METRIC_TPOC)) == 0
    (duration,) = points(otel_telemetry, "gen_ai.client.operation.duration")
    assert duration.sum == approx(346 - 3)
    (agent_duration,) = points(otel_telemetry, "gen_ai.invoke_agent.duration")
    assert agent_duration.sum == approx(348 - 1)


async def test_time_per_output_chunk_when_asked_for(
    otel_telemetry: InMemoryTelemetry, otel_clock: FakeClock
) -> None:
    await run_script(
        otel_telemetry, reasoning_then_text(otel_clock), agent_name="timed", chunk_metric=True
    )
    (tpoc,) = points(otel_telemetry, METRIC_TPOC)
    assert tpoc.count == 3 - 1  # every chunk after the first
    assert tpoc.sum == approx((305 - 104) + (316 - 305))
    assert tpoc.min == approx(11) and tpoc.max == approx(201)
    assert (tpoc.attributes or {})["gen_ai.request.model"] == "m"


async def test_text_first_is_both_first_chunk_and_first_text(
    otel_telemetry: InMemoryTelemetry, otel_clock: FakeClock
) -> None:
    async def agent() -> AsyncIterator[Any]:
        # run 1 | step 2 | call 3 | "x" 54 | reasoning 60 (+5) | end 61 | step end 62
        yield LLMCallStart(model="m", call_id="c1")
        otel_clock.advance(0.050)
        yield TextDelta("x")
        otel_clock.advance(0.005)
        yield ReasoningDelta("afterthought")
        yield LLMCallEnd(call_id="c1")
        yield StepBoundary()

    await run_script(otel_telemetry, agent(), agent_name="timed")
    c = otel_telemetry.span("chat m").attributes or {}
    assert c[TTFC] == approx(54 - 3)
    assert c[TTFT] == approx(54 - 3)
    assert c[COUNT] == 2
    assert c[MEAN] == approx((61 - 54) / 2)  # first chunk 54 to the end 61, two intervals


async def test_a_call_with_one_chunk_has_no_interval(
    otel_telemetry: InMemoryTelemetry, otel_clock: FakeClock
) -> None:
    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c1")
        yield ReasoningDelta("only reasoning")
        yield LLMCallEnd(call_id="c1")

    await run_script(otel_telemetry, agent(), agent_name="timed", chunk_metric=True)
    c = otel_telemetry.span("chat m").attributes or {}
    assert c[COUNT] == 1
    assert MEAN not in c  # one chunk, no interval
    assert TTFT not in c  # no visible text at all
    assert TTFT not in (otel_telemetry.span("invoke_agent timed").attributes or {})
    assert sum(p.count for p in points(otel_telemetry, METRIC_TPOC)) == 0


async def test_a_call_without_chunks_has_no_chunk_timings(
    otel_telemetry: InMemoryTelemetry, otel_clock: FakeClock
) -> None:
    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c1")
        yield LLMCallEnd(call_id="c1")

    await run_script(otel_telemetry, agent(), agent_name="timed")
    c = otel_telemetry.span("chat m").attributes or {}
    for key in (TTFC, TTFT, COUNT, MEAN):
        assert key not in c
    assert points(otel_telemetry, METRIC_TTFC) == []


async def test_a_request_not_streamed_has_no_chunk_timings(
    otel_telemetry: InMemoryTelemetry, otel_clock: FakeClock
) -> None:
    # The conventions: time to first chunk is "recommended: if the request was a streaming
    # request", and its metrics "SHOULD NOT be reported otherwise". A call whose request says
    # stream=False, its whole answer told as one delta, streamed nothing.
    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c1", params={"stream": False})
        otel_clock.advance(0.050)
        yield TextDelta("the whole answer")
        yield LLMCallEnd(call_id="c1")

    await run_script(otel_telemetry, agent(), agent_name="timed", chunk_metric=True)
    c = otel_telemetry.span("chat m").attributes or {}
    assert c["gen_ai.request.stream"] is False
    assert TTFC not in c
    assert c[TTFT] == approx(54 - 3)  # its text still came then (ours, not the conventions')
    assert points(otel_telemetry, METRIC_TTFC) == []
    assert points(otel_telemetry, METRIC_TPOC) == []
    (duration,) = points(otel_telemetry, "gen_ai.client.operation.duration")
    assert duration.count == 1


async def test_each_call_times_its_own_chunks(
    otel_telemetry: InMemoryTelemetry, otel_clock: FakeClock
) -> None:
    async def agent() -> AsyncIterator[Any]:
        # run 1 | step 2 | c1 3 | "a" 14 | end 15 | boundary 16 |
        # step 17 | c2 18 | "b" 39 | "c" 40 | end 41 | boundary 42 | run end 43
        yield LLMCallStart(model="first", call_id="c1")
        otel_clock.advance(0.010)
        yield TextDelta("a")
        yield LLMCallEnd(call_id="c1")
        yield StepBoundary()
        yield LLMCallStart(model="second", call_id="c2")
        otel_clock.advance(0.020)
        yield TextDelta("b")
        yield TextDelta("c")
        yield LLMCallEnd(call_id="c2")
        yield StepBoundary()

    await run_script(otel_telemetry, agent(), agent_name="timed", chunk_metric=True)
    first = otel_telemetry.span("chat first").attributes or {}
    second = otel_telemetry.span("chat second").attributes or {}
    assert first[TTFC] == approx(14 - 3) and first[COUNT] == 1
    assert second[TTFC] == approx(39 - 18) and second[COUNT] == 2
    assert second[MEAN] == approx(40 - 39)
    assert (otel_telemetry.span("invoke_agent timed").attributes or {})[TTFT] == approx(
        14 - 1
    )  # the first
    ttfc = {
        str((p.attributes or {})["gen_ai.request.model"]): p.sum
        for p in points(otel_telemetry, METRIC_TTFC)
    }
    assert ttfc == {"first": approx(11), "second": approx(21)}
    (tpoc,) = points(otel_telemetry, METRIC_TPOC)
    assert (tpoc.count, tpoc.sum) == (1, approx(1))
    assert (tpoc.attributes or {})["gen_ai.request.model"] == "second"


async def test_agent_vocabulary_text_times_the_run(
    otel_telemetry: InMemoryTelemetry, otel_clock: FakeClock
) -> None:
    async def agent() -> AsyncIterator[Any]:
        # run 1 | (no call: the delta only opens the step, reading 2) ...
        otel_clock.advance(0.250)
        yield MessageDelta(text="hi")
        yield MessageFinal(text="hi")

    await run_script(otel_telemetry, agent(), agent_name="timed")
    a = otel_telemetry.span("invoke_agent timed").attributes or {}
    # run start 1; the delta opens the step (252), then reads the clock for the text (253)
    assert a[TTFT] == approx(253 - 1)
    assert points(otel_telemetry, METRIC_TTFC) == []  # no model call, no chunk metric


# --- a wall clock stepped mid-run -------------------------------------------------------------
async def test_a_wall_clock_stepped_back_mid_run_moves_no_timestamp_of_the_run(
    monkeypatch: pytest.MonkeyPatch, otel_telemetry: InMemoryTelemetry
) -> None:
    """NTP (or a resumed VM) steps the wall clock back an hour while a call streams: every span
    still ends after it starts and every duration recorded is positive; the next run starts
    from the corrected wall clock."""
    import time

    from agent_otel import _clock

    real = time.time_ns
    step = [0]

    def wall() -> int:
        return real() + step[0]

    monkeypatch.setattr(time, "time_ns", wall)
    monkeypatch.setattr(_clock, "now_ns", wall)  # as if the process had started with it

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c")
        yield TextDelta(text="a")
        step[0] = -3600 * 10**9
        yield TextDelta(text="b")
        yield LLMCallEnd(call_id="c")
        yield StepBoundary()

    wrap = otel_telemetry.wrapper(agent_name="clock")
    [_ async for _ in wrap(agent())]
    spans = otel_telemetry.spans()
    assert len(spans) >= 3
    for span in spans:
        assert span.start_time is not None and span.end_time is not None
        assert span.end_time >= span.start_time, span.name
    durations = [
        point
        for name, found in otel_telemetry.histograms().items()
        if name.endswith("duration")
        for point in found
    ]
    assert durations and all(point.min >= 0 for point in durations)
    otel_telemetry.clear()
    corrected = real() - 3600 * 10**9
    [_ async for _ in wrap(agent())]
    starts = [span.start_time or 0 for span in otel_telemetry.spans()]
    assert starts and all(abs(start - corrected) < 10**9 for start in starts)
