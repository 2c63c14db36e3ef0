"""Agno: an agent's ``output_model``, which writes the answer once the agent's model is done.

Agno streams that model's request (``aresponse_stream``) and tells only its text, between
``OutputModelResponseStarted`` and ``OutputModelResponseCompleted``: no request event, so the
request, billed, was in no span and its tokens were not counted. It is the run's last own
call: a chat span with its tokens, whose answer is the run's.
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


async def test_the_output_models_request_is_the_runs_last_call_with_its_tokens(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat

    from agent_contract.sources.agno_stream import agno_events

    sent: list[Any] = []
    model = OpenAIChat(id="gpt-4o-mini", async_client=openai_client(chat.answer("Paris: sun."),
                                                                    seen=sent))  # fmt: skip
    writer = OpenAIChat(
        id="gpt-4.1-nano",
        async_client=openai_client(chat.answer("It is sunny in Paris."), seen=sent),
    )
    agent = Agent(model=model, output_model=writer, name="a", telemetry=False)
    kept: list[Any] = []
    source = agno_events(agent, "Weather?", sink=kept.append)
    await run_script(otel_telemetry, source, agent_name="a", capture_content=True)

    assert [json.loads(r.content)["model"] for r in sent] == ["gpt-4o-mini", "gpt-4.1-nano"]
    assert kept[-1].content == "It is sunny in Paris."  # Agno's answer, unchanged
    assert otel_telemetry.outline() == [["invoke_agent a", [
        ["step 0", ["chat gpt-4o-mini", "chat gpt-4.1-nano"]],
    ]]]  # fmt: skip
    drafted = otel_telemetry.span("chat gpt-4o-mini").attributes or {}
    [draft] = json.loads(str(drafted["gen_ai.output.messages"]))
    assert draft["parts"] == [{"type": "text", "content": "Paris: sun."}]  # what it answered
    written = otel_telemetry.span("chat gpt-4.1-nano").attributes or {}
    assert written["gen_ai.usage.input_tokens"] == s.TURNS[0].input
    [said] = json.loads(str(written["gen_ai.output.messages"]))
    assert said["parts"] == [{"type": "text", "content": "It is sunny in Paris."}]
    run = otel_telemetry.span("invoke_agent a").attributes or {}
    assert run["gen_ai.request.model"] == "gpt-4o-mini"
    [answer] = json.loads(str(run["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "text", "content": "It is sunny in Paris."}]
    assert tokens(otel_telemetry) == 2 * s.TURNS[0].input  # each request, once
    assert otel_telemetry.open_spans() == []
