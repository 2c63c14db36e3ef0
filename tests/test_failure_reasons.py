"""A failure shows its reason where people look: the status description (Phoenix), an
``exception`` event for a raised exception (MLflow marks a span failed only with one), on the
failing span only; every reason scrubbed and bounded like any other string."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
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
)
from agent_otel import ContentCapture
from agent_otel.testing import InMemoryTelemetry, run_script

# Built by concatenation so no secret scanner trips on the repository.
SECRET = "sk-" + "proj-" + "A1b2" * 18 + "T3Blbk" + "FJ" + "C3d4" * 18
CAPTURE = ContentCapture(spans=True)


def _reason(span: ReadableSpan) -> str:
    assert span.status.status_code is StatusCode.ERROR, span.name
    assert span.status.description, f"{span.name}: ERROR without a reason"
    return span.status.description


def _only_failing(telemetry: InMemoryTelemetry, *failing: str) -> None:
    for span in telemetry.spans():
        if span.name not in failing:
            assert span.status.status_code is not StatusCode.ERROR, span.name


def _call(call_id: str, name: str) -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments="{}"))


def _tool_script(content: Any) -> list[Any]:
    return [
        _call("t1", "lookup"),
        ToolResult("t1", content, is_error=True),
        _call("t2", "other"),
        ToolResult("t2", "fine"),
        StepBoundary(0),
    ]


async def test_a_returned_tool_error_shows_its_text_with_capture_on(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run_script(otel_telemetry, _tool_script("no such row"), capture_content=CAPTURE)
    assert _reason(otel_telemetry.span("execute_tool lookup")) == "no such row"
    _only_failing(otel_telemetry, "execute_tool lookup")


async def test_a_returned_tool_error_shows_its_type_with_capture_off(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run_script(otel_telemetry, _tool_script("no such row for alice@example.com"))
    assert _reason(otel_telemetry.span("execute_tool lookup")) == "tool_error"
    _only_failing(otel_telemetry, "execute_tool lookup")


async def test_a_returned_tool_error_in_parts_is_rendered_as_json(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    content = [{"type": "text", "text": "timeout"}]
    await run_script(otel_telemetry, _tool_script(content), capture_content=CAPTURE)
    assert "timeout" in _reason(otel_telemetry.span("execute_tool lookup"))


async def test_a_returned_tool_error_is_scrubbed_and_bounded(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    text = f"auth failed with key {SECRET} " + "x" * 100_000
    await run_script(otel_telemetry, _tool_script(text), capture_content=CAPTURE)
    reason = _reason(otel_telemetry.span("execute_tool lookup"))
    assert SECRET not in reason
    assert reason.startswith("auth failed with key ")
    assert len(reason) <= 1024


def _exception_events(telemetry: InMemoryTelemetry) -> dict[str, list[dict[str, Any]]]:
    """Span name -> the attributes of its ``exception`` events, for every span that has one."""
    found: dict[str, list[dict[str, Any]]] = {}
    for span in telemetry.spans():
        events = [dict(e.attributes or {}) for e in span.events if e.name == "exception"]
        if events:
            found[span.name] = events
    return found


async def test_a_returned_tool_error_is_an_exception_event_with_its_text_capture_on(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """MLflow marks a span failed only by an ``exception`` event: a reported failure gets one."""
    text = f"no such row, key {SECRET} " + "x" * 5_000
    await run_script(otel_telemetry, _tool_script(text), capture_content=CAPTURE)
    (event,) = _exception_events(otel_telemetry)["execute_tool lookup"]
    assert event["exception.type"] == "tool_error"
    message = event["exception.message"]
    assert message.startswith("no such row, key ")
    assert SECRET not in message
    assert len(message) <= 1024
    assert list(_exception_events(otel_telemetry)) == ["execute_tool lookup"]


async def test_a_returned_tool_error_is_an_exception_event_of_its_type_capture_off(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run_script(otel_telemetry, _tool_script("no such row for alice@example.com"))
    assert _exception_events(otel_telemetry) == {
        "execute_tool lookup": [{"exception.type": "tool_error"}]
    }


class Boom(RuntimeError):
    pass


def _raising(events: list[Any], error: BaseException) -> AsyncIterator[Any]:
    async def agent() -> AsyncIterator[Any]:
        for event in events:
            yield event
        raise error

    return agent()


@pytest.mark.parametrize(
    ("events", "inner"),
    [
        ([_call("t1", "lookup")], "execute_tool lookup"),
        ([LLMCallStart(model="m", call_id="c"), TextDelta("hi")], "chat m"),
        ([TextDelta("thinking")], "step 0"),
        ([], "invoke_agent"),
    ],
    ids=["tool", "chat", "step", "run"],
)
async def test_a_raised_exception_gives_its_span_a_reason_and_an_exception_event(
    otel_telemetry: InMemoryTelemetry, events: list[Any], inner: str
) -> None:
    error = Boom(f"upstream said {SECRET}")
    with pytest.raises(Boom) as raised:
        await run_script(otel_telemetry, _raising(events, error))
    assert raised.value is error
    names = {span.name for span in otel_telemetry.spans()}
    assert inner in names, names
    for name in {inner, "invoke_agent"}:  # the span it failed in, and the run it escaped
        span = otel_telemetry.span(name)
        reason = _reason(span)
        assert reason.startswith(f"{__name__}.Boom: upstream said ")
        assert SECRET not in reason
        (event,) = [e for e in span.events if e.name == "exception"]
        assert event.attributes is not None
        assert SECRET not in str(event.attributes["exception.message"])
    _only_failing(otel_telemetry, inner, "invoke_agent")


async def test_an_exception_that_cannot_be_rendered_still_gives_its_type(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    class Mute(Exception):
        def __str__(self) -> str:
            raise ValueError("no text")

    with pytest.raises(Mute):
        await run_script(otel_telemetry, _raising([], Mute()))
    assert _reason(otel_telemetry.span("invoke_agent")).endswith("Mute")


@pytest.mark.parametrize("fatal", [False, True])
async def test_an_error_event_gives_its_span_a_reason(
    otel_telemetry: InMemoryTelemetry, fatal: bool
) -> None:
    events = [
        LLMCallStart(model="m", call_id="c"),
        Error(f"rate limited, key {SECRET}", error_type="rate_limit", fatal=fatal),
        LLMCallEnd(call_id="c"),
    ]
    await run_script(otel_telemetry, events)
    failing = ["chat m", "invoke_agent"] if fatal else ["chat m"]
    for name in failing:
        reason = _reason(otel_telemetry.span(name))
        assert reason.startswith("rate limited, key ")
        assert SECRET not in reason
    _only_failing(otel_telemetry, *failing)


async def test_a_failed_model_call_is_the_conventions_exception_event(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    # gen_ai.client.operation.exception: "SHOULD be recorded when an exception occurs during
    # Generative AI client operations", severity WARN, exception.type and .message, content
    # capture off (the default). One per failed call, in its chat span's context; none for a
    # failed tool or a run failing outside a call.
    error = Boom(f"upstream said {SECRET}")
    events = [
        LLMCallStart(model="a", call_id="c1"),
        Error(f"rate limited, key {SECRET}", error_type="RateLimitError"),
        LLMCallEnd(call_id="c1"),
        _call("t1", "lookup"),
        ToolResult(tool_call_id="t1", content="no", is_error=True),
        StepBoundary(),
        LLMCallStart(model="b", call_id="c2"),
        TextDelta("hi"),
    ]
    with pytest.raises(Boom):
        await run_script(otel_telemetry, _raising(events, error))
    records = [r.log_record for r in otel_telemetry.logs()]
    assert [r.event_name for r in records] == ["gen_ai.client.operation.exception"] * 2
    chats = [otel_telemetry.span("chat a"), otel_telemetry.span("chat b")]
    for record, chat, kind in zip(records, chats, ["RateLimitError", f"{__name__}.Boom"]):
        assert record.severity_number is not None and record.severity_number.value == 13
        attributes = dict(record.attributes or {})
        assert attributes["exception.type"] == kind
        message = str(attributes["exception.message"])
        assert "rate limited" in message or "upstream said" in message
        assert SECRET not in message
        assert (record.trace_id, record.span_id) == (chat.context.trace_id, chat.context.span_id)


async def test_an_error_event_without_a_message_gives_its_type(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    await run_script(otel_telemetry, [TextDelta("a"), Error("", error_type="quota")])
    assert _reason(otel_telemetry.span("step 0")) == "quota"


async def test_a_raised_exception_does_not_mark_both_of_two_open_tools(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    with pytest.raises(Boom):
        await run_script(otel_telemetry, _raising([_call("t1", "a"), _call("t2", "b")], Boom()))
    tools = [s for s in otel_telemetry.spans() if s.name.startswith("execute_tool")]
    failed = [s for s in tools if s.status.status_code is StatusCode.ERROR]
    assert len(tools) == 2
    # Which of two parallel tools raised is unknown (the step holds it): neither is blamed
    # for the other, and both say they were cut short.
    assert len(failed) <= 1
    assert all(s.attributes and s.attributes.get("agent_otel.incomplete") for s in tools)


class _Named:
    """A ToolResult look-alike from another package that names its failure's class."""

    def __init__(self, call_id: str, is_error: Any, error_type: Any) -> None:
        self.tool_call_id, self.content, self.name = call_id, "failed", None
        self.is_error, self.error_type = is_error, error_type


