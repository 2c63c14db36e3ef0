"""Context while pulling: the agent's own spans nest under ours; the consumer's never do.

While the wrapper waits for the agent's next event, the innermost sensible span is current
(open LLM call, else the only open tool call, else the step, else the agent span). Before it
yields, the consumer's context is back, so nothing stays attached across a yield.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.instrumentation.utils import suppress_instrumentation

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agent_otel.testing import InMemoryTelemetry, run_script


async def test_agent_span_during_llm_call_nests_under_chat(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    tracer = otel_telemetry.tracer_provider.get_tracer("provider-sdk")

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c1")
        with tracer.start_as_current_span("POST /chat/completions"):  # e.g. httpx's span
            pass
        yield TextDelta(text="hi")
        yield LLMCallEnd(call_id="c1")
        with tracer.start_as_current_span("between calls"):
            pass
        yield StepBoundary()
        with tracer.start_as_current_span("after the step"):
            pass
        yield TextDelta(text="x")

    await run_script(otel_telemetry, agent(), agent_name="a")

    # After the boundary no step is open until the next event arrives: the agent span.
    assert otel_telemetry.outline() == [
        ["invoke_agent a", [
            ["step 0", [["chat m", ["POST /chat/completions"]], "between calls"]],
            "after the step",
            "step 1",
        ]],
    ]  # fmt: skip


async def test_only_open_tool_is_current_while_it_runs(otel_telemetry: InMemoryTelemetry) -> None:
    tracer = otel_telemetry.tracer_provider.get_tracer("tools")

    async def agent() -> AsyncIterator[Any]:
        yield ToolCall(id="t1", function=FunctionCall(name="search", arguments="{}"))
        with tracer.start_as_current_span("search backend"):
            pass
        yield ToolResult(tool_call_id="t1", content="r")
        yield ToolCall(id="t2", function=FunctionCall(name="a", arguments="{}"))
        yield ToolCall(id="t3", function=FunctionCall(name="b", arguments="{}"))
        with tracer.start_as_current_span("two tools open"):  # ambiguous: the step
            pass
        yield ToolResult(tool_call_id="t2", content="r")
        yield ToolResult(tool_call_id="t3", content="r")

    await run_script(otel_telemetry, agent(), agent_name="a")

    assert otel_telemetry.outline() == [
        ["invoke_agent a", [
            ["step 0", [
                ["execute_tool search", ["search backend"]],
                "execute_tool a",
                "execute_tool b",
                "two tools open",  # two tools open: ambiguous, so the step
            ]],
        ]],
    ]  # fmt: skip


async def test_consumer_context_is_never_changed(otel_telemetry: InMemoryTelemetry) -> None:
    tracer = otel_telemetry.tracer_provider.get_tracer("consumer")
    seen_by_consumer: list[Any] = []

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c1")
        yield TextDelta(text="a")
        yield ToolCall(id="t1", function=FunctionCall(name="search", arguments="{}"))
        yield TextDelta(text="b")
        yield LLMCallEnd(call_id="c1")

    with tracer.start_as_current_span("request handler") as handler:
        before = otel_context.get_current()
        async for _ in otel_telemetry.wrapper(agent_name="a")(agent()):
            seen_by_consumer.append(trace.get_current_span())
            assert otel_context.get_current() is before
            with tracer.start_as_current_span("ui update"):
                pass
        assert otel_context.get_current() is before

    assert all(s is handler for s in seen_by_consumer)
    # the consumer's spans under its handler, and so is the run: the context current when
    # iteration started
    assert otel_telemetry.outline() == [
        ["request handler", [
            ["invoke_agent a", [["step 0", ["chat m", "execute_tool search"]]]],
            *["ui update"] * 5,
        ]],
    ]  # fmt: skip


async def test_run_is_child_of_context_at_first_pull(otel_telemetry: InMemoryTelemetry) -> None:
    tracer = otel_telemetry.tracer_provider.get_tracer("consumer")

    async def agent() -> AsyncIterator[Any]:
        yield TextDelta(text="a")

    stream = otel_telemetry.wrapper(agent_name="a")(agent())  # created outside any span
    with tracer.start_as_current_span("iterates"):
        async for _ in stream:
            pass

    assert otel_telemetry.outline() == [["iterates", [["invoke_agent a", ["step 0"]]]]]


async def test_run_started_inside_a_tool_call_nests_under_it(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A sub-agent run inside a tool call: its invoke_agent span is a child of that tool."""

    async def sub_agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="small", call_id="s1")
        yield TextDelta(text="sub answer")
        yield LLMCallEnd(call_id="s1")

    async def agent() -> AsyncIterator[Any]:
        yield ToolCall(id="t1", function=FunctionCall(name="delegate", arguments="{}"))
        # the tool runs a sub-agent
        answer = await run_script(otel_telemetry, sub_agent(), agent_name="sub")
        yield ToolResult(tool_call_id="t1", content=str(len(answer)))

    await run_script(otel_telemetry, agent(), agent_name="a")

    assert otel_telemetry.outline() == [  # one root: one trace
        ["invoke_agent a", [
            ["step 0", [
                ["execute_tool delegate", [["invoke_agent sub", [["step 0", ["chat small"]]]]]],
            ]],
        ]],
    ]  # fmt: skip


@pytest.mark.parametrize("key", ["both", "plain"])
async def test_a_run_where_instrumentation_is_suppressed_is_not_recorded(
    otel_telemetry: InMemoryTelemetry, key: str
) -> None:
    """OTel's ``suppress_instrumentation()`` (an exporter or an evaluator running an agent, to
    trace nothing of its own) used to be ignored: the run was recorded. Now it passes through
    untraced, its events unchanged, as every OTel instrumentation does there (OTel also reads
    the key's older plain spelling alone)."""
    script = [LLMCallStart(model="m", call_id="c1"), TextDelta(text="hi"), LLMCallEnd()]
    plain = otel_context.set_value("suppress_instrumentation", True)
    with suppress_instrumentation() if key == "both" else _attached(plain):
        received = await run_script(otel_telemetry, script)
    assert received == script
    assert otel_telemetry.spans() == []
    assert otel_telemetry.histograms() == {}
    await run_script(otel_telemetry, script)  # outside it: recorded
    assert [s.name for s in otel_telemetry.spans()][-1] == "invoke_agent"


async def test_a_run_inside_our_own_chat_span_is_recorded(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Our chat span's context tells provider instrumentations to stand down with the same key;
    that is not the caller suppressing: a run started there (a sub-agent the model call runs)
    is recorded, under the chat span."""
    inner = otel_telemetry.wrapper(agent_name="inner")

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c1", provider="openai")
        [_ async for _ in inner(_events([TextDelta(text="sub")]))]  # while the call is open
        yield LLMCallEnd(call_id="c1")

    await run_script(otel_telemetry, agent(), agent_name="outer")
    assert otel_telemetry.outline() == [
        ["invoke_agent outer", [["step 0", [["chat m", [["invoke_agent inner", ["step 0"]]]]]]]]
    ]


async def _events(events: list[Any]) -> AsyncIterator[Any]:
    for event in events:
        yield event


@contextmanager
def _attached(context: Any) -> Iterator[None]:
    token = otel_context.attach(context)
    try:
        yield
    finally:
        otel_context.detach(token)
