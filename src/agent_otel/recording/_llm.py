"""LLM-call events: chunks, call start and end, usage attribution.

A usage that arrives after its ``LLMCallEnd`` is still recorded on that chat span: an ended
call without usage keeps its span open (ending it later at the ``LLMCallEnd`` time) until its
usage comes, the run ends, or more than ``MAX_PENDING`` such calls wait.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel._guard import guarded
from agent_otel.standdown._openai_v2 import guard_openai_v2

from ._calls import LLMCall, request_attributes
from ._state import RunState
from ._usage import Tokens

MAX_PENDING = 8
_NS = 1e-9


class LLMEvents(RunState):
    """Handlers for text/reasoning deltas, ``LLMCallStart``/``End`` and usage."""

    __slots__ = ()

    # --- text --------------------------------------------------------------------------------
    def text_delta(self, event: Any) -> None:
        """A ``TextDelta`` / ``MessageDelta``: the hot path.

        Once a call's first visible chunk is handled and nothing else needs the text (no
        content capture, no per-chunk metric), a delta only counts the chunk (an unsampled
        call not even that): no clock, no span or metric call. Any change of structure drops
        back to :meth:`chunk`.
        """
        if self._text_fast:
            counting = self._counting
            if counting is not None:
                counting.chunks += 1
            return
        self.chunk(getattr(event, "text", None), True)

    def reasoning_delta(self, event: Any) -> None:
        """A ``ReasoningDelta`` / ``ReasoningStep``: as :meth:`text_delta`, for reasoning."""
        if self._reasoning_fast:
            counting = self._counting
            if counting is not None:
                counting.chunks += 1
            return
        self.chunk(getattr(event, "text", None), False)

    def chunk(self, text: Any, visible: bool) -> None:
        """A text or reasoning delta, in full: timing, first text, captured content."""
        if self.terminal:
            self.anomaly("event_after_terminal")
        if self._step is None and self.s.step_spans:
            self.ensure_step()
        call = self.current_call
        if call is None:
            if visible and self.first_text is None:
                self.first_text = self._now()
            # Outside a call only the first visible text matters.
            self._fast(visible, not self.terminal)
            return
        now = self._now()
        if call.first_chunk is None:
            call.first_chunk = now  # recorded when the call closes, with the response model
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
        buffer = call.output if visible else call.reasoning
        self._fast(visible, not self.terminal and buffer is None and not self.s.chunk_metric)

    def _fast(self, visible: bool, allowed: bool) -> None:
        call = self.current_call
        self._counting = call if call is not None and call.recording else None
        if visible:
            self._text_fast = allowed
        else:
            self._reasoning_fast = allowed

    # --- LLM calls -----------------------------------------------------------------------------
    def llm_start(
        self, model: Any, provider: Any, call_id: Any, params: Any, messages: Any
    ) -> None:
        if self.terminal:
            self.anomaly("event_after_terminal")
        self.ensure_step()
        if self.s.stand_down_providers:
            guard_openai_v2()
        now = self._now()
        call_id = self.read_id(call_id)
        key: object = call_id if call_id is not None else self._key()
        old = self._calls.pop(key, None)
        if old is not None:
            self.anomaly("duplicate_llm_call_id")
            old.close(now, self.s.instruments, incomplete=True)
            self.settle(old)
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
        metric_attributes = attributes.copy()  # no ids: not metric attributes
        attributes.update(self.identity)
        # Everything known now is a start attribute, where samplers and processors see it.
        request: dict[str, AttributeValue] = {}
        with guarded("chat span start"):
            request = request_attributes(params)
        span_attributes = {**attributes, **request}
        if call_id is not None:
            span_attributes[A.LLM_CALL_ID] = call_id
        span = self.start_span(
            f"{A.OP_CHAT} {model}" if model else A.OP_CHAT,
            self._step_ctx,
            SpanKind.CLIENT,
            span_attributes,
            now,
        )
        call = LLMCall(span, now, metric_attributes, self.s.capture)
        call.stream_declared = A.REQUEST_STREAM in request
        self._calls[key] = call  # tracked before anything else can fail
        self._last_call = call
        self._refresh()
        if call.recording:
            call.logger, call.start_attributes = self.s.logger, span_attributes
            if messages is not None:
                with guarded("chat span start"):
                    call.input = self._capture(span, "input_messages", A.INPUT_MESSAGES, messages)
                    if not self._has_input:
                        self.root_input(call.input)

    def llm_end(self, model: Any, call_id: Any, finish_reason: Any, response_id: Any) -> None:
        call_id = self.read_id(call_id)
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
            self.settle(call)
            return
        self._pending.append(call)
        if len(self._pending) > MAX_PENDING:
            self.settle(self._pending.pop(0))

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
            self.settle(call)
        elif call.response_model is None and isinstance(model, str) and model:
            call.response_model = model

    def run_usage(self, tokens: Tokens, model: Any) -> None:
        """Usage reported for the whole run (the Agent contract's ``RunUsage``)."""
        self.usage.add(tokens)
        if self._run_usage is None:
            self._run_usage = Tokens()
        self._run_usage.add(tokens)
        if tokens.cost is not None:  # reported for the whole run: in the run total only
            self.costs.add(tokens.cost, step=False)
        attributes = dict(self.metric_attributes)
        # gen_ai.provider.name is required on the metric: as the agent span will name it
        provider = self.s.provider or self._first_provider or A.PROVIDER_UNKNOWN
        attributes[A.PROVIDER_NAME] = provider
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
