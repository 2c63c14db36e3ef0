"""pydantic-ai's model settings: a request goes with the model's own ``settings``, the agent's
``model_settings`` over them and the run's over both (pydantic-ai documents this precedence,
run > agent > model). Each chat span carries what the request went with; before, it carried
the run's settings alone, or, with none given to the run, the agent's alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

pytest.importorskip("pydantic_ai")


@pytest.mark.parametrize("run_settings", [True, False], ids=["run_settings", "none_to_run"])
async def test_a_chat_span_carries_the_model_agent_and_run_settings_merged(
    otel_telemetry: InMemoryTelemetry, run_settings: bool
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    sent: list[Any] = []

    async def answer(messages: list[Any], info: AgentInfo) -> AsyncIterator[str]:
        sent.append(info.model_settings)  # what pydantic-ai hands the model
        yield "fine"

    model = FunctionModel(stream_function=answer, model_name="m",
                          settings={"top_p": 0.4, "temperature": 0.1})  # fmt: skip
    agent = Agent(model, model_settings={"temperature": 0.9, "max_tokens": 50})
    run = {"model_settings": {"max_tokens": 100}} if run_settings else {}
    await run_script(otel_telemetry, pydantic_ai_events(agent, "hi", **run), agent_name="a")

    expected = {"top_p": 0.4, "temperature": 0.9, "max_tokens": 100 if run_settings else 50}
    assert {k: sent[0][k] for k in expected} == expected  # the documented precedence holds
    chat = dict(otel_telemetry.span("chat m").attributes or {})
    assert chat["gen_ai.request.top_p"] == expected["top_p"]
    assert chat["gen_ai.request.temperature"] == expected["temperature"]
    assert chat["gen_ai.request.max_tokens"] == expected["max_tokens"]
