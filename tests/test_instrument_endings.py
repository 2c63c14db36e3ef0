"""Every ending of a run, through instrument(), for both contracts; instrumentation errors."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import StatusCode

from agent_contract.agent import Agent, MessageDelta, MessageFinal
from agent_contract.examples import NonStreamingAgent, ScriptedAgent, ScriptedStreamingAgent
from agent_contract.protocol import TextDelta
from agent_otel.decorating._instrument import instrument
from agent_otel.testing import InMemoryTelemetry
from test_instrument_support import USER, agent_spans

EVENTS = [TextDelta("a"), TextDelta("b"), TextDelta("c")]
STREAM_EVENTS = [MessageDelta(text="a"), MessageDelta(text="b"), MessageFinal(text="ab")]


class Boom(Exception):
    pass


def _one(telemetry: InMemoryTelemetry) -> ReadableSpan:
    spans = agent_spans(telemetry)
    assert len(spans) == 1, [s.name for s in telemetry.spans()]
    assert all(s.end_time is not None for s in telemetry.spans())
    return spans[0]


def _answering_ab(telemetry: InMemoryTelemetry, streaming: bool) -> Any:
    """An instrumented agent answering "ab": streamed (``STREAM_EVENTS``), or run whole."""
    raw: Any = ScriptedStreamingAgent(STREAM_EVENTS) if streaming else NonStreamingAgent("ab")
    return instrument(raw, **telemetry.providers())


def _reason(span: ReadableSpan) -> Any:
    return (span.attributes or {}).get("agent_otel.end_reason")


class SlowRun(Agent):
    """A non-streaming agent whose run takes a while (to be cancelled)."""

    tool_name = "slow"
    tool_description = "Sleeps (test agent)."

    async def run(self, **kwargs: Any) -> Any:
        await asyncio.sleep(10)
        return "late"


# --- exhaustion ---------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", ["stream", "invoke"])
async def test_event_exhausted(otel_telemetry: InMemoryTelemetry, entry: str) -> None:
    agent = instrument(ScriptedAgent(EVENTS), **otel_telemetry.providers())
    if entry == "stream":
        assert [e async for e in agent.stream(USER)] == EVENTS
    else:
        assert (await agent.invoke(USER)).text == "abc"
    span = _one(otel_telemetry)
    assert _reason(span) == "exhausted"
    assert span.status.status_code is StatusCode.UNSET
    assert agent.completed_runs == 1


@pytest.mark.parametrize("entry", ["run", "astream"])
@pytest.mark.parametrize("streaming", [True, False])
async def test_agent_exhausted(
    otel_telemetry: InMemoryTelemetry, entry: str, streaming: bool
) -> None:
    agent = _answering_ab(otel_telemetry, streaming)
    if entry == "run":
        assert await agent.run() == "ab"
    else:
        events = [e async for e in agent.astream()]
        assert events[-1].text == "ab"
    span = _one(otel_telemetry)
    assert _reason(span) == "exhausted"
    assert (span.attributes or {})["gen_ai.output.type"] == "text"
    assert span.status.status_code is StatusCode.UNSET


# --- the agent raises: the same object, ERROR ----------------------------------------------------
def _check_error(telemetry: InMemoryTelemetry) -> None:
    span = _one(telemetry)
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "Boom"
    assert _reason(span) == "error"


@pytest.mark.parametrize("entry", ["stream", "invoke"])
async def test_event_agent_raises(otel_telemetry: InMemoryTelemetry, entry: str) -> None:
    error = Boom("x")
    agent = instrument(ScriptedAgent(EVENTS, fail_at=1, error=error), **otel_telemetry.providers())
    with pytest.raises(Boom) as caught:
        if entry == "stream":
            [e async for e in agent.stream(USER)]
        else:
            await agent.invoke(USER)
    assert caught.value is error
    _check_error(otel_telemetry)


@pytest.mark.parametrize("entry", ["run", "astream"])
@pytest.mark.parametrize("streaming", [True, False])
async def test_agent_raises(otel_telemetry: InMemoryTelemetry, entry: str, streaming: bool) -> None:
    error = Boom("x")
    raw: Any = (
        ScriptedStreamingAgent(STREAM_EVENTS, fail_at=1, error=error)
        if streaming
        else NonStreamingAgent(error=error)
    )
    agent = instrument(raw, **otel_telemetry.providers())
    with pytest.raises(Boom) as caught:
        if entry == "run":
            await agent.run()
        else:
            [e async for e in agent.astream()]
    assert caught.value is error
    _check_error(otel_telemetry)


# --- the consumer stops early: break, aclose ------------------------------------------------------
@pytest.mark.parametrize("how", ["break", "aclose"])
async def test_event_consumer_stops(otel_telemetry: InMemoryTelemetry, how: str) -> None:
    agent = instrument(ScriptedAgent(EVENTS), **otel_telemetry.providers())
    stream = agent.stream(USER)
    if how == "break":
        async for _ in stream:
            break
        await stream.aclose()
    else:
        await stream.__anext__()
        await stream.aclose()
    assert agent.closed
    span = _one(otel_telemetry)
    assert _reason(span) == "closed_early"
    assert span.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize("how", ["break", "aclose"])
@pytest.mark.parametrize("streaming", [True, False])
async def test_agent_consumer_stops(
    otel_telemetry: InMemoryTelemetry, how: str, streaming: bool
) -> None:
    agent = _answering_ab(otel_telemetry, streaming)
    stream = agent.astream()
    if how == "break":
        async for _ in stream:
            break
        await stream.aclose()
    else:
        await stream.__anext__()
        await stream.aclose()
    if streaming:
        assert agent.closed
    span = _one(otel_telemetry)
    assert _reason(span) == "closed_early"
    assert span.status.status_code is StatusCode.UNSET


# --- cancellation ----------------------------------------------------------------------------
def _check_cancelled(telemetry: InMemoryTelemetry) -> None:
    span = _one(telemetry)
    assert _reason(span) == "cancelled"
    assert (span.attributes or {})["error.type"] == "CancelledError"


async def _cancel(coro: Any) -> None:
    task = asyncio.ensure_future(coro)
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("entry", ["stream", "invoke"])
async def test_event_cancelled(otel_telemetry: InMemoryTelemetry, entry: str) -> None:
    agent = instrument(ScriptedAgent(EVENTS, delay=10), **otel_telemetry.providers())

    async def consume() -> None:
        if entry == "stream":
            [e async for e in agent.stream(USER)]
        else:
            await agent.invoke(USER)

    await _cancel(consume())
    assert agent.closed
    _check_cancelled(otel_telemetry)


@pytest.mark.parametrize("entry", ["run", "astream"])
@pytest.mark.parametrize("streaming", [True, False])
async def test_agent_cancelled(
    otel_telemetry: InMemoryTelemetry, entry: str, streaming: bool
) -> None:
    raw: Any = ScriptedStreamingAgent(STREAM_EVENTS, delay=10) if streaming else SlowRun()
    agent = instrument(raw, **otel_telemetry.providers())

    async def consume() -> None:
        if entry == "run":
            await agent.run()
        else:
            [e async for e in agent.astream()]

    await _cancel(consume())
    _check_cancelled(otel_telemetry)


# --- instrumentation errors never reach the agent or the consumer -------------------------------
class BrokenTracerProvider(TracerProvider):
    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        tracer = super().get_tracer(*args, **kwargs)

        def start_span(*a: Any, **k: Any) -> Any:
            raise RuntimeError("tracer broke")

        tracer.start_span = start_span  # type: ignore[method-assign]
        return tracer


@pytest.mark.internal_errors
@pytest.mark.parametrize("entry", ["stream", "invoke", "run", "astream", "run_plain"])
async def test_broken_tracer_never_hurts(entry: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="agent_otel")
    provider = BrokenTracerProvider()
    if entry in ("stream", "invoke"):
        agent: Any = instrument(ScriptedAgent(EVENTS), tracer_provider=provider)
        if entry == "stream":
            assert [e async for e in agent.stream(USER)] == EVENTS
        else:
            assert (await agent.invoke(USER)).text == "abc"
    elif entry == "run_plain":
        assert await instrument(NonStreamingAgent("v"), tracer_provider=provider).run() == "v"
    else:
        agent = instrument(ScriptedStreamingAgent(STREAM_EVENTS), tracer_provider=provider)
        if entry == "run":
            assert await agent.run() == "ab"
        else:
            assert [e async for e in agent.astream()][-1].text == "ab"
    assert any("agent-otel internal error" in r.getMessage() for r in caplog.records)


class ExplodingDescription(ScriptedStreamingAgent):
    @property
    def tool_description(self) -> str:  # type: ignore[override]
        raise RuntimeError("no description today")


class ExplodingEventAgent(ScriptedAgent):
    @property
    def tool_description(self) -> str:
        raise RuntimeError("no description today")


@pytest.mark.internal_errors
async def test_settings_errors_fall_back_to_the_plain_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    agent = instrument(ExplodingDescription(STREAM_EVENTS), **otel_telemetry.providers())
    assert await agent.run() == "ab"
    assert [e async for e in agent.astream()][-1].text == "ab"
    event = instrument(ExplodingEventAgent(EVENTS), **otel_telemetry.providers())
    assert (await event.invoke(USER)).text == "abc"
    assert [e async for e in event.stream(USER)] == EVENTS
    assert agent_spans(otel_telemetry) == []  # nothing traced, nothing broken


class NotAStream(ScriptedAgent):
    """A stream() that returns something other than an async iterator: handed back as is."""

    def stream(self, messages: Any, config: Any = None) -> Any:
        return ["not", "a", "stream"]


async def test_odd_return_values_pass_through(otel_telemetry: InMemoryTelemetry) -> None:
    agent = instrument(NotAStream(EVENTS), **otel_telemetry.providers())
    assert agent.stream(USER) == ["not", "a", "stream"]
