"""A run the process stops from outside its agent: Ctrl-C raised in the agent's own code
(``KeyboardInterrupt`` outside ``asyncio.run()``'s own handling, which cancels the task
instead), or ``sys.exit()`` from a signal handler (``SystemExit`` raised where the main thread
was, inside the agent's stream).

The agent did not fail there: the run ends ``cancelled``, as a cancelled task's run does (the
exception named by ``error.type``), and the exception comes out as the same object.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_contract.protocol import LLMCallStart, TextDelta
from agent_otel.testing import InMemoryTelemetry


async def stopped_by(stop: BaseException) -> AsyncIterator[Any]:
    yield LLMCallStart(model="m", call_id="c")
    yield TextDelta(text="half an ans")
    raise stop


@pytest.mark.parametrize(
    "stop", [KeyboardInterrupt(), SystemExit(3)], ids=["KeyboardInterrupt", "SystemExit"]
)
async def test_a_run_the_process_stops_ends_cancelled_not_failed(
    otel_telemetry: InMemoryTelemetry, stop: BaseException
) -> None:
    """Both ended the run ``error`` (the agent's failure), where the same Ctrl-C inside
    ``asyncio.run()`` ends it ``cancelled``: a dashboard counting failed runs counted each
    interrupted one."""
    received = []
    with pytest.raises(type(stop)) as raised:
        async for event in otel_telemetry.wrapper(agent_name="a")(stopped_by(stop)):
            received.append(event)

    assert raised.value is stop
    assert len(received) == 2
    run = otel_telemetry.span("invoke_agent a")
    attributes = run.attributes or {}
    assert attributes["agent_otel.end_reason"] == "cancelled"
    assert attributes["error.type"] == type(stop).__name__
    assert run.status.status_code is StatusCode.ERROR  # as a cancelled task's run
    assert (otel_telemetry.span("chat m").attributes or {})["agent_otel.incomplete"] is True
    assert otel_telemetry.open_spans() == []
