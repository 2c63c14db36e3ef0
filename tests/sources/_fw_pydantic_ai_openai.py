"""pydantic-ai on the OpenAI SDK: ``OpenAIChatModel`` with its SDK client over the SDK's mock
transport.

The same agent as ``_fw_pydantic_ai`` with the model a deployment uses, so the row's model
calls go through the OpenAI SDK: the provider instrumentations stand down beside it, and a
request refused with a 429 (``refuse``) fails before its first chunk as it would live. The
usage is the provider's (cache and reasoning tokens included), not pydantic-ai's estimate.
The tool-scope script is ``_fw_pydantic_ai``'s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agent_contract.protocol import AgentEvent
from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

from . import _script as s
from ._fw_pydantic_ai import parallel, with_tools
from ._http import Answer, openai_client
from ._sdk_row import chat_bodies

__all__ = ["events", "parallel"]


def model(*bodies: Answer) -> Any:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(openai_client=openai_client(*bodies))
    return OpenAIChatModel("gpt-4o-mini", provider=provider)


def agent(run: s.Run, name: str = "weatherbot") -> Any:
    return with_tools(model(*chat_bodies(run)), run, name)


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    return pydantic_ai_events(agent(run), s.QUESTION, on_result=run.kept.append)
