"""``run_context()``: the consumer of a traced stream, or the caller of ``invoke`` through an
``otel_wrapper()``, names the run (for ``record_evaluation``, links), from its first pull on
and after it ended; ``None`` for what agent-otel does not trace or passes through, never
another task's run, never an exception."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import SpanContext

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import LLMCallEnd, LLMCallStart, Message, TextDelta
from agent_otel import instrument, otel_wrapper, record_evaluation, run_context
from agent_otel.testing import InMemoryTelemetry

SCRIPT = [LLMCallStart(model="gpt-4o"), TextDelta(text="Paris"), LLMCallEnd()]
QUESTION = [Message(role="user", content="Capital of France?")]


def _runs(telemetry: InMemoryTelemetry) -> list[SpanContext]:
    return [
        span.context
        for span in telemetry.spans()
        if span.name.startswith("invoke_agent") and span.context is not None
    ]


def _assert_each_named_its_own_run(
    telemetry: InMemoryTelemetry, named: dict[str, SpanContext | None]
) -> None:
    """Two runs, each under the span ``"a"`` or ``"b"`` of the task that ran it: each task
    named its own run."""
    parents = {
        span.context.span_id: span.name
        for span in telemetry.spans()
        if span.context is not None and span.name in "ab"
    }
    runs = [span for span in telemetry.spans() if span.name.startswith("invoke_agent")]
    assert len(runs) == 2 and named["a"] != named["b"]
    for span in runs:
        assert span.parent is not None
        assert named[parents[span.parent.span_id]] == span.context


async def _events(count: int = 3) -> AsyncIterator[Any]:
    for event in SCRIPT[:count]:
        await asyncio.sleep(0)  # lets a concurrent run interleave
        yield event


async def test_the_stream_names_its_run_from_the_first_pull_and_after_it_ended(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    stream = otel_telemetry.wrapper()(_events())
    assert run_context(stream) is None  # not started: no run yet
    first = await anext(stream)
    during = run_context(stream)
    assert first is SCRIPT[0] and during is not None
    assert trace.get_current_span().get_span_context() != during  # the consumer's own
    async for _ in stream:
        pass
    [run] = _runs(otel_telemetry)
    assert during == run == run_context(stream)
    assert run.trace_flags.sampled
    record_evaluation(
        "correctness", score=1.0, span_context=run_context(stream),
        logger_provider=otel_telemetry.logger_provider,
    )  # fmt: skip
    [event] = otel_telemetry.logs()
    assert (event.log_record.trace_id, event.log_record.span_id) == (run.trace_id, run.span_id)


async def test_an_unsampled_run_keeps_its_ids_marked_not_sampled() -> None:
    telemetry = InMemoryTelemetry(sampler=ALWAYS_OFF)
    stream = telemetry.wrapper()(_events())
    async for _ in stream:
        pass
    named = run_context(stream)
    assert telemetry.spans() == []
    assert named is not None and named.is_valid and not named.trace_flags.sampled


async def test_a_run_that_passes_through_names_none(otel_telemetry: InMemoryTelemetry) -> None:
    with suppress_instrumentation():  # the caller turned instrumentation off
        suppressed = otel_telemetry.wrapper()(_events())
        async for _ in suppressed:
            pass
    no_sdk = otel_wrapper(tracer_provider=trace.NoOpTracerProvider())(_events())
    async for _ in no_sdk:
        pass
    assert run_context(suppressed) is None and run_context(no_sdk) is None
    assert _runs(otel_telemetry) == []


async def test_of_two_layers_the_outer_names_the_run(otel_telemetry: InMemoryTelemetry) -> None:
    inner = otel_telemetry.wrapper()(_events())
    outer = otel_telemetry.wrapper()(inner)
    async for _ in outer:
        pass
    [run] = _runs(otel_telemetry)
    assert run_context(inner) is None and run_context(outer) == run
    # an instrumented agent streamed, and invoked with a wrapper: the outer layer records
    agent = instrument(ScriptedAgent(SCRIPT), **otel_telemetry.providers())
    stream = agent.stream(QUESTION)
    async for _ in stream:
        pass
    wrapper = otel_telemetry.wrapper()
    await agent.invoke(QUESTION, stream_wrapper=wrapper)
    _, streamed, invoked = _runs(otel_telemetry)
    assert run_context(stream) == streamed and run_context(wrapper) == invoked


async def test_two_streams_at_once_name_their_own_runs(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    wrapper = otel_telemetry.wrapper()
    named: dict[str, SpanContext | None] = {}

    async def consume(key: str) -> None:
        with otel_telemetry.tracer_provider.get_tracer("test").start_as_current_span(key):
            stream = wrapper(_events())
            async for _ in stream:
                named[key] = run_context(stream)

    await asyncio.gather(consume("a"), consume("b"))
    _assert_each_named_its_own_run(otel_telemetry, named)


async def test_invoke_through_one_wrapper_in_two_tasks_names_each_its_own_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    wrapper = otel_telemetry.wrapper()
    agent = ScriptedAgent(SCRIPT, delay=0.001)
    assert run_context(wrapper) is None  # nothing wrapped here yet
    named: dict[str, SpanContext | None] = {}
    started = asyncio.Event()

    async def ask(key: str) -> None:
        with otel_telemetry.tracer_provider.get_tracer("test").start_as_current_span(key):
            if key == "b":
                await started.wait()  # b's run starts while a's is going on
            else:
                started.set()
            await agent.invoke(QUESTION, stream_wrapper=wrapper)
            named[key] = run_context(wrapper)

    await asyncio.gather(ask("a"), ask("b"))
    assert run_context(wrapper) is None  # the runs were the tasks', not this context's
    _assert_each_named_its_own_run(otel_telemetry, named)


async def test_the_wrapper_names_its_latest_run_not_a_nested_one(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    wrapper = otel_telemetry.wrapper()
    sub_agent = ScriptedAgent(SCRIPT, name="sub")

    async def with_a_sub_agent() -> AsyncIterator[Any]:
        yield SCRIPT[0]
        await sub_agent.invoke(QUESTION, stream_wrapper=wrapper)  # a tool's sub-agent
        yield SCRIPT[1]
        yield SCRIPT[2]

    first = wrapper(with_a_sub_agent())
    async for _ in first:
        pass
    outer = run_context(wrapper)
    assert outer == run_context(first) and outer is not None
    assert len(_runs(otel_telemetry)) == 2  # the sub-agent's run did not take the name
    # a run abandoned half-way (never closed) does not keep the name from the next one
    abandoned = wrapper(_events())
    await anext(abandoned)
    await ScriptedAgent(SCRIPT).invoke(QUESTION, stream_wrapper=wrapper)
    named = run_context(wrapper)
    assert named not in (None, outer, run_context(abandoned))
    await abandoned.aclose()


async def test_the_wrapper_names_none_once_another_wrapper_ran_here(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    first, second = otel_telemetry.wrapper(), otel_telemetry.wrapper()
    await ScriptedAgent(SCRIPT).invoke(QUESTION, stream_wrapper=first)
    assert run_context(first) is not None
    await ScriptedAgent(SCRIPT).invoke(QUESTION, stream_wrapper=second)
    assert run_context(first) is None  # not a guess: another wrapper's run came last
    assert run_context(second) == _runs(otel_telemetry)[-1]
    with suppress_instrumentation():
        await ScriptedAgent(SCRIPT).invoke(QUESTION, stream_wrapper=second)
    assert run_context(second) is None  # its latest run passed through


class _DrivenElsewhere(ScriptedAgent):
    """An agent whose ``invoke`` wraps its stream, then drains it in a task of its own (or,
    ``wrap_there``, wraps it in that task too)."""

    wrap_there = False

    async def invoke(self, messages: Any, stream_wrapper: Any = None, config: Any = None) -> Any:
        stream = None if self.wrap_there else stream_wrapper(self.stream(messages))

        async def drain() -> None:
            async for _ in stream or stream_wrapper(self.stream(messages)):
                pass

        await asyncio.create_task(drain())


async def test_a_run_driven_from_another_task_is_named_never_an_earlier_one(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    wrapper = otel_telemetry.wrapper()
    agent = _DrivenElsewhere(SCRIPT)
    await agent.invoke(QUESTION, stream_wrapper=wrapper)
    first = run_context(wrapper)
    await agent.invoke(QUESTION, stream_wrapper=wrapper)
    second = run_context(wrapper)
    assert [first, second] == _runs(otel_telemetry)
    agent.wrap_there = True  # the wrapper never ran in this task: not the earlier run

    async def wrapped_elsewhere() -> SpanContext | None:
        await agent.invoke(QUESTION, stream_wrapper=wrapper)
        return run_context(wrapper)

    assert await asyncio.create_task(wrapped_elsewhere()) is None
    assert len(_runs(otel_telemetry)) == 3 and run_context(wrapper) == second


def test_another_thread_never_sees_this_ones_run(otel_telemetry: InMemoryTelemetry) -> None:
    wrapper = otel_telemetry.wrapper()
    asyncio.run(ScriptedAgent(SCRIPT).invoke(QUESTION, stream_wrapper=wrapper))
    seen: list[SpanContext | None] = []
    thread = threading.Thread(target=lambda: seen.append(run_context(wrapper)))
    thread.start()
    thread.join()
    assert seen == [None]


class _Hostile:
    """Every attribute, comparison and hash raises."""

    def __getattribute__(self, name: str) -> Any:
        raise RuntimeError(name)

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    def __hash__(self) -> int:
        raise RuntimeError("hash")


async def _untraced() -> AsyncIterator[int]:
    yield 1


def _function() -> None:
    return None


HOSTILE: list[Callable[[], object]] = [
    _Hostile, _untraced, lambda: _function, lambda: otel_wrapper,
    lambda: _events().__aiter__(), lambda: ScriptedAgent(SCRIPT).stream(QUESTION),
]  # fmt: skip


@pytest.mark.parametrize("make", HOSTILE)
def test_a_stream_or_function_agent_otel_does_not_trace_names_none(
    make: Callable[[], object],
) -> None:
    assert run_context(make()) is None


ANY_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(), st.binary(),
    st.lists(st.integers()), st.dictionaries(st.text(), st.integers()), st.builds(object),
    st.sampled_from([int, str, type, object, run_context]), st.functions(),
)  # fmt: skip
"""Values of many kinds, bounded in cost: arbitrary types' values (``st.from_type`` of any
type) took long enough on a loaded machine to miss Hypothesis's deadline now and then."""


@settings(deadline=None)
@given(ANY_VALUE)
def test_any_other_value_names_none(value: object) -> None:
    assert run_context(value) is None


async def test_a_task_that_ran_a_wrapper_is_freed_with_its_result_when_it_ends(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The name a wrapper leaves in a task's context must not hold that task: the task holds
    its context, so a strong reference back kept the task, its result (or its exception and
    every frame of its traceback) alive until the cyclic collector happened to run."""
    wrapper = otel_telemetry.wrapper()

    class Result:
        pass

    async def ask() -> Result:
        async for _ in wrapper(_events()):
            pass
        assert run_context(wrapper) is not None
        return Result()

    task = asyncio.ensure_future(ask())
    result = weakref.ref(await task)
    gc.disable()
    try:
        del task
        for _ in range(3):  # the loop's last callbacks for the task run and let it go
            await asyncio.sleep(0)
        assert result() is None
    finally:
        gc.enable()
