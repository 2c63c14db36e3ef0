"""Agno: a reasoning agent's model request is a run of its own, nested in the run that reasons.

An agent given a ``reasoning_model`` (a native reasoning model: OpenAI's o-series here) has
Agno run a reasoning agent on it before the agent's own request: Agno streams that agent's
run (``arun(stream=True, stream_events=True)``) and tells the outer stream only its text
(``ReasoningContentDelta``), no model request. The reasoning model's request, billed, was in
no span; its tokens were not counted.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _script as s
from . import _script_chat as chat
from ._http import openai_client
from ._trace import tokens

pytest.importorskip("agno")


async def test_a_reasoning_models_request_is_a_nested_run_with_its_tokens(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat

    from agent_contract.sources.agno_stream import agno_events

    sent: list[Any] = []
    model = OpenAIChat(id="gpt-4o-mini", async_client=openai_client(chat.answer("Sunny."),
                                                                    seen=sent))  # fmt: skip
    thinker = OpenAIChat(id="o3-mini", async_client=openai_client(chat.answer("Think: sunny."),
                                                                  seen=sent))  # fmt: skip
    agent = Agent(model=model, reasoning_model=thinker, name="a", telemetry=False)
    kept: list[Any] = []
    source = agno_events(agent, "Weather?", sink=kept.append)
    await run_script(otel_telemetry, source, agent_name="a", capture_content=True)

    assert [json.loads(r.content)["model"] for r in sent] == ["o3-mini", "gpt-4o-mini"]
    assert "ReasoningContentDelta" in [getattr(e, "event", None) for e in kept]  # Agno's own
    # the reasoning is part of the step it reasons for, beside that step's request
    assert otel_telemetry.outline() == [["invoke_agent a", [["step 0", [
        ["invoke_agent reasoning", [["step 0", ["chat o3-mini"]]]], "chat gpt-4o-mini",
    ]]]]]  # fmt: skip
    assert tokens(otel_telemetry) == 2 * s.TURNS[0].input  # each request, once
    assert kept[-1].content == "Sunny."  # the run's answer is Agno's, unchanged
    assert otel_telemetry.open_spans() == []


async def test_untraced_a_reasoning_agent_runs_as_agno_runs_it() -> None:
    """No tracer: the reasoning agent's events reach Agno unchanged, and the run answers."""
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat

    from agent_contract.sources.agno_stream import agno_events

    model = OpenAIChat(id="gpt-4o-mini", async_client=openai_client(chat.answer("Sunny.")))
    thinker = OpenAIChat(id="o3-mini", async_client=openai_client(chat.answer("Think: sunny.")))
    agent = Agent(model=model, reasoning_model=thinker, name="a", telemetry=False)
    kept: list[Any] = []
    [_ async for _ in agno_events(agent, "Weather?", sink=kept.append)]
    said = [
        e.reasoning_content for e in kept if getattr(e, "event", None) == "ReasoningContentDelta"
    ]
    assert "".join(said) == "Think: sunny."
    assert kept[-1].content == "Sunny."
