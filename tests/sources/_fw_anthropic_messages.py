"""The SDK source ``anthropic_messages`` as a conformance row: ``stream_messages`` in a tool
loop, the real Anthropic SDK over its mock transport answering Messages streams."""

from __future__ import annotations

from collections.abc import AsyncIterator

from agent_contract.protocol import AgentEvent

from . import _script as s
from . import _script_sdks as bodies
from ._http import Answer, anthropic_client
from ._sdk_row import tool_loop

MODEL = "claude-sonnet-4-5"


def _bodies(run: s.Run) -> tuple[Answer, ...]:
    if run.fail:
        return (bodies.messages_turn_one(fail=True),)
    second = bodies.anthropic_refused if run.refuse else bodies.messages_turn_two()
    return (bodies.messages_turn_one(), second)


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    from agent_contract.sources.anthropic_messages import stream_messages

    client = anthropic_client(*_bodies(run))
    return tool_loop(lambda history: stream_messages(client, history, MODEL, max_tokens=1024), run)
