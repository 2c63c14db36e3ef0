"""The open spans of a run below the step: LLM calls and tool executions.

Plain state holders; :class:`~agent_otel.recording._recorder.RunRecorder` decides when they open and
close. Each knows how to write its own attributes and metrics when it ends, so the recorder
never spells an attribute of a chat or tool span itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry._logs import Logger
from opentelemetry.trace import Status, StatusCode
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel._guard import ending, report
from agent_otel.cost._compute import call_cost

from ._content import ContentCapture, TextBuffer
from ._events import inference_details
from ._messages import output_message
from ._metrics import Instruments
from ._settings import RunSettings
from ._span import GuardedSpan
from ._usage import Tokens

_NS = 1e-9

# LLMCallStart.params keys -> request attributes (with the type the registry gives them).
_PARAMS: dict[str, tuple[str, type]] = {
    "temperature": (A.REQUEST_TEMPERATURE, float),
    "top_p": (A.REQUEST_TOP_P, float),
    "top_k": (A.REQUEST_TOP_K, float),
    "max_tokens": (A.REQUEST_MAX_TOKENS, int),
    "max_completion_tokens": (A.REQUEST_MAX_TOKENS, int),
    "frequency_penalty": (A.REQUEST_FREQUENCY_PENALTY, float),
    "presence_penalty": (A.REQUEST_PRESENCE_PENALTY, float),
    "seed": (A.REQUEST_SEED, int),
    "n": (A.REQUEST_CHOICE_COUNT, int),
    "stream": (A.REQUEST_STREAM, bool),
}


def request_attributes(params: Any) -> dict[str, AttributeValue]:
    """The request attributes of an ``LLMCallStart.params`` mapping; other keys are ignored."""
    out: dict[str, AttributeValue] = {}
    if not isinstance(params, dict):
        return out
    for key, value in params.items():  # a handful of keys: cheaper than probing all we know
        known = _PARAMS.get(key)
        if known is not None:
            attribute, kind = known
            if kind is bool:
                if type(value) is bool:
                    out[attribute] = value
            elif type(value) is int or (
                type(value) is float and (kind is float or value.is_integer())
            ):
                if attribute == A.REQUEST_CHOICE_COUNT and value == 1:
                    continue  # the conventions: set it only when it is not 1
                out[attribute] = kind(value)
        elif key == "stop":
            if isinstance(value, str):
                out[A.REQUEST_STOP_SEQUENCES] = [value]
            elif isinstance(value, (list, tuple)) and all(isinstance(s, str) for s in value):
                out[A.REQUEST_STOP_SEQUENCES] = list(value)
    return out


class LLMCall:
    """One model request: its chat span, chunk timing, usage and (opt-in) output."""

    __slots__ = (
        "chunks",
        "end",
        "error_type",
        "finish_reason",
        "first_chunk",
        "first_text",
        "input",
        "last_chunk",
        "logger",
        "metric_attributes",
        "output",
        "output_json",
        "reasoning",
        "recording",
        "response_model",
        "span",
        "start",
        "start_attributes",
        "stream_declared",
        "tool_calls",
        "usage",
    )

    def __init__(
        self,
        span: GuardedSpan,
        start: int,
        metric_attributes: dict[str, AttributeValue],
        capture: ContentCapture | None,
    ) -> None:
        self.span = span
        self.recording = span.is_recording()
        self.start = start
        self.end: int | None = None
        self.metric_attributes = metric_attributes
        self.first_chunk: int | None = None
        self.first_text: int | None = None
        self.last_chunk = 0
        self.chunks = 0
        self.usage: Tokens | None = None
        self.response_model: str | None = None
        self.finish_reason: str | None = None
        self.error_type: str | None = None
        self.stream_declared = False
        self.input: str | None = None  # the captured input messages (JSON), for the event
        self.output_json: str | None = None  # the captured output messages, for the run
        self.logger: Logger | None = None  # set when content events are on
        self.start_attributes: Mapping[str, AttributeValue] = metric_attributes
        keep = capture is not None and self.recording
        self.output = TextBuffer(capture.max_bytes) if keep and capture else None
        self.reasoning = TextBuffer(capture.max_bytes) if keep and capture else None
        self.tool_calls: list[Any] = []

    def close(self, now: int, instruments: Instruments, *, incomplete: bool = False) -> None:
        """The response is over: time it and describe it (the span may still wait for usage)."""
        self.end = now
        attributes = self.metric_attributes
        if self.response_model is not None:
            attributes[A.RESPONSE_MODEL] = self.response_model
        if self.first_chunk is not None:  # the metric's attributes have no error.type
            ttfc = (self.first_chunk - self.start) * _NS
            instruments.time_to_first_chunk.record(ttfc, attributes)
        if self.error_type is not None:
            attributes[A.ERROR_TYPE] = self.error_type
        instruments.operation_duration.record((now - self.start) * _NS, attributes)
        if not self.recording:
            return
        span = self.span
        if self.response_model is not None:
            span.set_attribute(A.RESPONSE_MODEL, self.response_model)
        if self.finish_reason is not None:
            span.set_attribute(A.RESPONSE_FINISH_REASONS, [self.finish_reason])
        if self.first_chunk is not None:
            if not self.stream_declared:  # chunks arrived: the request was streamed
                span.set_attribute(A.REQUEST_STREAM, True)
            span.set_attribute(
                A.RESPONSE_TIME_TO_FIRST_CHUNK, (self.first_chunk - self.start) * _NS
            )
            span.set_attribute(A.CHUNK_COUNT, self.chunks)
            if self.chunks > 1:
                # The end of the response is the last boundary: n chunks, n intervals after
                # the first chunk. Timing only the first chunk and the end keeps the clock off
                # the per-chunk path (exact per-chunk timing: the opt-in chunk metric).
                mean = (now - self.first_chunk) / self.chunks
                span.set_attribute(A.CHUNK_INTERVAL_MEAN, mean * _NS)
        if self.first_text is not None:
            span.set_attribute(A.TIME_TO_FIRST_TEXT, (self.first_text - self.start) * _NS)
        if incomplete:
            span.set_attribute(A.INCOMPLETE, True)

    def finalize(self, settings: RunSettings) -> float | None:
        """Record usage and cost where they happened; end the span at the response's end time.

        Returns the call's cost (for the step and run totals), None when it has none.
        """
        cost: float | None = None
        with ending(self.span, self.end, "chat span end"):
            cost = self._describe_end(settings)
        return cost  # noqa: RET504 (ending() may swallow an error: then no cost)

    def _describe_end(self, settings: RunSettings) -> float | None:
        instruments, capture = settings.instruments, settings.capture
        usage = self.usage
        cost: float | None = None
        if usage is not None:
            attributes = dict(self.metric_attributes)
            for name, token_type in (
                ("input_tokens", A.TOKEN_TYPE_INPUT),
                ("output_tokens", A.TOKEN_TYPE_OUTPUT),
            ):
                value = usage.get(name)
                if value is not None:
                    attributes[A.TOKEN_TYPE] = token_type
                    instruments.token_usage.record(value, attributes)
            if self.recording:
                self.span.set_attributes(usage.semconv_attributes())
            cost = self._cost(settings, usage)
        if capture is not None and self.output is not None and self.reasoning is not None:
            try:  # as in RunState._capture: a failing hook or value drops the content only
                message = output_message(
                    self.output.text(), self.reasoning.text(), self.tool_calls, self.finish_reason
                )
                encoded = capture.encode("output_messages", message)
            except Exception:
                report("content capture")
                encoded = None
            self.output_json = encoded
            if encoded is not None and capture.spans:
                self.span.set_attribute(A.OUTPUT_MESSAGES, encoded)
            if self.logger is not None:
                try:  # after the span's last attribute, before it ends: the event copies them
                    content = {A.INPUT_MESSAGES: self.input, A.OUTPUT_MESSAGES: encoded}
                    record = inference_details(self.span, self.start_attributes, content)
                    self.logger.emit(record)
                except Exception:
                    report("content event")
        return cost

    def _cost(self, settings: RunSettings, usage: Tokens) -> float | None:
        """Price the call (provider's figure first), put it on the span and the counter."""
        model = self.response_model or self.metric_attributes.get(A.REQUEST_MODEL)
        found = call_cost(
            settings.prices, model if isinstance(model, str) else None, usage.counts, usage.cost
        )
        if found is None:
            return None
        amount, source = found
        currency = settings.currency
        attributes = dict(self.metric_attributes)
        attributes[A.COST_CURRENCY] = currency
        attributes[A.COST_SOURCE] = source
        settings.instruments.cost.add(amount, attributes)
        if self.recording:
            self.span.set_attributes(
                {A.COST_AMOUNT: amount, A.COST_CURRENCY: currency, A.COST_SOURCE: source}
            )
        return amount


class ToolRun:
    """One tool execution: its span and what the metric needs."""

    __slots__ = ("metric_attributes", "name", "span", "start")

    def __init__(self, span: GuardedSpan, start: int, name: str) -> None:
        self.span = span
        self.start = start
        self.name = name
        self.metric_attributes: dict[str, AttributeValue] = {
            A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.TOOL_NAME: name,
        }

    def end(
        self,
        now: int,
        instruments: Instruments,
        *,
        error_type: str | None = None,
        incomplete: bool = False,
    ) -> None:
        with ending(self.span, now, "tool span end"):
            if error_type is not None:
                self.metric_attributes[A.ERROR_TYPE] = error_type
                if self.span.is_recording():
                    self.span.set_attribute(A.ERROR_TYPE, error_type)
                    self.span.set_status(Status(StatusCode.ERROR))
            if incomplete and self.span.is_recording():
                self.span.set_attribute(A.INCOMPLETE, True)
            instruments.tool_duration.record((now - self.start) * _NS, self.metric_attributes)


class RunSlots:
    """The attribute names of a run's state (``RunState`` and its handlers), as slots.

    Slots, not a ``__dict__``: the run state has more than 30 attribute names, more than
    CPython shares instance-dict keys for, so every open run carried a full instance dict
    (about 1.3 KiB of the ~5 KiB agent-otel held per open run; docs/export.md). A new
    attribute of ``RunState`` goes here too: mypy reports an assignment to a name missing
    here, and an ``AttributeError`` would at run time.
    """

    __slots__ = (
        "_agent_ctx", "_calls", "_closed", "_closed_end", "_closed_usage", "_counting",
        "_error_type", "_first_model", "_first_provider", "_has_input", "_has_output", "_inner",
        "_interrupted", "_keys", "_last_call", "_now",
        "_parent", "_pending", "_reasoning_fast", "_run_usage", "_step", "_step_ctx",
        "_step_errors", "_step_index", "_step_usage", "_text_fast", "_tools", "agent", "anomalies",
        "context", "costs", "current_call", "first_text", "identity", "metric_attributes",
        "recording", "s", "start", "terminal", "usage",
    )  # fmt: skip
