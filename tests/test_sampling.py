"""Unsampled runs build no attributes, yet their metrics are recorded in full.

A run whose agent span the sampler drops gets non-recording spans. Writing to them is wasted
work on the agent's hot path, so the recorder must not: no ``set_attribute``,
``set_attributes``, ``add_event``, ``record_exception``, ``set_status`` or ``update_name``
on a non-recording span, and no content serialised (the redaction hook is never called).
Attributes handed to ``start_span`` are allowed: samplers may read them. Metrics do not
depend on sampling, so durations and token usage are still recorded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased, Sampler
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    TraceFlags,
    Tracer,
)
from opentelemetry.util.types import Attributes, AttributeValue

from agent_contract.agent import InterruptFinal, MessageDelta, MessageFinal, RunUsage
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
from agent_otel import ContentCapture, otel_wrapper
from agent_otel.testing import InMemoryTelemetry, run_script

WRITES = (
    "set_attribute",
    "set_attributes",
    "add_event",
    "add_link",
    "record_exception",
    "set_status",
    "update_name",
)


class CountingSpan(NonRecordingSpan):
    """A non-recording span that counts every write it is asked to (and drops it)."""

    def __init__(self, context: SpanContext, writes: Counter[str]) -> None:
        super().__init__(context)
        self._writes = writes

    def set_attribute(self, key: str, value: Any) -> None:
        self._writes["set_attribute"] += 1

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        self._writes["set_attributes"] += 1

    def add_event(
        self, name: str, attributes: Attributes = None, timestamp: int | None = None
    ) -> None:
        self._writes["add_event"] += 1

    def add_link(self, context: SpanContext, attributes: Attributes = None) -> None:
        self._writes["add_link"] += 1

    def record_exception(
        self,
        exception: BaseException,
        attributes: Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        self._writes["record_exception"] += 1

    def set_status(self, status: Status | Any, description: str | None = None) -> None:
        self._writes["set_status"] += 1

    def update_name(self, name: str) -> None:
        self._writes["update_name"] += 1

    def end(self, end_time: int | None = None) -> None:
        self._writes["end"] += 1


class CountingTracer(Tracer):
    """Delegates to the SDK tracer; hands out counting spans where it would not record."""

    def __init__(self, inner: Tracer, writes: Counter[str]) -> None:
        self._inner = inner
        self._writes = writes

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> Span:
        span = self._inner.start_span(
            name, context, kind, attributes, links, start_time, record_exception,
            set_status_on_exception,
        )  # fmt: skip
        self._writes["start_span"] += 1
        if span.is_recording():
            self._writes["recording"] += 1
            return span
        return CountingSpan(span.get_span_context(), self._writes)

    @contextmanager
    def start_as_current_span(  # type: ignore[override]
        self, name: str, *args: Any, **kwargs: Any
    ) -> Iterator[Span]:
        with trace.use_span(self.start_span(name, *args, **kwargs), end_on_exit=True) as span:
            yield span


class CountingTracerProvider(TracerProvider):
    def __init__(self, sampler: Sampler) -> None:
        super().__init__(sampler=sampler, shutdown_on_exit=False)
        self.writes: Counter[str] = Counter()

    def get_tracer(self, *args: Any, **kwargs: Any) -> Tracer:
        return CountingTracer(super().get_tracer(*args, **kwargs), self.writes)


def rich_script() -> list[Any]:
    """Every recorder path: two steps, content, tools (one failing, one never answered),
    usage, errors (one fatal), markers, Agent-vocabulary events, an unknown object."""
    return [
        JourneyMarker(name="checkout", journey_id="j1"),
        PhaseMarker(name="plan"),
        LLMCallStart(
            model="m",
            provider="openai",
            call_id="c1",
            params={"temperature": 0.5, "max_tokens": 100, "stop": ["x"]},
            messages=[Message("system", "be brief"), Message("user", "hi")],
        ),
        ReasoningDelta("thinking"),
        TextDelta("calling"),
        ToolCall(id="t1", function=FunctionCall(name="search", arguments='{"q": "x"}')),
        LLMCallEnd(model="m-1", call_id="c1", finish_reason="tool_calls", response_id="r1"),
        Usage(input_tokens=10, output_tokens=5, cache_read_tokens=2),
        ToolResult(tool_call_id="t1", content={"hits": 3}, is_error=True),
        ToolResult(tool_call_id="t-orphan", content="?"),
        StepBoundary(index=0),
        LLMCallStart(model="m", provider="openai", call_id="c1"),
        Error(message="rate limited", error_type="RateLimit"),
        TextDelta("answer"),
        ToolCall(id="t2", function=FunctionCall(name="never", arguments="{}")),
        LLMCallStart(model="m", provider="openai", call_id="c1"),  # duplicate id
        LLMCallEnd(call_id="c1", finish_reason="stop"),
        Usage(input_tokens=20, output_tokens=2),
        LLMCallEnd(call_id="nope"),
        object(),
        MessageDelta(text="final"),
        RunUsage(input_tokens=7, output_tokens=3, model="m"),
        MessageFinal(text="answer"),
        InterruptFinal(interrupt_id="i1", payload={"options": [1, 2]}, reason="approve"),
        Error(message="fatal", error_type="Fatal", fatal=True),
    ]


class AgentFailure(Exception):
    pass


async def traced_run(
    provider: TracerProvider,
    telemetry: InMemoryTelemetry,
    *,
    parent: Context | None = None,
    fail: bool = False,
) -> Counter[str]:
    """Run the rich script with content capture on; return how often the redactor was called."""
    redactions: Counter[str] = Counter()

    def redact(kind: Any, value: Any) -> Any:
        redactions[kind] += 1
        return value

    events = rich_script()
    agent = ScriptedAgent(
        events, fail_at=len(events) if fail else None, error=AgentFailure() if fail else None
    )
    wrapper = otel_wrapper(
        agent_name="sampled?",
        tracer_provider=provider,
        meter_provider=telemetry.meter_provider,
        capture_content=ContentCapture(redact=redact),
        chunk_metric=True,
    )
    token = otel_context.attach(parent) if parent is not None else None
    try:
        received: list[Any] = []
        try:
            async for event in wrapper(agent.stream([])):
                received.append(event)
        except AgentFailure:
            assert fail
        assert len(received) == len(events)
    finally:
        if token is not None:
            otel_context.detach(token)
    return redactions


def unsampled_parent() -> Context:
    """An upstream service decided not to sample this trace."""
    span_context = SpanContext(
        trace_id=0xABC, span_id=0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.DEFAULT)
    )
    return trace.set_span_in_context(NonRecordingSpan(span_context))


def metric_counts(telemetry: InMemoryTelemetry) -> dict[str, int]:
    return {name: sum(p.count for p in points) for name, points in telemetry.histograms().items()}


def token_sums(telemetry: InMemoryTelemetry) -> dict[tuple[str, str], float]:
    sums: dict[tuple[str, str], float] = {}
    for point in telemetry.histograms()["gen_ai.client.token.usage"]:
        key = (
            str((point.attributes or {})["gen_ai.operation.name"]),
            str((point.attributes or {})["gen_ai.token.type"]),
        )
        sums[key] = sums.get(key, 0) + point.sum
    return sums


# What the rich script must put in the metrics, whether sampled or not.
EXPECTED_COUNTS = {
    "gen_ai.client.operation.duration": 3,  # c1, the duplicated c1, the last c1
    "gen_ai.client.operation.time_to_first_chunk": 2,  # the first call, the second
    "gen_ai.client.operation.time_per_output_chunk": 1,  # the first call's second chunk
    "gen_ai.execute_tool.duration": 3,  # t1, the orphan result, t2 (ended with the run)
    "gen_ai.invoke_agent.duration": 1,
    "gen_ai.client.token.usage": 6,  # input and output of the first call, the last, the run
    "gen_ai.invoke_agent.inference_calls": 1,  # one record per run
    "gen_ai.invoke_agent.tool_calls": 1,
}
EXPECTED_TOKENS = {
    ("chat", "input"): 30.0,
    ("chat", "output"): 7.0,
    ("invoke_agent", "input"): 7.0,  # RunUsage
    ("invoke_agent", "output"): 3.0,
}


@pytest.mark.parametrize(
    ("sampler", "parent"),
    [
        (ALWAYS_OFF, None),
        (ParentBased(ALWAYS_OFF), None),
        (ParentBased(ALWAYS_ON), unsampled_parent()),
    ],
    ids=["always_off", "parent_based_off", "unsampled_parent"],
)
@pytest.mark.parametrize("fail", [False, True], ids=["ok", "agent_raises"])
async def test_an_unsampled_run_writes_nothing_to_its_spans(
    sampler: Sampler, parent: Context | None, fail: bool
) -> None:
    provider = CountingTracerProvider(sampler)
    telemetry = InMemoryTelemetry()
    redactions = await traced_run(provider, telemetry, parent=parent, fail=fail)

    writes = provider.writes
    assert writes["start_span"] >= 8  # the spans were asked for ...
    assert writes["recording"] == 0  # ... and none was sampled
    assert {k: writes[k] for k in WRITES if writes[k]} == {}
    assert writes["end"] == writes["start_span"]  # every span still ended exactly once
    assert not redactions  # no content was even serialised

    assert metric_counts(telemetry) == EXPECTED_COUNTS
    assert token_sums(telemetry) == EXPECTED_TOKENS
    telemetry.shutdown()


async def test_the_same_run_sampled_writes_its_spans_and_the_same_metrics() -> None:
    """The control: the counting provider sees writes when spans record, and the metrics of
    an unsampled run are exactly those of a sampled one."""
    telemetry = InMemoryTelemetry()
    redactions = await traced_run(telemetry.tracer_provider, telemetry)
    assert redactions["input_messages"] >= 1 and redactions["tool_arguments"] == 2
    spans = telemetry.spans()
    assert len(spans) >= 8
    agent = next(s for s in spans if s.name == "invoke_agent sampled?")
    assert (agent.attributes or {})["agent_otel.journey.name"] == "checkout"
    assert metric_counts(telemetry) == EXPECTED_COUNTS
    assert token_sums(telemetry) == EXPECTED_TOKENS
    telemetry.shutdown()

    # and a write to a non-recording counting span is counted (the probe works)
    provider = CountingTracerProvider(ALWAYS_OFF)
    span = provider.get_tracer("probe").start_span("x")
    span.set_attribute("k", 1)
    span.add_event("e")
    assert provider.writes["set_attribute"] == 1 and provider.writes["add_event"] == 1


class _DropRuns(Sampler):
    """A root sampler that drops agent runs and keeps every other root (a ratio sampler's
    two answers, made deterministic)."""

    def should_sample(  # type: ignore[no-untyped-def]
        self, parent_context, trace_id, name, kind=None, attributes=None, links=None
    ):
        return (ALWAYS_OFF if name.startswith("invoke_agent") else ALWAYS_ON).should_sample(
            parent_context, trace_id, name, kind, attributes, links
        )

    def get_description(self) -> str:
        return "DropRuns"


@pytest.mark.parametrize("event", ["first", "delta", "after_call"])
async def test_the_agents_own_spans_in_an_unsampled_run_stay_unsampled(event: str) -> None:
    """The activation an unsampled run still pays per event (figure 1): the agent's own spans
    (an HTTP client's, an SDK's) are children of the run's unsampled spans, so ParentBased
    keeps them out; without it they would be new root traces, sampled afresh."""
    telemetry = InMemoryTelemetry(sampler=ParentBased(_DropRuns()))
    provider = telemetry.tracer_provider
    seen: list[SpanContext] = []

    async def agent() -> Any:
        def work() -> None:
            with provider.get_tracer("agent's http").start_as_current_span("GET") as span:
                seen.append(span.get_span_context())

        if event == "first":
            work()
        yield LLMCallStart(model="m", provider="openai", call_id="c")
        yield TextDelta(text="a")
        if event == "delta":
            work()
        yield TextDelta(text="b")
        yield LLMCallEnd(model="m", call_id="c")
        if event == "after_call":
            work()
        yield Usage(input_tokens=1, output_tokens=1)

    async for _ in telemetry.wrapper(agent_name="a")(agent()):
        pass
    assert len(seen) == 1
    assert not seen[0].trace_flags.sampled  # a child of the run, not a new root
    # the control: the same span outside any run is a root, and this sampler keeps it
    with provider.get_tracer("agent's http").start_as_current_span("GET") as root:
        assert root.get_span_context().trace_flags.sampled
    telemetry.shutdown()


class _Seen(Sampler):
    """Keeps every span, noting the attributes each was started with (what a sampler sees)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Mapping[str, Any]]] = []

    def should_sample(  # type: ignore[no-untyped-def]
        self, parent_context, trace_id, name, kind=None, attributes=None, links=None
    ):
        self.seen.append((name, dict(attributes or {})))
        return ALWAYS_ON.should_sample(parent_context, trace_id, name, kind, attributes, links)

    def get_description(self) -> str:
        return "Seen"


