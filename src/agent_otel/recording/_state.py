"""The state of one run: agent span, step span, open calls and tools, usage, anomalies.

:class:`RunState` opens the agent span and keeps :attr:`RunState.context` pointing at the
innermost sensible span (open LLM call, else the only open tool call, else the step, else the
agent) for the wrapper to activate while the agent computes its next event. The event handlers
live in :mod:`._llm`, :mod:`._tools` and :mod:`._recorder`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.context.context import Context
from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel import _clock
from agent_otel._guard import ending, guarded
from agent_otel.identity._identity import identity_of, make_identity, with_identity
from agent_otel.standdown._context import stand_down

from ._calls import LLMCall, ToolRun
from ._content_state import RunContent
from ._costs import CostTotals, cost_attributes
from ._encodable import id_text, in_range
from ._errors import PendingError, record_error
from ._settings import RunSettings
from ._span import GuardedSpan, start_span
from ._usage import Tokens

MAX_ANOMALY_EVENTS = 16


class RunState(RunContent):
    """The state of one run and the structure every event handler shares."""

    __slots__ = ()  # the attributes are declared in RunSlots (via RunContent)

    def __init__(self, settings: RunSettings, parent: Context) -> None:
        self.s = settings
        self._now: Callable[[], int] = _clock.now_ns
        identity = make_identity(
            settings.session_id, settings.user_id, settings.conversation_id
        ).over(identity_of(parent))
        if identity:  # runs started below inherit the ids through the context
            parent = with_identity(identity, parent)
        self._parent = parent
        # Span attributes only: the ids never reach a metric (cardinality).
        self.identity: dict[str, AttributeValue] = identity.attributes()
        self.start = self._now()
        # Before the agent span: starting it may already count a repaired value.
        self.anomalies: dict[str, int] = {}
        self.recording = False
        attributes: dict[str, AttributeValue] = {A.OPERATION_NAME: A.OP_INVOKE_AGENT}
        if settings.agent_name:
            attributes[A.AGENT_NAME] = settings.agent_name
        if settings.provider:
            attributes[A.PROVIDER_NAME] = settings.provider
        self.metric_attributes = attributes.copy()
        attributes.update(self.identity)
        # Attributes known now go in at span start, where samplers and processors see them.
        span_attributes = {**attributes, **settings.agent_attributes}
        if settings.agent_description:
            span_attributes[A.AGENT_DESCRIPTION] = settings.agent_description
        name = f"invoke_agent {settings.agent_name}" if settings.agent_name else "invoke_agent"
        self.agent = self.start_span(name, parent, SpanKind.INTERNAL, span_attributes, self.start)
        self.recording = self.agent.is_recording()
        self._agent_ctx = trace.set_span_in_context(self.agent.raw, parent)
        self._step: GuardedSpan | None = None
        self._step_ctx = self._agent_ctx
        self._step_index = 0
        # The current segment's usage: the open step's, else bookkeeping awaiting its step.
        self._step_usage = Tokens()
        self._step_errors: list[PendingError] = []  # errors awaiting their step, likewise
        # The step ended by a StepBoundary, held open for the bookkeeping that follows it.
        self._closed: GuardedSpan | None = None
        self._closed_end = 0
        self._closed_usage = Tokens()
        self.costs = CostTotals()
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
        # Fast paths for deltas, valid until the structure changes (see LLMEvents.chunk).
        self._text_fast = False
        self._reasoning_fast = False
        self._counting: LLMCall | None = None
        self._interrupted = False
        self._has_input = self._has_output = False  # the root's content is set (capture on)
        self._last_call: LLMCall | None = None
        self._error_type: str | None = None
        self._inner: GuardedSpan = self.agent
        self.context: Context = self._agent_ctx
        if self.recording:
            self._describe_agent()

    # --- structure ---------------------------------------------------------------------------
    def start_span(
        self,
        name: str,
        parent: Context,
        kind: SpanKind,
        attributes: dict[str, AttributeValue],
        start_time: int,
    ) -> GuardedSpan:
        """The one way the run starts a span: guarded, encodable, repairs counted."""
        return start_span(self.s.tracer, self.anomaly, name, parent, kind, attributes, start_time)

    def mark_terminal(self) -> None:
        """A terminal event was seen: what follows is counted as an anomaly."""
        self.terminal = True
        self._text_fast = self._reasoning_fast = False

    def _refresh(self) -> None:
        """Point :attr:`context` at the innermost sensible span (the structure changed)."""
        self._text_fast = self._reasoning_fast = False
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
            if inner is self.agent:
                self.context = self._agent_ctx
            elif inner is self._step:
                self.context = self._step_ctx
            else:
                self.context = trace.set_span_in_context(inner.raw, self._parent)
                if self.current_call is not None and self.s.stand_down_providers:
                    self.context = stand_down(self.context, inner.raw)

    # --- steps: what collect() calls a step ------------------------------------------------
    # A segment (events between StepBoundary events) is a step when it holds step content:
    # text, reasoning, an LLM call, a tool call or an orphan tool result (each handler of
    # those calls ensure_step). A segment of bookkeeping only (usage, errors, call ends,
    # markers) makes no step: its usage and errors join the step before it, which is why a
    # step span is held open past its boundary (it still ends at the boundary's time).
    def ensure_step(self) -> None:
        """Step content arrived: open the step span (when step spans are on)."""
        if self._step is not None or not self.s.step_spans:
            return
        self._end_closed_step()
        now = self._now()
        errors = self._step_errors
        self._step = self.start_span(
            f"{A.STEP_SPAN_NAME} {self._step_index}",
            self._agent_ctx,
            SpanKind.INTERNAL,
            # No gen_ai operation fits a step: this is the kind Phoenix and MLflow show.
            {A.STEP_INDEX: self._step_index, A.OI_SPAN_KIND: A.OI_KIND_CHAIN, **self.identity},
            min(now, errors[0].time) if errors else now,
        )
        self._flush_errors(self._step)
        self._step_ctx = trace.set_span_in_context(self._step.raw, self._parent)
        self._refresh()

    def end_open(self, now: int, error_type: str | None = None) -> None:
        """End every open LLM call and tool call, innermost first, marked incomplete."""
        instruments = self.s.instruments
        calls, self._calls = list(self._calls.values()), {}
        for call in reversed(calls):
            with guarded("run finish"):
                call.close(now, instruments, incomplete=True)
            self.settle(call)
        tools, self._tools = list(self._tools.values()), {}
        for tool in tools:
            tool.end(now, instruments, error_type=error_type, incomplete=True)
        self._refresh()

    def step_boundary(self, index: Any, now: int | None = None) -> None:
        """Close the segment: a step is held until the next one opens (it ends at ``now``,
        default: the clock's now); what is still open in it ends now."""
        step = self._step
        if step is None:  # bookkeeping only: it joins the step before (none: the run)
            if self._closed is not None:
                self._closed_usage.add(self._step_usage)
                self._flush_errors(self._closed)
            self.costs.join_closed(self._closed is not None)
            self._step_usage = Tokens()
            return
        self._step_index += 1
        now = self._now() if now is None else now
        if self._calls or self._tools:  # no span outlives its parent: they end with the step
            self.anomaly("open_at_step_boundary")
            self.end_open(now)
        with guarded("step end"):
            if step.is_recording() and type(index) is int and in_range(index):
                step.set_attribute(A.STEP_INDEX, index)
                step.update_name(f"{A.STEP_SPAN_NAME} {index}")
        self._closed, self._closed_end, self._closed_usage = step, now, self._step_usage
        self.costs.close_step()
        self._step, self._step_ctx, self._step_usage = None, self._agent_ctx, Tokens()
        self._refresh()

    def end_steps(self, now: int) -> None:
        """At the run's end: the trailing segment closes as at a boundary; every step ends.

        Errors that never found a step (a run without step content) make one step, as they
        do in ``collect()``.
        """
        self.step_boundary(None, now)
        self.step_boundary(None, now)  # trailing bookkeeping joins the last step
        if self._step_errors and self.s.step_spans:
            self.ensure_step()
            self.step_boundary(None, now)
        self._end_closed_step()

    def defer_error(self, kind: str, description: str | None, fatal: bool) -> bool:
        """Hold an ``Error`` met between steps until its step is known; False: record it now."""
        if self._step is not None or not self.s.step_spans or self._inner is not self.agent:
            return False
        self._step_errors.append(PendingError(kind, description, fatal, self._now()))
        return True

    def _flush_errors(self, span: GuardedSpan) -> None:
        errors, self._step_errors = self._step_errors, []
        for error in errors:
            record_error(span, error.kind, error.description, error.fatal, error.time)

    def _end_closed_step(self) -> None:
        step, self._closed = self._closed, None
        if step is not None:
            with ending(step, self._closed_end, "step end"):
                if step.is_recording():
                    step.set_attributes(self._closed_usage.total_attributes())
                    step.set_attributes(cost_attributes(self.costs.closed, self.s.currency))

    def settle(self, call: LLMCall) -> None:
        """Finalize an LLM call and add its cost to the segment's and the run's totals."""
        cost = call.finalize(self.s)
        if cost is not None:
            self.costs.add(cost)

    def anomaly(self, kind: str) -> None:
        count = self.anomalies.get(kind, 0) + 1
        self.anomalies[kind] = count
        if self.recording and sum(self.anomalies.values()) <= MAX_ANOMALY_EVENTS:
            self.agent.add_event(A.EVENT_ANOMALY, {"kind": kind}, timestamp=self._now())

    def _key(self) -> object:
        self._keys += 1
        return ("agent_otel", self._keys)

    def read_id(self, raw: Any) -> str | None:
        """An event's call id as text, repaired and counted (see :func:`._encodable.id_text`)."""
        return id_text(raw, self.anomaly)
