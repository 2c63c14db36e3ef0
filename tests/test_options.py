"""One options object: otel_wrapper(), instrument() and the instrumentor take the same options,
written and documented once (``agent_otel.recording._options.Options``)."""

from __future__ import annotations

from typing import Any

import pytest

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import LLMCallEnd, LLMCallStart, StepBoundary, TextDelta
from agent_otel import _attributes as A
from agent_otel import instrument, otel_wrapper
from agent_otel.decorating._instrumentor import AgentInstrumentor
from agent_otel.recording._options import OPTION_NAMES, Options
from agent_otel.testing import InMemoryTelemetry

EVENTS = [
    LLMCallStart(model="m", call_id="c"),
    TextDelta("hi"),
    LLMCallEnd(call_id="c"),
    StepBoundary(),
]
KEYS = [A.SESSION_ID, A.USER_ID, A.PROVIDER_NAME, "team"]


def test_every_option_is_documented_once_in_the_options_docstring() -> None:
    doc = Options.__doc__ or ""
    for name in OPTION_NAMES:
        assert doc.count(f"``{name}``") >= 1, f"Options does not document {name}"


def test_an_unknown_option_is_a_type_error_everywhere() -> None:
    with pytest.raises(TypeError, match="tracer_providr"):
        otel_wrapper(tracer_providr=None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="tracer_providr"):
        instrument(ScriptedAgent(EVENTS), tracer_providr=None)  # type: ignore[call-arg]


def _options(telemetry: InMemoryTelemetry) -> dict[str, Any]:
    """Options beyond the providers, each with a visible effect on the tree."""
    return {
        "tracer_provider": telemetry.tracer_provider,
        "meter_provider": telemetry.meter_provider,
        "session_id": "s-1",
        "user_id": "u-1",
        "provider": "acme",
        "attributes": {"team": "search"},
        "step_spans": False,
    }


def _expected(agent_name: str) -> list[dict[str, Any]]:
    ids = {A.SESSION_ID: "s-1", A.USER_ID: "u-1"}
    chat = {"name": "chat m", "kind": "CLIENT", "attributes": {**ids, A.PROVIDER_NAME: "acme"}}
    return [
        {
            "name": f"invoke_agent {agent_name}",
            "kind": "INTERNAL",
            "attributes": {**ids, A.PROVIDER_NAME: "acme", "team": "search"},
            "children": [{**chat, "children": []}],
        }
    ]


async def test_otel_wrapper_and_instrument_take_the_same_options(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    wrap = otel_wrapper(agent_name="scripted", **_options(otel_telemetry))
    async for _ in wrap(ScriptedAgent(EVENTS).stream([])):
        pass
    by_wrapper = otel_telemetry.tree(attributes=KEYS, events=False)
    assert by_wrapper == _expected("scripted")
    otel_telemetry.clear()
    await instrument(ScriptedAgent(EVENTS), **_options(otel_telemetry)).invoke([])
    assert otel_telemetry.tree(attributes=KEYS, events=False) == by_wrapper


async def test_the_instrumentor_passes_every_option_through(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    class Scripted(ScriptedAgent):
        pass

    instrumentor = AgentInstrumentor()
    instrumentor.instrument(
        **_options(otel_telemetry), base_classes=[Scripted], skip_dep_check=True
    )
    try:
        await Scripted(EVENTS).invoke([])
    finally:
        instrumentor.uninstrument()
    assert otel_telemetry.tree(attributes=KEYS, events=False) == _expected("scripted")
