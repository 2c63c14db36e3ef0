"""pydantic-ai structured output (``output_type`` a model, a dataclass, a dict): the model
answers by calling pydantic-ai's output tool, which is the answer, not a call (no
``execute_tool`` span). The run's answer is the output pydantic-ai validated, as JSON
(``gen_ai.output.type=json``; its content with capture on), not an empty text message."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel

from agent_otel.testing import InMemoryTelemetry, run_script

pytest.importorskip("pydantic_ai")


class City(BaseModel):
    name: str
    population: int


@dataclass
class Place:
    name: str
    population: int


@pytest.mark.parametrize("output_type", [City, Place], ids=["model", "dataclass"])
async def test_a_structured_output_is_the_run_s_answer_as_json(
    otel_telemetry: InMemoryTelemetry, output_type: Any
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    model = TestModel(call_tools=["lookup"], custom_output_args={"name": "Paris", "population": 2})
    agent = Agent(model, name="geo", output_type=output_type)

    @agent.tool_plain
    def lookup(term: str) -> str:
        return "found"

    results: list[Any] = []
    source = pydantic_ai_events(agent, "Paris?", on_result=results.append)
    await run_script(otel_telemetry, source, agent_name="geo", capture_content=True)

    assert results[0].output == output_type(name="Paris", population=2)
    assert otel_telemetry.outline() == [
        ["invoke_agent geo", [["step 0", ["chat test", "execute_tool lookup"]],
                              ["step 1", ["chat test"]]]],
    ]  # fmt: skip
    run = dict(otel_telemetry.span("invoke_agent geo").attributes or {})
    assert run["gen_ai.output.type"] == "json"
    [answer] = json.loads(str(run["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "json", "content": {"name": "Paris", "population": 2}}]
