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


@pytest.mark.parametrize(
    ("strategy", "ran"), [("early", []), ("exhaustive", ["c0", "c1"])], ids=["early", "exhaustive"]
)
async def test_a_call_the_end_strategy_skips_is_no_tool_span(
    strategy: str, ran: list[str], otel_telemetry: InMemoryTelemetry
) -> None:
    """The model calls a function tool beside the output tool: with ``end_strategy="early"``
    pydantic-ai runs no function tool once the output is final (it answers each call with its
    "Tool not executed" text and tells it in its event stream as a call and result); with
    ``"exhaustive"`` it runs them all. Only a call whose tool ran is an ``execute_tool``
    span."""
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    async def model(messages: list[Any], info: AgentInfo) -> Any:
        answer = info.output_tools[0].name
        yield {0: DeltaToolCall(name="lookup", json_args='{"term": "a"}', tool_call_id="c0")}
        yield {1: DeltaToolCall(name=answer, json_args='{"name": "Paris", "population": 2}',
                                tool_call_id="o1")}  # fmt: skip
        yield {2: DeltaToolCall(name="lookup", json_args='{"term": "b"}', tool_call_id="c1")}

    agent = Agent(FunctionModel(stream_function=model, model_name="scripted"), name="geo",
                  output_type=City, end_strategy=strategy)  # fmt: skip
    looked: list[str] = []

    @agent.tool_plain
    def lookup(term: str) -> str:
        looked.append(term)
        return "found"

    results: list[Any] = []
    source = pydantic_ai_events(agent, "Paris?", on_result=results.append)
    await run_script(otel_telemetry, source, agent_name="geo")

    assert results[0].output == City(name="Paris", population=2)
    assert len(looked) == len(ran)  # what pydantic-ai ran
    tools = [s for s in otel_telemetry.spans() if s.name.startswith("execute_tool")]
    assert sorted((s.attributes or {})["gen_ai.tool.call.id"] for s in tools) == ran
    assert otel_telemetry.open_spans() == []


@pytest.mark.parametrize("rewritten_by", ["TextOutput", "output_validator"])
async def test_a_text_output_that_is_not_the_models_text_is_the_runs_answer(
    rewritten_by: str, otel_telemetry: InMemoryTelemetry
) -> None:
    """A text output pydantic-ai returns is not always the text the model said: a
    ``TextOutput`` function's return, or what an output validator returns, is. The run's
    answer is that output; the chat span keeps what the model said."""
    from pydantic_ai import Agent, TextOutput
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    async def model(messages: list[Any], info: AgentInfo) -> Any:
        yield "paris"

    def shout(text: str) -> str:
        return text.upper()

    scripted = FunctionModel(stream_function=model, model_name="scripted")
    if rewritten_by == "TextOutput":
        agent = Agent(scripted, name="geo", output_type=TextOutput(shout))
    else:
        agent = Agent(scripted, name="geo")
        agent.output_validator(shout)
    results: list[Any] = []
    source = pydantic_ai_events(agent, "Paris?", on_result=results.append)
    await run_script(otel_telemetry, source, agent_name="geo", capture_content=True)

    assert results[0].output == "PARIS"
    run = dict(otel_telemetry.span("invoke_agent geo").attributes or {})
    [answer] = json.loads(str(run["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "text", "content": "PARIS"}]
    chat = dict(otel_telemetry.span("chat scripted").attributes or {})
    [said] = json.loads(str(chat["gen_ai.output.messages"]))
    assert said["parts"] == [{"type": "text", "content": "paris"}]
    assert otel_telemetry.open_spans() == []
