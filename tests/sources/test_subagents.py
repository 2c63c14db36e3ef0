"""A sub-agent run inside a framework's tool nests under that tool's span."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script


async def test_a_pydantic_ai_agent_delegating_to_another_nests_its_run_under_the_tool(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    async def lead(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {
                0: DeltaToolCall(name="ask_expert", json_args='{"q": "Paris?"}', tool_call_id="d")
            }
        else:
            yield "The expert says: sunny."

    async def answer(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        yield "sunny"

    expert = Agent(FunctionModel(stream_function=answer, model_name="expert-model"), name="expert")
    boss = Agent(FunctionModel(stream_function=lead, model_name="lead-model"), name="lead")

    @boss.tool_plain
    async def ask_expert(q: str) -> str:
        results: list[Any] = []
        inner = pydantic_ai_events(expert, q, on_result=results.append)
        await run_script(otel_telemetry, inner, agent_name="expert")
        return str(results[0].output)

    await run_script(otel_telemetry, pydantic_ai_events(boss, "Weather?"), agent_name="lead")

    assert otel_telemetry.outline() == [
        ["invoke_agent lead", [
            ["step 0", ["chat lead-model",
                        ["execute_tool ask_expert", [
                            ["invoke_agent expert", [["step 0", ["chat expert-model"]]]],
                        ]]]],
            ["step 1", ["chat lead-model"]],
        ]],
    ]  # fmt: skip
