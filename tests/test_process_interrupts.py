"""A run Ctrl-C stops from outside its agent: ``KeyboardInterrupt`` raised in the agent's own
code (outside ``asyncio.run()``'s own handling, which cancels the task instead).

The agent did not fail there: the run ends ``cancelled``, as a cancelled task's run does (the
exception named by ``error.type``), and the exception comes out as the same object.
(``SystemExit`` stays a failure: an agent's own ``sys.exit(1)`` cannot be told from a signal
handler's, docs/export.md.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_contract.protocol import LLMCallStart, TextDelta
from agent_otel import end_open_runs
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


@pytest.mark.parametrize("again", [False, True], ids=["cancelled", "left-open"])
@pytest.mark.parametrize(
    ("leaving", "end_reason"),
    [(SystemExit(3), "error"), (KeyboardInterrupt(), "cancelled")],
    ids=["sys.exit", "KeyboardInterrupt"],
)
def test_an_exit_raised_in_a_tool_body_in_a_task_of_its_own_names_the_tool_and_the_run(
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    leaving: BaseException,
    end_reason: str,
    again: bool,
) -> None:
    """A tool body that calls ``sys.exit()`` (or raises ``KeyboardInterrupt``) in the task or
    thread a framework runs it in (pydantic-ai's tool task, a sync tool's thread): asyncio
    lets either leave its loop, and ``asyncio.run()`` then cancels every task left, the
    run's. The run ended ``cancelled`` as ``CancelledError`` and the tool span was marked with
    the run's cancel, so nothing said the tool had ended the process. ``again``: a task whose
    cancel raises the exit once more (as the Agents SDK's cleanup does) stops that cleanup,
    and the run stays open until the exit's shutdown (``end_open_runs()``, as the exit hook)
    ended it as ``shutdown``. As documented (docs/endings.md), the tool span and the run are
    named by the exit either way: ``SystemExit`` a failure, ``KeyboardInterrupt`` a cancel;
    the exception leaves ``asyncio.run()`` as the same object."""
    from agent_contract.protocol import FunctionCall, LLMCallEnd, ToolCall
    from agent_contract.scope import tool_scope

    def leave() -> None:
        raise leaving

    async def body() -> None:
        with tool_scope("c1", "quit"):
            await asyncio.to_thread(leave)  # a sync tool, on the framework's thread

    async def cleanup() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            raise leaving from None

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m")
        yield ToolCall(id="c1", function=FunctionCall(name="quit", arguments="{}"))
        yield LLMCallEnd(model="m")
        tasks = [body(), cleanup()] if again else [body()]
        await asyncio.gather(*map(asyncio.create_task, tasks))

    async def main() -> None:
        async for _ in otel_telemetry.wrapper(agent_name="a")(agent()):
            pass

    with pytest.raises(BaseException) as raised:
        asyncio.run(main())
    if again:
        assert otel_telemetry.open_spans() != []  # (else this is the first case)
        with caplog.at_level(logging.WARNING, logger="agent_otel"):
            ended = end_open_runs(otel_telemetry.tracer_provider)
        assert caplog.messages == []  # not told as a run the shutdown ended
        assert ended == 1  # but one it ended, as it says

    assert raised.value is leaving
    name = type(leaving).__name__
    tool, run = otel_telemetry.span("execute_tool quit"), otel_telemetry.span("invoke_agent a")
    assert (tool.attributes or {})["error.type"] == name
    assert tool.status.status_code is StatusCode.ERROR
    assert [event.name for event in tool.events] == ["exception"]  # the failure site
    attributes = run.attributes or {}
    assert (attributes["error.type"], attributes["agent_otel.end_reason"]) == (name, end_reason)
    assert run.status.status_code is StatusCode.ERROR
    assert otel_telemetry.open_spans() == []
