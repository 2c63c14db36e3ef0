"""Ending is isolated per span, and a provider that raises never reaches the agent (issue 9).

A run's spans end through one shape (``_guard.ending``): whatever fails while describing one
span (an exception whose ``__str__`` raises, a span method, a meter) costs that description
only. Every other span still ends exactly once, no later than its parent, and the exception
is recorded as far as it can be (its type name at least).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.context.context import Context
from opentelemetry.metrics import Meter, NoOpMeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import StatusCode

from agent_contract.protocol import (
    Error,
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import _guard, instrument, otel_wrapper
from agent_otel.testing import InMemoryTelemetry
from hostile_types import LyingStr
from otlp_check import assert_nested_in_time
from test_property import Ledger


class BrokenError(Exception):
    """The common agent bug: ``__init__`` skips ``super().__init__()``, ``__str__`` fails."""

    def __init__(self, detail: str) -> None:
        self.detail_ = detail

    def __str__(self) -> str:
        return str(self.detail)  # type: ignore[attr-defined]  # the bug under test


class AgentInterruptedError(Exception):
    """Recognised by class name as the Agent contract's pause; as broken as BrokenError."""

    def __init__(self) -> None:
        pass

    def __str__(self) -> str:
        raise RuntimeError("no text")


def script() -> list[Any]:
    return [
        LLMCallStart(model="m", provider="openai", call_id="c1"),
        TextDelta(text="hi"),
        Usage(input_tokens=3, output_tokens=2),
        LLMCallEnd(model="m", call_id="c1", finish_reason="tool_calls"),
        ToolCall(id="t1", function=FunctionCall(name="search", arguments='{"q": 1}')),
        ToolResult(tool_call_id="t1", content="r", is_error=True),
        Error(message="soft", error_type="rate_limit", fatal=False),
        StepBoundary(index=0),
        LLMCallStart(model="m", call_id="c2"),
        ToolCall(id="t2", function=FunctionCall(name="calc", arguments="{}")),
    ]


async def agent(events: Sequence[Any], error: BaseException | None) -> AsyncIterator[Any]:
    for event in events:
        yield event
    if error is not None:
        raise error


async def drive(wrapper: Any, events: Sequence[Any], error: BaseException | None) -> list[Any]:
    """Consume the run; the agent's exception (if any) comes out as the same object."""
    received: list[Any] = []
    escaped: BaseException | None = None
    try:
        async for event in wrapper(agent(events, error)):
            received.append(event)
    except BaseException as exc:
        escaped = exc
    assert escaped is error
    assert len(received) == len(events)
    assert all(a is b for a, b in zip(received, events))
    return received


@pytest.fixture(autouse=True)
def _fresh_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_guard, "_reported", set())


@pytest.mark.parametrize("error", [BrokenError("x"), AgentInterruptedError()])
async def test_an_exception_whose_str_raises_still_ends_every_span(error: Exception) -> None:
    telemetry = InMemoryTelemetry()
    wrapper = telemetry.wrapper(agent_name="a")
    await drive(wrapper, script(), error)
    spans = telemetry.spans()
    names = sorted(s.name for s in spans)
    assert names == [
        "chat m",
        "chat m",
        "execute_tool calc",
        "execute_tool search",
        "invoke_agent a",
        "step 0",
        "step 1",
    ]
    assert_nested_in_time(spans)
    (root,) = [s for s in spans if s.name == "invoke_agent a"]
    events = [e for e in root.events if e.name == "exception"]
    assert len(events) == 1
    attributes = dict(events[0].attributes or {})
    assert str(attributes["exception.type"]).endswith(type(error).__qualname__)
    assert "exception.message" not in attributes  # str() raised: the type is what we know
    assert "exception.stacktrace" in attributes
    attrs = root.attributes or {}
    if isinstance(error, AgentInterruptedError):
        assert attrs["agent_otel.end_reason"] == "interrupted"
        assert root.status.status_code is not StatusCode.ERROR
    else:
        assert attrs["agent_otel.end_reason"] == "error"
        assert attrs["error.type"] == "BrokenError"
        assert root.status.status_code is StatusCode.ERROR


class Boom(Exception):
    """What the hostile span raises."""


