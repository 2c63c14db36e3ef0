"""The agent span: one run, from the first pull of its stream to its end.

:class:`Run` writes every attribute, metric and ending of an ``invoke_agent`` span, and keeps
the run's totals (usage, cost, anomalies) that end up on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.context import create_key, get_value, set_value
from opentelemetry.context.context import Context
from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel._clock import SECONDS_PER_NS as _NS
from agent_otel._guard import ending
from agent_otel._plain import text_of
from agent_otel.identity._identity import identity_of, make_identity, with_identity

from ._costs import cost_attributes, plus
from ._encodable import checked, id_text
from ._errors import fail_span, mark_error, record_error
from ._settings import RunSettings, run_metric_attributes
from ._span import known_start, start_span
from ._usage import Tokens
from .content._capture import TextBuffer, buffer_for
from .content._previews import set_root_content
from .content._spans import encode, put

MAX_ANOMALY_EVENTS = 16
# A fatal Error of the type a cancelled task's run records: the framework cancelled the run.
CANCELLED = asyncio.CancelledError.__name__
# Set in the context of every span of a run: a run started under it is nested.
_IN_RUN = create_key("agent_otel.in_run")


class Run:
    """One run and its ``invoke_agent {name}`` span (kind INTERNAL, the root of the run).

    ============================================  ======================================
    attribute                                     written
    ============================================  ======================================
    ``gen_ai.operation.name`` (``invoke_agent``)  at start
    ``gen_ai.agent.name``, ``.description``       at start, when known
    ``mlflow.traceTag.mlflow.traceName``          at start, the span's name, when the run
                                                  is its trace's root (MLflow's trace list)
    ``gen_ai.provider.name``                      at start when configured, else at the
                                                  end (the first call's, or ``unknown``);
                                                  not under the head's names
    ``session.id``, ``user.id``,                  at start (the run's identity, also on
    ``gen_ai.conversation.id``                    every span below); the conversation id
                                                  also once the run's source names one,
                                                  when the run has none (``continues``)
    the agent's attributes (``attributes=``,      at start
    an instrumented call's allow-listed params)
    ``gen_ai.input.messages``,                    at start or with the first call's
    ``gen_ai.system_instructions``,               input; ``input.value`` is its preview
    ``input.value``                               (content capture on)
    ``agent_otel.journey.*``, ``.phase``          on markers (a phase also as an event)
    ``gen_ai.output.type``                        on a final event
    ``gen_ai.output.messages``, ``output.value``  on a final event, else the text told
                                                  after the last call (a code agent's
                                                  answer), else the last call's answer
                                                  (content capture on)
    ``gen_ai.response.model``                     on a run-wide usage that names one
    ``gen_ai.request.model``                      at the end: the first call's model
    ``agent_otel.end_reason``                     at the end
    ``agent_otel.usage.*`` totals,                at the end
    ``gen_ai.usage.*`` (run-wide usage only),
    ``agent_otel.usage.cost.*`` totals
    ``agent_otel.response.time_to_first_text``    at the end, when text came
    ``agent_otel.anomalies``, ``.anomaly.kinds``  at the end, when a repair was counted
    ``error.type`` (+ ERROR status)               on a fatal ``Error`` event, or when the
                                                  run ended with an exception
    ============================================  ======================================

    Events: ``agent_otel.anomaly`` (the first 16 repairs), ``agent_otel.phase``,
    ``agent_otel.interrupt``, ``agent_otel.error``, ``exception``. Metrics:
    ``gen_ai.invoke_agent.duration`` at the end (``semconv="head"``:
    ``gen_ai.invocation.duration`` with ``gen_ai.invocation.is_nested``);
    ``gen_ai.invoke_agent.inference_calls`` and ``.tool_calls`` at the end, one record each
    (the calls of this run, not of runs nested in it); ``gen_ai.client.token.usage`` (head:
    ``gen_ai.client.inference.operation.*_tokens``) for usage reported for the whole run.
    """

    __slots__ = (
        "after",
        "anomalies",
        "context",
        "cost",
        "error_type",
        "first_model",
        "first_provider",
        "first_text",
        "has_input",
        "has_output",
        "identity",
        "inference_calls",
        "metric_attributes",
        "nested",
        "now",
        "parent",
        "recording",
        "run_usage",
        "settings",
        "span",
        "start",
        "told_end",
        "tool_calls",
        "usage",
    )

    def __init__(
        self,
        settings: RunSettings,
        parent: Context,
        now: Callable[[], int],
        began: int | None = None,
    ) -> None:
        """``began``: when the run began, if before now (a plain ``run`` recorded once it
        returned); default now."""
        self.settings = settings
        self.now = now
        identity = make_identity(
            settings.session_id, settings.user_id, settings.conversation_id
        ).over(identity_of(parent))
        if identity:  # runs started below inherit the ids through the context
            parent = with_identity(identity, parent)
        self.nested = get_value(_IN_RUN, parent) is True
        self.parent = parent = set_value(_IN_RUN, True, parent)  # every span below: in a run
        self.inference_calls = 0
        self.tool_calls = 0
        # Span attributes only: the ids never reach a metric (cardinality).
        self.identity: dict[str, AttributeValue] = identity.attributes()
        self.start = now() if began is None else began
        # Before the span: starting it may already count a repaired value.
        self.anomalies: dict[str, int] = {}
        self.recording = False
        attributes = settings.run_metric_attributes
        if attributes is None:  # a name or provider that is no exact str: built for this run
            attributes = run_metric_attributes(settings)
        self.metric_attributes = attributes.copy()
        # Attributes known now go in at span start, where samplers and processors see them.
        # What the wrapper's options give is checked once per wrapper (figure 2, per run);
        # the run's identity, from its context, on every run.
        key = _start_key(settings)
        start = settings.starts.get(key) if key is not None else None
        if start is None:
            attributes = {**attributes, **settings.agent_attributes}
            if settings.agent_description:
                attributes[A.AGENT_DESCRIPTION] = settings.agent_description
            if settings.agent_id:  # span only: an id per agent, never a metric dimension
                attributes[A.AGENT_ID] = settings.agent_id
            name = f"{A.OP_INVOKE_AGENT} {settings.agent_name}" if settings.agent_name else None
            start = known_start(
                settings.starts if key is not None else None,
                key,
                name or A.OP_INVOKE_AGENT,
                attributes,
                self.anomaly,
                settings.scrub,
            )
        name, checked_start = start
        # (the options' attributes win over the identity, as a user's attributes should)
        span_attributes = {**checked(self.identity, self.anomaly, settings.scrub), **checked_start}
        if not trace.get_current_span(parent).get_span_context().is_valid:
            span_attributes[A.MLFLOW_TRACE_NAME] = name  # the trace's name in MLflow's list
        self.span = start_span(
            settings.tracer, self.anomaly, settings.scrub, name, parent, SpanKind.INTERNAL,
            span_attributes, self.start,
        )  # fmt: skip
        self.recording = self.span.recording
        self.context = trace.set_span_in_context(self.span.raw, parent)
        self.usage = Tokens()
        self.run_usage: Tokens | None = None
        self.cost: float | None = None
        self.first_provider: str | None = None
        self.first_model: str | None = None
        self.first_text: int | None = None
        self.error_type: str | None = None
        self.told_end = ""  # how the stream told the run ended: an interrupt, a cancel
        self.has_input = self.has_output = False  # the root's content is set (capture on)
        self.after: TextBuffer | None = None  # text told since the last call started
        capture = settings.capture
        if self.recording and capture is not None:
            if settings.input_messages is not None:
                self.input(encode(capture, self.span, "input_messages", settings.input_messages))
            if settings.system_instructions:
                value = [{"type": "text", "content": settings.system_instructions}]
                put(capture, self.span, "system_instructions", A.SYSTEM_INSTRUCTIONS, value)

    # --- what the run counts -----------------------------------------------------------------
    def anomaly(self, kind: str) -> None:
        """A repaired input, counted by kind (the first few also as span events)."""
        count = self.anomalies.get(kind, 0) + 1
        self.anomalies[kind] = count
        if self.recording and sum(self.anomalies.values()) <= MAX_ANOMALY_EVENTS:
            self.span.add_event(A.EVENT_ANOMALY, {A.EVENT_ANOMALY_KIND: kind}, timestamp=self.now())

    def add_cost(self, cost: float | None) -> None:
        self.cost = plus(self.cost, cost)

    def saw_call(self, model: str | None, provider: str | None) -> None:
        """A call started: the first model and provider name the run's."""
        self.first_provider = self.first_provider or provider
        self.first_model = self.first_model or model
        self.inference_calls += 1
        self.after = None  # text told before this call is not the answer

    def continues(self, conversation_id: Any) -> dict[str, AttributeValue] | None:
        """The run continues the conversation ``conversation_id``, which its source learnt only
        once the run had begun (a framework's thread or session, told as the adapter starts;
        a request's ``ConversationCallStart``): its ``gen_ai.conversation.id`` from now on, on
        its span, on the spans started after and on the runs below, unless the run has one
        (given by the caller: it stands). The new attribute, checked, for a span already open
        below; None when nothing changed."""
        if A.CONVERSATION_ID in self.identity:
            return None
        given = make_identity(conversation_id=conversation_id)
        if not given:
            return None
        raw = given.attributes()  # kept as given, checked at each span's start
        self.identity = {**self.identity, **raw}
        self.parent = with_identity(given, self.parent)
        self.context = trace.set_span_in_context(self.span.raw, self.parent)
        added: dict[str, AttributeValue] = checked(raw, self.anomaly, self.settings.scrub)
        self.span.set_checked(added)
        return added

    @contextmanager
    def aside(self) -> Iterator[None]:
        """A call started inside is a side call (``SideCallStart``: a summary, a choice of
        tools): counted as any, but the run's model, provider and input stay its first own
        call's. A context of its own, so the agent's own calls pay nothing for it."""
        kept = self.first_model, self.first_provider, self.has_input
        self.has_input = True  # its messages are not the run's input
        try:
            yield
        finally:
            self.first_model, self.first_provider, self.has_input = kept

    def told(self, text: Any) -> None:
        """Visible text told outside any model call (capture on): kept, as the run's answer
        when no call follows (an agent whose code, not its model, gives the answer)."""
        capture = self.settings.capture
        if capture is None or not self.recording or not isinstance(text, str):
            return
        if self.after is None:
            self.after = buffer_for(capture)
        self.after.add(text)

    @property
    def provider(self) -> str:
        """The run's ``gen_ai.provider.name``: configured, else the first call's."""
        return self.settings.provider or self.first_provider or A.PROVIDER_UNKNOWN

    # --- content -------------------------------------------------------------------------------
    def input(self, encoded: str | None) -> None:
        """The run's input (captured JSON): the invoke messages, else the first call's,
        encoded once for both spans."""
        self.has_input = True
        set_root_content(self.span, self.settings.capture, A.INPUT_MESSAGES, encoded)

    def output(self, encoded: str | None) -> None:
        """The run's answer (captured output-message JSON)."""
        self.has_output = True
        set_root_content(self.span, self.settings.capture, A.OUTPUT_MESSAGES, encoded)

    # --- events of the run ---------------------------------------------------------------------
    def journey(self, name: Any, journey_id: Any) -> None:
        if self.recording and isinstance(name, str):
            self.span.set_attribute(A.JOURNEY_NAME, name)
            if isinstance(journey_id, str):
                self.span.set_attribute(A.JOURNEY_ID, journey_id)

    def phase(self, name: Any) -> None:
        if self.recording and isinstance(name, str):
            self.span.set_attribute(A.PHASE, name)
            self.span.add_event(A.EVENT_PHASE, {A.EVENT_PHASE_NAME: name}, timestamp=self.now())

    def final(self, output_type: str, value: Any) -> None:
        """A terminal answer (``MessageFinal`` / ``StructuredFinal``)."""
        if not self.recording:
            return
        if A.OUTPUT_TYPE not in self.settings.agent_attributes:  # the type requested stands
            self.span.set_attribute(A.OUTPUT_TYPE, output_type)
        if self.settings.capture is not None:
            part = (
                {"type": "text", "content": value}
                if output_type == A.OUTPUT_TYPE_TEXT
                else {"type": "json", "content": value}
            )
            self._answer(part)

    def told_answer(self) -> bool:
        """The run's answer is the text told after its last call, if any (capture on)."""
        if self.after is None or not self.recording:
            return False
        self._answer({"type": "text", "content": self.after.text()})
        return True

    def _answer(self, part: dict[str, Any]) -> None:
        message = [{"role": "assistant", "parts": [part], "finish_reason": "stop"}]
        self.output(encode(self.settings.capture, self.span, "output_messages", message))

    def interrupt(self, interrupt_id: Any, reason: Any) -> None:
        """The run paused on an interrupt: a span event, not an error."""
        self.told_end = A.END_INTERRUPTED
        if self.recording:
            attributes: dict[str, AttributeValue] = {}
            interrupt_text = id_text(interrupt_id, self.anomaly)
            if interrupt_text is not None:
                attributes[A.INTERRUPT_ID] = interrupt_text
            if isinstance(reason, str):
                attributes[A.INTERRUPT_REASON] = reason
            self.span.add_event(A.EVENT_INTERRUPT, attributes, timestamp=self.now())

    def paused(self, error: BaseException, now: int) -> None:
        """The run ended paused on an interrupt (``AgentInterruptedError``): an event."""
        self.span.record_exception(error, timestamp=now)
        self.told_end = A.END_INTERRUPTED

    def add_run_usage(self, tokens: Tokens, model: Any) -> None:
        """Usage reported for the whole run (the Agent contract's ``RunUsage``)."""
        self.usage.add(tokens)
        if self.run_usage is None:
            self.run_usage = Tokens()
        self.run_usage.add(tokens)
        if tokens.cost is not None:  # reported for the whole run: in the run total only
            self.add_cost(tokens.cost)
        # the conventions' token attributes only (no agent name: not one of them); the
        # provider is required on the metric: as the agent span will name it
        attributes: dict[str, Any] = {
            A.OPERATION_NAME: A.OP_INVOKE_AGENT,
            A.PROVIDER_NAME: self.provider,
        }
        requested = self.settings.agent_attributes.get(A.REQUEST_MODEL) or self.first_model
        if requested:  # conditionally required on the metric, "if available"
            attributes[A.REQUEST_MODEL] = requested
        model = text_of(model)
        if model:
            attributes[A.RESPONSE_MODEL] = model
            if self.recording:
                self.span.set_attribute(A.RESPONSE_MODEL, model)
        self.settings.instruments.record_tokens(
            tokens.get("input_tokens"),
            tokens.get("output_tokens"),
            attributes,
            context=self.context,
        )

    # --- errors --------------------------------------------------------------------------------
    def record_error(self, kind: str, description: str | None, fatal: bool, time: int) -> None:
        """An ``Error`` event recorded on the agent span itself (no step holds it)."""
        record_error(self.span, kind, description, fatal, time)

    def fatal(self, kind: str, description: str | None) -> None:
        """A fatal ``Error`` event: the run failed. Of type ``CancelledError``: the framework's
        own cancel stopped it (``agent.cancel()``), and a run whose stream then ends ends
        ``cancelled``, as a cancelled task does (an interrupt told before stands)."""
        self.error_type = kind
        if kind == CANCELLED and not self.told_end:
            self.told_end = A.END_CANCELLED
        mark_error(self.span, kind, description)

    def fail(self, error: BaseException, error_type: str, now: int) -> None:
        """The run ended with ``error``: the exception and ERROR status on its span."""
        self.error_type = error_type
        fail_span(self.span, error, error_type, now)

    # --- the end -------------------------------------------------------------------------------
    def end(self, now: int, end_reason: str) -> None:
        """Write the run's last attributes and its duration metric; end the span at ``now``."""
        attributes = self.metric_attributes
        provider = self.provider
        if self.settings.conventions.agent_provider:
            attributes[A.PROVIDER_NAME] = provider
        if self.error_type is not None:
            attributes[A.ERROR_TYPE] = self.error_type
        instruments = self.settings.instruments
        if instruments.conventions.is_nested:
            attributes[A.INVOCATION_IS_NESTED] = self.nested
        with ending(self.span, now, "agent span end"):
            if self.recording:
                self._describe_end(end_reason, provider)
            attributes = checked(attributes, scrub=self.settings.scrub)  # once for 3 records
            context = self.context  # its span: what the records' exemplars name
            duration = (now - self.start) * _NS
            instruments.agent_duration.histogram.record(duration, attributes, context)
            # the calls per run: the conventions list only the agent's name on these
            calls = {A.AGENT_NAME: attributes[A.AGENT_NAME]} if A.AGENT_NAME in attributes else {}
            instruments.inference_calls.histogram.record(self.inference_calls, calls, context)
            instruments.tool_calls.histogram.record(self.tool_calls, calls, context)

    def _describe_end(self, end_reason: str, provider: str) -> None:
        out: dict[str, AttributeValue] = {}  # one write (figure 2)
        if self.settings.conventions.agent_provider:  # the head's invoke span lists none
            out[A.PROVIDER_NAME] = provider
        if self.first_model and A.REQUEST_MODEL not in self.settings.agent_attributes:
            out[A.REQUEST_MODEL] = self.first_model
        out[A.END_REASON] = end_reason
        out.update(self.usage.total_attributes())
        if self.cost is not None:
            out.update(cost_attributes(self.cost, self.settings.currency))
        if self.run_usage is not None:
            out.update(self.run_usage.semconv_attributes(self.settings.conventions, run=True))
        if self.first_text is not None:
            out[A.TIME_TO_FIRST_TEXT] = (self.first_text - self.start) * _NS
        if self.anomalies:
            out[A.ANOMALIES] = sum(self.anomalies.values())
            out[A.ANOMALY_KINDS] = sorted(self.anomalies)
        self.span.set_attributes(out)


def in_run(context: Context) -> bool:
    """Whether ``context`` is inside a run (a run started in it would be nested): the remote
    side tells a caller's run, sharing the serving process, from the request's own work."""
    return get_value(_IN_RUN, context) is True


def _start_key(settings: RunSettings) -> tuple[str | None, ...] | None:
    """What a run's start is remembered by in ``settings.starts``: the options it is made of,
    when each is an exact ``str`` or None (no hostile ``__eq__`` runs in the memo) and no
    agent attributes were given (``instrument()``'s call parameters: not hashable); else
    None, and the start is checked on every run."""
    name, description, agent_id = settings.agent_name, settings.agent_description, settings.agent_id
    provider = settings.provider if settings.conventions.agent_provider else None
    if settings.agent_attributes or not (
        (name is None or type(name) is str)
        and (provider is None or type(provider) is str)
        and (description is None or type(description) is str)
        and (agent_id is None or type(agent_id) is str)
    ):
        return None
    return (A.OP_INVOKE_AGENT, name, provider, description, agent_id)
