"""Helpers for the heavy integration suite: free ports, polling, a known agent run."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._process import free_port as free_port  # re-exported: the tests' one import
from benchmarks._process import poll as poll
from benchmarks._process import port_open as port_open
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import SpanKind, TracerProvider

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import (
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
from agent_otel import _attributes as A
from agent_otel import otel_wrapper
from agent_otel.testing import FakeClock

REPO = Path(__file__).resolve().parents[2]


def only_loopback() -> tuple[bool, list[str]]:
    """True when this process sits in a network namespace whose only interface is ``lo``."""
    # Not /sys/class/net: sysfs keeps showing the host's interfaces inside `unshare -n`.
    interfaces = sorted(name for _, name in socket.if_nameindex())
    return interfaces == ["lo"], interfaces


@dataclass(frozen=True)
class Phoenix:
    http_url: str  # OTLP/HTTP base and REST API: <http_url>/v1/traces, <http_url>/v1/projects
    grpc_url: str  # OTLP/gRPC target


def spans_in_phoenix(phoenix: Phoenix, trace_id: str) -> list[dict[str, Any]]:
    """The spans of one trace as Phoenix's REST API returns them (OTLP JSON shape)."""
    query = urllib.parse.urlencode({"trace_id": trace_id, "limit": 100})
    url = f"{phoenix.http_url}/v1/projects/default/spans/otlpv1?{query}"
    with urllib.request.urlopen(url, timeout=5) as response:
        spans: list[dict[str, Any]] = json.load(response)["data"]
    return spans


@dataclass(frozen=True)
class MLflow:
    url: str  # OTLP/HTTP at <url>/v1/traces (with an experiment id header), REST at <url>/api


MLFLOW_EXPERIMENT = "0"  # the Default experiment every new MLflow store has


def trace_in_mlflow(mlflow: MLflow, trace_id: str) -> dict[str, Any] | None:
    """One trace (its info and spans) from MLflow's REST API, or None while it is not stored."""
    query = urllib.parse.urlencode({"trace_id": f"tr-{trace_id}"})
    url = f"{mlflow.url}/api/3.0/mlflow/traces/get?{query}"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            trace: dict[str, Any] = json.load(response)["trace"]
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise
    return trace


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
    """Trace a real scripted agent run through ``otel_wrapper`` and say what it must export.

    invoke_agent > step 0 > (chat gpt-4o, execute_tool search, execute_tool fetch[ERROR]).
    The expectation is written from DESIGN.md's span tree, not read off the run; span ids
    are filled in by the caller from an in-memory copy of the exported spans.
    """
    root, step = f"{A.OP_INVOKE_AGENT} {agent}", f"{A.STEP_SPAN_NAME} 0"
    expected = {
        root: ExpectedSpan(
            root,
            None,
            SpanKind.INTERNAL,
            {A.OPERATION_NAME: A.OP_INVOKE_AGENT, A.AGENT_NAME: agent, A.PROVIDER_NAME: "openai"},
        ),
        step: ExpectedSpan(step, root, SpanKind.INTERNAL, {A.STEP_INDEX: 0}),
        f"{A.OP_CHAT} gpt-4o": ExpectedSpan(
            f"{A.OP_CHAT} gpt-4o",
            step,
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
            step,
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
            step,
            SpanKind.INTERNAL,
            {
                A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
                A.TOOL_NAME: "fetch",
                A.TOOL_CALL_ID: "call_2",
                A.TOOL_TYPE: A.TOOL_TYPE_FUNCTION,
                A.ERROR_TYPE: "tool_error",
            },
            error="tool_error",
        ),
    }
    events = [
        LLMCallStart(model="gpt-4o", provider="openai", call_id="c1"),
        TextDelta(text="Searching."),
        ToolCall(id="call_1", function=FunctionCall(name="search", arguments='{"q": "x"}')),
        ToolCall(id="call_2", function=FunctionCall(name="fetch", arguments='{"u": "y"}')),
        Usage(input_tokens=120, output_tokens=45),
        LLMCallEnd(model="gpt-4o-2024-08-06", call_id="c1", finish_reason="tool_calls"),
        ToolResult(tool_call_id="call_1", content="found"),
        ToolResult(tool_call_id="call_2", content="timed out", is_error=True),
        StepBoundary(index=0),
    ]
    wrapper = otel_wrapper(agent_name=agent, tracer_provider=tracer_provider)
    result = asyncio.run(ScriptedAgent(events).invoke([], stream_wrapper=wrapper))
    assert result.text == "Searching."
    return expected


# Known metric values for the Prometheus test: one run of three LLM calls whose token usage
# and durations (a fake clock that only moves when told) are these.
TOKENS = {A.TOKEN_TYPE_INPUT: (120, 80, 300), A.TOKEN_TYPE_OUTPUT: (45, 15, 60)}
CHAT_DURATIONS = (0.4, 1.3, 0.05)
AGENT_DURATIONS = (sum(CHAT_DURATIONS),)


def record_known_metrics(meter_provider: MeterProvider) -> None:
    """Run a real agent through ``otel_wrapper`` whose metrics are the values above."""
    clock = FakeClock(step=0)

    async def agent() -> AsyncIterator[Any]:
        calls = zip(TOKENS[A.TOKEN_TYPE_INPUT], TOKENS[A.TOKEN_TYPE_OUTPUT], CHAT_DURATIONS)
        for i, (tokens_in, tokens_out, seconds) in enumerate(calls):
            yield LLMCallStart(model="gpt-4o", provider="openai", call_id=f"c{i}")
            clock.advance(seconds)
            yield Usage(input_tokens=tokens_in, output_tokens=tokens_out)
            yield LLMCallEnd(call_id=f"c{i}", finish_reason="stop")
            yield StepBoundary()

    async def run() -> None:
        wrapper = otel_wrapper(agent_name="researcher", meter_provider=meter_provider)
        async for _ in wrapper(agent()):
            pass

    with clock.installed():
        asyncio.run(run())


CONTENT = 30_000  # characters: under the 32 KiB each captured content attribute is bounded to


def content_heavy_runs(
    tracer_provider: TracerProvider, meter_provider: MeterProvider, runs: int, *, fail: bool
) -> int:
    """``runs`` runs in quick succession, each carrying about 60 KB of content with capture on.

    Each run is one chat call (a long question, a long answer) and, with ``fail``, a tool that
    fails with a long error (so the run's trace has an error status). The spans per run.
    """
    events: list[Any] = [
        LLMCallStart(
            model="gpt-4o",
            provider="openai",
            messages=[Message(role="user", content="q" * CONTENT)],
        ),
        TextDelta(text="a" * CONTENT),
        LLMCallEnd(model="gpt-4o", finish_reason="tool_calls" if fail else "stop"),
        Usage(input_tokens=CONTENT, output_tokens=CONTENT),
    ]
    if fail:
        events += [
            ToolCall(id="t1", function=FunctionCall("lookup", "{}")),
            ToolResult(tool_call_id="t1", content="e" * CONTENT, is_error=True),
        ]

    async def replay() -> AsyncIterator[Any]:
        for event in events:
            yield event

    async def burst() -> None:
        for index in range(runs):
            wrap = otel_wrapper(
                agent_name=f"bulky-{index}",
                tracer_provider=tracer_provider,
                meter_provider=meter_provider,
            )
            assert [event async for event in wrap(replay())] == events

    asyncio.run(burst())
    return 4 if fail else 3  # the run, its step, the chat call (and the tool)