@pytest.mark.parametrize(
    ("kind", "expected"),
    [(None, "function"), ("function", "function"), ("web_search", "extension"),
     ("file_search", "datastore"), ("MCP", "extension"), ("unheard_of", "function")],
)  # fmt: skip
async def test_a_tool_calls_kind_is_on_its_span_when_a_sampler_sees_it(
    kind: str | None, expected: str
) -> None:
    """A sampler deciding on a tool span reads its ``gen_ai.tool.type`` as the call's kind
    maps it, the same for a name told again (its start is remembered per name and kind)."""
    sampler = _Seen()
    telemetry = InMemoryTelemetry(sampler=sampler)
    call = ToolCall(id="t1", function=FunctionCall(name="look", arguments="{}"))
    if kind is not None:
        call.type = kind  # type: ignore[assignment]
    again = ToolCall(id="t2", function=FunctionCall(name="look", arguments="{}"), type=call.type)
    await run_script(telemetry, [call, ToolResult(tool_call_id="t1", content="ok"), again,
                                 ToolResult(tool_call_id="t2", content="ok")])  # fmt: skip
    seen = [attributes for name, attributes in sampler.seen if name == "execute_tool look"]
    assert [attributes["gen_ai.tool.type"] for attributes in seen] == [expected, expected]
    tools = [s for s in telemetry.spans() if s.name == "execute_tool look"]
    assert [(s.attributes or {})["gen_ai.tool.type"] for s in tools] == [expected, expected]
