"""A secret a model streams in pieces: each delta alone holds no credential a detector knows,
the answer they make does. The captured answer is scrubbed whole, never delta by delta."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import LLMCallEnd, LLMCallStart, Message, StepBoundary, TextDelta
from agent_otel.testing import InMemoryTelemetry, run_script
from test_scrubbing_signals import MODES, SECRETS, SHOWN, exported, leaked

CAPTURED = sorted(set(MODES) - {"off"})


def _answer(telemetry: InMemoryTelemetry, pieces: list[str], mode: str) -> str:
    """What ``pieces``, streamed as one model call's deltas, export with capture ``mode``."""
    events: list[Any] = [
        LLMCallStart(model="m", call_id="c", messages=[Message(role="user", content="key?")]),
        *(TextDelta(piece) for piece in pieces),
        LLMCallEnd(call_id="c", finish_reason="stop"),
        StepBoundary(index=0),
    ]

    async def main() -> None:
        stream = ScriptedAgent(events).stream([Message(role="user", content="key?")])
        await run_script(telemetry, stream, capture_content=MODES[mode])

    asyncio.run(main())
    return exported(telemetry)


@pytest.mark.parametrize("mode", CAPTURED)
@pytest.mark.parametrize("name", ["openai", "jwt", "db password", "bearer", "pem body"])
def test_a_secret_split_across_two_deltas_is_scrubbed_in_the_answer(name: str, mode: str) -> None:
    """The secret cut in two after its first character, in its middle and before its last:
    the exported answer holds none of it, and the text around it is kept."""
    text = f"Here it is: {SHOWN.get(name, SECRETS[name])} (keep it safe)"
    start, length = text.index(SECRETS[name]), len(SECRETS[name])
    for cut in (start + 1, start + length // 2, start + length - 1):
        out = _answer(InMemoryTelemetry(), [text[:cut], text[cut:]], mode)
        assert leaked(out) == set(), cut
        assert "Here it is: " in out and "(keep it safe)" in out


@pytest.mark.parametrize("mode", CAPTURED)
def test_a_secret_streamed_a_character_at_a_time_is_scrubbed_in_the_answer(mode: str) -> None:
    text = f"token {SECRETS['openai']} done"
    out = _answer(InMemoryTelemetry(), list(text), mode)
    assert leaked(out) == set()
    assert "[REDACTED:openai_api_key" in out
