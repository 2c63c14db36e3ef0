"""The hand-written baseline of figure 2: the same OTel SDK calls agent-otel makes for one run,
written out inline for the event shapes the workload uses (what a careful user would write to
trace this stream by hand: each metric recorded in its span's context, so that its exemplar
links the span), with no dispatch tables, state machine or per-pull activation.

``fig2_sdk_parity.check_equivalent`` compares its spans and metric points with the library's.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry import trace
from opentelemetry.context.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import SpanKind, TracerProvider

from agent_contract.protocol import LLMCallEnd, LLMCallStart, TextDelta, ToolCall, ToolResult, Usage
from agent_otel import _attributes as A

_NS = 1e-9


class Instruments:
    def __init__(self, meter_provider: MeterProvider) -> None:
        meter = meter_provider.get_meter("manual")
        hist = meter.create_histogram
        self.operation_duration = hist(
            A.METRIC_OPERATION_DURATION,
            unit="s",
            explicit_bucket_boundaries_advisory=A.DURATION_BUCKETS,
        )
        self.token_usage = hist(
            A.METRIC_TOKEN_USAGE,
            unit="{token}",
            explicit_bucket_boundaries_advisory=A.TOKEN_BUCKETS,
        )
        self.time_to_first_chunk = hist(
            A.METRIC_TIME_TO_FIRST_CHUNK,
            unit="s",
            explicit_bucket_boundaries_advisory=A.TIME_TO_FIRST_CHUNK_BUCKETS,
        )
        self.agent_duration = hist(
            A.METRIC_AGENT_DURATION,
            unit="s",
            explicit_bucket_boundaries_advisory=A.DURATION_BUCKETS,
        )
        self.tool_duration = hist(
            A.METRIC_TOOL_DURATION, unit="s", explicit_bucket_boundaries_advisory=A.DURATION_BUCKETS
        )
        self.inference_calls = hist(
            A.METRIC_AGENT_INFERENCE_CALLS,
            unit="{inference_call}",
            explicit_bucket_boundaries_advisory=A.CALL_COUNT_BUCKETS,
        )
        self.tool_calls = hist(
            A.METRIC_AGENT_TOOL_CALLS,
            unit="{tool_call}",
            explicit_bucket_boundaries_advisory=A.CALL_COUNT_BUCKETS,
        )


async def manual(
    stream: AsyncIterator[Any],
    tracer_provider: TracerProvider,
    instruments: Instruments,
    agent_name: str,
) -> AsyncIterator[Any]:
    tracer = tracer_provider.get_tracer("manual")
    now = time.time_ns
    parent = Context()
    start = now()
    agent_attrs: dict[str, Any] = {A.OPERATION_NAME: A.OP_INVOKE_AGENT, A.AGENT_NAME: agent_name}
    metric_attrs = dict(agent_attrs)
    name = f"invoke_agent {agent_name}"
    agent_attrs[A.MLFLOW_TRACE_NAME] = name  # a root run: the trace's name in MLflow's list
    agent = tracer.start_span(name, parent, SpanKind.INTERNAL, agent_attrs, start_time=start)
    agent_ctx = trace.set_span_in_context(agent, parent)
    agent.set_attributes({})
    step = None
    step_attrs = {A.STEP_INDEX: 0, A.OI_SPAN_KIND: A.OI_KIND_CHAIN}
    step_ctx = agent_ctx
    step_in = step_out = run_in = run_out = 0
    first_provider = first_model = None
    run_first_text = None
    call = call_attrs = call_ctx = None
    call_start = first_chunk = 0
    chunks = 0
    call_in = call_out = None
    tools: dict[str, tuple[Any, int, dict[str, Any], Context]] = {}
    n_calls = n_tools = 0
    async for event in stream:
        cls = event.__class__
        if cls is TextDelta:
            if chunks == 0:
                first_chunk = t = now()
                if run_first_text is None:
                    run_first_text = t
            chunks += 1
        elif cls is LLMCallStart:
            if step is None:
                step = tracer.start_span(
                    "step 0", agent_ctx, SpanKind.INTERNAL, step_attrs, start_time=now()
                )
                step_ctx = trace.set_span_in_context(step, parent)
            call_start = now()
            n_calls += 1
            first_provider = first_provider or event.provider
            first_model = first_model or event.model
            attrs: dict[str, Any] = {
                A.OPERATION_NAME: A.OP_CHAT,
                A.PROVIDER_NAME: event.provider,
                A.REQUEST_MODEL: event.model,
            }
            call_attrs = dict(attrs)
            params = event.params
            attrs[A.REQUEST_TEMPERATURE] = float(params["temperature"])
            attrs[A.REQUEST_MAX_TOKENS] = int(params["max_tokens"])
            attrs[A.LLM_CALL_ID] = event.call_id
            call = tracer.start_span(
                f"chat {event.model}", step_ctx, SpanKind.CLIENT, attrs, start_time=call_start
            )
            call_ctx = trace.set_span_in_context(call, parent)  # current, and its records'
            chunks = 0
        elif cls is Usage:
            call_in, call_out = event.input_tokens, event.output_tokens
            step_in += call_in
            step_out += call_out
            run_in += call_in
            run_out += call_out
        elif cls is LLMCallEnd:
            assert call is not None
            assert call_attrs is not None
            call.set_attribute(A.RESPONSE_ID, event.response_id)
            end = now()
            call_attrs[A.RESPONSE_MODEL] = event.model
            if chunks:
                ttfc = (first_chunk - call_start) * _NS
                instruments.time_to_first_chunk.record(ttfc, call_attrs, call_ctx)
            instruments.operation_duration.record((end - call_start) * _NS, call_attrs, call_ctx)
            call.set_attribute(A.RESPONSE_MODEL, event.model)
            call.set_attribute(A.RESPONSE_FINISH_REASONS, [event.finish_reason])
            if chunks:
                call.set_attribute(A.REQUEST_STREAM, True)
                call.set_attribute(A.RESPONSE_TIME_TO_FIRST_CHUNK, (first_chunk - call_start) * _NS)
                call.set_attribute(A.CHUNK_COUNT, chunks)
                if chunks > 1:
                    mean = (end - first_chunk) / chunks
                    call.set_attribute(A.CHUNK_INTERVAL_MEAN, mean * _NS)
                call.set_attribute(A.TIME_TO_FIRST_TEXT, (first_chunk - call_start) * _NS)
            attrs = dict(call_attrs)
            attrs[A.TOKEN_TYPE] = A.TOKEN_TYPE_INPUT
            instruments.token_usage.record(call_in, attrs, call_ctx)
            attrs[A.TOKEN_TYPE] = A.TOKEN_TYPE_OUTPUT
            instruments.token_usage.record(call_out, attrs, call_ctx)
            call.set_attributes({A.USAGE_INPUT_TOKENS: call_in, A.USAGE_OUTPUT_TOKENS: call_out})
            call.end(end_time=end)
            call = None
        elif cls is ToolCall:
            if step is None:
                step = tracer.start_span(
                    "step 0", agent_ctx, SpanKind.INTERNAL, step_attrs, start_time=now()
                )
                step_ctx = trace.set_span_in_context(step, parent)
            t = now()
            n_tools += 1
            name = event.function.name
            span = tracer.start_span(
                f"execute_tool {name}",
                step_ctx,
                SpanKind.INTERNAL,
                {
                    A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
                    A.TOOL_NAME: name,
                    A.TOOL_TYPE: A.TOOL_TYPE_FUNCTION,
                    A.TOOL_CALL_ID: event.id,
                },
                start_time=t,
            )
            tool_ctx = trace.set_span_in_context(span, parent)  # current, and its record's
            tools[event.id] = (span, t, {A.OPERATION_NAME: A.OP_EXECUTE_TOOL, A.TOOL_NAME: name},
                               tool_ctx)  # fmt: skip
        elif cls is ToolResult:
            t = now()
            span, begun, tool_attrs, tool_ctx = tools.pop(event.tool_call_id)
            instruments.tool_duration.record((t - begun) * _NS, tool_attrs, tool_ctx)
            span.end(end_time=t)
        yield event
    end = now()
    totals = {}
    if run_in or run_out:
        totals = {A.USAGE_INPUT_TOTAL: step_in, A.USAGE_OUTPUT_TOTAL: step_out}
    if step is not None:
        step.set_attributes(totals)
        step.end(end_time=end)
    provider = first_provider or A.PROVIDER_UNKNOWN
    metric_attrs[A.PROVIDER_NAME] = provider
    agent.set_attribute(A.PROVIDER_NAME, provider)
    if first_model:
        agent.set_attribute(A.REQUEST_MODEL, first_model)
    agent.set_attribute(A.END_REASON, A.END_EXHAUSTED)
    agent.set_attributes(totals)
    if run_first_text is not None:
        agent.set_attribute(A.TIME_TO_FIRST_TEXT, (run_first_text - start) * _NS)
    instruments.agent_duration.record((end - start) * _NS, metric_attrs, agent_ctx)
    instruments.inference_calls.record(n_calls, {A.AGENT_NAME: agent_name}, agent_ctx)
    instruments.tool_calls.record(n_tools, {A.AGENT_NAME: agent_name}, agent_ctx)
    agent.end(end_time=end)
