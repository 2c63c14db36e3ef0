"""RunRecorder: the state machine of one agent run.

It is fed calls (by :mod:`agent_otel.recording._read`) and reads a clock; it knows nothing about
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
- ``event_after_terminal``: recorded as usual after a terminal (``final``) event or a fatal
  ``Error``; counted for new work (chunks, LLM call starts, tool calls and results, finals),
  not for events that close or account for what was open (call end, usage, step boundary).
- ``unknown_event``: passed through, nothing recorded.
- ``open_at_step_boundary``: calls and tool calls still open at a ``StepBoundary`` end with
  the step, marked incomplete (no span outlives its parent).
- ``unusable_id`` (unhashable, or ``str()`` raising), ``unparseable_arguments``,
  ``unencodable_string``, ``integer_out_of_range``: hostile values, see ``docs/hostile.md``.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel._guard import ending, guarded

from ._costs import cost_attributes
from ._errors import error_type_of, mark_error, record_error
from ._llm import LLMEvents
from ._tools import ToolEvents

_NS = 1e-9


class RunRecorder(LLMEvents, ToolEvents):
    """Spans and metrics of one run; see the module docstring for the rules."""

    __slots__ = ()

    # --- errors, markers, terminals ------------------------------------------------------------
    def error_event(self, message: Any, error_type: Any, fatal: Any) -> None:
        kind = error_type if isinstance(error_type, str) and error_type else "agent_error"
        description = message if isinstance(message, str) else None
        fatal = fatal is True
        inner = self._inner
        if not self.defer_error(kind, description, fatal):  # between steps: wait for its step
            record_error(inner, kind, description, fatal, self._now())
            if self.current_call is not None and inner is self.current_call.span:
                self.current_call.error_type = kind
        if fatal:
            self._error_type = kind
            mark_error(self.agent, kind, description)

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
        self.mark_terminal()
        if self.recording:
            self.agent.set_attribute(A.OUTPUT_TYPE, output_type)
            if self.s.capture is not None:
                part = (
                    {"type": "text", "content": value}
                    if output_type == A.OUTPUT_TYPE_TEXT
                    else {"type": "json", "content": value}
                )
                message = [{"role": "assistant", "parts": [part], "finish_reason": "stop"}]
                self.root_output(self._encode(self.agent, "output_messages", message))

    def interrupt(self, interrupt_id: Any, reason: Any) -> None:
        """The run paused on an interrupt: a span event, not an error.

        Several interrupts in one run are normal (``_drain`` collects them all), so only an
        interrupt after another kind of terminal counts as an anomaly.
        """
        if self.terminal and not self._interrupted:
            self.anomaly("event_after_terminal")
        self.mark_terminal()
        self._interrupted = True
        if self.recording:
            attributes: dict[str, AttributeValue] = {}
            interrupt_text = self.read_id(interrupt_id)
            if interrupt_text is not None:
                attributes[A.INTERRUPT_ID] = interrupt_text
            if isinstance(reason, str):
                attributes[A.INTERRUPT_REASON] = reason
            self.agent.add_event(A.EVENT_INTERRUPT, attributes, timestamp=self._now())

    # --- the end -------------------------------------------------------------------------------
    def finish(self, end_reason: str, error: BaseException | None = None) -> None:
        """End every span exactly once; ``error`` is the exception the run ended with.

        Each part below is isolated: whatever fails while describing one span (an exception
        whose ``__str__`` raises, a value, a hook, a meter) costs that description only, and
        every span still ends, innermost first, at the run's end time.
        """
        now = self._now()
        with guarded("run finish"):
            end_reason, error = self._record_error(end_reason, error, now)
        error_type = self._error_type if error is not None else None
        self.end_open(now, error_type)
        pending, self._pending = self._pending, []
        for call in pending:
            self.settle(call)
        if self.s.capture is not None and not self._has_output and self._last_call is not None:
            with guarded("run finish"):  # no final event: the last call's answer is the run's
                self.root_output(self._last_call.output_json)
        self.end_steps(now)
        if self._interrupted and end_reason == A.END_EXHAUSTED:
            end_reason = A.END_INTERRUPTED
        self._end_agent(now, end_reason)

    def _record_error(
        self, end_reason: str, error: BaseException | None, now: int
    ) -> tuple[str, BaseException | None]:
        if error is not None and end_reason == A.END_INTERRUPTED:
            # A run paused on an interrupt (AgentInterruptedError): an event, not a failure.
            self.agent.record_exception(error, timestamp=now)
            self._interrupted = True
            return end_reason, None
        if error is not None:
            error_type = error_type_of(error)
            self._error_type = error_type
            if self.current_call is not None:
                self.current_call.error_type = error_type
            inner = self._inner
            for span in (inner,) if inner is self.agent else (inner, self.agent):
                span.record_exception(error, timestamp=now)
                mark_error(span, error_type, None)
        return end_reason, error

    def _end_agent(self, now: int, end_reason: str) -> None:
        attributes = self.metric_attributes
        provider = self.s.provider or self._first_provider or A.PROVIDER_UNKNOWN
        attributes[A.PROVIDER_NAME] = provider
        if self._error_type is not None:
            attributes[A.ERROR_TYPE] = self._error_type
        with ending(self.agent, now, "agent span end"):
            self._describe_agent_end(now, end_reason, provider, attributes)

    def _describe_agent_end(
        self, now: int, end_reason: str, provider: str, attributes: dict[str, AttributeValue]
    ) -> None:
        agent = self.agent
        if self.recording:
            agent.set_attribute(A.PROVIDER_NAME, provider)
            if self._first_model and A.REQUEST_MODEL not in self.s.agent_attributes:
                agent.set_attribute(A.REQUEST_MODEL, self._first_model)
            agent.set_attribute(A.END_REASON, end_reason)
            agent.set_attributes(self.usage.total_attributes())
            agent.set_attributes(cost_attributes(self.costs.run, self.s.currency))
            if self._run_usage is not None:
                agent.set_attributes(self._run_usage.semconv_attributes())
            if self.first_text is not None:
                agent.set_attribute(A.TIME_TO_FIRST_TEXT, (self.first_text - self.start) * _NS)
            if self.anomalies:
                agent.set_attribute(A.ANOMALIES, sum(self.anomalies.values()))
                agent.set_attribute(A.ANOMALY_KINDS, sorted(self.anomalies))
        self.s.instruments.agent_duration.record((now - self.start) * _NS, attributes)
