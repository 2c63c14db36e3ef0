"""AutoGen AgentChat on the OpenAI SDK: ``AssistantAgent`` with autogen-ext's
``OpenAIChatCompletionClient``, its SDK client over the SDK's mock transport.

The same agent as ``_fw_autogen`` with the model client a deployment uses, so the row's model
calls go through the OpenAI SDK: the provider instrumentations stand down beside it, and a
request refused with a 429 (``refuse``) fails before its first chunk as it would live.
AutoGen's ``RequestUsage`` carries prompt and completion tokens only; its OpenAI client streams
the model's ``reasoning_content`` as chunks between ``<think>`` tags, which the adapter reports
as reasoning (tests/sources/test_autogen_reasoning.py). The tool-scope script is
``_fw_autogen``'s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agent_contract.protocol import AgentEvent
from agent_contract.sources.autogen_stream import autogen_events

from . import _script as s
from ._fw_autogen import parallel
from ._http import Answer, openai_client
from ._sdk_row import chat_bodies

__all__ = ["events", "parallel"]


def client(*bodies: Answer) -> Any:
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    built = OpenAIChatCompletionClient(model="gpt-4o-mini", api_key="test",
                                       base_url="http://mock.invalid/v1")  # fmt: skip
    built._client = openai_client(*bodies)  # the SDK client it made, over the mock transport
    return built


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    from autogen_agentchat.agents import AssistantAgent

    tools = [s.weather_tool(hang=run.hang), s.forecast_tool()]
    built = AssistantAgent("weatherbot", model_client=client(*chat_bodies(run)), tools=tools,
                           model_client_stream=True, reflect_on_tool_use=True)  # fmt: skip
    return autogen_events(built, s.QUESTION, sink=run.kept.append)
