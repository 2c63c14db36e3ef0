"""Never hurt the agent: a failure inside the instrumentation is logged once and swallowed.

Each case breaks one piece of the OTel pipeline (a span processor, an exporter, a meter, an
attribute value, a redaction hook) and runs the same rich script twice. In every case the
consumer receives every event unchanged, no exception reaches the agent or the consumer, each
failing call site is reported once at WARNING on the ``agent_otel`` logger across both runs,
and every span that was started is still ended exactly once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry.context.context import Context
from opentelemetry.metrics import Histogram, Meter, NoOpHistogram, NoOpMeter, NoOpMeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from agent_contract.agent import InterruptFinal, MessageDelta, MessageFinal, RunUsage
from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import (
    Error,
    FunctionCall,
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
from agent_otel import _guard, otel_wrapper
from agent_otel.recording.content._capture import ContentCapture
from agent_otel.testing import InMemoryTelemetry


def script() -> list[Any]:
    """A run touching every recorder path: steps, calls, tools, usage, errors, markers."""
    return [
        PhaseMarker(name="plan"),
        LLMCallStart(
            model="m", call_id="c1", params={"temperature": 0.1}, messages=[Message("user", "q")]
        ),
        ReasoningDelta("think"),
        TextDelta("a"),
        TextDelta("b"),
        ToolCall(id="t1", function=FunctionCall(name="search", arguments='{"q": 1}')),
        ToolCall(id="t2", function=FunctionCall(name="calc", arguments="{}")),
        LLMCallEnd(call_id="c1", finish_reason="tool_calls"),
        Usage(input_tokens=3, output_tokens=4),
        ToolResult(tool_call_id="t2", content="2"),
        ToolResult(tool_call_id="t1", content="x", is_error=True),
        StepBoundary(),
        LLMCallStart(model="m", call_id="c2"),
        Error(message="flaky", error_type="Flaky"),
        TextDelta("c"),
        ToolCall(id="t3", function=FunctionCall(name="never_answered", arguments="{}")),
        object(),
        MessageDelta(text="d"),
        RunUsage(input_tokens=1, output_tokens=1),
        MessageFinal(text="done"),
        InterruptFinal(interrupt_id="i1", payload=None),
    ]


class Ledger(SpanProcessor):
    """Records span starts and ends (add it before a failing processor)."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.ended: list[int] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        assert span.context is not None
        self.started.append(span.context.span_id)

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        self.ended.append(span.context.span_id)

    def assert_balanced(self) -> None:
        assert self.started, "nothing was traced"
        assert sorted(self.ended) == sorted(self.started)  # each started span ended once


class Boom(Exception):
    """What the broken instrumentation raises."""


class RaisingOnStart(SpanProcessor):
    def __init__(self, only: str | None = None) -> None:
        self.only = only

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.only is None or span.name.startswith(self.only):
            raise Boom("on_start")


class RaisingOnEnd(SpanProcessor):
    def __init__(self, only: str | None = None) -> None:
        self.only = only

    def on_end(self, span: ReadableSpan) -> None:
        if self.only is None or span.name.startswith(self.only):
            raise Boom("on_end")


class RaisingExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        raise Boom("export")


class RaisingHistogram(NoOpHistogram):
    def record(self, amount: float, attributes: Any = None, context: Any = None) -> None:
        raise Boom("record")


class RaisingMeter(NoOpMeter):
    def create_histogram(
        self,
        name: str,
        unit: str = "",
        description: str = "",
        *,
        explicit_bucket_boundaries_advisory: Sequence[float] | None = None,
    ) -> Histogram:
        return RaisingHistogram(name, unit, description)


class RaisingMeterProvider(NoOpMeterProvider):
    def get_meter(
        self,
        name: str,
        version: str | None = None,
        schema_url: str | None = None,
        attributes: Any = None,
    ) -> Meter:
        return RaisingMeter(name)


@pytest.fixture(autouse=True)
def _fresh_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the guard's "first time for this site" state (it is process-wide)."""
    monkeypatch.setattr(_guard, "_reported", set())


