"""Figure 1: pass-through cost per ``TextDelta``: wrapped minus bare stream, ns per event.

One run streams ``LLMCallStart``, N ``TextDelta`` (the hot path, inside an open chat call),
``LLMCallEnd`` and ``Usage``; the consumer does nothing with the events. Per round every
configuration consumes the same stream once; the figure is the round's wrapped minus bare CPU
time over N. The per-run cost (spans, metrics) is spread over N and is negligible at the full N.
For scale, the same rounds time one extra plain async-generator layer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from agent_contract.protocol import LLMCallEnd, LLMCallStart, TextDelta, Usage
from agent_otel import otel_wrapper

from ._harness import Row, consume, diff, interleave
from ._setup import Sdk

START = LLMCallStart(model="m", provider="openai", call_id="c1", params={"temperature": 0.0})
DELTA = TextDelta(text="token ")
END = LLMCallEnd(model="m", call_id="c1", finish_reason="stop", response_id="r1")
USAGE = Usage(input_tokens=10, output_tokens=10)


async def agent(n: int) -> AsyncIterator[Any]:
    """The bare stream: the same event objects every run, so the agent allocates nothing."""
    yield START
    delta = DELTA
    for _ in range(n):
        yield delta
    yield END
    yield USAGE


async def layer(stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
    async for event in stream:
        yield event


def _measure(make: Callable[[int], AsyncIterator[Any]], n: int) -> Callable[[], Any]:
    return lambda: consume(make(n), n)


async def run(quick: bool) -> list[Row]:
    n, rounds = (5_000, 3) if quick else (200_000, 15)
    sampled, unsampled = Sdk(keep_spans=False), Sdk(sampled=False, keep_spans=False)
    common = {"agent_name": "bench", "meter_provider": sampled.meter_provider}
    default = otel_wrapper(tracer_provider=sampled.tracer_provider, **common)
    off = otel_wrapper(tracer_provider=sampled.tracer_provider, activate_context=False, **common)
    unsampled_on = otel_wrapper(tracer_provider=unsampled.tracer_provider, **common)
    unsampled_off = otel_wrapper(
        tracer_provider=unsampled.tracer_provider, activate_context=False, **common
    )
    configs = {
        "bare": _measure(agent, n),
        "layer": _measure(lambda k: layer(agent(k)), n),
        "default": _measure(lambda k: default(agent(k)), n),
        "off": _measure(lambda k: off(agent(k)), n),
        "unsampled": _measure(lambda k: unsampled_on(agent(k)), n),
        "unsampled_off": _measure(lambda k: unsampled_off(agent(k)), n),
    }
    results = await interleave(configs, rounds)
    if sampled.span_count() == 0:
        raise AssertionError("figure 1: the sampled wrapper exported no spans")
    fig = "1 pass-through"
    rows = [
        Row(fig, "bare stream, CPU per event (reference)", _stat(results["bare"]), "ns/event"),
        Row(fig, "one extra async-generator layer (scale)", diff(results, "layer", "bare"),
            "ns/event"),
        _target(Row(fig, "(a) default, pull-time activation on", diff(results, "default", "bare"),
                    "ns/event", "<= 500")),
        _target(Row(fig, "(b) activation off (sampled)", diff(results, "off", "bare"),
                    "ns/event", "<= 200")),
        _target(Row(fig, "(b) unsampled run (ALWAYS_OFF), activation on",
                    diff(results, "unsampled", "bare"), "ns/event", "<= 200")),
        _target(Row(fig, "(b) unsampled run, activation off",
                    diff(results, "unsampled_off", "bare"), "ns/event", "<= 200")),
    ]  # fmt: skip
    sampled.shutdown()
    unsampled.shutdown()
    return rows


def _stat(values: list[float]) -> Any:
    from ._harness import Stat

    return Stat.of(values)


def _target(row: Row) -> Row:
    if row.stat is not None and row.target.startswith("<="):
        row.met = row.stat.median <= float(row.target[2:])
    return row
