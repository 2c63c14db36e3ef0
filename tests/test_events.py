"""Content as ``gen_ai.client.inference.operation.details`` log events (EVENT_ONLY, SPAN_AND_EVENT).

Each event is validated against the vendored ``events.yaml`` (its name, the required
attributes of the group it extends, every attribute registered with its type) and its
messages against the JSON schemas; it sits in its chat span's context.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

import semconv_registry as semconv
from agent_contract.protocol import LLMCallEnd, LLMCallStart, TextDelta
from agent_otel import _attributes as A
from agent_otel import _guard
from agent_otel.exporting._configure import configure
from agent_otel.recording.content._capture import ENV_CAPTURE, ContentCapture
from agent_otel.testing import InMemoryTelemetry, run_script
from genai_scenario import ANSWER, QUESTION, run_agent_otel


def validate_event(record: ReadableLogRecord) -> dict[str, Any]:
    """Check one log record against its events.yaml definition; its attributes."""
    log = record.log_record
    definition = semconv.events()[str(log.event_name)]
    attributes = dict(log.attributes or {})
    assert definition.required <= attributes.keys(), definition.required - attributes.keys()
    for key, value in attributes.items():
        if key in semconv.SCHEMA_FILES:  # structured on events: validate as the span JSON would
            semconv.validate_content(key, json.dumps(value))
            continue
        assert (error := semconv.type_error(key, value)) is None, error
    return attributes


async def _events(telemetry: InMemoryTelemetry, **options: Any) -> list[ReadableLogRecord]:
    await run_agent_otel(
        telemetry.tracer_provider, telemetry.meter_provider, telemetry.logger_provider, **options
    )
    return telemetry.logs()


@pytest.mark.parametrize(("mode", "on_spans"), [("EVENT_ONLY", False), ("SPAN_AND_EVENT", True)])
async def test_each_chat_call_is_one_valid_event_in_its_span(
    monkeypatch: pytest.MonkeyPatch, otel_telemetry: InMemoryTelemetry, mode: str, on_spans: bool
) -> None:
    monkeypatch.setenv(ENV_CAPTURE, mode)
    records = await _events(otel_telemetry)
    chats = [s for s in otel_telemetry.spans() if s.name == "chat gpt-4o"]
    assert len(records) == len(chats) == 2
    for record, chat in zip(records, chats, strict=True):
        assert record.log_record.event_name == A.EVENT_INFERENCE_DETAILS
        assert chat.context is not None
        assert record.log_record.trace_id == chat.context.trace_id
        assert record.log_record.span_id == chat.context.span_id
        attributes = validate_event(record)
        assert attributes[A.OPERATION_NAME] == "chat"
        assert attributes[A.RESPONSE_MODEL] == "gpt-4o-2024-08-06"
        assert attributes[A.CONVERSATION_ID] == "conv-42"
        assert not any(k.startswith(A.SCOPE_NAME) for k in attributes)  # gen_ai.* only
        assert (A.INPUT_MESSAGES in dict(chat.attributes or {})) is on_spans
    # the SDK stores sequences as tuples: compare as JSON reads them
    first, second = (json.loads(json.dumps(dict(r.log_record.attributes or {}))) for r in records)
    assert first[A.INPUT_MESSAGES] == [
        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    ]
    assert first[A.OUTPUT_MESSAGES][0]["finish_reason"] == "tool_call"
    assert second[A.OUTPUT_MESSAGES][0]["parts"] == [{"type": "text", "content": ANSWER}]


OFFERED = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@pytest.mark.parametrize(("mode", "on_spans"), [("EVENT_ONLY", False), ("SPAN_AND_EVENT", True)])
async def test_the_tools_a_call_offers_are_on_its_event(
    otel_telemetry: InMemoryTelemetry, mode: str, on_spans: bool
) -> None:
    """``gen_ai.tool.definitions`` belongs to the attributes the event extends: it was on the
    event only as the span's JSON text (``SPAN_AND_EVENT``) and not at all with ``EVENT_ONLY``
    (the event copied it from the span, which holds no content then). Structured, either way."""
    script = [
        LLMCallStart(model="gpt-4o", call_id="l1", params={"tools": [OFFERED]}),
        TextDelta("Sunny."),
        LLMCallEnd(call_id="l1", finish_reason="stop"),
    ]
    await run_script(otel_telemetry, script, capture_content=mode)
    [record] = otel_telemetry.logs()
    attributes = validate_event(record)
    [definition] = json.loads(json.dumps(attributes[A.TOOL_DEFINITIONS]))
    assert definition["name"] == "get_weather" and definition["parameters"]["type"] == "object"
    on_span = dict(otel_telemetry.span("chat gpt-4o").attributes or {}).get(A.TOOL_DEFINITIONS)
    assert (on_span is not None) is on_spans
    if on_span is not None:
        assert json.loads(str(on_span)) == [definition]


@pytest.mark.parametrize("mode", [None, "NO_CONTENT", "SPAN_ONLY", "true"])
async def test_no_event_unless_asked(
    monkeypatch: pytest.MonkeyPatch, otel_telemetry: InMemoryTelemetry, mode: str | None
) -> None:
    if mode is None:
        monkeypatch.delenv(ENV_CAPTURE, raising=False)
    else:
        monkeypatch.setenv(ENV_CAPTURE, mode)
    assert await _events(otel_telemetry) == []
    assert len(otel_telemetry.spans()) == 7


async def test_events_by_option_and_redacted(otel_telemetry: InMemoryTelemetry) -> None:
    def redact(kind: Any, value: Any) -> Any:
        return "[redacted]" if kind == "input_messages" else value

    capture = ContentCapture(spans=False, events=True, redact=redact)
    records = await _events(otel_telemetry, capture_content=capture)
    assert [dict(r.log_record.attributes or {})[A.INPUT_MESSAGES] for r in records] == [
        "[redacted]",
        "[redacted]",
    ]
    assert all(A.INPUT_MESSAGES not in dict(s.attributes or {}) for s in otel_telemetry.spans())


class FailingLogger:
    def emit(self, record: Any) -> None:
        raise RuntimeError("logger down")


class FailingLoggerProvider:
    def get_logger(self, *args: Any, **kwargs: Any) -> FailingLogger:
        return FailingLogger()


@pytest.mark.internal_errors
async def test_a_failing_logger_costs_the_event_only(
    monkeypatch: pytest.MonkeyPatch,
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv(ENV_CAPTURE, "SPAN_AND_EVENT")
    monkeypatch.setattr(_guard, "_reported", set())
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        await run_agent_otel(
            otel_telemetry.tracer_provider,
            otel_telemetry.meter_provider,
            FailingLoggerProvider(),  # type: ignore[arg-type]
        )
    assert len(otel_telemetry.spans()) == 7
    chats = [dict(s.attributes or {}) for s in otel_telemetry.spans() if s.name.startswith("chat")]
    assert all(A.OUTPUT_MESSAGES in chat for chat in chats)  # the span is whole
    assert caplog.text.count("content event") == 1  # logged once


@pytest.mark.heavy  # waits on a real exporter's retry or shutdown (seconds)
async def test_configure_wires_log_export(monkeypatch: pytest.MonkeyPatch) -> None:
    """configure()'s logger provider feeds its log processors and, with OTLP, a log exporter."""
    monkeypatch.setenv(ENV_CAPTURE, "EVENT_ONLY")
    exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    tel = configure(
        endpoint="http://127.0.0.1:9",
        console=False,
        set_global=False,
        log_processors=[SimpleLogRecordProcessor(exporter)],
        metric_readers=[],
    )
    try:
        names = {type(getattr(e, "inner", e)).__name__ for e in tel._exporters}  # unwrapped
        assert "OTLPLogExporter" in names
        await run_agent_otel(tel.tracer_provider, tel.meter_provider, tel.logger_provider)
        assert [r.log_record.event_name for r in exporter.get_finished_logs()] == [
            A.EVENT_INFERENCE_DETAILS,
            A.EVENT_INFERENCE_DETAILS,
        ]
    finally:
        tel.shutdown(timeout_millis=2000)


