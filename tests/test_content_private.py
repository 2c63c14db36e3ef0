"""Private by default: with content off, no prompt, answer, reasoning, tool argument, result
or definition reaches any exported signal (span names, attributes, events, status
descriptions, log records, metric points), however content was turned off; once on, content
goes only where the mode and the ``ContentCapture`` hook and budgets say, the text of a
failure the tool returned included.

What is not content, and so recorded either way: names and labels the code chose (agent, tool,
phase), request parameters of the conventions (``gen_ai.request.stop_sequences``), and the
message of an ``Error`` event or a raised exception (as OpenTelemetry records exceptions).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    ReasoningDelta,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import ContentCapture
from agent_otel.recording.content._capture import ENV_CAPTURE
from agent_otel.testing import InMemoryTelemetry
from test_scrubbing_signals import exported

MARK = "PROMPT-MARKER-7f3a"
TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": f"Search for {MARK}-definition",
        "parameters": {"type": "object", "properties": {"q": {"description": MARK}}},
    },
}


def script() -> list[Any]:
    """A run with the marker in every place content enters: messages of every role and part
    kind, tool definitions, reasoning, text, tool arguments, a result and a returned failure."""
    messages = [
        Message(role="system", content=f"system {MARK}"),
        Message(
            role="user",
            content=[
                {"type": "text", "text": f"user {MARK}"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{MARK}"}},
            ],
        ),
    ]
    return [
        LLMCallStart(model="gpt-4o", call_id="l1", params={"tools": [TOOL]}, messages=messages),
        ReasoningDelta(f"reasoning {MARK}"),
        TextDelta(f"text {MARK}"),
        ToolCall(id="c1", function=FunctionCall("search", json.dumps({"q": MARK}))),
        ToolCall(id="c2", function=FunctionCall("lookup", json.dumps({"q": MARK}))),
        LLMCallEnd(call_id="l1", finish_reason="tool_calls"),
        Usage(input_tokens=3, output_tokens=4),
        ToolResult(tool_call_id="c1", content={"hits": [MARK]}),
        ToolResult(tool_call_id="c2", content=f"no entry for {MARK}", is_error=True),
        StepBoundary(index=0),
        LLMCallStart(model="gpt-4o", call_id="l2"),
        TextDelta(f"answer {MARK}"),
        LLMCallEnd(call_id="l2", finish_reason="stop"),
    ]


async def run(telemetry: InMemoryTelemetry, **options: Any) -> None:
    """The script as an invoked agent (its input handed over), traced into ``telemetry``."""
    agent = ScriptedAgent(script())
    wrapper = telemetry.wrapper(agent_name="agent", **options)
    await agent.invoke([Message(role="user", content=f"input {MARK}")], stream_wrapper=wrapper)


OFF: dict[str, tuple[str | None, dict[str, Any]]] = {
    "default": (None, {}),
    "option-false": (None, {"capture_content": False}),
    "option-string-false": (None, {"capture_content": "false"}),
    "option-no-content": (None, {"capture_content": "NO_CONTENT"}),
    "variable-no-content": ("NO_CONTENT", {}),
    "variable-false": (" False ", {}),
    "variable-unknown": ("1", {}),
    "option-beats-variable": ("SPAN_AND_EVENT", {"capture_content": False}),
}


@pytest.mark.parametrize("name", sorted(OFF))
async def test_no_content_leaves_when_capture_is_off(
    name: str, otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    variable, options = OFF[name]
    if variable is None:
        monkeypatch.delenv(ENV_CAPTURE, raising=False)
    else:
        monkeypatch.setenv(ENV_CAPTURE, variable)
    await run(otel_telemetry, **options)
    assert otel_telemetry.span("execute_tool lookup").status.description == "tool_error"
    assert MARK not in exported(otel_telemetry)
    assert otel_telemetry.logs() == []


def failure_texts(telemetry: InMemoryTelemetry) -> list[str]:
    """What the failed tool's span says of its failure: status and exception event."""
    span = telemetry.span("execute_tool lookup")
    said = [str(event.attributes.get("exception.message")) for event in span.events]
    return [span.status.description or "", *said]


