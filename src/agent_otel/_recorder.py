"""RunRecorder: the state machine of one agent run.

It is fed calls (by :mod:`agent_otel._read`) and reads a clock; it knows nothing about
streams. It owns the agent span, the current step span, the open LLM calls (by call id) and
tool calls (by tool call id), usage attribution and the anomaly count, and it keeps
:attr:`RunRecorder.context` pointing at the innermost sensible span for the wrapper to
activate while the agent computes its next event.

Repairs of malformed streams (each counted under ``agent_otel.anomalies`` by kind):

- ``llm_end_without_start``: an ``LLMCallEnd`` matching no open call is ignored.
- ``duplicate_llm_call_id`` / ``duplicate_tool_call_id``: the older span with that id ends,
  marked incomplete, and the new one takes the id.
- ``missing_tool_call_id``: a ``ToolCall`` without id gets a private one; a ``ToolResult``
  without id closes the only open tool call if there is exactly one.
- ``tool_result_without_call``: a zero-length tool span records the result, marked incomplete.
- ``usage_without_call``: counted in the step and run totals only.
- ``event_after_terminal``: recorded as usual after a terminal (``final``) event.
- ``unknown_event``: passed through, nothing recorded.

A usage that arrives after its ``LLMCallEnd`` is still recorded on that chat span: an ended
call without usage keeps its span open (ending it later at the ``LLMCallEnd`` time) until its
usage comes, the run ends, or more than ``MAX_PENDING`` such calls wait.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.context.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from . import _attributes as A
from . import _clock
from ._calls import LLMCall, ToolRun, request_attributes
from ._messages import input_messages, parse_arguments
from ._settings import RunSettings
from ._usage import Tokens

MAX_PENDING = 8
MAX_ANOMALY_EVENTS = 16
_NS = 1e-9


class RunRecorder:
    """Spans and metrics of one run; see the module docstring for the rules."""

    def __init__(self, settings: RunSettings, parent: Context) -> None:
        self.s = settings
        self._now: Callable[[], int] = _clock.now_ns
        self._parent = parent
        self.start = self._now()
        attributes: dict[str, AttributeValue] = {A.OPERATION_NAME: A.OP_INVOKE_AGENT}
        if settings.agent_name:
            attributes[A.AGENT_NAME] = settings.agent_name
        if settings.provider:
            attributes[A.PROVIDER_NAME] = settings.provider
        name = f"invoke_agent {settings.agent_name}" if settings.agent_name else "invoke_agent"
        self.agent = settings.tracer.start_span(
            name, parent, SpanKind.INTERNAL, attributes, start_time=self.start
        )
        self.recording = self.agent.is_recording()
        self._agent_ctx = trace.set_span_in_context(self.agent, parent)
        self.metric_attributes = attributes.copy()
        self._step: Span | None = None
        self._step_ctx = self._agent_ctx
        self._step_index = 0
        self._step_usage = Tokens()
        self._calls: dict[object, LLMCall] = {}
        self.current_call: LLMCall | None = None
        self._pending: list[LLMCall] = []
        self._tools: dict[object, ToolRun] = {}
        self._keys = 0
        self.usage = Tokens()
        self._run_usage: Tokens | None = None
        self._first_provider: str | None = None
        self._first_model: str | None = None
        self.first_text: int | None = None
        self.terminal = False
        self._interrupted = False
        self._error_type: str | None = None
        self.anomalies: dict[str, int] = {}
        self._inner: Span = self.agent
        self.context: Context = self._agent_ctx
        if self.recording:
            self._describe_agent()

    # --- structure ---------------------------------------------------------------------------
    def _describe_agent(self) -> None:
        s, span = self.s, self.agent
        if s.agent_description:
            span.set_attribute(A.AGENT_DESCRIPTION, s.agent_description)
        if s.conversation_id:
            span.set_attribute(A.CONVERSATION_ID, s.conversation_id)
        span.set_attributes(s.agent_attributes)
        if s.capture is not None:
            if s.input_messages is not None:
                self._capture(span, "input_messages", A.INPUT_MESSAGES, s.input_messages)
            if s.system_instructions:
                value = [{"type": "text", "content": s.system_instructions}]
                self._capture(span, "system_instructions", A.SYSTEM_INSTRUCTIONS, value)

    def _capture(self, span: Span, kind: Any, key: str, value: Any) -> None:
        capture = self.s.capture
        if capture is None or not span.is_recording():
            return
        if kind == "input_messages":
            value = input_messages(value)
        encoded = capture.encode(kind, value)
        if encoded is not None:
            span.set_attribute(key, encoded)

    def _refresh(self) -> None:
        """Point :attr:`context` at the innermost sensible span."""
        if self._calls:
            call = next(reversed(self._calls.values()))
            self.current_call, inner = call, call.span
        else:
            self.current_call = None
            if len(self._tools) == 1:
                inner = next(iter(self._tools.values())).span
            else:
                inner = self._step or self.agent
        if inner is not self._inner:
            self._inner = inner
            self.context = trace.set_span_in_context(inner, self._parent)

    def ensure_step(self) -> None:
        """Open the step span with the first event of a step (when step spans are on)."""
        if self._step is not None or not self.s.step_spans:
            return
        self._step = self.s.tracer.start_span(
            f"{A.STEP_SPAN_NAME} {self._step_index}",
            self._agent_ctx,
            SpanKind.INTERNAL,
            {A.STEP_INDEX: self._step_index},
            start_time=self._now(),
        )
        self._step_ctx = trace.set_span_in_context(self._step, self._parent)
        self._refresh()

    def step_boundary(self, index: Any) -> None:
        step = self._step
        self._step_index += 1
        if step is None:  # a boundary with nothing before it makes no step
            return
        if step.is_recording():
            if isinstance(index, int) and not isinstance(index, bool):
                step.set_attribute(A.STEP_INDEX, index)
                step.update_name(f"{A.STEP_SPAN_NAME} {index}")
            step.set_attributes(self._step_usage.total_attributes())
        step.end(end_time=self._now())
        self._step, self._step_ctx, self._step_usage = None, self._agent_ctx, Tokens()
        self._refresh()

    def anomaly(self, kind: str) -> None:
        count = self.anomalies.get(kind, 0) + 1
        self.anomalies[kind] = count
        if self.recording and sum(self.anomalies.values()) <= MAX_ANOMALY_EVENTS:
            self.agent.add_event(A.EVENT_ANOMALY, {"kind": kind}, timestamp=self._now())

    def _key(self) -> object:
        self._keys += 1
        return ("agent_otel", self._keys)

    # --- text --------------------------------------------------------------------------------
    def chunk(self, text: Any, visible: bool) -> None:
        """A text or reasoning delta: the hot path, no span or metric call after the first."""
        if self.terminal:
            self.anomaly("event_after_terminal")
        if self._step is None and self.s.step_spans:
            self.ensure_step()
        call = self.current_call
        if call is None:
            if visible and self.first_text is None:
                self.first_text = self._now()
            return
        now = self._now()
        if call.first_chunk is None:
            call.first_chunk = now
            self.s.instruments.time_to_first_chunk.record(
                (now - call.start) * _NS, call.metric_attributes
            )
        elif self.s.chunk_metric:
            self.s.instruments.time_per_output_chunk.record(
                (now - call.last_chunk) * _NS, call.metric_attributes
            )
        call.last_chunk = now
        call.chunks += 1
        if visible:
            if call.first_text is None:
                call.first_text = now
                if self.first_text is None:
                    self.first_text = now
            if call.output is not None and isinstance(text, str):
                call.output.add(text)
        elif call.reasoning is not None and isinstance(text, str):
            call.reasoning.add(text)

    # --- LLM calls -----------------------------------------------------------------------------
    def llm_start(
        self, model: Any, provider: Any, call_id: Any, params: Any, messages: Any
    ) -> None:
        self.ensure_step()
        now = self._now()
        key: object = call_id if call_id is not None else self._key()
        old = self._calls.pop(key, None)
        if old is not None:
            self.anomaly("duplicate_llm_call_id")
            old.close(now, self.s.instruments, incomplete=True)
            old.finalize(self.s.instruments, self.s.capture)
        model = model if isinstance(model, str) and model else None
        provider = provider if isinstance(provider, str) and provider else self.s.provider
        self._first_provider = self._first_provider or provider
        self._first_model = self._first_model or model
        attributes: dict[str, AttributeValue] = {
            A.OPERATION_NAME: A.OP_CHAT,
            A.PROVIDER_NAME: provider or A.PROVIDER_UNKNOWN,
        }
        if model:
            attributes[A.REQUEST_MODEL] = model
        span = self.s.tracer.start_span(
            f"{A.OP_CHAT} {model}" if model else A.OP_CHAT,
            self._step_ctx,
            SpanKind.CLIENT,
            attributes,
            start_time=now,
        )
        call = LLMCall(span, now, attributes.copy(), self.s.capture)
        if call.recording:
            span.set_attributes(request_attributes(params))
            if call_id is not None:
                span.set_attribute(A.LLM_CALL_ID, str(call_id))
            if messages is not None:
                self._capture(span, "input_messages", A.INPUT_MESSAGES, messages)
        self._calls[key] = call
        self._refresh()

    def llm_end(self, model: Any, call_id: Any, finish_reason: Any, response_id: Any) -> None:
        if call_id is not None:
            call = self._calls.pop(call_id, None)
        elif self._calls:
            call = self._calls.pop(next(reversed(self._calls)))
        else:
            call = None
        if call is None:
            self.anomaly("llm_end_without_start")
            return
        if isinstance(model, str) and model:
            call.response_model = model
        if isinstance(finish_reason, str):
            call.finish_reason = finish_reason
        if call.recording and isinstance(response_id, str):
            call.span.set_attribute(A.RESPONSE_ID, response_id)
        self._end_call(call)
        self._refresh()

    def _end_call(self, call: LLMCall, *, incomplete: bool = False) -> None:
        call.close(self._now(), self.s.instruments, incomplete=incomplete)
        if call.usage is not None:
            call.finalize(self.s.instruments, self.s.capture)
            return
        self._pending.append(call)
        if len(self._pending) > MAX_PENDING:
            self._pending.pop(0).finalize(self.s.instruments, self.s.capture)

    def usage_event(self, tokens: Tokens, model: Any) -> None:
        self.usage.add(tokens)
        self._step_usage.add(tokens)
        call = self.current_call
        pending = call is None
        if call is None and self._pending:
            call = self._pending.pop()
        if call is None:
            self.anomaly("usage_without_call")
            return
        if call.usage is None:
            call.usage = Tokens()
        call.usage.add(tokens)
        if pending:
            if call.response_model is None and isinstance(model, str) and model:
                call.response_model = model
                if call.recording:
                    call.span.set_attribute(A.RESPONSE_MODEL, model)
            call.finalize(self.s.instruments, self.s.capture)
        elif call.response_model is None and isinstance(model, str) and model:
            call.response_model = model

    def run_usage(self, tokens: Tokens, model: Any) -> None:
        """Usage reported for the whole run (the Agent contract's ``RunUsage``)."""
        self.usage.add(tokens)
        if self._run_usage is None:
            self._run_usage = Tokens()
        self._run_usage.add(tokens)
        attributes = dict(self.metric_attributes)
        if isinstance(model, str) and model:
            attributes[A.RESPONSE_MODEL] = model
            if self.recording:
                self.agent.set_attribute(A.RESPONSE_MODEL, model)
        for name, token_type in (
            ("input_tokens", A.TOKEN_TYPE_INPUT),
            ("output_tokens", A.TOKEN_TYPE_OUTPUT),
        ):
            value = tokens.get(name)
            if value is not None:
                attributes[A.TOKEN_TYPE] = token_type
                self.s.instruments.token_usage.record(value, attributes)

    # --- tools -----------------------------------------------------------------------------------
    def tool_call(self, call_id: Any, name: Any, arguments: Any, raw: Any) -> None:
        if self.terminal:
            self.anomaly("event_after_terminal")
        self.ensure_step()
        now = self._now()
        key: object
        if call_id is None:
            self.anomaly("missing_tool_call_id")
            key = self._key()
        else:
            key = call_id
            old = self._tools.pop(key, None)
            if old is not None:
                self.anomaly("duplicate_tool_call_id")
                old.end(now, self.s.instruments, incomplete=True)
        tool = self._start_tool(name, call_id, now)
        if self.s.capture is not None and arguments is not None:
            value = parse_arguments(arguments)
            self._capture(tool.span, "tool_arguments", A.TOOL_CALL_ARGUMENTS, value)
        if self.current_call is not None and self.current_call.output is not None:
            self.current_call.tool_calls.append(raw)
        self._tools[key] = tool
        self._refresh()

    def _start_tool(self, name: Any, call_id: Any, now: int) -> ToolRun:
        name = name if isinstance(name, str) and name else "unknown"
        attributes: dict[str, AttributeValue] = {
            A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.TOOL_NAME: name,
            A.TOOL_TYPE: A.TOOL_TYPE_FUNCTION,
        }
        if call_id is not None:
            attributes[A.TOOL_CALL_ID] = str(call_id)
        span = self.s.tracer.start_span(
            f"{A.OP_EXECUTE_TOOL} {name}",
            self._step_ctx,
            SpanKind.INTERNAL,
            attributes,
            start_time=now,
        )
        return ToolRun(span, now, name)

    def tool_result(self, call_id: Any, name: Any, content: Any, is_error: Any) -> None:
        if self.terminal:
            self.anomaly("event_after_terminal")
        now = self._now()
        tool = self._tools.pop(call_id, None) if call_id is not None else None
        if tool is None and call_id is None and len(self._tools) == 1:
            self.anomaly("missing_tool_call_id")
            tool = self._tools.pop(next(iter(self._tools)))
        incomplete = tool is None
        if tool is None:
            self.anomaly("tool_result_without_call")
            self.ensure_step()
            tool = self._start_tool(name, call_id, now)
        if self.s.capture is not None:
            self._capture(tool.span, "tool_result", A.TOOL_CALL_RESULT, content)
        if is_error is True and tool.span.is_recording():
            tool.span.set_attribute(A.TOOL_IS_ERROR, True)
        error_type = "tool_error" if is_error is True else None
        tool.end(now, self.s.instruments, error_type=error_type, incomplete=incomplete)
        self._refresh()

    # --- errors, markers, terminals ------------------------------------------------------------
    def error_event(self, message: Any, error_type: Any, fatal: Any) -> None:
        kind = error_type if isinstance(error_type, str) and error_type else "agent_error"
        inner = self._inner
        _mark_error(inner, kind, message if isinstance(message, str) else None)
        if inner.is_recording():
            inner.add_event(
                A.EVENT_ERROR,
                {A.ERROR_TYPE: kind, A.ERROR_FATAL: fatal is True},
                timestamp=self._now(),
            )
        if self.current_call is not None and inner is self.current_call.span:
            self.current_call.error_type = kind
        if fatal is True:
            self._error_type = kind
            if inner is not self.agent:
                _mark_error(self.agent, kind, message if isinstance(message, str) else None)

    def journey(self, name: Any, journey_id: Any) -> None:
        if self.recording and isinstance(name, str):
            self.agent.set_attribute(A.JOURNEY_NAME, name)
            if isinstance(journey_id, str):
                self.agent.set_attribute(A.JOURNEY_ID, journey_id)

    def phase(self, name: Any) -> None:
        if self.recording and isinstance(name, str):
            self.agent.set_attribute(A.PHASE, name)
            self.agent.add_event(A.EVENT_PHASE, {"name": name}, timestamp=self._now())

    def final(self, output_type: str, value: Any) -> None:
        """A terminal answer (``MessageFinal`` / ``StructuredFinal``)."""
        if self.terminal:
            self.anomaly("event_after_terminal")
        self.terminal = True
        if self.recording:
            self.agent.set_attribute(A.OUTPUT_TYPE, output_type)
            if self.s.capture is not None:
                part = (
                    {"type": "text", "content": value}
                    if output_type == A.OUTPUT_TYPE_TEXT
                    else {"type": "json", "content": value}
                )
                message = [{"role": "assistant", "parts": [part], "finish_reason": "stop"}]
                self._capture(self.agent, "output_messages", A.OUTPUT_MESSAGES, message)

    def interrupt(self, interrupt_id: Any, reason: Any) -> None:
        """The run paused on an interrupt: a span event, not an error."""
        if self.terminal:
            self.anomaly("event_after_terminal")
        self.terminal = True
        self._interrupted = True
        if self.recording:
            attributes: dict[str, AttributeValue] = {A.INTERRUPT_ID: str(interrupt_id)}
            if isinstance(reason, str):
                attributes[A.INTERRUPT_REASON] = reason
            self.agent.add_event(A.EVENT_INTERRUPT, attributes, timestamp=self._now())

    # --- the end -------------------------------------------------------------------------------
    def finish(self, end_reason: str, error: BaseException | None = None) -> None:
        """End every span exactly once; ``error`` is the exception the run ended with."""
        now = self._now()
        error_type = type(error).__qualname__ if error is not None else None
        if error is not None:
            inner = self._inner
            for span in (inner,) if inner is self.agent else (inner, self.agent):
                if span.is_recording():
                    span.record_exception(error, timestamp=now)
                _mark_error(span, error_type, None)
            if self.current_call is not None:
                self.current_call.error_type = error_type
            self._error_type = error_type
        instruments, capture = self.s.instruments, self.s.capture
        for call in reversed(self._calls.values()):
            call.close(now, instruments, incomplete=True)
            call.finalize(instruments, capture)
        self._calls.clear()
        for call in self._pending:
            call.finalize(instruments, capture)
        self._pending.clear()
        for tool in self._tools.values():
            tool.end(now, instruments, error_type=error_type, incomplete=True)
        self._tools.clear()
        if self._step is not None:
            self.step_boundary(None)
        if self._interrupted and end_reason == A.END_EXHAUSTED:
            end_reason = A.END_INTERRUPTED
        self._end_agent(now, end_reason)

    def _end_agent(self, now: int, end_reason: str) -> None:
        attributes = self.metric_attributes
        provider = self.s.provider or self._first_provider or A.PROVIDER_UNKNOWN
        attributes[A.PROVIDER_NAME] = provider
        if self._error_type is not None:
            attributes[A.ERROR_TYPE] = self._error_type
        agent = self.agent
        if self.recording:
            agent.set_attribute(A.PROVIDER_NAME, provider)
            if self._first_model and A.REQUEST_MODEL not in self.s.agent_attributes:
                agent.set_attribute(A.REQUEST_MODEL, self._first_model)
            agent.set_attribute(A.END_REASON, end_reason)
            agent.set_attributes(self.usage.total_attributes())
            if self._run_usage is not None:
                agent.set_attributes(self._run_usage.semconv_attributes())
            if self.first_text is not None:
                agent.set_attribute(A.TIME_TO_FIRST_TEXT, (self.first_text - self.start) * _NS)
            if self.anomalies:
                agent.set_attribute(A.ANOMALIES, sum(self.anomalies.values()))
                agent.set_attribute(A.ANOMALY_KINDS, sorted(self.anomalies))
        self.s.instruments.agent_duration.record((now - self.start) * _NS, attributes)
        agent.end(end_time=now)


def _mark_error(span: Span, error_type: str | None, description: str | None) -> None:
    if span.is_recording():
        if error_type is not None:
            span.set_attribute(A.ERROR_TYPE, error_type)
        span.set_status(Status(StatusCode.ERROR, description))
