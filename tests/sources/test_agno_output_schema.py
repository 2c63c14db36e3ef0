"""Agno: an agent's ``output_schema``. Agno asks the model for JSON of the schema (the
provider's structured outputs, or its JSON mode with ``use_json_mode``), makes that request
unstreamed inside the run's stream (telling it by its request events) and streams only the
value it parsed. One request: one chat span with its tokens (it was also told a second time,
as a side request, its tokens counted twice), the model's JSON text its output; the run's
answer is the parsed value as JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _script as s
from . import _script_chat as chat
from ._http import openai_client
from ._trace import tokens

pytest.importorskip("agno")


class City(BaseModel):
    name: str
    population: int


@pytest.mark.parametrize("json_mode", [False, True], ids=["structured-outputs", "json-mode"])
async def test_an_output_schema_run_is_one_call_and_answers_with_its_value(
    json_mode: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat

    from agent_contract.sources.agno_stream import agno_events

    said = '{"name": "Paris", "population": 2}'
    sent: list[Any] = []
    client = openai_client(chat.completion(0, said, []), seen=sent)
    model = OpenAIChat(id="gpt-4o-mini", async_client=client)
    agent = Agent(model=model, name="geo", output_schema=City, use_json_mode=json_mode,
                  telemetry=False)  # fmt: skip
    kept: list[Any] = []
    await run_script(otel_telemetry, agno_events(agent, "Paris?", sink=kept.append),
                     agent_name="geo", capture_content=True)  # fmt: skip

    assert kept[-1].content == City(name="Paris", population=2)
    [request] = [json.loads(r.content) for r in sent]
    assert request["response_format"]["type"] == ("json_object" if json_mode else "json_schema")
    assert otel_telemetry.outline() == [["invoke_agent geo", [["step 0", ["chat gpt-4o-mini"]]]]]
    assert tokens(otel_telemetry) == s.TURNS[0].input  # counted once, on the one call
    chat_span = dict(otel_telemetry.span("chat gpt-4o-mini").attributes or {})
    [message] = json.loads(str(chat_span["gen_ai.output.messages"]))
    assert message["parts"] == [{"type": "text", "content": said}]
    run = dict(otel_telemetry.span("invoke_agent geo").attributes or {})
    assert run["gen_ai.output.type"] == "json"
    [answer] = json.loads(str(run["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "json", "content": {"name": "Paris", "population": 2}}]
    assert otel_telemetry.open_spans() == []
