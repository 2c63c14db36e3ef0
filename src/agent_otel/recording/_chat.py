"""The chat span: one model request, from ``LLMCallStart`` to its usage.

:class:`LLMCall` writes every attribute, metric and ending of a ``chat`` span; the recorder
only decides when a call starts, which event goes to which call, and when it ends.
"""

from __future__ import annotations

from typing import Any

from opentelemetry._logs import Logger
from opentelemetry.context.context import Context
from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AttributeValue

from agent_contract.sources._arguments import UNENCODABLE_ARGUMENTS
from agent_contract.sources._parts_sent import UNTRANSLATABLE_PART
from agent_contract.sources._stream import STREAM_INCOMPLETE
from agent_otel import _attributes as A
from agent_otel._clock import SECONDS_PER_NS as _NS
from agent_otel._guard import counted, report
from agent_otel._plain import items_of, text_of
from agent_otel.cost._compute import call_cost
from agent_otel.standdown._context import unsampled_chat

from ._encodable import INT64_MAX, Count, checked, checked_text
from ._errors import MAX_DESCRIPTION, fail_span, record_error
from ._exception_event import emit_operation_exception
from ._output_format import FORMAT_KEYS, output_type
from ._settings import RunSettings
from ._span import current_in, exception_message, exception_type, known_start, start_span
from ._usage import Tokens
from .content._capture import TextBuffer, buffer_for
from .content._inference_event import inference_details
from .content._messages import output_message, server_parts, told_part
from .content._spans import put, put_input
from .content._tool_definitions import tool_definitions