def warned_sites(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The call sites reported at WARNING (or above) on the agent_otel logger, in order (the
    internal failures: not the hints told of the stream, such as its unknown object)."""
    return [
        str(r.args[0]) if isinstance(r.args, tuple) and r.args else r.getMessage()
        for r in caplog.records
        if r.name.startswith("agent_otel")
        and r.levelno >= logging.WARNING
        and "which is no event agent-otel reads" not in r.getMessage()
    ]


async def run_twice(
    caplog: pytest.LogCaptureFixture,
    tracer_provider: TracerProvider,
    meter_provider: Any,
    *,
    fail_with: BaseException | None = None,
    **options: Any,
) -> None:
    """Run the script twice; check pass-through, no escape (or the agent's own), the context."""
    caplog.set_level(logging.DEBUG, logger="agent_otel")
    for _ in range(2):
        events = script()
        fail_at = len(events) - 3 if fail_with is not None else None
        agent = ScriptedAgent(events, fail_at=fail_at, error=fail_with)
        wrapper = otel_wrapper(
            agent_name="resilient",
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            **options,
        )
        before = otel_context.get_current()
        received: list[Any] = []
        escaped: BaseException | None = None
        try:
            async for event in wrapper(agent.stream([])):
                received.append(event)
        except BaseException as exc:
            escaped = exc
        assert otel_context.get_current() is before
        expected = events if fail_at is None else events[:fail_at]
        assert len(received) == len(expected)
        assert all(a is b for a, b in zip(received, expected))
        assert escaped is fail_with  # None, or the agent's very own exception


def assert_each_site_warned_once(caplog: pytest.LogCaptureFixture, *, expected: set[str]) -> None:
    sites = warned_sites(caplog)
    assert set(sites) == expected
    assert len(sites) == len(set(sites)), sites


# --- span processors and exporters ---------------------------------------------------------


@pytest.mark.internal_errors
async def test_a_span_processor_raising_on_start(caplog: pytest.LogCaptureFixture) -> None:
    provider = InMemoryTelemetry(processors=[RaisingOnStart()]).tracer_provider
    await run_twice(caplog, provider, NoOpMeterProvider())
    # no span can start: each becomes a no-op span, the agent does not notice
    assert_each_site_warned_once(caplog, expected={"span start"})


@pytest.mark.internal_errors
@pytest.mark.span_outlives_parent("a processor raising at a span's start loses it unended")
async def test_a_span_processor_raising_on_start_of_some_spans(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ledger = Ledger()
    # the ledger after the raiser: it sees only the spans we received
    provider = InMemoryTelemetry(processors=[RaisingOnStart(only="chat"), ledger]).tracer_provider
    await run_twice(caplog, provider, NoOpMeterProvider())
    ledger.assert_balanced()
    assert_each_site_warned_once(caplog, expected={"span start"})


@pytest.mark.internal_errors
@pytest.mark.parametrize("only", [None, "execute_tool", "step", "chat", "invoke_agent"])
async def test_a_span_processor_raising_on_end(
    caplog: pytest.LogCaptureFixture, only: str | None
) -> None:
    ledger = Ledger()
    telemetry = InMemoryTelemetry(processors=[ledger, RaisingOnEnd(only)])  # ledger: every end
    await run_twice(caplog, telemetry.tracer_provider, NoOpMeterProvider())
    ledger.assert_balanced()
    sites = warned_sites(caplog)
    assert sites, "a failing span processor must be reported"
    assert len(sites) == len(set(sites)), sites
    # spans the raiser lets through still reach the exporter, the agent span among them
    exported = {s.name for s in telemetry.spans()}
    if only is not None and only != "invoke_agent":
        assert "invoke_agent resilient" in exported
    # no span was ended twice (the SDK warns when asked to)
    assert not [r for r in caplog.records if "ended span" in r.getMessage()]


async def test_an_exporter_that_raises(caplog: pytest.LogCaptureFixture) -> None:
    ledger = Ledger()
    provider = TracerProvider(shutdown_on_exit=False)  # by hand: its only export raises
    provider.add_span_processor(ledger)
    provider.add_span_processor(SimpleSpanProcessor(RaisingExporter()))
    await run_twice(caplog, provider, NoOpMeterProvider())
    ledger.assert_balanced()
    # the SDK's processor logs the export failure itself; nothing of ours failed
    assert warned_sites(caplog) == []


# --- metrics --------------------------------------------------------------------------------


@pytest.mark.internal_errors
async def test_a_histogram_that_raises(caplog: pytest.LogCaptureFixture) -> None:
    ledger = Ledger()
    telemetry = InMemoryTelemetry(processors=[ledger])
    await run_twice(caplog, telemetry.tracer_provider, RaisingMeterProvider(), chunk_metric=True)
    ledger.assert_balanced()
    sites = warned_sites(caplog)
    assert sites
    assert len(sites) == len(set(sites)), sites
    # the traces are whole despite the metrics failing: every span of both runs was exported
    names = sorted(s.name for s in telemetry.spans())
    assert names.count("invoke_agent resilient") == 2
    assert names.count("chat m") == 4
    assert names.count("execute_tool search") == 2
    tools = [s for s in telemetry.spans() if s.name == "execute_tool search"]
    assert all((s.attributes or {}).get("agent_otel.tool.is_error") is True for s in tools)


# --- values the SDK or our serialisation cannot take ------------------------------------------


class Unprintable:
    def __str__(self) -> str:
        raise Boom("str")

    __repr__ = __str__


async def test_unserialisable_attribute_values(
    caplog: pytest.LogCaptureFixture, otel_telemetry: InMemoryTelemetry
) -> None:
    await run_twice(
        caplog,
        otel_telemetry.tracer_provider,
        otel_telemetry.meter_provider,
        attributes={"x": object(), "ok": "yes", "odd": [object()]},
    )
    agents = [s for s in otel_telemetry.spans() if s.name == "invoke_agent resilient"]
    assert len(agents) == 2
    for agent in agents:
        attributes = agent.attributes or {}
        assert attributes["ok"] == "yes"  # the valid attribute survives
        assert attributes.get("x") is None  # the SDK drops the value (or keeps the key, empty)
        assert attributes["gen_ai.agent.name"] == "resilient"
    assert warned_sites(caplog) == []


async def test_odd_objects_in_params_and_content(
    caplog: pytest.LogCaptureFixture, otel_telemetry: InMemoryTelemetry
) -> None:
    """Objects that cannot be printed, in params and in captured content."""
    odd = Unprintable()
    events: list[Any] = [
        LLMCallStart(
            model="m",
            call_id="c1",
            params={"temperature": odd, "stop": [odd], "max_tokens": odd, "extra": odd},
            messages=[Message("user", "q"), odd],  # type: ignore[list-item]
        ),
        TextDelta("a"),
        ToolCall(id="t1", function=FunctionCall(name="search", arguments=odd)),  # type: ignore[arg-type]
        LLMCallEnd(call_id="c1"),
        ToolResult(tool_call_id="t1", content=odd),
        StepBoundary(),
    ]
    caplog.set_level(logging.DEBUG, logger="agent_otel")
    wrapper = otel_telemetry.wrapper(agent_name="odd", capture_content=True)
    received = [e async for e in wrapper(ScriptedAgent(events).stream([]))]
    assert all(a is b for a, b in zip(received, events)) and len(received) == len(events)
    names = sorted(s.name for s in otel_telemetry.spans())
    # every span made it out, even though the content of some could not be captured
    assert names == ["chat m", "execute_tool search", "invoke_agent odd", "step 0"]
    sites = warned_sites(caplog)
    assert len(sites) == len(set(sites)), sites


@pytest.mark.internal_errors
async def test_a_redaction_hook_that_raises(
    caplog: pytest.LogCaptureFixture, otel_telemetry: InMemoryTelemetry
) -> None:
    def redact(kind: Any, value: Any) -> Any:
        raise Boom("redact")

    ledger = Ledger()
    otel_telemetry.tracer_provider.add_span_processor(ledger)
    await run_twice(
        caplog,
        otel_telemetry.tracer_provider,
        otel_telemetry.meter_provider,
        capture_content=ContentCapture(redact=redact),
    )
    ledger.assert_balanced()
    spans = otel_telemetry.spans()
    # nothing unredacted leaks out when the hook fails
    for span in spans:
        for key in span.attributes or {}:
            assert key not in {
                "gen_ai.input.messages",
                "gen_ai.output.messages",
                "gen_ai.tool.call.arguments",
                "gen_ai.tool.call.result",
            }
    assert [s.name for s in spans].count("invoke_agent resilient") == 2
    sites = warned_sites(caplog)
    assert sites
    assert len(sites) == len(set(sites)), sites


# --- the agent's exception wins ------------------------------------------------------------------


class AgentError(Exception):
    pass


@pytest.mark.internal_errors
async def test_the_agents_exception_comes_out_while_instrumentation_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ledger = Ledger()
    provider = InMemoryTelemetry(processors=[ledger, RaisingOnEnd()]).tracer_provider

    def redact(kind: Any, value: Any) -> Any:
        raise Boom("redact")

    await run_twice(
        caplog,
        provider,
        RaisingMeterProvider(),
        fail_with=AgentError("the agent's own"),
        capture_content=ContentCapture(redact=redact),
    )
    ledger.assert_balanced()
