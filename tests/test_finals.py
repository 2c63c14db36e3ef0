"""The recorder reads terminal events by ``_drain``'s rule: ``final=True``, then ``type``.

A ``MessageFinal(final=False)`` (a draft) is not the run's answer: it sets no output type and
does not make the events after it count as ``event_after_terminal``.
"""

from __future__ import annotations

from typing import Any

from agent_contract.agent import InterruptFinal, MessageDelta, MessageFinal, StructuredFinal
from agent_contract.examples import ScriptedAgent
from agent_otel.testing import InMemoryTelemetry


async def agent_attributes(telemetry: InMemoryTelemetry, events: list[Any]) -> dict[str, Any]:
    wrapper = telemetry.wrapper()
    received = [e async for e in wrapper(ScriptedAgent(events).stream([]))]
    assert all(a is b for a, b in zip(received, events, strict=True))
    (span,) = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    return {**(span.attributes or {}), "events": [e.name for e in span.events]}


async def test_a_draft_final_is_not_terminal(otel_telemetry: InMemoryTelemetry) -> None:
    events = [
        MessageFinal(text="draft", final=False),
        MessageDelta(text="more"),
        MessageFinal(text="answer"),
    ]
    attributes = await agent_attributes(otel_telemetry, events)
    assert attributes["gen_ai.output.type"] == "text"
    assert "agent_otel.anomalies" not in attributes


async def test_non_final_terminal_kinds_record_nothing(otel_telemetry: InMemoryTelemetry) -> None:
    events = [
        StructuredFinal(data={"a": 1}, final=False),
        InterruptFinal(interrupt_id="i", payload=None, final=False),
    ]
    attributes = await agent_attributes(otel_telemetry, events)
    assert "gen_ai.output.type" not in attributes
    assert attributes["events"] == []
    assert attributes["agent_otel.end_reason"] == "exhausted"
