"""Side by side: a pydantic-ai run traced by agent-otel's adapter vs by pydantic-ai itself.

    python -m benchmarks.adapters_compare [--runs N] [--rounds R]

The same scripted conversation for both (``FunctionModel``: two parallel tool calls, then an
answer). Prints, as a markdown table: the tree each produces, the input tokens a backend
summing every span would count against the run's real total, the spans left open when the
run's task is cancelled mid-tool, and the CPU each adds per framework event, as a ratio
against the bare run measured in the same process (runs interleaved: bare, ours, theirs).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from pydantic_ai import Agent, InstrumentationSettings
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events
from agent_otel import otel_wrapper
from agent_otel.testing import InMemoryTelemetry

from ._harness import diff, fmt, interleave, ratio


def _agent(instrument: Any = False, hang: bool = False) -> Agent[None, str]:
    async def stream(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {
                0: DeltaToolCall(name="weather", json_args='{"city": "Paris"}', tool_call_id="p")
            }
            yield {1: DeltaToolCall(name="weather", json_args='{"city": "Rome"}', tool_call_id="r")}
        else:
            for word in ("Sunny ", "in ", "both."):
                yield word

    capabilities = [Instrumentation(instrument)] if instrument else []
    agent = Agent(FunctionModel(stream_function=stream, model_name="scripted"), name="bot",
                  capabilities=capabilities)  # fmt: skip

    @agent.tool_plain
    async def weather(city: str) -> str:
        if hang:
            await asyncio.Event().wait()
        return f"sunny in {city}"

    return agent


PAIRS = (("ours", "bare"), ("theirs", "plain"))  # (traced, its untraced baseline)


class _Open(SpanProcessor):
    def __init__(self) -> None:
        self.open: set[int] = set()

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.open.add(span.context.span_id)

    def on_end(self, span: ReadableSpan) -> None:
        self.open.discard(span.context.span_id)


async def _ours(telemetry: InMemoryTelemetry | None, hang: bool = False) -> int:
    events = pydantic_ai_events(_agent(hang=hang), "Weather?")
    if telemetry is not None:
        events = otel_wrapper(
            agent_name="bot", tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
        )(events)  # fmt: skip
    return sum([1 async for _ in events])


async def _theirs(telemetry: InMemoryTelemetry | None, hang: bool = False) -> int:
    instrument: Any = False
    if telemetry is not None:
        instrument = InstrumentationSettings(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
    async with _agent(instrument, hang).run_stream_events("Weather?") as events:
        return sum([1 async for _ in events])


def _shape(telemetry: InMemoryTelemetry) -> str:
    def walk(node: dict[str, Any]) -> str:
        kids = ", ".join(walk(child) for child in node["children"])
        return f"{node['name']} > [{kids}]" if kids else node["name"]

    return "; ".join(walk(r) for r in telemetry.tree(attributes=False, events=False))


def _summed(telemetry: InMemoryTelemetry) -> int:
    keys = ("gen_ai.usage.input_tokens",)
    return sum(int((s.attributes or {}).get(k, 0)) for s in telemetry.spans() for k in keys)  # type: ignore[call-overload]


async def _left_open(run: Any) -> int:
    telemetry = InMemoryTelemetry()
    watch = _Open()
    telemetry.tracer_provider.add_span_processor(watch)
    task = asyncio.ensure_future(run(telemetry, hang=True))
    await asyncio.sleep(0.05)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    return len(watch.open)


def _per_event(work: Any, telemetry: InMemoryTelemetry, runs: int) -> Any:
    """A measurement: CPU microseconds per framework event over ``runs`` runs of ``work``."""

    async def measure() -> float:
        start, events = time.process_time(), 0
        for _ in range(runs):
            events += await work()
        telemetry.clear()
        return (time.process_time() - start) / events * 1e6

    return measure


async def _cpu(runs: int, rounds: int) -> dict[str, list[float]]:
    telemetry = InMemoryTelemetry()
    configs = {
        "bare": _per_event(lambda: _ours(None), telemetry, runs),
        "ours": _per_event(lambda: _ours(telemetry), telemetry, runs),
        "plain": _per_event(lambda: _theirs(None), telemetry, runs),
        "theirs": _per_event(lambda: _theirs(telemetry), telemetry, runs),
    }
    return await interleave(configs, rounds)


async def main(runs: int, rounds: int) -> None:
    rows = []
    for label, run in (("agent-otel adapter + otel_wrapper()", _ours),
                       ("pydantic-ai's own instrumentation", _theirs)):  # fmt: skip
        telemetry = InMemoryTelemetry()
        await run(telemetry)
        rows.append([label, _shape(telemetry), _summed(telemetry), await _left_open(run)])
    cpu = await _cpu(runs, rounds)
    results: list[Any] = []
    [_ async for _ in pydantic_ai_events(_agent(), "Weather?", on_result=results.append)]
    print(f"the run's own input-token total: {results[0].usage().input_tokens}\n")
    print(
        "| tracer | tree | input tokens summed over all spans | spans open after cancel "
        "| CPU per event (µs, ratio to bare run) |"
    )
    print("|---|---|---|---|---|")
    for (label, shape, summed, left), (key, base) in zip(rows, PAIRS, strict=True):
        added, times = diff(cpu, key, base), ratio(cpu, key, base)
        print(f"| {label} | {shape} | {summed} | {left} | +{fmt(added.median)} "
              f"[{fmt(added.lo)}, {fmt(added.hi)}] µs, {times.median:.2f}x |")  # fmt: skip
    print(
        f"\nuntraced: adapter {cpu['bare']:.1f} µs, run_stream_events {cpu['plain']:.1f} µs CPU "
        f"per event; {runs} runs each, interleaved"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20, help="runs per measurement")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.rounds))
