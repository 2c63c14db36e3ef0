"""Helpers for the heavy integration suite: free ports, polling, a known agent run."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from agent_otel import _attributes as A

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def poll(check: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.2) -> T:
    """Call ``check`` until it returns something truthy or the deadline passes (then fail)."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        try:
            last = check()
        except (OSError, ValueError) as exc:  # still starting: refused, reset, 404, bad JSON
            last = None
            error: Exception | None = exc
        else:
            error = None
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout}s waiting for {what}; last error: {error!r}"
            )
        time.sleep(interval)


def only_loopback() -> tuple[bool, list[str]]:
    """True when this process sits in a network namespace whose only interface is ``lo``."""
    # Not /sys/class/net: sysfs keeps showing the host's interfaces inside `unshare -n`.
    interfaces = sorted(name for _, name in socket.if_nameindex())
    return interfaces == ["lo"], interfaces


@dataclass(frozen=True)
class Phoenix:
    http_url: str  # OTLP/HTTP base and REST API: <http_url>/v1/traces, <http_url>/v1/projects
    grpc_url: str  # OTLP/gRPC target


@dataclass(frozen=True)
class PrometheusServer:
    url: str


@dataclass
class ExpectedSpan:
    name: str
    parent: str | None
    kind: SpanKind
    attributes: dict[str, Any]
    error: str | None = None  # error.type when the status is ERROR
    span_id: int = 0
    children: list[str] = field(default_factory=list)


def record_known_run(
    tracer_provider: TracerProvider, agent: str = "researcher"
) -> dict[str, ExpectedSpan]:
    """A traced agent run made by hand with the middleware's span names and keys.

    invoke_agent > step > (chat, execute_tool search, execute_tool fetch[ERROR]). Returns the
    spans by name, with their OTel span ids filled in, for comparison with a receiver.
    """
    tracer = tracer_provider.get_tracer("agent_otel.integration")
    expected = {
        f"{A.OP_INVOKE_AGENT} {agent}": ExpectedSpan(
            f"{A.OP_INVOKE_AGENT} {agent}",
            None,
            SpanKind.INTERNAL,
            {A.OPERATION_NAME: A.OP_INVOKE_AGENT, A.AGENT_NAME: agent, A.PROVIDER_NAME: "openai"},
        ),
        A.STEP_SPAN_NAME: ExpectedSpan(
            A.STEP_SPAN_NAME, f"{A.OP_INVOKE_AGENT} {agent}", SpanKind.INTERNAL, {A.STEP_INDEX: 0}
        ),
        f"{A.OP_CHAT} gpt-4o": ExpectedSpan(
            f"{A.OP_CHAT} gpt-4o",
            A.STEP_SPAN_NAME,
            SpanKind.CLIENT,
            {
                A.OPERATION_NAME: A.OP_CHAT,
                A.PROVIDER_NAME: "openai",
                A.REQUEST_MODEL: "gpt-4o",
                A.RESPONSE_MODEL: "gpt-4o-2024-08-06",
                A.USAGE_INPUT_TOKENS: 120,
                A.USAGE_OUTPUT_TOKENS: 45,
            },
        ),
        f"{A.OP_EXECUTE_TOOL} search": ExpectedSpan(
            f"{A.OP_EXECUTE_TOOL} search",
            A.STEP_SPAN_NAME,
            SpanKind.INTERNAL,
            {
                A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
                A.TOOL_NAME: "search",
                A.TOOL_CALL_ID: "call_1",
                A.TOOL_TYPE: A.TOOL_TYPE_FUNCTION,
            },
        ),
        f"{A.OP_EXECUTE_TOOL} fetch": ExpectedSpan(
            f"{A.OP_EXECUTE_TOOL} fetch",
            A.STEP_SPAN_NAME,
            SpanKind.INTERNAL,
            {
                A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
                A.TOOL_NAME: "fetch",
                A.TOOL_CALL_ID: "call_2",
                A.TOOL_TYPE: A.TOOL_TYPE_FUNCTION,
                A.ERROR_TYPE: "TimeoutError",
            },
            error="TimeoutError",
        ),
    }
    # Create in tree order: each span is opened as the current span of its parent.
    opened: dict[str, Any] = {}

    def open_span(spec: ExpectedSpan) -> Any:
        from opentelemetry import trace

        context = trace.set_span_in_context(opened[spec.parent]) if spec.parent else None
        span = tracer.start_span(
            spec.name, context=context, kind=spec.kind, attributes=spec.attributes
        )
        spec.span_id = span.get_span_context().span_id
        opened[spec.name] = span
        return span

    root, step, chat, search, fetch = (open_span(spec) for spec in expected.values())
    chat.end()
    search.end()
    fetch.set_status(Status(StatusCode.ERROR, "tool timed out"))
    fetch.end()
    step.end()
    root.end()
    return expected


# Known metric values for the Prometheus test: token usage per type, durations per operation.
TOKENS = {A.TOKEN_TYPE_INPUT: (120, 80, 300), A.TOKEN_TYPE_OUTPUT: (45, 15, 60)}
CHAT_DURATIONS = (0.4, 1.3, 0.05)
AGENT_DURATIONS = (2.5,)


def record_known_metrics(meter_provider: MeterProvider) -> None:
    """Record the histograms the middleware records, with the values above."""
    meter = meter_provider.get_meter("agent_otel.integration")
    usage = meter.create_histogram(A.METRIC_TOKEN_USAGE, unit="{token}")
    duration = meter.create_histogram(A.METRIC_OPERATION_DURATION, unit="s")
    agent = meter.create_histogram(A.METRIC_AGENT_DURATION, unit="s")
    common = {A.OPERATION_NAME: A.OP_CHAT, A.PROVIDER_NAME: "openai", A.REQUEST_MODEL: "gpt-4o"}
    for token_type, values in TOKENS.items():
        for value in values:
            usage.record(value, {**common, A.TOKEN_TYPE: token_type})
    for seconds in CHAT_DURATIONS:
        duration.record(seconds, common)
    for seconds in AGENT_DURATIONS:
        agent.record(seconds, {A.OPERATION_NAME: A.OP_INVOKE_AGENT, A.AGENT_NAME: "researcher"})