class HostileSpan(trace.Span):
    """An SDK span whose ``method`` raises (for spans whose name starts with ``only``)."""

    def __init__(self, real: Any, method: str, only: str) -> None:
        self.real = real
        self.fails = real.name.startswith(only)
        self.method = method

    raised = 0

    def _check(self, method: str) -> None:
        if self.fails and method == self.method:
            HostileSpan.raised += 1
            raise Boom(method)

    def get_span_context(self) -> Any:
        self._check("get_span_context")
        return self.real.get_span_context()

    def is_recording(self) -> bool:
        self._check("is_recording")
        return bool(self.real.is_recording())

    def set_attribute(self, key: str, value: Any) -> None:
        self._check("set_attribute")
        self.real.set_attribute(key, value)

    def set_attributes(self, attributes: Any) -> None:
        self._check("set_attributes")
        self.real.set_attributes(attributes)

    def add_event(self, name: str, attributes: Any = None, timestamp: Any = None) -> None:
        self._check("add_event")
        self.real.add_event(name, attributes, timestamp)

    def add_link(self, context: Any, attributes: Any = None) -> None:
        self.real.add_link(context, attributes)

    def update_name(self, name: str) -> None:
        self._check("update_name")
        self.real.update_name(name)

    def set_status(self, status: Any, description: Any = None) -> None:
        self._check("set_status")
        self.real.set_status(status, description)

    def record_exception(self, exception: BaseException, *args: Any, **kwargs: Any) -> None:
        self._check("record_exception")
        self.real.record_exception(exception, *args, **kwargs)

    def end(self, end_time: int | None = None) -> None:
        self._check("end")
        self.real.end(end_time)


class HostileTracer(trace.Tracer):
    def __init__(self, real: trace.Tracer, method: str, only: str) -> None:
        self.real, self.method, self.only = real, method, only

    def start_span(self, name: str, context: Context | None = None, *a: Any, **k: Any) -> Any:
        if self.method == "start_span" and name.startswith(self.only):
            raise Boom("start_span")
        return HostileSpan(self.real.start_span(name, context, *a, **k), self.method, self.only)

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class HostileTracerProvider(trace.TracerProvider):
    def __init__(self, real: TracerProvider, method: str, only: str) -> None:
        self.real, self.method, self.only = real, method, only

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        if self.method == "get_tracer":
            raise Boom("get_tracer")
        return HostileTracer(self.real.get_tracer(*args, **kwargs), self.method, self.only)


METHODS = [
    "start_span",
    "is_recording",
    "set_attribute",
    "set_attributes",
    "add_event",
    "update_name",
    "set_status",
    "record_exception",
    "end",
    "get_span_context",
]


def warned(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        str(r.args[0]) if isinstance(r.args, tuple) and r.args else r.getMessage()
        for r in caplog.records
        if r.name.startswith("agent_otel") and r.levelno >= logging.WARNING
    ]


@pytest.mark.internal_errors
@pytest.mark.parametrize("only", ["invoke_agent", "step", "chat", "execute_tool"])
@pytest.mark.parametrize("method", METHODS)
async def test_a_span_method_that_raises_costs_only_that_write(
    method: str, only: str, caplog: pytest.LogCaptureFixture, request: pytest.FixtureRequest
) -> None:
    if method == "end":
        request.applymarker(pytest.mark.span_outlives_parent("a span whose end raises never ends"))
    caplog.set_level(logging.DEBUG, logger="agent_otel")
    HostileSpan.raised = 0
    ledger = Ledger()
    real = InMemoryTelemetry(processors=[ledger])
    wrapper = otel_wrapper(
        agent_name="a",
        tracer_provider=HostileTracerProvider(real.tracer_provider, method, only),
        meter_provider=NoOpMeterProvider(),
    )
    for _ in range(2):  # the second run: the failure is still isolated, logged no more
        await drive(wrapper, script(), BrokenError("x"))
    sabotaged = {span_id for span_id, span in ledger.started.items() if span.name.startswith(only)}
    assert not ledger.double_ends
    expected = set(ledger.started) - (sabotaged if method == "end" else set())
    assert set(ledger.ended) == expected, method
    assert_nested_in_time(real.spans())
    sites = warned(caplog)
    assert bool(sites) == bool(HostileSpan.raised or method == "start_span"), sites
    assert len(sites) == len(set(sites)), sites  # once per site, not per run