# LLMCallStart.params keys -> request attributes (with the type the registry gives them).
_PARAMS: dict[str, tuple[str, type[float] | type[int] | type[bool]]] = {
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

# The error types the contract's sources tell, as they spell them: STREAM_INCOMPLETE (the
# stream ended before the provider's end marker: the call's span is marked
# agent_otel.incomplete), UNREADABLE_CHUNK (a chunk skipped), UNENCODABLE_ARGUMENTS (a tool
# call's arguments repaired) and UNTRANSLATABLE_PART (a request's content part its API has no
# form for, sent as a text saying so): the three last are counted as repairs
# (agent_otel.anomalies), not recorded as failures of the call.

REPAIRS = frozenset({UNENCODABLE_ARGUMENTS, UNTRANSLATABLE_PART})
"""The ``error_type`` of the ``Error`` events that tell a repair: counted, no failure."""


def request_attributes(
    params: Any, conventions: A.Conventions = A.V1_41
) -> dict[str, AttributeValue]:
    """The request attributes of an ``LLMCallStart.params`` mapping; other keys are ignored.

    ``gen_ai.request.top_k`` is a double under v1.41.1's names and an int under the head's
    (a fractional one is dropped there)."""
    out: dict[str, AttributeValue] = {}
    if not isinstance(params, dict):
        return out
    # a handful of keys: cheaper than probing all we know (a subclass read as the dict it is)
    for key, value in dict.items(params):
        known = _PARAMS.get(key)
        if known is not None:
            attribute, kind = known
            if type(value) is kind:  # the type the attribute takes (the usual case)
                if value != 1 or attribute != A.REQUEST_CHOICE_COUNT:  # n only when not 1
                    out[attribute] = value
            elif (
                kind is not bool
                and (
                    type(value) is int
                    or (type(value) is float and (kind is float or value.is_integer()))
                )
                and (value != 1 or attribute != A.REQUEST_CHOICE_COUNT)
            ):
                out[attribute] = kind(value)  # an int for a double, an integral float for an int
        elif key == "stop":
            if isinstance(value, str):
                out[A.REQUEST_STOP_SEQUENCES] = [value]
            elif isinstance(value, (list, tuple)):  # a subclass as the base type reads it
                items = items_of(value)
                if all(isinstance(s, str) for s in items):
                    out[A.REQUEST_STOP_SEQUENCES] = items
        else:  # (Anthropic's output_config names both a reasoning level and a format)
            if key in _REASONING:
                level = reasoning_level(key, value)
                if level is not None:
                    out[A.REQUEST_REASONING_LEVEL] = level
            if key in FORMAT_KEYS:
                asked = output_type(key, value)
                if asked is not None:
                    out[A.OUTPUT_TYPE] = asked
    if conventions.top_k_int and A.REQUEST_TOP_K in out:
        top_k = out.pop(A.REQUEST_TOP_K)
        if isinstance(top_k, float) and top_k.is_integer():
            out[A.REQUEST_TOP_K] = int(top_k)
    return out


# The request parameter that carries the reasoning level, by provider API: OpenAI Chat
# Completions' ``reasoning_effort``, the Responses API's ``reasoning.effort``, Anthropic's
# ``output_config.effort`` (the head's provider refinements name the last two).
_REASONING = {"reasoning_effort": None, "reasoning": "effort", "output_config": "effort"}


def reasoning_level(key: str, value: Any) -> str | None:
    """``gen_ai.request.reasoning.level``: the exact string sent to the provider, or None."""
    field = _REASONING[key]
    if field is not None:
        value = value.get(field) if isinstance(value, dict) else None
    return value if isinstance(value, str) and value else None


class LLMCall:
    """One model request and its ``chat {model}`` span (kind CLIENT).

    ============================================  ======================================
    attribute                                     written
    ============================================  ======================================
    ``gen_ai.operation.name`` (``chat``)          at start
    ``gen_ai.provider.name``                      at start (``unknown`` when none named)
    ``gen_ai.request.model``                      at start, when known
    ``server.address``, ``server.port``           at start, when the call names its server
                                                  (an ``EndpointCallStart``)
    ``gen_ai.request.*`` (temperature, top_p,     at start, from ``params``
    top_k, max_tokens, penalties, seed,
    choice.count, stop_sequences, stream,
    reasoning.level)
    ``gen_ai.tool.definitions``                   at start, when the call offers tools
                                                  (content capture on)
    ``agent_otel.llm.call_id``                    at start, when the event has one
    ``session.id``, ``user.id``,                  at start (the run's identity)
    ``gen_ai.conversation.id``
    ``gen_ai.input.messages``                     at start (content capture on)
    ``gen_ai.response.id``                        at the response's end
    ``gen_ai.response.model``                     at the response's end, or with late usage
    ``gen_ai.response.finish_reasons``            at the response's end
    ``gen_ai.request.stream`` (True)              at the response's end, when chunks came
    ``gen_ai.response.time_to_first_chunk``       at the response's end, when chunks came
    ``agent_otel.response.chunk_count``,          at the response's end, when chunks came
    ``agent_otel.response.chunk_interval_mean``
    ``agent_otel.response.time_to_first_text``    at the response's end, when text came
    ``agent_otel.incomplete``                     when it never ended by itself, or its
                                                  stream was cut short (an ``Error`` of
                                                  type ``stream_incomplete`` inside it)
    ``error.type`` (+ ERROR status)               on an ``Error`` event inside the call
    ``gen_ai.usage.*`` tokens (the cache write    at the span's end, with usage
    count by the run's ``semconv`` names)
    ``gen_ai.usage.cost.*``                       at the span's end, when priced
    ``gen_ai.output.messages``                    at the span's end (content capture on)
    ============================================  ======================================

    Metrics (v1.41.1's names; ``semconv="head"``: ``gen_ai.client.inference.*``), with the
    span's operation, provider, request model and server:
    ``gen_ai.client.operation.duration`` and (chunks) ``time_to_first_chunk`` at the
    response's end; ``gen_ai.client.token.usage`` and ``agent_otel.client.cost`` at the span's
    end; ``time_per_output_chunk`` per chunk when the chunk metric is on. With content events
    on, a ``gen_ai.client.inference.operation.details`` log event just before the span ends.

    Two endings: :meth:`end_response` (the response is over: it is timed and described) and
    :meth:`end` (the span ends at the response's end time, once its usage came or cannot come
    anymore; everything the response told is written then, with the usage, in one write).
    """

    __slots__ = (
        "chunks",
        "closing",
        "context",
        "count",
        "definitions",
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
        "response_end",
        "response_id",
        "response_model",
        "settings",
        "span",
        "start",
        "start_attributes",
        "told_room",
        "tool_calls",
        "usage",
    )

    def __init__(
        self,
        settings: RunSettings,
        count: Count,
        parent: Context,
        identity: dict[str, AttributeValue],
        call_id: str | None,
        model: str | None,
        provider: str | None,
        params: Any,
        now: int,
        tools: Any = None,
    ) -> None:
        self.settings = settings
        self.count = count
        scrub = settings.scrub
        # The name and the attributes of a model and provider: checked once per wrapper (each
        # an exact str or None, as the recorder reads them: no hostile __eq__ runs in the key).
        key = (A.OP_CHAT, model, provider)
        start = settings.starts.get(key)
        if start is None:
            attributes: dict[str, AttributeValue] = {
                A.OPERATION_NAME: A.OP_CHAT,
                A.PROVIDER_NAME: provider or A.PROVIDER_UNKNOWN,
            }
            if model:
                attributes[A.REQUEST_MODEL] = model
            attributes.update(settings.endpoint)  # the server a call names (metrics too)
            name = f"{A.OP_CHAT} {model}" if model else A.OP_CHAT
            start = known_start(settings.starts, key, name, attributes, count, scrub)
        name, attributes = start
        self.metric_attributes = dict(attributes)  # no ids: not metric attributes
        # Everything known now is a start attribute, where samplers and processors see it.
        request: dict[str, AttributeValue] = {}
        try:
            request = request_attributes(params, settings.conventions)
        except Exception:
            report("chat span start")
        if call_id is not None:
            request[A.LLM_CALL_ID] = call_id
        request.update(identity)
        span_attributes = {**attributes, **checked(request, count, scrub)}
        self.span = start_span(
            settings.tracer, count, scrub, name, parent, SpanKind.CLIENT, span_attributes, now
        )
        self.recording = self.span.recording
        self.start = now
        self.response_end: int | None = None
        self.first_chunk: int | None = None
        if A.REQUEST_STREAM in request and request[A.REQUEST_STREAM] is False:
            # not streamed: no chunk is timed (0, never a time), as the conventions time the
            # chunks of streaming requests only, whatever text the call tells
            self.first_chunk = 0
        self.first_text: int | None = None
        self.last_chunk = 0
        self.chunks = 0
        self.usage: Tokens | None = None
        self.response_id: str | None = None
        self.response_model: str | None = None
        self.closing: dict[str, AttributeValue] = {}  # the response's, written at the end
        # Where its span is current: made by the run when it first activates it (or at the
        # end, for the records: their exemplars name this span, not the consumer's)
        self.context: Context | None = None
        self.finish_reason: str | None = None
        self.error_type: str | None = None
        self.input: str | None = None  # the captured input messages (JSON), for the event
        self.output_json: str | None = None  # the captured output messages, for the run
        self.tool_calls: list[dict[str, Any]] = []  # their parts, as told (told_part)
        self.output: TextBuffer | None = None  # the response's text and reasoning (capture on)
        self.reasoning: TextBuffer | None = None
        self.told_room = 0  # the bytes the told tool calls' arguments may take (capture on)
        if not self.recording:
            self.span.raw = unsampled_chat(self.span.raw)  # its end, known to the stand-down
            self.logger: Logger | None = None  # set when content events are on
            self.start_attributes: dict[str, AttributeValue] = self.metric_attributes
            return
        self.logger, self.start_attributes = settings.logger, span_attributes
        capture = settings.capture
        if capture is not None:
            self.definitions: str | None = None  # the offered tools' (JSON), for the event
            self.output, self.reasoning = buffer_for(capture), buffer_for(capture)
            self.told_room = capture.max_bytes
            with counted("chat span start", count):
                self.capture_tools(tools, params)

    def capture_tools(self, tools: Any, params: Any) -> None:
        """The tools the request offers (content capture on): its ``params["tools"]`` (where
        every SDK source puts them), or a ``tools`` field of a look-alike event, as
        ``gen_ai.tool.definitions``."""
        if tools is None and isinstance(params, dict):
            tools = dict.get(params, "tools")
        definitions = tool_definitions(tools)
        if definitions:
            self.definitions = put(
                self.settings.capture,
                self.span,
                "tool_definitions",
                A.TOOL_DEFINITIONS,
                definitions,
            )

    def capture_input(self, messages: Any) -> str | None:
        """The request's messages (content capture on): on the span, kept for the event."""
        self.input = put_input(self.settings.capture, self.span, messages)
        return self.input

    def chunk(self, now: int, text: Any, visible: bool) -> None:
        """A text (``visible``) or reasoning delta, in full: timing and captured content."""
        if self.first_chunk is None:
            self.first_chunk = now  # recorded when the response ends, with the response model
        elif self.settings.chunk_metric and self.first_chunk:
            self.settings.instruments.time_per_output_chunk.record(
                (now - self.last_chunk) * _NS, self.metric_attributes, self.context
            )
        self.last_chunk = now
        self.chunks += 1
        if visible:
            if self.first_text is None:
                self.first_text = now
            if self.output is not None and isinstance(text, str):
                self.output.add(text)
        elif self.reasoning is not None and isinstance(text, str):
            self.reasoning.add(text)

    def add_tool_call(self, call_id: Any, name: Any, arguments: Any) -> None:
        """A tool call the model asked for, for the captured output message: copied now,
        as it was told."""
        if self.output is not None:
            try:
                part, used = told_part(call_id, name, arguments, self.told_room, self.span.scrub)
                self.told_room -= used
                self.tool_calls.append(part)
            except Exception:
                report("content capture", self.count)

    def add_server_tool_call(self, call_id: Any, name: Any, call: Any, response: Any) -> None:
        """A tool the provider ran (``server_tool_call`` and its response), for the captured
        output message: copied now, within the room the told tool calls share."""
        if self.output is not None:
            try:
                parts, used = server_parts(
                    call_id, name, call, response, self.told_room, self.span.scrub
                )
                self.told_room -= used
                self.tool_calls += parts
            except Exception:
                report("content capture", self.count)

    def respond(self, model: Any, finish_reason: Any, response_id: Any) -> None:
        """What ``LLMCallEnd`` tells about the response."""
        # Each as a plain str (text_of: only for what is not one, the usual str costs no call).
        if type(model) is not str:
            model = text_of(model)
        if model:  # checked once, for the span and the metrics
            self.response_model = checked_text(model, self.count, self.settings.scrub)
        if type(finish_reason) is not str:
            finish_reason = text_of(finish_reason)
        if finish_reason is not None:
            self.finish_reason = finish_reason
        if type(response_id) is not str:
            response_id = text_of(response_id)
        if response_id is not None:
            self.response_id = response_id

    def add_usage(self, tokens: Tokens, model: Any) -> None:
        """A ``Usage`` for this call (its model, if the response named none, is the response's:
        on the span even when the usage came after the response ended)."""
        if self.usage is None:
            self.usage = tokens  # read for this event alone: the call's to keep
        else:
            self.usage.add(tokens)
        if self.response_model is None:
            model = text_of(model)
            if model:
                self.response_model = checked_text(model, self.count, self.settings.scrub)

    def record_error(self, kind: str, description: str | None, fatal: bool, time: int) -> None:
        """An ``Error`` event inside the call: on the span, ``error.type`` on its metric, and
        the conventions' exception event."""
        record_error(self.span, kind, description, fatal, time)
        self.error_type = kind
        message = self.span.cut_text(description, MAX_DESCRIPTION) if description else None
        emit_operation_exception(self.settings.error_logger, self.span, kind, message, time)
        if kind == STREAM_INCOMPLETE:  # the response never ended by itself: cut short
            self.closing[A.INCOMPLETE] = True

    def fail(self, error: BaseException, error_type: str, now: int) -> None:
        """The run failed during the call: the exception and ERROR status on its span, and
        the conventions' exception event."""
        self.error_type = error_type
        fail_span(self.span, error, error_type, now)
        message = exception_message(error, self.count, self.span.scrub)[1]
        kind = exception_type(error)  # fully qualified, as the span's exception event says
        emit_operation_exception(self.settings.error_logger, self.span, kind, message, now)

    def end_response(self, now: int, *, incomplete: bool = False) -> None:
        """The response is over: time it and describe it (the span may still wait for usage)."""
        self.response_end = now
        settings = self.settings
        instruments = settings.instruments
        attributes = self.metric_attributes
        if self.response_model is not None:  # checked where it came in, as the start's were
            attributes[A.RESPONSE_MODEL] = self.response_model
        try:  # both records checked once (the start's attributes), under one guard
            context = self.context
            if context is None:  # never current (a run with the context pointed elsewhere)
                context = self.context = current_in(self.span)
            if self.first_chunk:  # streamed (the metric's attributes have no error.type)
                ttfc = (self.first_chunk - self.start) * _NS
                instruments.time_to_first_chunk.histogram.record(ttfc, attributes, context)
            if self.error_type is not None:
                attributes[A.ERROR_TYPE] = self.error_type
                attributes = checked(attributes, scrub=settings.scrub)
            duration = (now - self.start) * _NS
            instruments.operation_duration.histogram.record(duration, attributes, context)
        except Exception:
            report("metric record")
        self.metric_attributes = attributes
        if not self.recording:
            return
        # Numbers and flags of ours, written with what the response told, its usage and cost
        # in one write at the end: the SDK's per-write cost dominates (figure 2).
        out = self.closing
        if self.first_chunk:  # a chunk of a request not said to be unstreamed came
            if A.REQUEST_STREAM not in self.start_attributes:  # (said: on the span already)
                out[A.REQUEST_STREAM] = True  # chunks arrived: the request was streamed
            out[A.RESPONSE_TIME_TO_FIRST_CHUNK] = (self.first_chunk - self.start) * _NS
            out[A.CHUNK_COUNT] = self.chunks
            if self.chunks > 1:
                # The end of the response is the last boundary: n chunks, n intervals after
                # the first chunk. Timing only the first chunk and the end keeps the clock off
                # the per-chunk path (exact per-chunk timing: the opt-in chunk metric).
                out[A.CHUNK_INTERVAL_MEAN] = (now - self.first_chunk) / self.chunks * _NS
        if self.first_text is not None:
            out[A.TIME_TO_FIRST_TEXT] = (self.first_text - self.start) * _NS
        if incomplete:
            out[A.INCOMPLETE] = True

    def end(self) -> float | None:
        """Record usage, cost and output; end the span at the response's end time.

        Returns the call's cost (for the step and run totals), None when it has none.
        """
        try:  # whatever raises while describing it, the span ends (then without a cost)
            return self._describe_end()
        except Exception:
            report("chat span end")
            return None
        finally:
            self.span.end(self.response_end)  # never raises

    def _describe_end(self) -> float | None:
        settings = self.settings
        usage = self.usage
        cost: float | None = None
        # One write, each value checked on its own: the events' strings here, the model
        # where it came in, token counts where they were read (a sum past int64 excepted),
        # the rest numbers and flags of ours (figure 2: a pass over all of them cost more).
        written, self.closing = self.closing, {}
        count, scrub = self.count, settings.scrub
        if self.response_model is not None:
            written[A.RESPONSE_MODEL] = self.response_model
        if self.response_id is not None:
            written[A.RESPONSE_ID] = checked_text(self.response_id, count, scrub)
        if self.finish_reason is not None:
            written[A.RESPONSE_FINISH_REASONS] = [checked_text(self.finish_reason, count, scrub)]
        try:  # the response's, usage and cost in one write; a failing price costs the cost only
            if usage is not None:
                attributes = self.metric_attributes
                if self.response_end is None:  # end_response has not checked them
                    attributes = checked(attributes, scrub=settings.scrub)
                settings.instruments.record_tokens(
                    usage.counts.get("input_tokens"),
                    usage.counts.get("output_tokens"),
                    dict(attributes),
                    attributes_checked=True,
                    context=self.context,
                )
                tokens = usage.semconv_attributes(settings.conventions)
                if tokens and max(usage.counts.values()) > INT64_MAX:  # summed past int64
                    tokens = checked(tokens, count)
                written.update(tokens)
                cost = self._cost(usage, written)
        finally:
            self.span.set_checked(written)
        capture = settings.capture
        if capture is not None and self.output is not None and self.reasoning is not None:
            try:  # a failing hook or value drops the content only
                message = output_message(
                    self.output.text(), self.reasoning.text(), self.tool_calls, self.finish_reason
                )
                encoded = capture.encode("output_messages", message, self.span.scrub, self.count)
            except Exception:
                report("content capture", self.count)
                encoded = None
            self.output_json = encoded
            if encoded is not None and capture.spans:
                self.span.set_attribute(A.OUTPUT_MESSAGES, encoded)
            if self.logger is not None:
                try:  # after the span's last attribute, before it ends: the event copies them
                    content = {
                        A.INPUT_MESSAGES: self.input,
                        A.OUTPUT_MESSAGES: encoded,
                        A.TOOL_DEFINITIONS: self.definitions,
                    }
                    record = inference_details(
                        self.span, self.start_attributes, content, self.span.scrub
                    )
                    self.logger.emit(record)
                except Exception:
                    report("content event")
        return cost

    def _cost(self, usage: Tokens, written: dict[str, AttributeValue]) -> float | None:
        """Price the call (provider's figure first): on the counter, and into ``written`` (the
        span's last attributes, checked: the currency is the price table's)."""
        settings = self.settings
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
        settings.instruments.cost.add(amount, attributes, self.context)
        written[A.COST_AMOUNT] = amount
        priced = {A.COST_CURRENCY: currency, A.COST_SOURCE: source}
        written.update(checked(priced, self.count, settings.scrub))
        return amount
