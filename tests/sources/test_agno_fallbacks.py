"""Agno: an agent's ``fallback_models``, tried when its model's request fails.

Agno tells only a second ``ModelRequestStarted``, named after the agent's model, then the
fallback's answer, and never the failure: the failed request looked answered (no error) and
the fallback's call was named after the model that failed. The failed request (made, often
billed) is a chat span of its own, failed with the class Agno moved on from; the fallback's
call is named after the fallback model and has the tokens; both in one step, as they answer
one turn. The run succeeds, as the agent did.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _script as s
from . import _script_chat as chat
from ._http import openai_client, transport
from ._sdk_row import refused
from ._trace import tokens

pytest.importorskip("agno")


async def test_a_request_that_fell_back_is_a_failed_call_beside_the_fallbacks(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat

    from agent_contract.sources.agno_stream import agno_events

    sent: list[Any] = []
    primary = OpenAIChat(id="gpt-4o", async_client=openai_client(refused, seen=sent),
                         max_retries=0)  # fmt: skip
    # (Agno tries a copy of the fallback, its clients dropped: client_params keep the transport)
    backup = OpenAIChat(id="gpt-4o-mini", api_key="test", base_url="http://mock.invalid/v1",
                        client_params={"http_client": transport(chat.answer("Sunny."),
                                                                seen=sent)})  # fmt: skip
    agent = Agent(model=primary, fallback_models=[backup], name="a", telemetry=False)
    kept: list[Any] = []
    source = agno_events(agent, "Weather?", sink=kept.append)
    await run_script(otel_telemetry, source, agent_name="a", capture_content=True)

    assert [json.loads(r.content)["model"] for r in sent] == ["gpt-4o", "gpt-4o-mini"]
    assert kept[-1].content == "Sunny."  # Agno's answer, unchanged
    assert otel_telemetry.outline() == [["invoke_agent a", [
        ["step 0", ["chat gpt-4o", "chat gpt-4o-mini"]],
    ]]]  # fmt: skip
    failed = otel_telemetry.span("chat gpt-4o")
    assert failed.status.status_code == StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "ModelRateLimitError"  # Agno's class
    answered = otel_telemetry.span("chat gpt-4o-mini")
    assert answered.status.status_code != StatusCode.ERROR
    assert (answered.attributes or {})["gen_ai.usage.input_tokens"] == s.TURNS[0].input
    run = otel_telemetry.span("invoke_agent a")
    assert run.status.status_code != StatusCode.ERROR
    [answer] = json.loads(str((run.attributes or {})["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "text", "content": "Sunny."}]
    assert tokens(otel_telemetry) == s.TURNS[0].input
    assert otel_telemetry.open_spans() == []
