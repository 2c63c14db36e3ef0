"""An ``invoke()`` that consumes its own ``stream()`` more than once (issue 26, point 6).

A retry after a connection error used to give three agent spans for two attempts, one
starting after its parent ended, and count the tokens of the successful attempt twice. Now
each attempt is one ``invoke_agent`` span, siblings under the caller's span, every span inside
its parent, and each attempt's tokens counted once (docs/endings.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_contract.protocol import (
    InvokeResult,
    LLMCallEnd,
    LLMCallStart,
    Message,
    StreamingAgent,
    StreamWrapper,
    TextDelta,
    Usage,
    collect,
)
from agent_otel.decorating._instrument import instrument
from agent_otel.testing import InMemoryTelemetry
from test_instrument_support import USER


class Flaky(StreamingAgent):
    """Fails ``failures`` times after its first call's usage, then answers; ``invoke`` retries."""

    name = "flaky"

    def __init__(self, failures: int, nested: bool = False) -> None:
        self.failures = failures
        self.nested = nested

    async def stream(self, messages: list[Message], config: Any = None) -> AsyncIterator[Any]:
        yield LLMCallStart(model="m", call_id="c")
        yield Usage(input_tokens=10, output_tokens=5)
        if self.failures:
            self.failures -= 1
            raise ConnectionError("reset by peer")
        yield TextDelta(text="ok")
        yield LLMCallEnd(call_id="c")

    async def invoke(
        self,
        messages: list[Message],
        stream_wrapper: StreamWrapper | None = None,
        config: dict[str, Any] | None = None,
    ) -> InvokeResult:
        for _ in range(5):
            try:
                return await collect(self.stream(messages, config), stream_wrapper)
            except ConnectionError:
                continue
        raise ConnectionError("gave up")


def tokens(telemetry: InMemoryTelemetry) -> int:
    points = telemetry.histograms().get("gen_ai.client.token.usage", [])
    return int(sum(point.sum for point in points))


@pytest.mark.parametrize("failures", [0, 1, 3])
async def test_each_attempt_is_one_agent_span_inside_the_caller_tokens_once(
    failures: int, otel_telemetry: InMemoryTelemetry
) -> None:
    agent = instrument(Flaky(failures), **otel_telemetry.providers())
    tracer = otel_telemetry.tracer_provider.get_tracer("caller")
    with tracer.start_as_current_span("request") as request:
        result = await agent.invoke(USER)
    assert result.text == "ok"
    spans = otel_telemetry.spans()
    runs = [s for s in spans if s.name.startswith("invoke_agent")]
    assert len(runs) == failures + 1  # one per attempt, never a run wrapping a run
    request_id = request.get_span_context().span_id
    assert all(r.parent is not None and r.parent.span_id == request_id for r in runs)
    failed = [r for r in runs if r.status.status_code.name == "ERROR"]
    assert len(failed) == failures
    ids = {s.context.span_id: s for s in spans}
    for span in spans:  # every span inside its parent
        parent = ids.get(span.parent.span_id) if span.parent is not None else None
        if parent is not None:
            assert parent.start_time is not None and span.start_time is not None
            assert parent.start_time <= span.start_time
            assert span.end_time is not None and parent.end_time is not None
            assert span.end_time <= parent.end_time, span.name
    assert tokens(otel_telemetry) == 15 * (failures + 1)  # each attempt's usage, once


async def test_a_sub_agent_of_the_same_instance_still_nests_under_the_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The re-armed claim is for the next attempt only: a nested call inside a run still gets
    its own run span under the outer one."""

    class Recursive(StreamingAgent):
        name = "recursive"
        depth = 0

        async def stream(self, messages: list[Message], config: Any = None) -> AsyncIterator[Any]:
            yield TextDelta(text="outer")
            if self.depth == 0:
                self.depth += 1
                inner = await self.invoke(messages)
                yield TextDelta(text=inner.text)

    agent = instrument(Recursive(), **otel_telemetry.providers())
    await agent.invoke(USER)
    runs = [s for s in otel_telemetry.spans() if s.name.startswith("invoke_agent")]
    assert len(runs) == 2
    inner, outer = runs
    ids = {s.context.span_id: s for s in otel_telemetry.spans()}
    ancestor = inner
    while ancestor.parent is not None and ancestor is not outer:
        ancestor = ids[ancestor.parent.span_id]
    assert ancestor is outer
