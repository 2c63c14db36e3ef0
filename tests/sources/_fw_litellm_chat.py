"""The SDK source ``litellm_chat`` as a conformance row: ``stream_litellm`` in a tool loop,
LiteLLM routing ``openai/gpt-4o-mini`` to the real OpenAI SDK over its mock transport."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

from agent_contract.protocol import AgentEvent

from . import _script as s
from ._http import openai_client
from ._sdk_row import chat_bodies, tool_loop

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map fetch at import


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    from agent_contract.sources.litellm_chat import stream_litellm

    client = openai_client(*chat_bodies(run))
    return tool_loop(
        lambda history: stream_litellm(client, history, "openai/gpt-4o-mini", api_key="test"), run
    )
