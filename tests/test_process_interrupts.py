"""A run Ctrl-C stops from outside its agent: ``KeyboardInterrupt`` raised in the agent's own
code (outside ``asyncio.run()``'s own handling, which cancels the task instead).

The agent did not fail there: the run ends ``cancelled``, as a cancelled task's run does (the
exception named by ``error.type``), and the exception comes out as the same object.
(``SystemExit`` stays a failure: an agent's own ``sys.exit(1)`` cannot be told from a signal
handler's, docs/export.md.)
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


async def test_a_run_ctrl_c_stops_in_its_agents_code_ends_cancelled_not_failed(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """It ended the run ``error`` (the agent's failure), where the same Ctrl-C inside
    ``asyncio.run()`` ends it ``cancelled``: a dashboard counting failed runs counted each
    interrupted one."""
    stop = KeyboardInterrupt()
    received = []
    with pytest.raises(KeyboardInterrupt) as raised:
        async for event in otel_telemetry.wrapper(agent_name="a")(stopped_by(stop)):
            received.append(event)

    assert raised.value is stop
    assert len(received) == 2
    run = otel_telemetry.span("invoke_agent a")
    attributes = run.attributes or {}
    assert attributes["agent_otel.end_reason"] == "cancelled"
    assert attributes["error.type"] == "KeyboardInterrupt"
    assert run.status.status_code is StatusCode.ERROR  # as a cancelled task's run
    assert (otel_telemetry.span("chat m").attributes or {})["agent_otel.incomplete"] is True
    assert otel_telemetry.open_spans() == []
