"""Google ADK on the OpenAI SDK: ``LlmAgent`` on ADK's ``OpenAILlm``, its SDK client over the
SDK's mock transport.

The same agent as ``_fw_google_adk`` with the OpenAI model class ADK ships
(``google.adk.integrations.openai``, the ``openai`` extra of google-adk, on the SDK 2.x), so
the row's model calls go through the OpenAI SDK: the provider instrumentations stand down
beside it, and a request refused with a 429 (``refuse``) fails before its first chunk as it
would live. It runs in ADK's own environment (``.ci/separate-envs``). The tool-scope script
is ``_fw_google_adk``'s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from agent_contract.protocol import AgentEvent
from agent_contract.sources.google_adk_stream import google_adk_events

from . import _script as s
from ._fw_google_adk import agent, parallel
from ._http import openai_client
from ._sdk_row import chat_bodies

__all__ = ["events", "parallel"]


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    from google.adk.integrations.openai import OpenAILlm

    model = OpenAILlm(model="gpt-4o-mini", client=openai_client(*chat_bodies(run)))
    built = agent(model, [s.weather_tool(hang=run.hang), s.forecast_tool()])
    return google_adk_events(built, s.QUESTION, sink=run.kept.append)
