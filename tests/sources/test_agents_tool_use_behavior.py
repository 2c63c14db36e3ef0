"""OpenAI Agents SDK runs a tool ends: ``tool_use_behavior`` (``"stop_on_first_tool"``,
``StopAtTools``, a function returning ``ToolsToFinalOutputResult``). The SDK documents that the
tool's output is then the run's final output, with no model call after it. The run's answer is
that output (a text, or JSON for a structured one), not the tool calls of the last model call,
which the run span showed as its output before.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import StatusCode
from pydantic import BaseModel

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _fw_openai_agents as fw

pytest.importorskip("agents")


class Forecast(BaseModel):
    forecast: str


def _agent(behavior: Any, output_type: Any = None) -> Any:
    """An agent whose model asks for ``weather`` once (its only answer), on the SDK's own
    scripted test model."""
    from agents import Agent, function_tool
    from agents.testing import function_call

    @function_tool
    def weather(city: str) -> str:
        return f"sunny in {city}"

    model = fw.scripted([function_call("weather", {"city": "Paris"}, call_id="c1")])
    return Agent(name="a", tools=[weather], model=model, tool_use_behavior=behavior,
                 output_type=output_type)  # fmt: skip


async def _answer(telemetry: InMemoryTelemetry, agent: Any) -> tuple[Any, dict[str, Any]]:
    """Run ``agent``: the SDK's final output and the run span's attributes (content on)."""
    from agent_contract.sources.openai_agents import openai_agents_events

    kept: list[Any] = []
    source = openai_agents_events(agent, "Weather?", on_result=kept.append)
    await run_script(telemetry, source, agent_name="a", capture_content=True)
    assert telemetry.outline() == [
        ["invoke_agent a", [["step 0", ["chat", "execute_tool weather"]]]]
    ]
    run = telemetry.span("invoke_agent a")
    assert run.status.status_code is StatusCode.UNSET
    return kept[0].final_output, dict(run.attributes or {})


@pytest.mark.parametrize("behavior", ["stop_on_first_tool", "stop_at_tools"])
async def test_a_tool_that_ends_the_run_gives_the_runs_answer(
    otel_telemetry: InMemoryTelemetry, behavior: str
) -> None:
    from agents import StopAtTools

    chosen = StopAtTools(stop_at_tool_names=["weather"]) if behavior == "stop_at_tools" else (
        behavior
    )  # fmt: skip
    final, run = await _answer(otel_telemetry, _agent(chosen))

    assert final == "sunny in Paris"
    assert run["gen_ai.output.type"] == "text"
    [answer] = json.loads(str(run["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "text", "content": "sunny in Paris"}]


async def test_a_structured_final_output_from_tools_is_the_runs_json_answer(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agents import ToolsToFinalOutputResult

    def decide(context: Any, results: list[Any]) -> Any:
        return ToolsToFinalOutputResult(
            is_final_output=True, final_output=Forecast(forecast=results[0].output)
        )

    final, run = await _answer(otel_telemetry, _agent(decide, Forecast))

    assert final == Forecast(forecast="sunny in Paris")
    assert run["gen_ai.output.type"] == "json"
    [answer] = json.loads(str(run["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "json", "content": {"forecast": "sunny in Paris"}}]
