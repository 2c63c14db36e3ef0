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


def _city_model() -> Any:
    """A model answering with Paris: through the output tool pydantic-ai offers it, else as
    the JSON text a native or prompted output asks for."""
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    async def model(messages: list[Any], info: AgentInfo) -> Any:
        if info.output_tools:
            yield {0: DeltaToolCall(name=info.output_tools[0].name, tool_call_id="o1",
                                    json_args='{"name": "Paris", "population": 2}')}  # fmt: skip
        else:
            yield '{"name": "Paris", "population": 2}'

    return FunctionModel(stream_function=model, model_name="scripted")


def _output(kind: str) -> Any:
    from pydantic_ai import NativeOutput, PromptedOutput, ToolOutput

    def shout(name: str, population: int) -> City:
        return City(name=name.upper(), population=population)

    outputs = {
        "model": City,
        "ToolOutput": ToolOutput(City, name="answer"),
        "ToolOutput(function)": ToolOutput(shout, name="answer"),
        "NativeOutput": NativeOutput(City),
        "PromptedOutput": PromptedOutput(City),
    }
    return outputs[kind]


@pytest.mark.parametrize("capture", [True, False], ids=["capture", "no-capture"])
@pytest.mark.parametrize(
    "kind", ["model", "ToolOutput", "ToolOutput(function)", "NativeOutput", "PromptedOutput"]
)
async def test_the_chat_span_tells_what_the_model_returned_for_a_structured_output(
    kind: str, capture: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    """The GenAI conventions' chat span output is what the model returned: an output tool's
    call (pydantic-ai's ``final_result``, a ``ToolOutput``'s own name) as a ``tool_call`` part
    with its arguments, or the JSON text a native or prompted output asked for; no
    ``execute_tool`` span for an output tool (pydantic-ai's own instrumentation opens none
    where no output function runs). ``gen_ai.output.type=json`` is on the chat span where the
    request asked for a JSON answer (native, prompted), on the run always."""
    from pydantic_ai import Agent

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    agent = Agent(_city_model(), name="geo", output_type=_output(kind))
    results: list[Any] = []
    source = pydantic_ai_events(agent, "Paris?", on_result=results.append)
    await run_script(otel_telemetry, source, agent_name="geo", capture_content=capture)

    expected = "PARIS" if kind == "ToolOutput(function)" else "Paris"
    assert results[0].output == City(name=expected, population=2)
    assert otel_telemetry.outline() == [["invoke_agent geo", [["step 0", ["chat scripted"]]]]]
    chat = dict(otel_telemetry.span("chat scripted").attributes or {})
    run = dict(otel_telemetry.span("invoke_agent geo").attributes or {})
    assert run["gen_ai.output.type"] == "json"
    asked_json = kind in ("NativeOutput", "PromptedOutput")
    assert chat.get("gen_ai.output.type") == ("json" if asked_json else None)
    assert "gen_ai.tool.call.arguments" not in chat
    if not capture:
        assert "gen_ai.output.messages" not in chat
        assert "gen_ai.output.messages" not in run
        return
    [said] = json.loads(str(chat["gen_ai.output.messages"]))
    if asked_json:
        assert said["parts"] == [{"type": "text", "content": '{"name": "Paris", "population": 2}'}]
    else:
        name = "final_result" if kind == "model" else "answer"
        [part] = said["parts"]
        assert (part["type"], part["id"], part["name"]) == ("tool_call", "o1", name)
        assert part["arguments"] == {"name": "Paris", "population": 2}
    [answer] = json.loads(str(run["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "json", "content": {"name": expected, "population": 2}}]


@pytest.mark.parametrize("how", ["run", "run_stream"])
async def test_a_delegated_run_s_structured_output_is_its_answer(
    how: str, otel_telemetry: InMemoryTelemetry
) -> None:
    """An agent a tool body runs itself (``run``, or ``run_stream`` read by
    ``stream_output()``) with a structured ``output_type``: its chat span tells the output
    tool's call the model returned, its run answers with the validated output as JSON."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.test import TestModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    def answer(messages: list[Any], info: AgentInfo) -> ModelResponse:
        args = {"name": "Paris", "population": 2}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args, "o1")])

    scripted = _city_model()
    inner = Agent(FunctionModel(answer, stream_function=scripted.stream_function,
                                model_name="inner"), name="inner", output_type=City)  # fmt: skip
    outer = Agent(TestModel(call_tools=["ask"]), name="outer")
    outputs: list[Any] = []

    @outer.tool_plain
    async def ask(q: str) -> str:
        if how == "run":
            outputs.append((await inner.run(q)).output)
        else:
            async with inner.run_stream(q) as streamed:
                outputs.extend([o async for o in streamed.stream_output()][-1:])
        return "asked"

    await run_script(otel_telemetry, pydantic_ai_events(outer, "go"), agent_name="outer",
                     capture_content=True)  # fmt: skip

    assert outputs == [City(name="Paris", population=2)]
    tool = ["execute_tool ask", [["invoke_agent inner", [["step 0", ["chat inner"]]]]]]
    assert otel_telemetry.outline() == [
        ["invoke_agent outer", [["step 0", ["chat test", tool]], ["step 1", ["chat test"]]]]
    ]
    chat = dict(otel_telemetry.span("chat inner").attributes or {})
    [said] = json.loads(str(chat["gen_ai.output.messages"]))
    assert [(p["type"], p["name"], p["arguments"]) for p in said["parts"]] == [
        ("tool_call", "final_result", {"name": "Paris", "population": 2})
    ]
    run = dict(otel_telemetry.span("invoke_agent inner").attributes or {})
    assert run["gen_ai.output.type"] == "json"
    [told] = json.loads(str(run["gen_ai.output.messages"]))
    assert told["parts"] == [{"type": "json", "content": {"name": "Paris", "population": 2}}]
    assert otel_telemetry.open_spans() == []
