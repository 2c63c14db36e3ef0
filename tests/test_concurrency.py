"""Many runs at once: each run's spans stay in its own trace, under its own agent span.

The wrapper makes a span current only while it pulls the agent's next event and restores the
consumer's context before yielding; with a thousand runs interleaving on one event loop (each
a task with its own context), no span of one run may land under another run.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter, defaultdict
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import ReadableSpan

from agent_contract.examples import ScriptedAgent
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
from agent_otel.testing import InMemoryTelemetry

RUNS = 1000
CONVERSATION_ID = "gen_ai.conversation.id"


def script(i: int) -> list[Any]:
    """Two steps: a model call asking for a tool, the tool, then a model call answering.

    Call ids repeat across runs on purpose: ids are matched within a run only.
    """
    return [
        LLMCallStart(model="m", call_id="c1"),
        TextDelta(f"run {i} "),
        ToolCall(id="t1", function=FunctionCall(name="lookup", arguments=f'{{"i": {i}}}')),
        LLMCallEnd(call_id="c1", finish_reason="tool_calls"),
        Usage(input_tokens=10, output_tokens=i % 7),
        ToolResult(tool_call_id="t1", content=str(i)),
        StepBoundary(),
        LLMCallStart(model="m", call_id="c1"),
        TextDelta("done"),
        LLMCallEnd(call_id="c1", finish_reason="stop"),
        Usage(input_tokens=20, output_tokens=1),
        StepBoundary(),
    ]


SPANS_PER_RUN = 1 + 2 + 2 + 1  # agent, two steps, two chat spans, one tool


async def test_a_thousand_concurrent_runs_keep_their_traces_apart() -> None:
    telemetry = InMemoryTelemetry()
    rng = random.Random(1234)
    received: dict[int, list[Any]] = {}
    scripts: dict[int, list[Any]] = {}

    async def one_run(i: int) -> None:
        scripts[i] = script(i)
        # delay 0 or a real (tiny) sleep between events: the runs interleave at every event
        agent = ScriptedAgent(scripts[i], delay=rng.choice([0.0, 0.0, 1e-6]))
        wrapper = telemetry.wrapper(agent_name=f"agent-{i}", conversation_id=f"run-{i}")
        before = otel_context.get_current()
        out: list[Any] = []
        async for event in wrapper(agent.stream([])):
            assert otel_context.get_current() is before
            out.append(event)
            if rng.random() < 0.3:
                await asyncio.sleep(0)  # the consumer yields to the loop too
        received[i] = out

    await asyncio.gather(*(one_run(i) for i in range(RUNS)))

    for i in range(RUNS):
        assert len(received[i]) == len(scripts[i])
        assert all(a is b for a, b in zip(received[i], scripts[i]))

    spans = telemetry.spans()
    assert len(spans) == RUNS * SPANS_PER_RUN
    by_id: dict[int, ReadableSpan] = {}
    by_trace: dict[int, list[ReadableSpan]] = defaultdict(list)
    for span in spans:
        assert span.context is not None
        by_id[span.context.span_id] = span
        by_trace[span.context.trace_id].append(span)
    assert len(by_trace) == RUNS

    def run_of(span: ReadableSpan) -> str:
        """The conversation id of the agent span this span hangs under."""
        while span.parent is not None:
            span = by_id[span.parent.span_id]
        assert span.name.startswith("invoke_agent ")
        return str((span.attributes or {})[CONVERSATION_ID])

    seen_runs: set[str] = set()
    for trace_spans in by_trace.values():
        assert len(trace_spans) == SPANS_PER_RUN
        roots = [s for s in trace_spans if s.parent is None]
        assert len(roots) == 1
        root = roots[0]
        run = str((root.attributes or {})[CONVERSATION_ID])
        i = int(run.removeprefix("run-"))
        assert root.name == f"invoke_agent agent-{i}"
        seen_runs.add(run)
        for span in trace_spans:
            # every parent is in this trace, and leads up to this run's agent span
            assert span.parent is None or span.parent.span_id in by_id
            assert run_of(span) == run
        tools = [s for s in trace_spans if s.name == "execute_tool lookup"]
        assert len(tools) == 1
        assert (tools[0].attributes or {})["gen_ai.tool.call.id"] == "t1"
        totals = (root.attributes or {})["agent_otel.usage.output_tokens"]
        assert totals == i % 7 + 1  # the run's own usage, nobody else's
        names = Counter(s.name for s in trace_spans)
        assert names == Counter(
            {
                f"invoke_agent agent-{i}": 1,
                "step 0": 1,
                "step 1": 1,
                "chat m": 2,
                "execute_tool lookup": 1,
            }
        )
    assert len(seen_runs) == RUNS
    telemetry.shutdown()


async def test_concurrent_runs_started_under_one_consumer_span_share_its_trace() -> None:
    """Runs started inside one consumer span are siblings below it, never nested in each other."""
    telemetry = InMemoryTelemetry()
    tracer = telemetry.tracer_provider.get_tracer("consumer")

    async def one_run(i: int) -> None:
        agent = ScriptedAgent(script(i), delay=0.0)
        wrapper = telemetry.wrapper(
            agent_name="sibling", conversation_id=f"run-{i}", capture_content=True
        )
        async for _ in wrapper(agent.stream([])):
            await asyncio.sleep(0)

    with tracer.start_as_current_span("request") as request:
        await asyncio.gather(*(one_run(i) for i in range(50)))
    request_id = request.get_span_context().span_id

    spans = telemetry.spans()
    assert len({s.context.trace_id for s in spans if s.context}) == 1
    agents = [s for s in spans if s.name == "invoke_agent sibling"]
    assert len(agents) == 50
    assert all(s.parent is not None and s.parent.span_id == request_id for s in agents)
    agent_ids = {s.context.span_id: s for s in agents if s.context}
    by_id = {s.context.span_id: s for s in spans if s.context}
    tools = [s for s in spans if s.name == "execute_tool lookup"]
    assert len(tools) == 50
    for tool in tools:
        # the tool's arguments name its run; its nearest agent span must be that run's
        i = json.loads(str((tool.attributes or {})["gen_ai.tool.call.arguments"]))["i"]
        node = tool
        while node.context is not None and node.context.span_id not in agent_ids:
            assert node.parent is not None
            node = by_id[node.parent.span_id]
        assert (node.attributes or {})[CONVERSATION_ID] == f"run-{i}"
    assert len({(s.attributes or {})[CONVERSATION_ID] for s in agents}) == 50
    telemetry.shutdown()
