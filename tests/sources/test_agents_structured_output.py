"""OpenAI Agents SDK ``output_type``: the SDK asks the model for a JSON answer of the type's
schema and validates it as the run's ``final_output``. The chat span says the request asked for
JSON (``gen_ai.output.type=json``) and keeps the model's text; the run's answer is the
validated output as JSON, as a structured answer is in the other adapters."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _fw_openai_agents as fw

pytest.importorskip("agents")


class Forecast(BaseModel):
    forecast: str


@pytest.mark.parametrize("capture", [True, False], ids=["capture", "no-capture"])
@pytest.mark.parametrize("output_type", [Forecast, None], ids=["model", "text"])
async def test_an_output_type_is_asked_for_and_is_the_run_s_json_answer(
    output_type: Any, capture: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    from agents import Agent
    from agents.testing import assistant_message

    from agent_contract.sources.openai_agents import openai_agents_events

    said = '{"forecast": "sunny"}'
    model = fw.scripted([assistant_message(said)])
    agent = Agent(name="a", model=model, output_type=output_type)
    kept: list[Any] = []
    source = openai_agents_events(agent, "Weather?", on_result=kept.append)
    await run_script(otel_telemetry, source, agent_name="a", capture_content=capture)

    structured = output_type is not None
    assert kept[0].final_output == (Forecast(forecast="sunny") if structured else said)
    assert otel_telemetry.outline() == [["invoke_agent a", [["step 0", ["chat"]]]]]
    chat = dict(otel_telemetry.span("chat").attributes or {})
    run = dict(otel_telemetry.span("invoke_agent a").attributes or {})
    assert chat.get("gen_ai.output.type") == ("json" if structured else None)
    assert run.get("gen_ai.output.type") == ("json" if structured else None)
    if not capture:
        assert "gen_ai.output.messages" not in chat and "gen_ai.output.messages" not in run
        return
    [message] = json.loads(str(chat["gen_ai.output.messages"]))
    assert message["parts"] == [{"type": "text", "content": said}]
    [answer] = json.loads(str(run["gen_ai.output.messages"]))
    expected = {"type": "json", "content": {"forecast": "sunny"}} if structured else (
        {"type": "text", "content": said}
    )  # fmt: skip
    assert answer["parts"] == [expected]
