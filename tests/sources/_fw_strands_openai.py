"""Strands Agents on the OpenAI SDK: an ``Agent`` on Strands' ``OpenAIModel``, its SDK client
over the SDK's mock transport.

The same agent as ``_fw_strands`` with the OpenAI model class Strands ships (its ``openai``
extra, on the SDK 2.x), so the row's model calls go through the OpenAI SDK: the provider
instrumentations stand down beside it, and a request refused with a 429 (``refuse``) fails
before its first chunk as it would live. It runs in Strands' own environment
(``.ci/separate-envs``). The tool-scope script is ``_fw_strands``'s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from agent_contract.protocol import AgentEvent
from agent_contract.sources.strands_stream import strands_events

from . import _script as s
from ._fw_strands import agent, parallel
from ._http import openai_client
from ._sdk_row import chat_bodies

__all__ = ["events", "parallel"]


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    from strands.models.openai import OpenAIModel

    model = OpenAIModel(client=openai_client(*chat_bodies(run)), model_id="gpt-4o-mini")
    built = agent(model, [s.weather_tool(hang=run.hang), s.forecast_tool()])
    return strands_events(built, s.QUESTION, sink=run.kept.append)
