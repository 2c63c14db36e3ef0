"""pydantic-ai sends an answer back: an output validator's ``ModelRetry``, structured output
that failed validation. Before, both model calls sat in one step and nothing said the first
answer was refused; now the step that gave it fails with the retry's name (as a tool's retry is
named) and the retried request is the next step.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from ._trace import spans_saying

pytest.importorskip("pydantic_ai")


def _steps(telemetry: InMemoryTelemetry) -> list[Any]:
    return sorted((s for s in telemetry.spans() if s.name.startswith("step ")),
                  key=lambda s: s.name)  # fmt: skip


@pytest.mark.parametrize("capture", [True, False], ids=["capture_on", "capture_off"])
async def test_an_output_validators_retry_fails_the_step_whose_answer_it_refused(
    capture: bool, otel_telemetry: InMemoryTelemetry
) -> None:
    """The retry's message is the prompt pydantic-ai sends the model (often quoting its answer):
    content, as a tool's retry prompt is, so it describes the step only with capture on."""
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    async def answer(messages: list[Any], info: AgentInfo) -> AsyncIterator[str]:
        yield "first" if len(messages) == 1 else "second"

    agent = Agent(FunctionModel(stream_function=answer, model_name="scripted"))

    @agent.output_validator
    def not_first(output: str) -> str:
        if output == "first":
            raise ModelRetry("not 'first', say something else")
        return output

    kept: list[Any] = []
    source = pydantic_ai_events(agent, "hi", on_result=kept.append)
    await run_script(otel_telemetry, source, agent_name="a", capture_content=capture)

    assert kept[0].output == "second"
    assert otel_telemetry.outline() == [
        ["invoke_agent a", [["step 0", ["chat scripted"]], ["step 1", ["chat scripted"]]]]
    ]
    first, second = _steps(otel_telemetry)
    assert first.status.status_code is StatusCode.ERROR
    assert (first.attributes or {})["error.type"] == "ModelRetry"
    if capture:
        assert first.status.description == "not 'first', say something else"
    else:  # nowhere on any span: status, attributes or events
        assert spans_saying(otel_telemetry, "say something else") == []
    assert second.status.status_code is StatusCode.UNSET
    root = otel_telemetry.span("invoke_agent a")
    assert root.status.status_code is StatusCode.UNSET
    assert otel_telemetry.open_spans() == []


async def test_structured_output_that_failed_validation_is_a_validation_error_of_its_step(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The output tool is the answer, not a call: no tool span; its rejected call is the
    step's ``ValidationError``, and the content of the errors is not recorded."""
    from pydantic import BaseModel
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    class City(BaseModel):
        name: str
        people: int

    async def answer(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        tool = info.output_tools[0].name
        args = '{"name": "Paris"}' if len(messages) == 1 else '{"name": "Paris", "people": 2}'
        yield {0: DeltaToolCall(name=tool, json_args=args, tool_call_id=f"o{len(messages)}")}

    agent = Agent(FunctionModel(stream_function=answer, model_name="scripted"), output_type=City)
    kept: list[Any] = []
    source = pydantic_ai_events(agent, "hi", on_result=kept.append)
    await run_script(otel_telemetry, source, agent_name="a")

    assert kept[0].output == City(name="Paris", people=2)
    assert otel_telemetry.outline() == [
        ["invoke_agent a", [["step 0", ["chat scripted"]], ["step 1", ["chat scripted"]]]]
    ]
    first, _ = _steps(otel_telemetry)
    assert (first.attributes or {})["error.type"] == "ValidationError"
    assert first.status.description == "the output failed validation"
