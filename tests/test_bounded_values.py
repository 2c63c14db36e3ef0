"""No single value can cost other data (issue 26, point 2).

Every string a run records has a bound (``MAX_TEXT_BYTES``; an exception's message and
stack trace and a status description tighter ones), a cut is marked and counted as
``string_truncated``; and the exporters ``configure()`` builds split every batch into
requests under a collector's default message limit, so one heavy span costs only itself.
The real-receiver version (a gRPC collector with its 4 MiB limit) is in
``tests/integration/test_process_life.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_contract.protocol import (
    Error,
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agent_contract.sources._arguments import TRUNCATION_MARK
from agent_otel import ContentCapture, otel_wrapper, record_evaluation
from agent_otel.exporting._split import MAX_REQUEST_BYTES, SizeBoundSpanExporter, requests
from agent_otel.recording._encodable import MAX_TEXT_BYTES, clean_text
from agent_otel.recording._span import MAX_EXCEPTION_MESSAGE_BYTES, MAX_STACKTRACE_BYTES
from agent_otel.testing import InMemoryTelemetry
from otlp_check import Exported

HUGE = 1_500_000


class Huge(Exception):
    """An agent failure whose message is a whole payload."""


def utf8(value: object) -> int:
    return len(str(value).encode("utf-8", "surrogatepass"))


async def run(exported: Exported, events: Sequence[Any], fail: BaseException | None = None,
              **options: Any) -> ReadableSpan:  # fmt: skip
    async def agent() -> AsyncIterator[Any]:
        for event in events:
            yield event
        if fail is not None:
            raise fail

    wrapper = otel_wrapper(
        agent_name="b",
        tracer_provider=exported.tracer_provider,
        meter_provider=exported.meter_provider,
        **options,
    )
    received: list[Any] = []
    caught: BaseException | None = None
    try:
        async for event in wrapper(agent()):
            received.append(event)
    except BaseException as exc:
        caught = exc
    assert caught is fail and received == list(events)
    (root,) = [s for s in exported.spans() if s.name.startswith("invoke_agent")]
    return root


def every_string(span: ReadableSpan) -> list[str]:
    out = [v for v in (span.attributes or {}).values() if isinstance(v, str)]
    for event in span.events:
        out += [v for v in (event.attributes or {}).values() if isinstance(v, str)]
    if span.status.description:
        out.append(span.status.description)
    return out


@pytest.mark.parametrize("char", ["x", "é", "\U0001f600", "\udc80"])
async def test_a_huge_exception_message_is_cut_marked_and_counted(char: str) -> None:
    exported = Exported()
    error = Huge(char * HUGE)
    events = [LLMCallStart(model="m", call_id="c"), TextDelta(text="hi")]
    root = await run(exported, events, error)
    assert str(error) == char * HUGE  # the agent's exception is untouched
    exceptions = [
        e.attributes or {} for s in exported.spans() for e in s.events if e.name == "exception"
    ]
    assert len(exceptions) == 2  # the innermost span and the agent span
    for event in exceptions:
        message, trace = event["exception.message"], event["exception.stacktrace"]
        assert utf8(message) <= MAX_EXCEPTION_MESSAGE_BYTES
        assert str(message).endswith(TRUNCATION_MARK)
        assert utf8(trace) <= MAX_STACKTRACE_BYTES
        assert str(trace).startswith("Traceback")
        assert "Huge: " in str(trace)[-MAX_EXCEPTION_MESSAGE_BYTES - 100 :]  # the error line
    assert "string_truncated" in (root.attributes or {})["agent_otel.anomaly.kinds"]  # type: ignore[operator]
    exported.assert_encodes()
    assert len(encode_spans(exported.spans()).SerializeToString()) < 64 * 1024


@pytest.mark.parametrize("capture", [False, True])
async def test_every_string_a_run_records_is_bounded(capture: bool) -> None:
    """Strings from every field (tool names, results, error descriptions, models, ids)."""
    exported = Exported()
    big = "y" * (2 * MAX_TEXT_BYTES)
    events = [
        LLMCallStart(model=big, call_id=big),
        TextDelta(text=big),
        LLMCallEnd(call_id=big, finish_reason=big),
        ToolCall(id="t", function=FunctionCall(name=big, arguments=big)),
        ToolResult(tool_call_id="t", content=big, name=big, is_error=True),
        Error(message=big, error_type=big),
    ]
    root = await run(exported, events, capture_content=capture)
    for span in exported.spans():
        for text in every_string(span):
            assert utf8(text) <= MAX_TEXT_BYTES, span.name
    assert "string_truncated" in (root.attributes or {})["agent_otel.anomaly.kinds"]  # type: ignore[operator]
    descriptions = [s.status.description for s in exported.spans() if s.status.description]
    assert descriptions and all(utf8(d) <= MAX_EXCEPTION_MESSAGE_BYTES for d in descriptions)
    exported.assert_encodes()


async def test_content_over_the_string_bound_stays_valid_json() -> None:
    import json

    exported = Exported()
    big = "z" * (2 * MAX_TEXT_BYTES)
    events = [
        ToolCall(id="t", function=FunctionCall(name="f", arguments="{}")),
        ToolResult(tool_call_id="t", content=big),
    ]
    await run(exported, events, capture_content=ContentCapture(max_bytes=10 * MAX_TEXT_BYTES))
    (tool,) = [s for s in exported.spans() if s.name.startswith("execute_tool")]
    result = (tool.attributes or {})["gen_ai.tool.call.result"]
    assert utf8(result) <= MAX_TEXT_BYTES
    json.loads(str(result))


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=0, max_size=40), st.integers(min_value=0, max_value=3 * 2**18))
def test_clean_text_never_exceeds_the_bound(piece: str, repeat: int) -> None:
    kinds: list[str] = []
    text = piece * (repeat // max(len(piece), 1))
    out = clean_text(text, kinds.append)
    assert len(out.encode("utf-8")) <= MAX_TEXT_BYTES
    if out != text and "unencodable_string" not in kinds:
        assert kinds == ["string_truncated"] and out.endswith(TRUNCATION_MARK)


# --- requests under the collector's limit ---------------------------------------------------
class Recording(SpanExporter):
    def __init__(self) -> None:
        self.requests: list[tuple[int, int]] = []  # (encoded bytes, spans)
        self.inner = InMemorySpanExporter()  # behind the exporter under test

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        size = len(encode_spans(spans).SerializeToString())
        self.requests.append((size, len(spans)))
        if size > 4 * 1024 * 1024:  # a gRPC collector's default limit
            return SpanExportResult.FAILURE
        return self.inner.export(spans)


def spans(weights: Sequence[int]) -> list[ReadableSpan]:
    telemetry = InMemoryTelemetry()
    tracer = telemetry.tracer_provider.get_tracer("t")
    for index, weight in enumerate(weights):
        with tracer.start_as_current_span(f"s{index}") as span:
            span.set_attribute("w", "é" * (weight // 4))  # 2 bytes each
            span.add_event("e", {"w": "x" * (weight // 2)})
    telemetry.shutdown()
    return telemetry.spans()


@pytest.mark.parametrize(
    "weights",
    [
        [1_000] * 2_000,  # many light spans
        [200_000] * 40,  # many medium ones: 8 MB in one batch
        [1_000] * 10 + [6_000_000] + [1_000] * 10,  # one over the limit alone
        [3_900_000, 3_900_000, 10],  # each under the limit, not two together
    ],
)
def test_a_batch_is_split_under_the_limit_and_one_heavy_span_costs_only_itself(
    weights: list[int],
) -> None:
    batch = spans(weights)
    recording = Recording()
    result = SizeBoundSpanExporter(recording).export(batch)
    delivered = [s.name for s in recording.inner.get_finished_spans()]
    too_big = [s.name for s, w in zip(batch, weights) if w > 4 * 1024 * 1024]
    assert delivered == [s.name for s in batch if s.name not in too_big]  # in order
    assert (result is SpanExportResult.SUCCESS) == (not too_big)
    for size, count in recording.requests:  # under the limit, or one span alone over it
        assert size <= MAX_REQUEST_BYTES + 64 * 1024 or count == 1


def test_requests_keep_every_item_once_in_order() -> None:
    items = list(range(100))
    chunks = list(requests(items, lambda i: (i % 7) * 10, 50))
    assert [i for chunk in chunks for i in chunk] == items
    assert all(sum((i % 7) * 10 for i in chunk) <= 50 or len(chunk) == 1 for chunk in chunks)


def test_an_evaluation_explanation_is_bounded_too(otel_telemetry: InMemoryTelemetry) -> None:
    record_evaluation(
        "relevance",
        explanation="because " * 200_000,
        logger_provider=otel_telemetry.logger_provider,
    )
    [record] = otel_telemetry.logs()
    explanation = (record.log_record.attributes or {})["gen_ai.evaluation.explanation"]
    assert utf8(explanation) <= MAX_TEXT_BYTES and str(explanation).endswith(TRUNCATION_MARK)


def test_log_records_a_collector_refuses_as_too_large_are_sent_again_in_smaller_requests(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Content events and evaluation results go out as OTLP log records, each up to 256 KiB:
    a batch of them under the 3 MiB estimate was refused whole (HTTP 413) by a collector, or
    a proxy in front of it, taking less (nginx: 1 MiB by default), and every record in it was
    lost. Sent again in halves, each arrives, and the lowered limit is told once."""
    import logging

    from agent_otel import configure
    from otlp_receiver import receiving

    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)  # the SDK's own error line
    with receiving(max_bytes=1024 * 1024) as received:
        telemetry = configure(
            "split-test",
            endpoint=received.endpoint.removesuffix("/v1/traces"),
            timeout=5,
            console=False,
            set_global=False,
        )
        try:
            for i in range(12):  # 2.4 MB: one request by the estimate
                record_evaluation(
                    f"judge{i}",
                    explanation="because " * 25_000,
                    logger_provider=telemetry.logger_provider,
                )
        finally:
            telemetry.shutdown()
    logging.getLogger("opentelemetry").setLevel(logging.NOTSET)
    assert received.refused >= 1  # the first request was over the limit
    assert received.log_records == 12
    told = [r.getMessage() for r in caplog.records if "413" in r.getMessage()]
    assert len(told) == 1 and "log records" in told[0], told
