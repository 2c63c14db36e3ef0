"""AutoGen: a run cancelled while its model request is in flight shows that request.

AutoGen's stream tells a model call only by its output, so the adapter opens a call at its
first output, or, for a request that raised before any, as the error comes out. A request
cancelled before its first output (the run's ``CancellationToken``, the caller's time limit)
is the same: it was sent, so it is a chat span, cut short, in the cancelled run.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _recorded
from ._http import Body, split, sse

pytest.importorskip("autogen_agentchat")


@pytest.mark.parametrize("stream", [False, True], ids=["create", "create_stream"])
@pytest.mark.parametrize("by", ["CancellationToken", "time limit"])
async def test_a_request_cancelled_in_flight_is_a_chat_span_cut_short(
    otel_telemetry: InMemoryTelemetry, stream: bool, by: str
) -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_core import CancellationToken

    from agent_contract.sources.autogen_stream import autogen_events

    from ._fw_autogen_openai import client

    body = Body(split(sse(_recorded.chat(), done=True)), hang_after=0)  # never answers
    agent = AssistantAgent("solo", model_client=client(body.response),
                           model_client_stream=stream)  # fmt: skip
    run: dict[str, Any] = {}
    if by == "CancellationToken":
        token = CancellationToken()
        run["cancellation_token"] = token
        asyncio.get_running_loop().call_later(0.2, token.cancel)
    source = autogen_events(agent, "Weather?", **run)
    with pytest.raises((asyncio.CancelledError, TimeoutError)):
        async with asyncio.timeout(0.2 if by == "time limit" else 10):
            await run_script(otel_telemetry, source, agent_name="solo")

    assert otel_telemetry.outline() == [["invoke_agent solo", [["step 0", ["chat gpt-4o-mini"]]]]]
    chat = otel_telemetry.span("chat gpt-4o-mini")
    assert (chat.attributes or {}).get("agent_otel.incomplete") is True
    root = otel_telemetry.span("invoke_agent solo")
    assert root.status.status_code is StatusCode.ERROR
    assert (root.attributes or {})["agent_otel.end_reason"] == "cancelled"
    assert otel_telemetry.open_spans() == []
