"""LlamaIndex on the OpenAI SDK: a ``FunctionAgent`` on ``llama-index-llms-openai``'s
``OpenAI`` LLM, its SDK client over the SDK's mock transport.

The same agent as ``_fw_llama_index`` with the LLM class a deployment uses, so the row's
model calls go through the OpenAI SDK: the provider instrumentations stand down beside it,
and a request refused with a 429 (``refuse``) fails before its first chunk as it would live.
``llama-index-llms-openai`` needs the SDK 2.x, so the row runs in its own environment
(``.ci/separate-envs``, the ``bench-llama-index`` extra). The tool-scope script is
``_fw_llama_index``'s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agent_contract.protocol import AgentEvent
from agent_contract.sources.llama_index_stream import llama_index_events

from . import _script as s
from ._fw_llama_index import parallel
from ._http import transport
from ._sdk_row import chat_bodies

__all__ = ["events", "parallel"]


def agent(run: s.Run, name: str = "weatherbot") -> Any:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.llms.openai import OpenAI

    async def forecast(city: str) -> str:
        """Tomorrow's forecast for a city."""
        return s.forecast_sync(city)

    llm = OpenAI(model="gpt-4o-mini", api_key="test", api_base="http://mock.invalid/v1",
                 max_retries=0, async_http_client=transport(*chat_bodies(run)))  # fmt: skip
    tools = [s.weather_tool(hang=run.hang), forecast]
    return FunctionAgent(name=name, tools=tools, llm=llm, streaming=True)


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    return llama_index_events(agent(run), s.QUESTION, sink=run.kept.append)
