"""Every way a run can end (DESIGN.md, "How a run can end"), one test each.

Each test checks three things: what the consumer sees (events, the exception object), what the
trace says (every span ended once, end reason, status, error.type), and that the agent's own
stream was closed whenever the consumer stopped early.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import NoOpTracerProvider, StatusCode

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import (
    Error,
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import instrument
from agent_otel.testing import InMemoryTelemetry

MESSAGES = [Message(role="user", content="hi")]


def script() -> list[Any]:
    return [
        LLMCallStart(model="m", provider="p", call_id="c1"),
        TextDelta(text="a"),
        TextDelta(text="b"),
        LLMCallEnd(call_id="c1", finish_reason="tool_calls"),
        Usage(input_tokens=3, output_tokens=2),
        ToolCall(id="t1", function=FunctionCall(name="search", arguments="{}")),
        ToolResult(tool_call_id="t1", content="found"),
        StepBoundary(),
        LLMCallStart(model="m2", provider="p", call_id="c2"),
        TextDelta(text="done"),
        LLMCallEnd(call_id="c2", finish_reason="stop"),
    ]


def wrap(t: InMemoryTelemetry, agent: ScriptedAgent) -> AsyncIterator[Any]:
    wrapper = t.wrapper(agent_name="a")
    return wrapper(agent.stream(MESSAGES))


def unique_spans(t: InMemoryTelemetry) -> dict[str, ReadableSpan]:
    """The finished spans by name, each name ending exactly once."""
    spans = t.by_name()
    twice = [name for name, named in spans.items() if len(named) > 1]
    assert not twice, f"span ended twice or names collide: {twice}"
    return {name: named[0] for name, named in spans.items()}


def agent_span(t: InMemoryTelemetry) -> ReadableSpan:
    [span] = [s for s in t.spans() if s.name == "invoke_agent a"]
    return span


async def settle() -> None:
    """Let the event loop run the async-generator finaliser it scheduled."""
    gc.collect()
    for _ in range(5):
        await asyncio.sleep(0)


async def test_exhausted(otel_telemetry: InMemoryTelemetry) -> None:
    events = script()
    agent = ScriptedAgent(events)
    received = [e async for e in wrap(otel_telemetry, agent)]

    assert received == events and all(a is b for a, b in zip(received, events))
    spans = unique_spans(otel_telemetry)
    assert set(spans) == {
        "invoke_agent a",
        "step 0",
        "step 1",
        "chat m",
        "chat m2",
        "execute_tool search",
    }
    agent = agent_span(otel_telemetry)
    assert agent.attributes is not None
    assert agent.attributes["agent_otel.end_reason"] == "exhausted"
    assert agent.status.status_code is StatusCode.UNSET
    assert all(s.status.status_code is StatusCode.UNSET for s in otel_telemetry.spans())


async def test_agent_raises_same_object(otel_telemetry: InMemoryTelemetry) -> None:
    boom = ValueError("provider exploded")
    # Fails before event 2: the first LLM call is open, so the chat span is innermost.
    agent = ScriptedAgent(script(), fail_at=2, error=boom)
    received: list[Any] = []
    with pytest.raises(ValueError) as caught:
        async for event in wrap(otel_telemetry, agent):
            received.append(event)

    assert caught.value is boom
    assert len(received) == 2
    chat = next(s for s in otel_telemetry.spans() if s.name == "chat m")
    agent_sp = agent_span(otel_telemetry)
    for span in (chat, agent_sp):
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes is not None and span.attributes["error.type"] == "ValueError"
        assert [e.name for e in span.events] == ["exception"]
        assert span.events[0].attributes is not None
        assert span.events[0].attributes["exception.message"] == "provider exploded"
    assert agent_sp.attributes is not None
    assert agent_sp.attributes["agent_otel.end_reason"] == "error"
    step = next(s for s in otel_telemetry.spans() if s.name == "step 0")
    assert not step.events  # recorded on the innermost and the agent span only
    durations = otel_telemetry.histograms()["gen_ai.invoke_agent.duration"]
    assert [p.attributes.get("error.type") for p in durations] == ["ValueError"]


async def test_error_event_not_fatal_marks_innermost_and_goes_on(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    events = [
        ToolCall(id="t1", function=FunctionCall(name="search", arguments="{}")),
        Error(message="rate limited", error_type="RateLimit"),
        ToolResult(tool_call_id="t1", content="late"),
        TextDelta(text="still here"),
    ]
    received = [e async for e in wrap(otel_telemetry, ScriptedAgent(events))]

    assert received == events
    spans = unique_spans(otel_telemetry)
    tool = spans["execute_tool search"]
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes is not None and tool.attributes["error.type"] == "RateLimit"
    assert [e.name for e in tool.events] == ["agent_otel.error"]
    assert spans["invoke_agent a"].status.status_code is StatusCode.UNSET


async def test_error_event_fatal_marks_agent(otel_telemetry: InMemoryTelemetry) -> None:
    events = [TextDelta(text="x"), Error(message="context overflow", error_type="Ctx", fatal=True)]
    received = [e async for e in wrap(otel_telemetry, ScriptedAgent(events))]

    assert received == events
    agent = agent_span(otel_telemetry)
    assert agent.status.status_code is StatusCode.ERROR
    assert agent.attributes is not None and agent.attributes["error.type"] == "Ctx"
    durations = otel_telemetry.histograms()["gen_ai.invoke_agent.duration"]
    assert [p.attributes.get("error.type") for p in durations] == ["Ctx"]


async def test_error_event_fatal_cancelled_ends_the_run_cancelled(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A framework's own cancel, told by its adapter as a fatal ``CancelledError``: the run
    ends as a cancelled task's does, the call left open cut short."""
    events = [
        LLMCallStart(model="m"),
        TextDelta(text="x"),
        Error(message="run cancelled (agent.cancel())", error_type="CancelledError", fatal=True),
    ]
    received = [e async for e in wrap(otel_telemetry, ScriptedAgent(events))]

    assert received == events
    agent = agent_span(otel_telemetry)
    attributes = agent.attributes or {}
    assert attributes["agent_otel.end_reason"] == "cancelled"
    assert attributes["error.type"] == "CancelledError"
    assert agent.status.status_code is StatusCode.ERROR
    (chat,) = otel_telemetry.by_name()["chat m"]
    assert (chat.attributes or {})["agent_otel.incomplete"] is True
    assert otel_telemetry.open_spans() == []


