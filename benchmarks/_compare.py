"""What the side-by-side comparison measures of a tracer, whichever tracer it is.

A *run* is ``async (telemetry | None, hang) -> events``: the scripted conversation, traced
into ``telemetry`` (None: untraced), whose tool never returns when ``hang``. From finished
spans: the tree's shape, the input tokens a backend summing every span would count, and
(from a span processor) the spans started but never ended when the run's task is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from agent_otel.testing import InMemoryTelemetry

Run = Callable[[InMemoryTelemetry | None, bool], Awaitable[int]]

# Each tracer's own input-token key: the GenAI conventions', OpenInference's.
INPUT_KEYS = ("gen_ai.usage.input_tokens", "llm.token_count.prompt")


class Open(SpanProcessor):
    """Spans started and not (yet) ended."""

    def __init__(self) -> None:
        self.open: set[int] = set()

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.open.add(span.context.span_id)

    def on_end(self, span: ReadableSpan) -> None:
        self.open.discard(span.context.span_id)


def shape(telemetry: InMemoryTelemetry) -> str:
    """The tree as ``name > [children]``, repeated siblings folded (``execute_tool x (2)``)."""

    def walk(node: dict[str, Any]) -> str:
        kids = [walk(child) for child in node["children"]]
        folded: list[str] = []
        for kid in kids:
            if folded and folded[-1].split(" (")[0] == kid:
                head, _, count = folded[-1].partition(" (")
                folded[-1] = f"{head} ({int(count.rstrip(')') or 1) + 1})"
            else:
                folded.append(kid)
        return f"{node['name']} > [{', '.join(folded)}]" if folded else node["name"]

    return "; ".join(walk(r) for r in telemetry.tree(attributes=False, events=False))


def summed_input(telemetry: InMemoryTelemetry) -> int:
    """Input tokens over every span, as a backend summing spans would add them up: one count
    a span (a backend reads one convention; the larger, when a span carries both)."""
    total = 0
    for span in telemetry.spans():
        attributes = span.attributes or {}
        counts = [attributes.get(key) for key in INPUT_KEYS]
        total += max((value for value in counts if isinstance(value, int)), default=0)
    return total


async def left_open(run: Run) -> int:
    """Spans left open once a run's task is cancelled while its tool hangs."""
    telemetry = InMemoryTelemetry()
    watch = Open()
    telemetry.tracer_provider.add_span_processor(watch)
    task = asyncio.ensure_future(run(telemetry, True))
    await asyncio.sleep(0.2)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.2)  # let background clean-up (a framework's own task) run
    telemetry.shutdown()
    return len(watch.open)


def per_event(
    run: Run, telemetry: InMemoryTelemetry | None, runs: int, events: int
) -> Callable[[], Any]:
    """A measurement: CPU microseconds per framework event (``events`` per run), over ``runs``.

    One denominator for every configuration of a framework (the events its plain stream
    yields), since the adapter yields contract events, fewer than the framework's own.
    """

    async def measure() -> float:
        start = time.process_time()
        for _ in range(runs):
            await run(telemetry, False)
        if telemetry is not None:
            telemetry.clear()
        return (time.process_time() - start) / (runs * events) * 1e6

    return measure