_Named.__name__ = "ToolResult"


@pytest.mark.parametrize(
    ("is_error", "error_type", "expected"),
    [
        (True, "ToolFailure", "ToolFailure"),
        (False, "ModelRetry", "ModelRetry"),  # naming a failure's class makes it one
        (True, None, "tool_error"),
        (True, "", "tool_error"),
        (True, 42, "tool_error"),  # not a name: the generic type, never a crash
        (True, "x" * 300, "tool_error"),  # text, not a class: never a high-cardinality type
        (False, None, None),
        (False, 42, None),
    ],
)
async def test_a_failed_tool_carries_the_class_its_adapter_names(
    otel_telemetry: InMemoryTelemetry, is_error: Any, error_type: Any, expected: str | None
) -> None:
    script = [_call("t1", "lookup"), _Named("t1", is_error, error_type),
              _call("t2", "other"), ToolResult("t2", "fine"), StepBoundary(0)]  # fmt: skip
    await run_script(otel_telemetry, script)

    span = otel_telemetry.span("execute_tool lookup")
    assert (span.attributes or {}).get("error.type") == expected
    if expected is None:
        assert span.status.status_code is not StatusCode.ERROR
        _only_failing(otel_telemetry)
    else:
        assert _reason(span) == expected
        _only_failing(otel_telemetry, "execute_tool lookup")


