"""The SDK source ``openai_chat`` as a conformance row: ``stream_chat`` in a tool loop, the
real OpenAI SDK over its mock transport."""

from __future__ import annotations

from collections.abc import AsyncIterator

from agent_contract.protocol import AgentEvent

from . import _script as s
from ._http import openai_client
from ._sdk_row import chat_bodies, tool_loop


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    from agent_contract.sources.openai_chat import stream_chat

    client = openai_client(*chat_bodies(run))
    return tool_loop(lambda history: stream_chat(client, history, "gpt-4o-mini"), run)