@pytest.mark.heavy  # waits on a real exporter's retry or shutdown (seconds)
def test_otel_logs_exporter_none_switches_log_export_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
    tel = configure(console=False, set_global=False)
    try:
        names = {type(getattr(e, "inner", e)).__name__ for e in tel._exporters}  # unwrapped
        assert "OTLPLogExporter" not in names
        assert "OTLPSpanExporter" in names
    finally:
        tel.shutdown(timeout_millis=2000)


async def test_instrument_takes_a_logger_provider(
    monkeypatch: pytest.MonkeyPatch, otel_telemetry: InMemoryTelemetry
) -> None:
    """``instrument()`` routes content events like ``otel_wrapper()``: to its logger provider."""
    from agent_contract.examples import ScriptedAgent
    from agent_contract.protocol import LLMCallEnd, LLMCallStart, Message, TextDelta
    from agent_otel import instrument

    monkeypatch.setenv(ENV_CAPTURE, "EVENT_ONLY")
    events = [LLMCallStart(model="m", provider="p"), TextDelta(text="hi"), LLMCallEnd()]
    agent = instrument(ScriptedAgent(events), **otel_telemetry.providers())  # the logger too
    await agent.invoke([Message(role="user", content="hello")])
    [record] = otel_telemetry.logs()
    attributes = validate_event(record)
    assert json.loads(json.dumps(attributes[A.OUTPUT_MESSAGES]))[0]["parts"] == [
        {"type": "text", "content": "hi"}
    ]


async def test_an_events_content_holding_lone_surrogates_encodes() -> None:
    """Content with lone surrogates (a model's text, a tool call's id and name, a history
    message) on the event: written encodable (each lone half as ``?``), as on the span; the
    OTLP log encoder dropped the messages attribute with an error (a lone surrogate cannot be
    UTF-8), where the span kept its JSON text."""
    from agent_contract.protocol import FunctionCall, Message, ToolCall
    from otlp_check import assert_encodes

    telemetry = InMemoryTelemetry()
    script = [
        LLMCallStart(model="m", messages=[Message(role="user", content="hi \udc80")]),
        TextDelta(text="a\ud800b"),
        ToolCall(id="t\udfff", function=FunctionCall(name="s\udc80", arguments='{"q": "\ud83d"}')),
        LLMCallEnd(),
    ]
    await run_script(telemetry, script, capture_content=ContentCapture(events=True))
    (record,) = telemetry.logs()
    attributes = validate_event(record)
    assert_encodes(telemetry.spans(), None, telemetry.logs())
    (output,) = attributes[A.OUTPUT_MESSAGES]
    assert {"type": "text", "content": "a?b"} in output["parts"]
    call = next(p for p in output["parts"] if p["type"] == "tool_call")
    assert (call["id"], call["name"], call["arguments"]) == ("t?", "s?", {"q": "?"})
    (given,) = attributes[A.INPUT_MESSAGES]  # (the SDK keeps a record's lists as tuples)
    assert list(given["parts"]) == [{"type": "text", "content": "hi ?"}]
