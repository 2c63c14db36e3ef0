"""One agent process of the scale-out test: ``python scale_agent.py <otlp http url> <runs> <tag>``.

It sends ``runs`` agent runs through ``configure()`` (every span, no sampling in process) and,
beside that, feeds the same spans to an in-process :class:`TailSampler` with the policy the
gateway Collectors are configured for (``keep_ratio`` 10 %, errors kept), to say which runs it
would keep. Every fifth run has a failing tool. Prints one JSON object: each trace id with its
span count, whether it failed, and whether the in-process sampler kept it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    StepBoundary,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_otel import TailSampler, TailSamplingPolicy, otel_wrapper
from agent_otel.exporting._configure import configure

POLICY = TailSamplingPolicy(keep_ratio=0.1)


def events(failing: bool) -> list[Any]:
    return [
        LLMCallStart(model="gpt-4o-mini", provider="openai", call_id="c"),
        ToolCall(id="t1", function=FunctionCall(name="lookup", arguments="{}")),
        Usage(input_tokens=30, output_tokens=5),
        LLMCallEnd(call_id="c", finish_reason="tool_calls"),
        ToolResult(tool_call_id="t1", content="boom" if failing else "ok", is_error=failing),
        StepBoundary(index=0),
    ]


async def replay(items: list[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


def main(url: str, runs: int, tag: str) -> None:
    everything, kept = InMemorySpanExporter(), InMemorySpanExporter()
    tel = configure(
        f"scale-agent-{tag}",
        endpoint=url,
        console=False,
        set_global=False,
        span_processors=[
            SimpleSpanProcessor(everything),
            TailSampler(SimpleSpanProcessor(kept), POLICY),
        ],
    )
    failed: set[int] = set()

    async def all_runs() -> None:
        for i in range(runs):
            wrap = otel_wrapper(agent_name=f"agent-{tag}", tracer_provider=tel.tracer_provider)
            failing = i % 5 == 0
            async for _ in wrap(replay(events(failing))):
                pass
            if failing:
                failed.add(i)

    try:
        asyncio.run(all_runs())
        assert tel.force_flush(60_000)
    finally:
        assert tel.shutdown(60_000)
    assert not any(tel.spans_lost.values()), tel.spans_lost
    counts: dict[str, int] = {}
    errors: set[str] = set()
    for span in everything.get_finished_spans():
        assert span.context is not None
        trace_id = format(span.context.trace_id, "032x")
        counts[trace_id] = counts.get(trace_id, 0) + 1
        if not span.status.is_ok:
            errors.add(trace_id)
    kept_ids = {format(s.context.trace_id, "032x") for s in kept.get_finished_spans() if s.context}
    assert len(counts) == runs and len(errors) == len(failed)
    report = {
        t: {"spans": n, "error": t in errors, "kept": t in kept_ids} for t, n in counts.items()
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
