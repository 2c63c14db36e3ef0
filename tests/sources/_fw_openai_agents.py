"""The OpenAI Agents SDK's conformance builder: an ``Agent`` on the SDK's own
``OpenAIChatCompletionsModel``, the real OpenAI SDK over its mock transport answering the
script's Chat Completions bodies (``_script_chat``). ``forecast`` raises; the SDK's default
failure handler hands the error to the model as the tool's output."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from opentelemetry.trace import Tracer

from agent_contract.protocol import AgentEvent
from agent_contract.sources.openai_agents import openai_agents_events

from . import _parallel as p
from . import _script as s
from ._http import openai_client
from ._sdk_row import chat_bodies


def agent(run: s.Run) -> Any:
    from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled

    set_tracing_disabled(True)  # tests: no export to the vendor's trace endpoint
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini",
                                       openai_client=openai_client(*chat_bodies(run)))  # fmt: skip
    tools = [function_tool(s.weather_tool(hang=run.hang)), function_tool(s.forecast_tool())]
    return Agent(name="weatherbot", instructions="Be brief.", tools=tools, model=model)


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    return openai_agents_events(agent(run), s.QUESTION, on_result=run.kept.append)


def scripted(*steps: Any) -> Any:
    """The SDK's own scripted test model answering ``steps`` in turn (its tracing off: no
    export to the vendor's trace endpoint)."""
    from agents import set_tracing_disabled
    from agents.testing import ScriptedModel

    set_tracing_disabled(True)
    return ScriptedModel(list(steps))


def parallel(tracer: Tracer) -> AsyncIterator[AgentEvent]:
    """The tool-scope script (``_parallel``) on the SDK's own scripted test model; ``mul``
    sync, run on a thread by the SDK."""
    from agents import Agent, function_tool
    from agents.testing import assistant_message, function_call

    model = scripted(
        [function_call(name, {"x": arg}, call_id=cid) for cid, name, arg in p.CALLS],
        [assistant_message("done")],
    )
    tools = [function_tool(body) for body in p.tools(tracer)]
    return openai_agents_events(Agent(name=p.AGENT, tools=tools, model=model), "go")
