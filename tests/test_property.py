"""Property tests of ``otel_wrapper()``: whatever the agent streams, tracing never hurts it.

Hypothesis draws runs over every event kind of both vocabularies, with ids from tiny pools so
that they collide (``None`` included), unknown objects mixed in, an optional agent failure at
a random point and an optional consumer that stops early. For every run:

* the consumer receives exactly the objects the agent yielded, in order (identity);
* every span started is ended exactly once, and none is left open when the run is over;
* the run's spans form one tree in one trace, rooted at the ``invoke_agent`` span (a child of
  the consumer's span when one is active), each span within its parent's time;
* the consumer's context is current whenever it holds an event, and after the run;
* the only exception that escapes is the agent's own (the same object).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from agent_contract.agent import (
    InterruptFinal,
    MessageDelta,
    MessageFinal,
    ReasoningStep,
    RunUsage,
    StructuredFinal,
    ToolCallStep,
    ToolResultStep,
)
from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import (
    Error,
    FunctionCall,
    JourneyMarker,
    LLMCallEnd,
    LLMCallStart,
    Message,
    PhaseMarker,
    ReasoningDelta,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import otel_wrapper
from agent_otel.testing import InMemoryTelemetry
from hostile_events import EVENTS as HOSTILE_EVENTS

# --- span bookkeeping -----------------------------------------------------------------------


class Ledger(SpanProcessor):
    """Records every span start and end; a second end of one span is a failure."""

    def __init__(self) -> None:
        self.started: dict[int, Span] = {}
        self.ended: dict[int, ReadableSpan] = {}
        self.double_ends: list[int] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        assert span.context is not None
        self.started[span.context.span_id] = span

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        span_id = span.context.span_id
        if span_id in self.ended:
            self.double_ends.append(span_id)
        self.ended[span_id] = span


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def records_of(name: str, level: int | None = None) -> Iterator[_Records]:
    """What logger ``name`` emits while the block runs (with ``level`` set on it meanwhile:
    agent-otel logs a site's repeats at DEBUG)."""
    records, logger = _Records(), logging.getLogger(name)
    before = logger.level
    logger.addHandler(records)
    if level is not None:
        logger.setLevel(level)
    try:
        yield records
    finally:
        logger.removeHandler(records)
        logger.setLevel(before)


# One meter provider for every example: metrics are not under test here, but the code paths
# that record them are.
_METRICS = InMemoryTelemetry().meter_provider

# --- the events ------------------------------------------------------------------------------

LLM_IDS = st.sampled_from(["c1", "c2", None])
TOOL_IDS = st.sampled_from(["t1", "t2", None])
AGENT_TOOL_IDS = st.sampled_from(["t1", "t2"])  # pydantic validates ``call_id: str``
TEXT = st.sampled_from(["", "hi", "ünï", "x" * 40])
MODELS = st.sampled_from(["gpt-x", "m2", None])
TOOLS = st.sampled_from(["search", "calc", None])
COUNTS = st.one_of(st.none(), st.integers(0, 50))


class AgentFailure(Exception):
    """What the agent raises: each example gets its own instance."""


class AgentAbort(BaseException):
    """A failure that is not an ``Exception`` (like ``KeyboardInterrupt``)."""


class Opaque:
    """An unknown object with a ``type`` that no vocabulary knows."""

    type = "not_an_event"


LLM_START: st.SearchStrategy[Any] = st.builds(
    LLMCallStart,
    model=MODELS,
    provider=st.sampled_from(["openai", None]),
    call_id=LLM_IDS,
    params=st.sampled_from([{}, {"temperature": 0.2, "max_tokens": 10, "stop": ["x"]}]),
    messages=st.sampled_from(
        [None, [Message(role="user", content="hello")], [Message(role="system")]]
    ),
)
LLM_END: st.SearchStrategy[Any] = st.builds(
    LLMCallEnd,
    model=MODELS,
    call_id=LLM_IDS,
    finish_reason=st.sampled_from(["stop", "tool_calls", None]),
    response_id=st.sampled_from(["r1", None]),
)
TOOL_CALL: st.SearchStrategy[Any] = st.builds(
    ToolCall,
    id=TOOL_IDS,
    function=st.builds(
        FunctionCall, name=TOOLS, arguments=st.sampled_from(["{}", '{"q": 1}', "not json"])
    ),
)
TOOL_RESULT: st.SearchStrategy[Any] = st.builds(
    ToolResult,
    tool_call_id=TOOL_IDS,
    content=st.sampled_from(["ok", {"a": [1, 2]}, None, 3.5]),
    name=TOOLS,
    is_error=st.booleans(),
)
LATENT_EVENTS: st.SearchStrategy[Any] = st.one_of(
    st.builds(TextDelta, text=TEXT),
    st.builds(ReasoningDelta, text=TEXT),
    LLM_START,
    LLM_END,
    TOOL_CALL,
    TOOL_RESULT,
    st.builds(StepBoundary, index=st.one_of(st.none(), st.integers(0, 3))),
    st.builds(
        Usage,
        input_tokens=COUNTS,
        output_tokens=COUNTS,
        total_tokens=COUNTS,
        cache_read_tokens=COUNTS,
        reasoning_tokens=COUNTS,
        model=MODELS,
    ),
    st.builds(
        Error,
        message=st.sampled_from(["boom", ""]),
        error_type=st.sampled_from(["RateLimit", None]),
        fatal=st.booleans(),
    ),
    st.builds(JourneyMarker, name=st.just("checkout"), journey_id=st.sampled_from(["j1", None])),
    st.builds(PhaseMarker, name=st.sampled_from(["plan", "answer"])),
)

AGENT_EVENTS: st.SearchStrategy[Any] = st.one_of(
    st.builds(MessageDelta, text=TEXT),
    st.builds(ReasoningStep, text=TEXT),
    st.builds(
        ToolCallStep,
        tool=st.sampled_from(["search", "calc"]),
        args=st.fixed_dictionaries({"q": st.sampled_from(["a", "b"])}),
        call_id=AGENT_TOOL_IDS,
    ),
    st.builds(
        ToolResultStep,
        tool=st.sampled_from(["search", "calc"]),
        call_id=AGENT_TOOL_IDS,
        result=st.sampled_from(["ok", {"n": 1}, None]),
        is_error=st.booleans(),
    ),
    st.builds(RunUsage, input_tokens=COUNTS, output_tokens=COUNTS, model=MODELS),
    st.builds(MessageFinal, text=TEXT),
    st.builds(StructuredFinal, data=st.sampled_from([{"a": 1}, [1, 2], None])),
    st.builds(
        InterruptFinal,
        interrupt_id=st.sampled_from(["i1", "i2"]),
        payload=st.just(None),
        reason=st.sampled_from(["approve?", None]),
    ),
)

UNKNOWN: st.SearchStrategy[Any] = st.one_of(
    st.builds(object),
    st.integers(-5, 5),
    st.builds(dict, type=st.sampled_from(["message_delta", "tool_call_step"])),
    st.builds(Opaque),
    st.none(),
)

# Opening and closing events weigh more, so that ids collide and calls do get their results;
# every event class of the contract (its subclasses included) also comes with hostile fields
# (``hostile_events``), which must leave the tree as sound.
STRUCTURE = st.one_of(LLM_START, LLM_END, TOOL_CALL, TOOL_RESULT)
EVENT = st.one_of(LATENT_EVENTS, STRUCTURE, STRUCTURE, AGENT_EVENTS, UNKNOWN, HOSTILE_EVENTS)


@dataclass
class Run:
    script: list[Any]
    fail_at: int | None
    abort: bool  # raise a BaseException rather than an Exception
    stop_after: int | None  # the consumer stops after this many events
    consumer_span: bool
    step_spans: bool
    capture: bool
    chunk_metric: bool


@st.composite
def runs(draw: st.DrawFn, *, early_stop: bool) -> Run:
    script = draw(st.lists(EVENT, max_size=30))
    fail_at = draw(st.one_of(st.none(), st.integers(0, len(script))))
    stop_after = draw(st.integers(0, len(script) + 1)) if early_stop else None
    return Run(
        script=script,
        fail_at=fail_at,
        abort=draw(st.booleans()),
        stop_after=stop_after,
        consumer_span=draw(st.booleans()),
        step_spans=draw(st.booleans()),
        capture=draw(st.booleans()),
        chunk_metric=draw(st.booleans()),
    )


# --- the property ----------------------------------------------------------------------------


async def _consume(
    stream: AsyncIterator[Any], stop_after: int | None, ambient: Context
) -> tuple[list[Any], BaseException | None, list[int]]:
    """Consume like an application would; note where the context was not the consumer's."""
    received: list[Any] = []
    wrong_context: list[int] = []
    escaped: BaseException | None = None
    try:
        if stop_after == 0:
            pass
        else:
            async for event in stream:
                if otel_context.get_current() is not ambient:
                    wrong_context.append(len(received))
                received.append(event)
                if stop_after is not None and len(received) >= stop_after:
                    break
    except BaseException as exc:
        escaped = exc
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    return received, escaped, wrong_context


def check_run(run: Run) -> None:
    ledger = Ledger()
    provider = InMemoryTelemetry(processors=[ledger]).tracer_provider  # one per example
    error: BaseException = AgentAbort("abort") if run.abort else AgentFailure("failure")
    agent = ScriptedAgent(
        run.script, fail_at=run.fail_at, error=error if run.fail_at is not None else None
    )
    wrapper = otel_wrapper(
        agent_name="prop",
        tracer_provider=provider,
        meter_provider=_METRICS,
        step_spans=run.step_spans,
        capture_content=run.capture,
        chunk_metric=run.chunk_metric,
    )
    consumer_tracer = provider.get_tracer("consumer")

    async def main() -> tuple[list[Any], BaseException | None, list[int], int | None, bool]:
        consumer_span_id: int | None = None
        if run.consumer_span:
            with consumer_tracer.start_as_current_span("consumer") as span:
                consumer_span_id = span.get_span_context().span_id
                before = otel_context.get_current()
                received, escaped, wrong = await _consume(
                    wrapper(agent.stream([])), run.stop_after, before
                )
                same = otel_context.get_current() is before
        else:
            before = otel_context.get_current()
            received, escaped, wrong = await _consume(
                wrapper(agent.stream([])), run.stop_after, before
            )
            same = otel_context.get_current() is before
        return received, escaped, wrong, consumer_span_id, same

    with records_of("opentelemetry") as sdk_logs:
        received, escaped, wrong_context, consumer_id, same_context = asyncio.run(main())

    # What the agent yielded before it failed, or the consumer stopped.
    n = len(run.script)
    if run.fail_at is not None:
        n = min(n, run.fail_at)
    if run.stop_after is not None:
        n = min(n, run.stop_after)
    expected = run.script[:n]
    assert len(received) == len(expected)
    assert all(a is b for a, b in zip(received, expected))

    # The only exception out is the agent's own, and only when it actually raised.
    agent_raised = run.fail_at is not None and (
        run.stop_after is None or run.stop_after > run.fail_at
    )
    if agent_raised:
        assert escaped is error
    else:
        assert escaped is None

    assert not wrong_context, f"consumer saw a foreign context at events {wrong_context}"
    assert same_context

    # Every span started was ended, once.
    assert not ledger.double_ends
    assert not [m for m in sdk_logs.messages if "ended span" in m]
    assert ledger.started.keys() == ledger.ended.keys()

    # One tree, one trace, rooted at invoke_agent (under the consumer's span if any).
    spans = [s for i, s in ledger.ended.items() if i != consumer_id]
    if run.stop_after == 0:  # the wrapper was closed before it started: no run at all
        assert spans == []
        return
    ids = {s.context.span_id for s in spans if s.context is not None}
    roots = [s for s in spans if s.parent is None or s.parent.span_id not in ids]
    assert len(roots) == 1
    root = roots[0]
    assert root.name == "invoke_agent prop"
    if consumer_id is None:
        assert root.parent is None
    else:
        assert root.parent is not None and root.parent.span_id == consumer_id
    trace_ids = {s.context.trace_id for s in ledger.ended.values() if s.context is not None}
    assert len(trace_ids) == 1
    for span in spans:
        if span is not root:
            assert span.parent is not None and span.parent.span_id in ids
    from otlp_check import assert_nested_in_time  # (otlp_check imports this module)

    assert_nested_in_time(spans)


PROPERTY = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@PROPERTY
@given(runs(early_stop=False))
def test_any_stream_is_passed_through_and_traced_soundly(run: Run) -> None:
    check_run(run)


@PROPERTY
@given(runs(early_stop=True))
def test_consumer_stopping_early_still_ends_everything(run: Run) -> None:
    check_run(run)


# --- a few fixed cases, so that a failure here reads plainly -------------------------------


def _run(script: Sequence[Any], **kwargs: Any) -> Run:
    options: dict[str, Any] = {
        "fail_at": None,
        "abort": False,
        "stop_after": None,
        "consumer_span": False,
        "step_spans": True,
        "capture": True,
        "chunk_metric": False,
    }
    options.update(kwargs)
    return Run(script=list(script), **options)


def test_fixed_cases_hold_the_property() -> None:
    start = LLMCallStart(model="m", call_id="c1")
    call = ToolCall(id="t1", function=FunctionCall(name="search", arguments="{}"))
    script = [start, TextDelta("a"), call, object(), LLMCallEnd(call_id="c1"), StepBoundary()]
    check_run(_run(script))
    check_run(_run(script, fail_at=3, consumer_span=True))
    check_run(_run(script, fail_at=2, abort=True))
    check_run(_run(script, stop_after=2))
    check_run(_run(script, stop_after=0, consumer_span=True))
    check_run(_run([], fail_at=0))
    # more ended calls waiting for their usage than the recorder keeps waiting
    calls = [e for i in range(12) for e in (LLMCallStart(call_id=f"c{i}"), LLMCallEnd())]
    check_run(_run([*calls, Usage(input_tokens=1)], chunk_metric=True))
    check_run(_run([*calls, Usage(input_tokens=1)], stop_after=7))


def test_the_current_span_while_the_agent_works_is_the_innermost() -> None:
    """While the agent computes its next event, the run's innermost span is current."""
    ledger = Ledger()
    provider = InMemoryTelemetry(processors=[ledger]).tracer_provider
    seen: list[str] = []

    async def agent() -> AsyncIterator[Any]:
        for event in (
            LLMCallStart(model="m", call_id="c1"),
            LLMCallEnd(call_id="c1"),
            ToolCall(id="t1", function=FunctionCall(name="search", arguments="{}")),
            ToolResult(tool_call_id="t1"),
        ):
            span = trace.get_current_span()
            assert isinstance(span, Span)
            seen.append(span.name)
            yield event

    async def main() -> None:
        wrapper = otel_wrapper(agent_name="a", tracer_provider=provider, meter_provider=_METRICS)
        async for _ in wrapper(agent()):
            assert not trace.get_current_span().get_span_context().is_valid

    asyncio.run(main())
    # before the run's first event there is no step yet; then the chat span, the step, the
    # tool span, the step again.
    assert seen == ["invoke_agent a", "chat m", "step 0", "execute_tool search"]
