"""A run whose framework starts a task that outlives it, the task calling the model once the
run has ended: shared by the stand-down tests of the dev environment (the providers'
instrumentations) and of the official GenAI packages' environment."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from agent_contract.protocol import LLMCallEnd, LLMCallStart
from agent_contract.scope import framework_started
from agent_otel.testing import InMemoryTelemetry


async def own_adapter_leaving_a_task(
    source: str, late: Coroutine[Any, Any, None], left: list[asyncio.Task[None]]
) -> AsyncIterator[Any]:
    """A framework adapter of the caller's own (``source``: its module's name), saying it
    starts, whose framework starts ``late`` in a task during the run (kept in ``left``)."""
    framework_started(source)
    left.append(asyncio.create_task(late))
    yield LLMCallStart(model="m")
    yield LLMCallEnd(model="m", finish_reason="stop")


async def run_then_end(
    telemetry: InMemoryTelemetry,
    wrapper: Callable[[AsyncIterator[Any]], AsyncIterator[Any]],
    stream: AsyncIterator[Any],
    ended: asyncio.Event,
    left: list[asyncio.Task[None]],
) -> None:
    """``stream`` run through ``wrapper`` to its end, every span of it ended while the tasks
    it left wait; then ``ended`` set, and those tasks awaited."""
    async for _ in wrapper(stream):
        pass
    assert left and telemetry.open_spans() == []  # the run has ended, its tasks not yet
    ended.set()
    await asyncio.gather(*left)
