"""OpenAI Agents SDK runs whose ``RunConfig`` sets the model or its settings.

The SDK documents ``RunConfig.model`` as the model of the entire run, overriding every agent's
(a ``Model``, or a name its ``model_provider`` resolves), and ``RunConfig.model_settings`` as
global settings whose non-null values override each agent's. Each chat span names the model
the request went to and its settings; before, they named the agent's own model and settings,
which the run never used.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _frameworks as fw
from . import _recorded
from ._http import openai_client, sse

pytest.importorskip("agents")


def _client() -> Any:
    """The real OpenAI SDK over its mock transport, answering the recorded two turns."""
    return openai_client(sse(_recorded.responses(tools=True), named=True),
                         sse(_recorded.responses(tools=False), named=True))  # fmt: skip


@pytest.mark.parametrize("given", ["model", "name"])
async def test_the_run_configs_model_and_settings_are_each_calls(
    otel_telemetry: InMemoryTelemetry, given: str
) -> None:
    from agents import ModelSettings, OpenAIProvider, OpenAIResponsesModel, RunConfig

    from agent_contract.sources.openai_agents import openai_agents_events

    agent = fw.agents_agent()  # its own model: gpt-5-mini
    agent.model_settings = ModelSettings(temperature=0.9, top_p=0.5)
    settings = ModelSettings(temperature=0.3)
    if given == "model":
        config = RunConfig(model=OpenAIResponsesModel(model="gpt-4.1", openai_client=_client()),
                           model_settings=settings)  # fmt: skip
    else:
        provider = OpenAIProvider(openai_client=_client(), use_responses=True)
        config = RunConfig(model="gpt-4.1", model_provider=provider, model_settings=settings)
    source = openai_agents_events(agent, "Weather in Paris and Rome?", run_config=config)
    await run_script(otel_telemetry, source, agent_name="a")

    chats = [s for s in otel_telemetry.spans() if s.name.startswith("chat")]
    assert [s.name for s in chats] == ["chat gpt-4.1", "chat gpt-4.1"]
    for chat in chats:
        attributes = dict(chat.attributes or {})
        assert attributes["gen_ai.request.model"] == "gpt-4.1"
        assert attributes["gen_ai.request.temperature"] == 0.3  # the run's, over the agent's
        assert attributes["gen_ai.request.top_p"] == 0.5  # the agent's, the run's unset
