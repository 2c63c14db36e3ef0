"""Interleaved measurement rounds, medians with min and max, the result rows, and the replayed
runs the figures measure.

Every figure is a difference or a ratio against a baseline measured in the same process and the
same run: each round runs every configuration once (in an order rotated from round to round, so
no configuration always goes first), and the figure is taken per round from that round's own
measurements, then summarised as the median with the min and max over rounds. The machine is
shared and noisy; pairing within a round cancels most of the drift between rounds.
"""

from __future__ import annotations

import gc
import inspect
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_contract.invoke import StreamWrapper

Measure = Callable[[], float | Awaitable[float]]


@dataclass(frozen=True)
class Stat:
    median: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat:
        if not values:
            raise ValueError("no measurements")
        return cls(statistics.median(values), min(values), max(values), len(values))


@dataclass
class Row:
    """One line of the results table."""

    figure: str
    measure: str
    stat: Stat | None
    unit: str
    target: str = ""
    met: bool | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


async def interleave(
    configs: dict[str, Measure], rounds: int, warmup: int = 1
) -> dict[str, list[float]]:
    """Run every configuration once per round, rotating the order; a full collection before
    each measurement so that no configuration pays for another's garbage."""
    names = list(configs)

    async def run(name: str) -> float:
        gc.collect()
        value = configs[name]()
        if inspect.isawaitable(value):
            value = await value
        return float(value)

    for _ in range(warmup):
        for name in names:
            await run(name)
    out: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            out[name].append(await run(name))
    return out


async def replay(events: Iterable[Any]) -> AsyncIterator[Any]:
    """``events`` as an agent's stream: each yielded as it is, nothing awaited between."""
    for event in events:
        yield event


async def consume(stream: AsyncIterator[Any], n: int) -> float:
    """Process CPU nanoseconds to drain ``stream``, per one of its ``n`` units."""
    start = time.process_time_ns()
    async for _ in stream:
        pass
    return (time.process_time_ns() - start) / n


async def run_scripts(wrap: StreamWrapper, scripts: Iterable[Sequence[Any]]) -> None:
    """Each script replayed through ``wrap`` (an ``otel_wrapper()``) and drained, in turn."""
    for script in scripts:
        async for _ in wrap(replay(script)):
            pass


def diff(results: dict[str, list[float]], a: str, b: str) -> Stat:
    """Per-round ``a - b``."""
    return Stat.of([x - y for x, y in zip(results[a], results[b], strict=True)])


def ratio(results: dict[str, list[float]], a: str, b: str) -> Stat:
    """Per-round ``a / b``."""
    return Stat.of([x / y for x, y in zip(results[a], results[b], strict=True)])


def added_ratio(results: dict[str, list[float]], a: str, b: str, base: str) -> Stat:
    """Per-round ``(a - base) / (b - base)``: what ``a`` adds over ``base``, relative to ``b``."""
    return Stat.of(
        [(x - z) / (y - z) for x, y, z in zip(results[a], results[b], results[base], strict=True)]
    )


def fmt(value: float) -> str:
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"