def _drop_results(kind: str, value: Any) -> Any:
    return None if kind == "tool_result" else value


@pytest.mark.parametrize(
    "capture",
    [
        ContentCapture(spans=False, events=True),
        ContentCapture(redact=_drop_results),
        ContentCapture(max_bytes=12),
        ContentCapture(max_run_bytes=64),
    ],
    ids=["events-only", "redacted", "max-bytes", "run-budget"],
)
async def test_a_returned_failure_is_content_as_the_result_would_be(
    capture: ContentCapture, otel_telemetry: InMemoryTelemetry
) -> None:
    """The text a tool returned as its failure (a framework's tool error often quotes the
    arguments) was written to the span's status and ``exception`` event whenever capture was
    on: on spans in the events-only mode, past a hook that drops results, and up to the
    status's own limit instead of ``max_bytes`` or what the run has left. It is content: on
    spans only where content goes on spans, through the hook as a ``tool_result``, within
    ``max_bytes`` and the run's budget (spent, the failure is told by its type)."""
    await run(otel_telemetry, capture_content=capture)
    for text in failure_texts(otel_telemetry):
        assert MARK not in text and "stripped_reason" not in text  # else its type
        assert len(text.encode()) <= max(capture.max_bytes, len("tool_error"))
    if not capture.spans:
        assert MARK in json.dumps(
            [dict(log.log_record.attributes or {}) for log in otel_telemetry.logs()]
        )
        for span in otel_telemetry.spans():  # the content is on the events alone
            assert MARK not in json.dumps([dict(span.attributes or {}), span.status.description])


async def test_with_content_on_spans_a_returned_failure_is_told(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run(otel_telemetry, capture_content=True)
    assert failure_texts(otel_telemetry) == [f"no entry for {MARK}"] * 2


def places(telemetry: InMemoryTelemetry) -> set[tuple[str, str]]:
    """Where the marker is: (span name, attribute key, or ``event/key`` of a span event,
    ``status``), and ``(log, key)`` of a log record."""
    found: set[tuple[str, str]] = set()
    for span in telemetry.spans():
        for key, value in (span.attributes or {}).items():
            if MARK in str(value):
                found.add((span.name, key))
        for event in span.events:
            for key, value in (event.attributes or {}).items():
                if MARK in str(value):
                    found.add((span.name, f"{event.name}/{key}"))
        if MARK in (span.status.description or ""):
            found.add((span.name, "status"))
    for log in telemetry.logs():
        for key, value in (log.log_record.attributes or {}).items():
            if MARK in json.dumps(value, default=str):
                found.add(("log", key))
    return found


ROOT = {"gen_ai.input.messages", "gen_ai.output.messages", "input.value", "output.value"}
ON_SPANS = {
    *(("invoke_agent agent", key) for key in ROOT),
    *(("chat gpt-4o", key) for key in ("gen_ai.input.messages", "gen_ai.output.messages")),
    ("chat gpt-4o", "gen_ai.tool.definitions"),
    ("execute_tool search", "gen_ai.tool.call.arguments"),
    ("execute_tool search", "gen_ai.tool.call.result"),
    ("execute_tool lookup", "gen_ai.tool.call.arguments"),
    ("execute_tool lookup", "status"),
    ("execute_tool lookup", "exception/exception.message"),
}
ON_EVENTS = {
    ("log", key)
    for key in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.definitions")
}


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("SPAN_ONLY", ON_SPANS), ("EVENT_ONLY", ON_EVENTS), ("SPAN_AND_EVENT", ON_SPANS | ON_EVENTS)],
)
async def test_content_goes_only_where_its_mode_says(
    mode: str, expected: set[tuple[str, str]], otel_telemetry: InMemoryTelemetry
) -> None:
    """Each mode puts the content in the places docs/tracing.md names, and nowhere else."""
    await run(otel_telemetry, capture_content=mode)
    assert places(otel_telemetry) == expected