async def test_a_cancel_told_then_raised_ends_cancelled_with_the_raised_class(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A framework that raises its own exception for its cancel (smolagents' ``AgentError``
    after ``interrupt()``): told first by its adapter, the run ends cancelled, the exception
    the same object, its class the error type; raised untold, it stays an error."""
    cancel = Error(message="run cancelled (interrupt())", error_type="CancelledError", fatal=True)
    for told, ending in (([cancel], "cancelled"), ([], "error")):
        otel_telemetry.clear()
        boom = RuntimeError("Agent interrupted.")
        agent = ScriptedAgent(
            [TextDelta(text="x"), *told, TextDelta(text="y")], fail_at=1 + len(told), error=boom
        )
        with pytest.raises(RuntimeError) as caught:
            _ = [e async for e in wrap(otel_telemetry, agent)]
        assert caught.value is boom
        attributes = agent_span(otel_telemetry).attributes or {}
        assert attributes["agent_otel.end_reason"] == ending
        assert attributes["error.type"] == "RuntimeError"
        assert agent_span(otel_telemetry).status.status_code is StatusCode.ERROR


async def _consume_and_break(stream: AsyncIterator[Any], after: int) -> list[Any]:
    received = []
    async for event in stream:
        received.append(event)
        if len(received) == after:
            break
    return received


async def test_consumer_break(otel_telemetry: InMemoryTelemetry) -> None:
    agent = ScriptedAgent(script())
    received = await _consume_and_break(wrap(otel_telemetry, agent), after=2)
    await settle()

    assert len(received) == 2
    assert agent.closed
    spans = unique_spans(otel_telemetry)
    attributes = spans["invoke_agent a"].attributes
    assert attributes is not None and attributes["agent_otel.end_reason"] == "closed_early"
    chat = spans["chat m"]
    assert chat.attributes is not None and chat.attributes["agent_otel.incomplete"] is True
    assert all(s.status.status_code is StatusCode.UNSET for s in otel_telemetry.spans())


async def test_aclose(otel_telemetry: InMemoryTelemetry) -> None:
    agent = ScriptedAgent(script())
    stream = wrap(otel_telemetry, agent)
    first = await stream.__anext__()
    assert isinstance(first, LLMCallStart)
    await stream.aclose()  # type: ignore[attr-defined]

    assert agent.closed  # immediately, no finaliser needed
    attributes = agent_span(otel_telemetry).attributes
    assert attributes is not None and attributes["agent_otel.end_reason"] == "closed_early"
    assert len(otel_telemetry.spans()) == 3  # agent, step 0, the open chat


def _pull_per_asyncio_run(stream: AsyncIterator[Any]) -> list[Any]:
    """A newcomer's loop in sync code: one ``asyncio.run`` per event."""
    received = []
    while True:
        try:
            received.append(asyncio.run(stream.__anext__()))  # type: ignore[arg-type]
        except StopAsyncIteration:
            return received


class _Countdown:
    """An agent stream of another kind than a generator: no event loop closes it."""

    def __init__(self, events: list[Any]) -> None:
        self.events = list(events)

    def __aiter__(self) -> _Countdown:
        return self

    async def __anext__(self) -> Any:
        if not self.events:
            raise StopAsyncIteration
        return self.events.pop(0)


def test_a_stream_wrapped_outside_a_loop_runs_as_any_other(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """Wrapped in sync code, then consumed in one ``asyncio.run`` (or, not being a generator
    that a loop closes, pulled per ``asyncio.run``): every event, the same objects, the run
    ``exhausted``, nothing told."""
    events = script()

    async def consume(stream: AsyncIterator[Any]) -> list[Any]:
        async with aclosing(stream) as pulled:  # type: ignore[type-var]
            return [event async for event in pulled]

    in_one = asyncio.run(consume(wrap(otel_telemetry, ScriptedAgent(events))))
    per_run = _pull_per_asyncio_run(otel_telemetry.wrapper(agent_name="a")(_Countdown(events)))
    assert all(a is b for a, b in zip(in_one, events, strict=True))
    assert all(a is b for a, b in zip(per_run, events, strict=True))
    runs = [s for s in otel_telemetry.spans() if s.name == "invoke_agent a"]
    assert [dict(s.attributes or {})["agent_otel.end_reason"] for s in runs] == ["exhausted"] * 2
    assert "new event loop" not in caplog.text


class _SlowToClose(ScriptedAgent):
    """An agent whose stream's cleanup awaits (an HTTP response or a session to close)."""

    cleanups = 0

    async def _replay(self, script: list[object]) -> AsyncIterator[Any]:
        try:
            for event in script:
                yield event
        finally:
            await asyncio.sleep(0)
            self.cleanups += 1


@pytest.mark.parametrize("entry", ["otel_wrapper", "instrument"])
def test_a_stream_left_open_when_asyncio_run_ends_is_closed_once_and_quietly(
    otel_telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture, entry: str
) -> None:
    """``asyncio.run()`` ending with the stream suspended closes every async generator its
    loop ran at once, the agent's among them: the agent's cleanup runs once, as untraced, the
    run ends ``closed_early``, and asyncio logs nothing (closing the agent's stream from ours
    too failed one of the two closes: "aclose(): asynchronous generator is already running")."""
    agent = _SlowToClose(script())
    left_open: list[Any] = []

    async def consume() -> None:
        if entry == "instrument":
            stream = instrument(agent, name="a", **otel_telemetry.providers()).stream(MESSAGES)
        else:
            stream = wrap(otel_telemetry, agent)
        left_open.append(stream)
        await stream.__anext__()
        await stream.__anext__()

    asyncio.run(consume())
    left_open.clear()

    assert agent.cleanups == 1
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    attributes = agent_span(otel_telemetry).attributes
    assert attributes is not None and attributes["agent_otel.end_reason"] == "closed_early"
    assert otel_telemetry.open_spans() == []


async def test_consumer_raises_inside_its_loop(otel_telemetry: InMemoryTelemetry) -> None:
    agent = ScriptedAgent(script())
    mine = KeyError("consumer bug")
    with pytest.raises(KeyError) as caught:
        async with aclosing(wrap(otel_telemetry, agent)) as stream:
            async for event in stream:
                if isinstance(event, TextDelta):
                    raise mine

    assert caught.value is mine
    assert agent.closed
    agent_sp = agent_span(otel_telemetry)
    assert agent_sp.attributes is not None
    assert agent_sp.attributes["agent_otel.end_reason"] == "closed_early"
    # The consumer's bug is not the agent's failure.
    assert agent_sp.status.status_code is StatusCode.UNSET and not agent_sp.events


async def test_consumer_raises_without_aclosing_is_finalised(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    agent = ScriptedAgent(script())

    async def consume() -> None:
        async for event in wrap(otel_telemetry, agent):
            if isinstance(event, TextDelta):
                raise KeyError("consumer bug")

    with pytest.raises(KeyError):
        await consume()
    await settle()

    assert agent.closed
    attributes = agent_span(otel_telemetry).attributes
    assert attributes is not None and attributes["agent_otel.end_reason"] == "closed_early"


async def test_task_cancelled(otel_telemetry: InMemoryTelemetry) -> None:
    agent = ScriptedAgent(script(), delay=3600)  # blocks before the second event
    got_first = asyncio.Event()

    async def consume() -> None:
        async for _ in wrap(otel_telemetry, agent):
            got_first.set()

    task = asyncio.create_task(consume())
    await got_first.wait()
    await asyncio.sleep(0)  # the consumer is now waiting on the agent
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert agent.closed
    agent_sp = agent_span(otel_telemetry)
    assert agent_sp.attributes is not None
    assert agent_sp.attributes["agent_otel.end_reason"] == "cancelled"
    assert agent_sp.attributes["error.type"] == "CancelledError"
    assert len(otel_telemetry.spans()) == 3


async def test_wait_for_timeout(otel_telemetry: InMemoryTelemetry) -> None:
    agent = ScriptedAgent(script(), delay=3600)
    stream = wrap(otel_telemetry, agent)
    await stream.__anext__()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(stream.__anext__(), timeout=0.01)

    assert agent.closed
    attributes = agent_span(otel_telemetry).attributes
    assert attributes is not None and attributes["agent_otel.end_reason"] == "cancelled"


async def test_abandoned_stream_is_garbage_collected(otel_telemetry: InMemoryTelemetry) -> None:
    agent = ScriptedAgent(script())
    stream = wrap(otel_telemetry, agent)
    await stream.__anext__()
    await stream.__anext__()
    assert otel_telemetry.spans() == []  # the run is open
    del stream
    await settle()

    assert agent.closed
    attributes = agent_span(otel_telemetry).attributes
    assert attributes is not None and attributes["agent_otel.end_reason"] == "closed_early"


async def test_spans_left_open_are_ended_incomplete(otel_telemetry: InMemoryTelemetry) -> None:
    events = [
        LLMCallStart(model="m", call_id="c1"),
        ToolCall(id="t1", function=FunctionCall(name="never_returns", arguments="{}")),
    ]
    received = [e async for e in wrap(otel_telemetry, ScriptedAgent(events))]

    assert received == events
    spans = unique_spans(otel_telemetry)
    for name in ("chat m", "execute_tool never_returns"):
        attributes = spans[name].attributes
        assert attributes is not None and attributes["agent_otel.incomplete"] is True
    attributes = spans["invoke_agent a"].attributes
    assert attributes is not None and attributes["agent_otel.end_reason"] == "exhausted"
    assert otel_telemetry.outline() == [
        ["invoke_agent a", [["step 0", ["chat m", "execute_tool never_returns"]]]]
    ]


async def test_invoke_with_wrapper_is_one_run(otel_telemetry: InMemoryTelemetry) -> None:
    agent = ScriptedAgent(script())
    result = await agent.invoke(
        MESSAGES,
        stream_wrapper=otel_telemetry.wrapper(agent_name="a"),
    )

    assert result.text == "done"
    assert [s.name for s in otel_telemetry.spans()].count("invoke_agent a") == 1


EXIT_CHILD = textwrap.dedent(
    """
    import asyncio
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
    from agent_contract.protocol import LLMCallStart, TextDelta
    from agent_otel import otel_wrapper

    class Printing(SpanExporter):
        def export(self, spans):
            for span in spans:
                attributes = span.attributes or {}
                print(span.name, attributes.get("agent_otel.end_reason"),
                      attributes.get("agent_otel.incomplete"), flush=True)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()  # wired by hand: no configure()
    provider.add_span_processor(SimpleSpanProcessor(Printing()))

    async def agent():
        yield LLMCallStart(model="m", call_id="c1")
        yield TextDelta(text="hi")
        await asyncio.sleep(3600)  # the process exits first

    async def main():
        stream = otel_wrapper(agent_name="a", tracer_provider=provider)(agent())
        await stream.__anext__()
        await stream.__anext__()
        return stream  # kept open: the interpreter exits with the run in it

    loop = asyncio.new_event_loop()  # never closed: nothing closes the run's stream
    held = loop.run_until_complete(main())
    """
)


async def test_end_open_runs_ends_the_runs_on_that_provider_once(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An application's own shutdown step (``end_open_runs`` before it shuts its providers
    down): the runs still open on that provider end now, ``shutdown``, innermost first; a run
    on another provider is left alone; the stream finishing later ends nothing again, and its
    events still pass through."""
    from agent_otel import end_open_runs

    other = InMemoryTelemetry()
    events = [LLMCallStart(model="m", call_id="c1"), TextDelta(text="a")]
    mine = wrap(otel_telemetry, ScriptedAgent(events))
    theirs = other.wrapper(agent_name="b")(ScriptedAgent(events).stream(MESSAGES))
    async with aclosing(mine), aclosing(theirs):
        assert await anext(mine) is events[0] and await anext(theirs) is events[0]
        assert end_open_runs(NoOpTracerProvider()) == 0  # not the SDK's: nothing of ours on it
        assert end_open_runs(otel_telemetry.tracer_provider) == 1
        assert end_open_runs(otel_telemetry.tracer_provider) == 0
        attributes = agent_span(otel_telemetry).attributes or {}
        assert attributes["agent_otel.end_reason"] == "shutdown"
        chat = unique_spans(otel_telemetry)["chat m"].attributes or {}
        assert chat["agent_otel.incomplete"] is True
        assert other.spans() == []  # still open on its own provider
        assert [e async for e in mine] == events[1:]  # passes through, not ended again
    unique_spans(otel_telemetry)
    assert end_open_runs() == 0  # closed above: the other run ended with its stream
    assert [s.name for s in other.spans()][-1] == "invoke_agent b"
    other.shutdown()


def test_a_run_open_at_exit_on_a_provider_wired_by_hand_is_ended_not_lost() -> None:
    """``configure()``'s telemetry ended the runs open at exit on its providers; on a provider
    the application built itself, they were lost: no span of the run was ever exported.
    Now they end with ``end_reason=shutdown`` before the SDK's own exit flush."""
    done = subprocess.run(
        [sys.executable, "-c", EXIT_CHILD], capture_output=True, text=True, timeout=60, check=True
    )
    lines = done.stdout.splitlines()
    assert "chat m None True" in lines  # cut short: incomplete
    assert "invoke_agent a shutdown None" in lines
    assert lines[-1] == "invoke_agent a shutdown None"  # innermost first, the run last
    assert "1 run(s) still open at interpreter exit were ended" in done.stderr
    told = done.stderr  # which run, why it was open, what to do: as every shutdown tells it
    assert "'invoke_agent a'" in told and "consumed to its end" in told, told
    assert "docs/endings.md#runs-still-open-at-shutdown" in told, told


FORK_CHILD = EXIT_CHILD.replace(
    "held = loop.run_until_complete(main())",
    """held = loop.run_until_complete(main())
import os, sys
pid = os.fork()
if pid == 0:  # the child: a worker forked while the run is open, exiting normally
    print("child exits", flush=True)
    sys.exit(0)  # its exit hooks run: the parent's run is not the child's to end
os.waitpid(pid, 0)
""",
)


def test_a_forked_child_never_ends_its_parents_open_run() -> None:
    """A child forked while a run is open (a worker a tool's pool started) used to end the
    parent's run at its own exit too: the same spans, under the same ids, exported twice."""
    assert FORK_CHILD != EXIT_CHILD
    done = subprocess.run(
        [sys.executable, "-c", FORK_CHILD], capture_output=True, text=True, timeout=60, check=True
    )
    lines = done.stdout.splitlines()
    assert "child exits" in lines
    assert lines.count("invoke_agent a shutdown None") == 1  # the parent's, at its exit
    assert lines.index("child exits") < lines.index("invoke_agent a shutdown None")
