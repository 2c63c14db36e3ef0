"""Agno: a tool hook of the application's (``tool_hooks``) runs around the tool, in its call.

Agno chains an agent's tool hooks around each tool execution, the first one outermost. A hook
that raises fails the call as the tool raising would (Agno hands the model the error's text
and the run goes on); its call's span names that failure by its class, as a tool's own.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _script_chat as chat
from ._fw_agno import agent

pytest.importorskip("agno")


class HookFailed(RuntimeError):
    """The application's tool hook failing."""


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize("where", ["before the tool", "after the tool"])
async def test_a_tool_hook_that_raises_fails_its_call_by_its_class(
    otel_telemetry: InMemoryTelemetry, where: str
) -> None:
    from agent_contract.sources.agno_stream import agno_events

    ran: list[str] = []

    def guard(function_name: str, function_call: Any, arguments: dict[str, Any]) -> Any:
        if where == "after the tool":
            ran.append(function_call(**arguments))
        raise HookFailed("not allowed")

    built = agent(chat.call("weather", {"city": "Paris"}, "c1"), chat.answer("Sorry."),
                  tools=[weather])  # fmt: skip
    built.tool_hooks = [guard]
    await run_script(otel_telemetry, agno_events(built, "Weather?"), agent_name="a")

    assert ran == (["sunny in Paris"] if where == "after the tool" else [])
    assert otel_telemetry.outline() == [["invoke_agent a", [
        ["step 0", ["chat gpt-4o-mini", "execute_tool weather"]], ["step 1", ["chat gpt-4o-mini"]],
    ]]]  # fmt: skip
    tool = otel_telemetry.span("execute_tool weather")
    assert tool.status.status_code is StatusCode.ERROR
    assert (tool.attributes or {})["error.type"] == "HookFailed"
    root = otel_telemetry.span("invoke_agent a")
    assert root.status.status_code is not StatusCode.ERROR  # the run went on
    assert otel_telemetry.open_spans() == []
