"""What keeping export requests under the collector's limit costs, against the encoder itself.

``python -m benchmarks.split_cost``: ends 300 four-span agent runs (chat, tool, step, agent)
into memory, then per round times (CPU, ``process_time``) the size estimate every exported span
now gets (``agent_otel.exporting._split.span_size``) and the OTLP protobuf encoding the
exporter does anyway (``encode_spans``), over the same spans, and prints both per span and
their ratio per round. Both run on the export thread, not the agent's.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import otel_wrapper
from agent_otel.exporting._split import span_size

RUNS, ROUNDS, REPEAT = 300, 7, 3


async def _agent() -> AsyncIterator[Any]:
    yield LLMCallStart(model="gpt-4o", call_id="c")
    yield TextDelta(text="hi")
    yield Usage(input_tokens=10, output_tokens=3)
    yield LLMCallEnd(call_id="c")
    yield ToolCall(id="t", function=FunctionCall(name="f", arguments="{}"))
    yield ToolResult(tool_call_id="t", content="r")
    yield StepBoundary()


def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    async def record() -> None:
        for _ in range(RUNS):
            [_ async for _ in otel_wrapper(agent_name="a", tracer_provider=provider)(_agent())]

    asyncio.run(record())
    spans = list(exporter.get_finished_spans())
    estimate, encode, ratio = [], [], []
    for _ in range(ROUNDS + 1):  # the first is a warm-up
        gc.collect()
        start = time.process_time()
        for _ in range(REPEAT):
            for span in spans:
                span_size(span)
        a = time.process_time() - start
        gc.collect()
        start = time.process_time()
        for _ in range(REPEAT):
            encode_spans(spans)
        b = time.process_time() - start
        estimate.append(a / len(spans) / REPEAT * 1e6)
        encode.append(b / len(spans) / REPEAT * 1e6)
        ratio.append(a / b)
    for name, values, unit in (
        ("size estimate per span", estimate[1:], "us"),
        ("OTLP encoding per span", encode[1:], "us"),
        ("estimate / encoding", ratio[1:], "x"),
    ):
        print(
            f"{name}: median {statistics.median(values):.3f} {unit} "
            f"(min {min(values):.3f}, max {max(values):.3f}; {len(spans)} spans, {ROUNDS} rounds)"
        )


if __name__ == "__main__":
    main()