class Unprintable(LookupError):
    def __str__(self) -> str:
        raise RuntimeError("no text")


@pytest.mark.parametrize("capture", [CAPTURE, None], ids=["capture", "no-capture"])
@pytest.mark.parametrize(
    ("content", "kind", "text"),
    [
        (Boom("no such row"), "Boom", "no such row"),
        (KeyError("alice"), "KeyError", "'alice'"),
        (Unprintable(), "Unprintable", None),
    ],
)
async def test_a_tool_that_returns_its_exception_failed(
    otel_telemetry: InMemoryTelemetry, capture: Any, content: Any, kind: str, text: str | None
) -> None:
    """Frameworks hand back a failed tool's exception as its result (no ``is_error``): it used
    to be recorded as a success whose result was the exception's text. It is a failure of the
    exception's class, with its message as the reason when content is captured."""
    script = [_call("t1", "lookup"), ToolResult("t1", content),
              _call("t2", "other"), ToolResult("t2", "fine"), StepBoundary(0)]  # fmt: skip
    await run_script(otel_telemetry, script, capture_content=capture)

    span = otel_telemetry.span("execute_tool lookup")
    attributes = dict(span.attributes or {})
    assert attributes["error.type"] == kind
    assert attributes["agent_otel.tool.is_error"] is True
    assert "gen_ai.tool.call.result" not in attributes  # the result "if execution was successful"
    assert _reason(span) == (text if capture and text else kind)
    (event,) = _exception_events(otel_telemetry)["execute_tool lookup"]
    assert event["exception.type"] == kind
    _only_failing(otel_telemetry, "execute_tool lookup")