@pytest.mark.internal_errors
def test_a_tracer_provider_whose_get_tracer_raises(caplog: pytest.LogCaptureFixture) -> None:
    provider = HostileTracerProvider(InMemoryTelemetry().tracer_provider, "get_tracer", "")
    wrapper = otel_wrapper(tracer_provider=provider)  # does not raise
    assert callable(wrapper)
    assert "tracer provider" in warned(caplog)


class RaisingCreateMeter(NoOpMeterProvider):
    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> Meter:
        return _RaisingMeter(name)


class _RaisingMeter(Meter):
    def __getattribute__(self, name: str) -> Any:
        if name.startswith("create_"):

            def create(*args: Any, **kwargs: Any) -> Any:
                raise Boom(name)

            return create
        return super().__getattribute__(name)

    # Meter is abstract: the methods below are never reached (see __getattribute__).
    def create_counter(self, *a: Any, **k: Any) -> Any: ...
    def create_up_down_counter(self, *a: Any, **k: Any) -> Any: ...
    def create_observable_counter(self, *a: Any, **k: Any) -> Any: ...
    def create_histogram(self, *a: Any, **k: Any) -> Any: ...
    def create_observable_gauge(self, *a: Any, **k: Any) -> Any: ...
    def create_observable_up_down_counter(self, *a: Any, **k: Any) -> Any: ...


class RaisingGetMeter(NoOpMeterProvider):
    def get_meter(self, *args: Any, **kwargs: Any) -> Meter:
        raise Boom("get_meter")


def providers() -> Iterator[Any]:
    yield RaisingCreateMeter()
    yield RaisingGetMeter()


@pytest.mark.internal_errors
@pytest.mark.parametrize("meter_provider", list(providers()), ids=["create_histogram", "get_meter"])
async def test_a_meter_provider_that_raises_never_reaches_the_caller(
    meter_provider: Any, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry = InMemoryTelemetry()
    wrapper = otel_wrapper(
        agent_name="a", tracer_provider=telemetry.tracer_provider, meter_provider=meter_provider
    )
    await drive(wrapper, script(), None)
    assert len(telemetry.spans()) == 7  # tracing is whole; only the metrics are gone

    class Plain:
        async def stream(self, messages: Any, config: Any = None) -> AsyncIterator[Any]:
            for event in script():
                yield event

    traced = instrument(
        Plain(), tracer_provider=telemetry.tracer_provider, meter_provider=meter_provider
    )
    received = [e async for e in traced.stream([])]
    assert len(received) == len(script())
    sites = warned(caplog)
    assert sites and len(sites) == len(set(sites)), sites


def _named_by_a_str_subclass(base: type[Exception], module: bool) -> Exception:
    """An exception of a class whose ``__module__`` or ``__qualname__`` is a ``str`` subclass
    whose own methods raise (as a code generator's classes may be named)."""
    cls = type("Generated", (base,), {})
    if module:
        cls.__module__ = LyingStr("generated.errors")
    else:
        cls.__qualname__ = LyingStr("Generated")
    return cls("x")


@pytest.mark.parametrize("module", [True, False], ids=["module", "qualname"])
async def test_an_exception_class_named_by_a_str_subclass_is_named_by_the_str_it_is(
    module: bool,
) -> None:
    """The run still ends with the agent's exception as the same object, every span ends,
    and the exception's type is the plain text its class gives (no internal error)."""
    telemetry = InMemoryTelemetry()
    error = _named_by_a_str_subclass(ValueError, module)
    await drive(telemetry.wrapper(agent_name="a"), script(), error)
    assert_nested_in_time(telemetry.spans())
    (root,) = [s for s in telemetry.spans() if s.name == "invoke_agent a"]
    (event,) = [e for e in root.events if e.name == "exception"]
    expected = "generated.errors.Generated" if module else f"{__name__}.Generated"
    assert (event.attributes or {})["exception.type"] == expected
    assert (root.attributes or {})["error.type"] == "Generated"
