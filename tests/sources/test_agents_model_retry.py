"""The OpenAI Agents SDK's runner-managed model retries (``ModelSettings(retry=...)``): a
request that fails where the retry policy runs it again is a chat span of its own, failed with
its exception's class, in the step of the request that answers; when every attempt fails, each
is failed and the run fails with the last one's exception.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry, run_script

from . import _frameworks as fw
from . import _recorded
from ._http import httpx, sse
from ._trace import tokens

pytest.importorskip("agents")

QUESTION = "Weather in Paris and Rome?"


def _overloaded(request: Any) -> Any:
    return httpx.Response(503, json={"error": {"message": "overloaded", "type": "server_error"}})


def _retrying(*bodies: Any) -> Any:
    """The weather agent on the real OpenAI SDK over its mock transport answering ``bodies``,
    its client's own retries off and the runner's on: 503s retried, twice at most."""
    from agents import ModelSettings
    from agents.retry import ModelRetrySettings, retry_policies

    agent = fw.agents_agent(*bodies)
    agent.model._client = agent.model._client.with_options(max_retries=0)
    retry = ModelRetrySettings(max_retries=2, backoff={"initial_delay": 0, "jitter": False},
                               policy=retry_policies.http_status([503]))  # fmt: skip
    agent.model_settings = ModelSettings(retry=retry)
    return agent


def _chats(telemetry: InMemoryTelemetry) -> list[tuple[StatusCode, Any]]:
    chats = sorted((s for s in telemetry.spans() if s.name.startswith("chat")),
                   key=lambda s: s.start_time or 0)  # fmt: skip
    return [(s.status.status_code, (s.attributes or {}).get("error.type")) for s in chats]


async def test_a_retried_request_is_a_failed_chat_span(otel_telemetry: InMemoryTelemetry) -> None:
    """The 503 the runner retried left no span (the SDK streams nothing of it): now it is a
    failed chat span before the one that answered, in the same step; tokens unchanged."""
    from agent_contract.sources.openai_agents import openai_agents_events

    agent = _retrying(_overloaded, sse(_recorded.responses(tools=True), named=True),
                      sse(_recorded.responses(tools=False), named=True))  # fmt: skip
    await run_script(otel_telemetry, openai_agents_events(agent, QUESTION), agent_name="a")

    assert otel_telemetry.outline() == [["invoke_agent a", [
        ["step 0", ["chat gpt-5-mini", "chat gpt-5-mini", "execute_tool weather",
                    "execute_tool weather"]],
        ["step 1", ["chat gpt-5-mini"]],
    ]]]  # fmt: skip
    assert _chats(otel_telemetry) == [
        (StatusCode.ERROR, "InternalServerError"), (StatusCode.UNSET, None),
        (StatusCode.UNSET, None),
    ]  # fmt: skip
    assert tokens(otel_telemetry) == 2 * 120
    run = otel_telemetry.span("invoke_agent a")
    assert run.status.status_code is StatusCode.UNSET


async def test_every_attempt_failing_fails_each(otel_telemetry: InMemoryTelemetry) -> None:
    """Three attempts (two retries), all 503: three failed chat spans, the run failed with the
    last attempt's exception."""
    import openai

    from agent_contract.sources.openai_agents import openai_agents_events

    agent = _retrying(_overloaded)
    with pytest.raises(openai.InternalServerError):
        await run_script(otel_telemetry, openai_agents_events(agent, QUESTION), agent_name="a")

    assert _chats(otel_telemetry) == [(StatusCode.ERROR, "InternalServerError")] * 3
    run = otel_telemetry.span("invoke_agent a")
    assert run.status.status_code is StatusCode.ERROR
    assert (run.attributes or {}).get("error.type") == "InternalServerError"
    assert otel_telemetry.open_spans() == []
