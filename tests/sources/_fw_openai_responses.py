"""The SDK source ``openai_responses`` as a conformance row: ``stream_responses`` in a tool
loop, the real OpenAI SDK over its mock transport answering Responses streams."""

from __future__ import annotations

from collections.abc import AsyncIterator

from agent_contract.protocol import AgentEvent

from . import _script as s
from . import _script_sdks as bodies
from ._http import Answer, openai_client
from ._sdk_row import refused, tool_loop


def _bodies(run: s.Run) -> tuple[Answer, ...]:
    if run.fail:
        return (bodies.responses_turn_one(fail=True),)
    return (bodies.responses_turn_one(), refused if run.refuse else bodies.responses_turn_two())


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    from agent_contract.sources.openai_responses import stream_responses

    client = openai_client(*_bodies(run))
    return tool_loop(lambda history: stream_responses(client, history, "gpt-4o-mini"), run)
