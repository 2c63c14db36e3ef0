"""The nonconformances the oracle found (issue 11), one test each, on their own.

Conversation id on chat and tool spans; ``gen_ai.request.stream`` inferred from chunks;
no ``gen_ai.request.choice.count`` for n == 1; no span ending after its parent; what is known
at span start handed to the sampler; no tool result on a failed call; the capture variable
read with the official instrumentations' values.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.context.context import Context
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind
from opentelemetry.util.types import Attributes

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    TextDelta,
    ToolCall,
)
from agent_otel import _attributes as A
from agent_otel.recording.content._capture import ENV_CAPTURE, ContentCapture, capture_from
from agent_otel.testing import InMemoryTelemetry, run_script
from genai_scenario import CONVERSATION, TOOLS, run_agent_otel


def _call(params: dict[str, Any] | None = None, chunks: int = 2) -> list[Any]:
    return [
        LLMCallStart(model="m", provider="p", call_id="c", params=params or {}),
        *(TextDelta("x") for _ in range(chunks)),
        LLMCallEnd(call_id="c", finish_reason="stop"),
    ]


async def test_conversation_id_is_on_the_runs_chat_and_tool_spans(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run_agent_otel(otel_telemetry.tracer_provider, otel_telemetry.meter_provider)
    spans = otel_telemetry.spans()
    gen_ai = [s for s in spans if A.OPERATION_NAME in (s.attributes or {})]
    assert {str((s.attributes or {})[A.OPERATION_NAME]) for s in gen_ai} == {
        "invoke_agent",
        "chat",
        "execute_tool",
    }
    for span in gen_ai:
        assert (span.attributes or {})[A.CONVERSATION_ID] == CONVERSATION, span.name


async def test_no_conversation_id_when_the_run_has_none(otel_telemetry: InMemoryTelemetry) -> None:
    await run_script(otel_telemetry, _call())
    assert all(A.CONVERSATION_ID not in (s.attributes or {}) for s in otel_telemetry.spans())


@pytest.mark.parametrize(
    ("params", "chunks", "expected"),
    [
        ({}, 2, True),  # chunks arrived: streamed
        ({}, 0, None),  # no chunk: nothing is known, nothing is said
        ({"stream": False}, 2, False),  # the caller's own statement wins
        ({"stream": True}, 0, True),
    ],
)
async def test_request_stream_is_inferred_from_chunks(
    otel_telemetry: InMemoryTelemetry, params: dict[str, Any], chunks: int, expected: bool | None
) -> None:
    await run_script(otel_telemetry, _call(params, chunks))
    assert (otel_telemetry.span("chat m").attributes or {}).get(A.REQUEST_STREAM) == expected


@pytest.mark.parametrize(("n", "expected"), [(1, None), (1.0, None), (2, 2), (3.0, 3)])
async def test_choice_count_only_when_not_one(
    otel_telemetry: InMemoryTelemetry, n: Any, expected: int | None
) -> None:
    await run_script(otel_telemetry, _call({"n": n}))
    assert (otel_telemetry.span("chat m").attributes or {}).get(A.REQUEST_CHOICE_COUNT) == expected


OPEN_AT_THE_END = [
    [LLMCallStart(model="m", call_id="c"), TextDelta("x")],  # a call and its step still open
    [ToolCall(id="t", function=FunctionCall("f", "{}"))],  # a tool and its step
    [*_call(), TextDelta("after")],  # only the step
]


@pytest.mark.parametrize("events", OPEN_AT_THE_END)
async def test_no_span_ends_after_its_parent(
    otel_telemetry: InMemoryTelemetry, events: list[Any]
) -> None:
    await run_script(otel_telemetry, events)
    spans = otel_telemetry.spans()
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    assert len(spans) >= 3
    for span in spans:
        parent = by_id.get(span.parent.span_id) if span.parent else None
        if parent is not None:
            assert span.end_time is not None and parent.end_time is not None
            assert span.end_time <= parent.end_time, f"{span.name} outlives {parent.name}"


class RecordingSampler(Sampler):
    """Samples everything and keeps the attributes each span was started with."""

    def __init__(self) -> None:
        self.seen: dict[str, dict[str, Any]] = {}

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        self.seen.setdefault(name, dict(attributes or {}))  # the first span of a name
        return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes)

    def get_description(self) -> str:
        return "recording"


async def test_what_is_known_at_start_reaches_the_sampler() -> None:
    sampler = RecordingSampler()
    telemetry = InMemoryTelemetry(sampler=sampler)
    await run_agent_otel(
        telemetry.tracer_provider,
        telemetry.meter_provider,
        attributes={"agent_otel.strategy": "react"},
    )
    agent, chat = sampler.seen["invoke_agent weather"], sampler.seen["chat gpt-4o"]
    assert agent[A.CONVERSATION_ID] == CONVERSATION
    assert agent["agent_otel.strategy"] == "react"
    assert agent[A.PROVIDER_NAME] == "openai"
    assert chat[A.CONVERSATION_ID] == CONVERSATION
    assert chat[A.REQUEST_TEMPERATURE] == 0.2
    assert chat[A.REQUEST_MAX_TOKENS] == 200
    assert chat[A.LLM_CALL_ID] == "llm_1"
    assert chat[A.REQUEST_MODEL] == "gpt-4o"
    tool = sampler.seen["execute_tool get_weather"]
    assert tool[A.TOOL_CALL_ID] == "call_1"
    assert tool[A.CONVERSATION_ID] == CONVERSATION
    assert sampler.seen["step 0"][A.STEP_INDEX] == 0


async def test_a_failed_tool_call_records_no_result(otel_telemetry: InMemoryTelemetry) -> None:
    await run_agent_otel(
        otel_telemetry.tracer_provider, otel_telemetry.meter_provider, capture_content=True
    )
    ok = dict(otel_telemetry.span("execute_tool get_weather").attributes or {})
    failed = dict(otel_telemetry.span("execute_tool get_time").attributes or {})
    assert ok[A.TOOL_CALL_RESULT] == '{"temp_c":21}'
    assert A.TOOL_CALL_RESULT not in failed
    assert failed[A.TOOL_CALL_ARGUMENTS] == '{"city":"Paris"}'  # what was asked stays
    assert failed[A.ERROR_TYPE] == "tool_error"
    assert TOOLS[1][4] is True


@pytest.mark.parametrize(
    ("value", "spans", "events"),
    [
        ("SPAN_ONLY", True, False),
        ("span_only", True, False),
        (" true ", True, False),  # opentelemetry-instrumentation-openai-v2's default path
        ("True", True, False),
        ("EVENT_ONLY", False, True),
        ("SPAN_AND_EVENT", True, True),
        ("span_and_event", True, True),
    ],
)
def test_capture_variable_values_the_official_instrumentations_read(
    monkeypatch: pytest.MonkeyPatch, value: str, spans: bool, events: bool
) -> None:
    monkeypatch.setenv(ENV_CAPTURE, value)
    capture = capture_from(None)
    assert capture is not None
    assert (capture.spans, capture.events) == (spans, events)


@pytest.mark.parametrize("value", ["", "NO_CONTENT", "no_content", "false", "FALSE"])
def test_capture_variable_off_values(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(ENV_CAPTURE, value)
    assert capture_from(None) is None


@pytest.mark.parametrize("value", ["1", "yes", "on", "SPAN"])
def test_other_values_are_off_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, value: str
) -> None:
    monkeypatch.setenv(ENV_CAPTURE, value)
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        assert capture_from(None) is None
    assert ENV_CAPTURE in caplog.text


def test_the_option_beats_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_CAPTURE, "EVENT_ONLY")
    assert capture_from(True) == ContentCapture()
    assert capture_from(False) is None
