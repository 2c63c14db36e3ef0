"""Every way a tool can fail in each framework, one cell each: the call's span says so.

A cell is one framework and one way its tool fails: the tool raising (sync or async), raising
the framework's own error, running out of its time limit, being called by a name the agent
does not have, being given arguments that fail the framework's validation, or failing under a
failure handler of the caller's own. The model asks for that one call (id ``c1``), then
answers. Each cell holds the same things: the call's ``execute_tool`` span is ERROR with
``error.type`` the failure's class (or the framework's own outcome, ``tool_error`` only where
the framework keeps nothing but text), ``agent_otel.tool.is_error`` where the framework hands
the failure back as the call's result, the tool duration metric's point carries the same
``error.type``, and the run and its steps fail only when the framework let the failure end the
run (``raises``). ``test_tool_failures`` has the shapes with a sibling that succeeds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_contract.protocol import AgentEvent, ToolResult
from agent_otel.testing import InMemoryTelemetry, run_script

ARGS = {"city": "Rome"}


class ToolFailure(RuntimeError):
    """What a failing tool raises."""


async def weather(city: str) -> str:
    """Weather of a city."""
    return f"sunny in {city}"


async def raising(city: str) -> str:
    """Weather of a city."""
    raise ToolFailure(f"no weather for {city}")


def raising_sync(city: str) -> str:
    """Weather of a city."""
    raise ToolFailure(f"no weather for {city}")


async def slow(city: str) -> str:
    """Weather of a city."""
    await asyncio.sleep(5)
    return f"sunny in {city}"


@dataclass(frozen=True)
class Cell:
    """One framework, one way its tool fails."""

    id: str
    package: str
    source: Callable[[], AsyncIterator[AgentEvent]]
    error_type: str
    raises: type[BaseException] | None = None
    """The framework lets the failure end the run (raised as this class)."""
    text: str | None = None
    """The text the framework hands the model as the failed call's output, unchanged."""

    def param(self) -> Any:
        return pytest.param(self, id=self.id)


# --- OpenAI Agents SDK, on its own scripted test model ------------------------------------


def _agents(tool: Any, name: str | None = None, args: Any = ARGS) -> AsyncIterator[AgentEvent]:
    from agents import Agent
    from agents.testing import assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    from ._fw_openai_agents import scripted

    model = scripted([function_call(name or tool.name, args, call_id="c1")],
                     [assistant_message("done")])  # fmt: skip
    return openai_agents_events(Agent(name="bot", tools=[tool], model=model), "Weather?")


def _custom_text(context: Any, error: Exception) -> str:
    return f"weather is down: {type(error).__name__}"


def _agents_tool(body: Callable[..., Any], **options: Any) -> Callable[[], Any]:
    def source() -> AsyncIterator[AgentEvent]:
        from agents import function_tool

        return _agents(function_tool(body, **options))

    return source


def _agents_unknown() -> AsyncIterator[AgentEvent]:
    from agents import function_tool

    return _agents(function_tool(weather), name="nowhere")


def _agents_invalid(**options: Any) -> Callable[[], Any]:
    def source() -> AsyncIterator[AgentEvent]:
        from agents import function_tool

        return _agents(function_tool(weather, **options), args={"town": 5})

    return source


AGENTS = [
    Cell("openai_agents-async", "agents", _agents_tool(raising), "ToolFailure"),
    Cell("openai_agents-sync", "agents", _agents_tool(raising_sync), "ToolFailure"),
    Cell("openai_agents-custom_handler", "agents",
         _agents_tool(raising, failure_error_function=_custom_text), "ToolFailure",
         text="weather is down: ToolFailure"),
    Cell("openai_agents-invalid_arguments", "agents", _agents_invalid(), "ModelBehaviorError"),
    Cell("openai_agents-invalid_arguments_custom_handler", "agents",
         _agents_invalid(failure_error_function=_custom_text), "ModelBehaviorError",
         text="weather is down: ModelBehaviorError"),
    Cell("openai_agents-timeout", "agents", _agents_tool(slow, timeout=0.05), "ToolTimeoutError",
         text="Tool 'slow' timed out after 0.05 seconds."),
    Cell("openai_agents-timeout_custom_handler", "agents",
         _agents_tool(slow, timeout=0.05, timeout_error_function=_custom_text),
         "ToolTimeoutError", text="weather is down: ToolTimeoutError"),
    Cell("openai_agents-timeout_raising", "agents",
         _agents_tool(slow, timeout=0.05, timeout_behavior="raise_exception"),
         "ToolTimeoutError", raises=Exception),
    Cell("openai_agents-unknown_tool", "agents", _agents_unknown, "ModelBehaviorError",
         raises=Exception),
]  # fmt: skip


CELLS = [*AGENTS]


def _failed_call(telemetry: InMemoryTelemetry) -> Any:
    tools = [s for s in telemetry.spans() if s.name.startswith("execute_tool ")]
    assert len(tools) == 1, [s.name for s in tools]
    return tools[0]


@pytest.mark.parametrize("cell", [cell.param() for cell in CELLS])
async def test_a_failed_tool_is_marked_and_nothing_else_is(
    cell: Cell, otel_telemetry: InMemoryTelemetry
) -> None:
    pytest.importorskip(cell.package)
    events: list[AgentEvent] = []
    if cell.raises is None:
        events = await run_script(otel_telemetry, cell.source(), agent_name="agent")
    else:
        with pytest.raises(cell.raises):
            await run_script(otel_telemetry, cell.source(), agent_name="agent")

    span = _failed_call(otel_telemetry)
    attributes = span.attributes or {}
    assert span.status.status_code is StatusCode.ERROR
    assert attributes["error.type"] == cell.error_type
    points = otel_telemetry.histograms()["gen_ai.execute_tool.duration"]
    assert [(p.attributes or {}).get("error.type") for p in points] == [cell.error_type]
    run = otel_telemetry.span("invoke_agent agent")
    if cell.raises is None:
        assert attributes["agent_otel.tool.is_error"] is True
        for other in otel_telemetry.spans():
            if other is not span:
                assert other.status.status_code is not StatusCode.ERROR, other.name
        results = [e for e in events if isinstance(e, ToolResult)]
        assert [r.is_error for r in results] == [True]
        if cell.text is not None:  # what the model is told is the framework's, unchanged
            assert results[0].content == cell.text
    else:
        assert run.status.status_code is StatusCode.ERROR
    assert otel_telemetry.open_spans() == []
