"""The test kit users get: the wrapper factory, run_script, span lookups, internal errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agent_otel import ContentCapture
from agent_otel.testing import InMemoryTelemetry, run_script, span_outline

EVENTS = [LLMCallStart(model="m", call_id="c"), TextDelta("hi"), LLMCallEnd(call_id="c")]


async def test_run_script_returns_the_very_events_and_writes_to_the_telemetry(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    received = await run_script(otel_telemetry, EVENTS, agent_name="kit", step_spans=False)
    assert all(a is b for a, b in zip(received, EVENTS, strict=True))
    assert otel_telemetry.tree(attributes=False, events=False) == [
        {
            "name": "invoke_agent kit",
            "kind": "INTERNAL",
            "children": [{"name": "chat m", "kind": "CLIENT", "children": []}],
        }
    ]


async def test_run_script_takes_an_agents_own_stream(otel_telemetry: InMemoryTelemetry) -> None:
    async def agent() -> AsyncIterator[Any]:
        for event in EVENTS:
            yield event

    assert await run_script(otel_telemetry, agent(), agent_name="kit") == EVENTS
    assert otel_telemetry.span("invoke_agent kit").name == "invoke_agent kit"


async def test_span_and_by_name(otel_telemetry: InMemoryTelemetry) -> None:
    await run_script(otel_telemetry, EVENTS * 2, step_spans=False)
    assert [len(spans) for spans in otel_telemetry.by_name().values()] == [2, 1]
    with pytest.raises(AssertionError, match="2 spans named 'chat m'"):
        otel_telemetry.span("chat m")
    with pytest.raises(AssertionError, match="0 spans named 'nope'"):
        otel_telemetry.span("nope")


async def test_the_wrapper_factory_writes_content_events_to_the_telemetry_logger(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run_script(otel_telemetry, EVENTS, capture_content=ContentCapture(events=True))
    assert [r.log_record.event_name for r in otel_telemetry.logs()] == [
        "gen_ai.client.inference.operation.details"
    ]


@pytest.mark.internal_errors
async def test_otel_internal_errors_lists_every_swallowed_error(
    otel_telemetry: InMemoryTelemetry, otel_internal_errors: list[str]
) -> None:
    def redact(kind: Any, value: Any) -> Any:
        raise RuntimeError("a redactor bug")

    events = [ToolCall(id="t", function=None), ToolResult(tool_call_id="t", content="x")]
    await run_script(otel_telemetry, events, capture_content=ContentCapture(redact=redact))
    await run_script(otel_telemetry, events, capture_content=ContentCapture(redact=redact))
    assert otel_internal_errors == ["content capture"] * 2  # the repeat too, logged quietly


async def test_span_and_by_name_read_final_spans_when_pending_spans_is_on(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """With ``pending_spans`` a run exports snapshots named like the spans they show:
    ``span(name)`` is still the one final span, ``pending()`` lists the snapshots."""
    await run_script(otel_telemetry, EVENTS, agent_name="kit", step_spans=False, pending_spans=1)
    run = otel_telemetry.span("invoke_agent kit")
    assert "agent_otel.pending" not in (run.attributes or {})
    assert [len(s) for s in otel_telemetry.by_name().values()] == [1, 1]
    snapshots = otel_telemetry.pending()
    assert snapshots[0].name == "invoke_agent kit"  # the one taken at the start
    assert snapshots[0].parent is not None
    assert snapshots[0].parent.span_id == run.context.span_id
    assert len(otel_telemetry.spans()) == 2 + len(snapshots)  # spans() shows all exported


async def test_outline_is_the_tree_by_names(otel_telemetry: InMemoryTelemetry) -> None:
    call = ToolCall(id="t", function=FunctionCall(name="search", arguments="{}"))
    events = [
        LLMCallStart(model="m"),
        call,
        LLMCallEnd(),
        ToolResult(tool_call_id="t", content="x"),
    ]
    await run_script(otel_telemetry, events, agent_name="kit")
    assert otel_telemetry.outline() == [
        ["invoke_agent kit", [["step 0", ["chat m", "execute_tool search"]]]]
    ]
    assert span_outline([]) == []
    tree = otel_telemetry.tree(attributes=False, events=False)
    assert [node["name"] for node in tree[0]["children"][0]["children"]] == [
        "chat m",
        "execute_tool search",
    ]  # the same order as the tree
