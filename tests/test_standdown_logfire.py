"""Logfire's LLM provider instrumentation stands down inside our chat spans, the rest of
Logfire does not (in Logfire's own environment, extra ``bench-logfire``, a row of
``.ci/separate-envs``: its pydantic plugin is installed nowhere else).

Logfire's ``instrument_openai()`` reads OTel's general suppression key before each request,
through its ``is_instrumentation_suppressed()``, which every part of Logfire asks. Our chat
span's value of that key is true only for provider instrumentations, so Logfire's request span
is not made, while a ``logfire.info()`` the agent's own code logs during the call still is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

logfire = pytest.importorskip("logfire")

import httpx2  # noqa: E402
import openai  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402

from agent_otel.testing import InMemoryTelemetry  # noqa: E402
from test_standdown import MODEL, OpenAIAgent, _handler  # noqa: E402


def _local_logfire(kit: InMemoryTelemetry) -> Any:
    """A local Logfire (nothing sent, no console, no metrics) exporting into ``kit``."""
    return logfire.configure(
        local=True,
        send_to_logfire=False,
        console=False,
        metrics=False,
        additional_span_processors=[SimpleSpanProcessor(kit.exporter)],
    )


@pytest.fixture
def logfire_side() -> Iterator[tuple[Any, InMemoryTelemetry]]:
    """A local Logfire (nothing sent, no console, no metrics) exporting into a kit of its own,
    with ``instrument_openai()`` on, reverted after."""
    kit = InMemoryTelemetry()
    instance = _local_logfire(kit)
    with instance.instrument_openai():
        yield instance, kit
    kit.shutdown()


def _client() -> Any:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(_handler))
    return openai.AsyncOpenAI(api_key="test", base_url="http://mock.invalid/v1", http_client=http)


class NotingAgent(OpenAIAgent):
    """The OpenAI agent of ``test_standdown``, logging a note with Logfire during its call."""

    def __init__(self, api: Any, stream: bool, instance: Any) -> None:
        super().__init__(api, stream)
        self.logfire = instance

    async def stream(self, messages: list[Any], config: Any = None) -> AsyncIterator[Any]:
        async for event in super().stream(messages, config):
            if type(event).__name__ == "LLMCallStart":
                self.logfire.info("agent note")  # the agent's own, inside the call
            yield event


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "not-streaming"])
async def test_logfire_stands_down_inside_our_chat_span_only(
    otel_telemetry: InMemoryTelemetry, logfire_side: tuple[Any, InMemoryTelemetry], stream: bool
) -> None:
    instance, theirs = logfire_side
    api = _client()
    agent = NotingAgent(api, stream, instance)
    [_ async for _ in otel_telemetry.wrapper()(agent.stream([]))]

    ours = [s.name for s in otel_telemetry.spans() if s.name.startswith("chat")]
    assert ours == [f"chat {MODEL}"]
    assert [s.name for s in theirs.spans()] == ["agent note"]  # no chat span of Logfire's

    await api.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert len(theirs.spans()) == 2  # outside our chat spans Logfire traces the call


@pytest.mark.parametrize("stand_down", [True, False], ids=["stand-down", "opt-out"])
async def test_logfire_openai_agents_stands_down_in_the_adapters_run(
    otel_telemetry: InMemoryTelemetry, stand_down: bool
) -> None:
    """Logfire's ``instrument_openai_agents()`` wraps the Agents SDK's trace provider and reads
    no context key: with the SDK's tracing left on (its default), its agent, turn, model and
    tool spans land in our run's trace. In a run of the adapter's it hands the SDK its own
    trace and spans; opted out, its spans are back."""
    pytest.importorskip("agents")
    from sources import _script as s
    from sources._conformance import ROWS
    from sources.test_framework_instrumentations import _sdk_tracing

    kit = InMemoryTelemetry()
    instance = _local_logfire(kit)
    from agents.tracing import get_trace_provider, set_trace_provider

    provider = get_trace_provider()
    row = {r.name: r for r in ROWS}["openai_agents"]

    @contextmanager
    def instrumented(_: InMemoryTelemetry) -> Iterator[None]:
        instance.instrument_openai_agents()
        try:
            yield
        finally:
            set_trace_provider(provider)

    try:
        with _sdk_tracing(instrumented)(otel_telemetry):
            wrapper = otel_telemetry.wrapper(agent_name="agent", stand_down_providers=stand_down)
            [_ async for _ in wrapper(row.events(s.Run()))]
    finally:
        kit.shutdown()
    assert otel_telemetry.outline()[0][0] == "invoke_agent agent"
    theirs = [sp.name for sp in kit.spans() if not sp.name.startswith("invoke_agent")]
    if stand_down:
        assert theirs == []
    else:
        assert any(name.startswith("Chat completion") for name in theirs)
