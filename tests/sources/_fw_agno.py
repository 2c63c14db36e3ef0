"""Agno's conformance builder: a real ``OpenAIChat`` model over the OpenAI SDK's mock transport."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from opentelemetry.trace import Tracer

from agent_contract.protocol import AgentEvent
from agent_contract.sources.agno_stream import agno_events
from agent_otel.testing import InMemoryTelemetry, run_script

from . import _parallel as p
from . import _script as s
from . import _script_chat as chat
from ._http import Answer, openai_client
from ._sdk_row import chat_bodies


def agent(*bodies: Answer, tools: list[Any], name: str = "weatherbot") -> Any:
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat

    model = OpenAIChat(id="gpt-4o-mini", async_client=openai_client(*bodies))
    return Agent(model=model, tools=tools, name=name, telemetry=False)


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    built = agent(*chat_bodies(run), tools=[s.weather_tool(hang=run.hang), s.forecast_tool()])
    return agno_events(built, s.QUESTION, sink=run.kept.append)


async def subagent(telemetry: InMemoryTelemetry) -> None:
    expert = agent(chat.answer("sunny"), tools=[], name="expert")

    async def ask_expert(q: str) -> str:
        """Ask the expert."""
        kept: list[Any] = []
        await run_script(telemetry, agno_events(expert, q, sink=kept.append), agent_name="expert")
        return str(kept[-1].content)

    lead = agent(chat.call("ask_expert", {"q": "Paris?"}, "call_e"), chat.answer("It is sunny."),
                 tools=[ask_expert], name="lead")  # fmt: skip
    await run_script(telemetry, agno_events(lead, s.QUESTION), agent_name="lead")


def parallel(tracer: Tracer) -> AsyncIterator[AgentEvent]:
    """The tool-scope script (``_parallel``); ``mul`` sync."""
    first = chat.calls([(cid, name, {"x": arg}) for cid, name, arg in p.CALLS])
    built = agent(first, chat.answer("done"), tools=p.tools(tracer), name=p.AGENT)
    return agno_events(built, "go")


def teams(tracer: Tracer, **options: Any) -> Any:
    """The three-level script's (``_deep``) lead: a team whose member is a team whose member
    is the clerk (``options`` go to both teams)."""
    from agno.models.openai import OpenAIChat
    from agno.team import Team

    from . import _deep as d

    def model(name: str, member: str) -> Any:
        args = {"member_id": member, "task": "Paris?"}
        ask = chat.call("delegate_task_to_member", args, d.CALL_IDS[name])
        answer = chat.answer(d.ANSWERS[name])
        return OpenAIChat(id="gpt-4o-mini", async_client=openai_client(ask, answer))

    ask = chat.call("lookup", {"term": "Paris"}, d.CALL_IDS["clerk"])
    clerk = agent(ask, chat.answer(d.ANSWERS["clerk"]), tools=[d.lookup(tracer)], name="clerk")
    expert = Team(members=[clerk], model=model("expert", "clerk"), name="expert",
                  telemetry=False, **options)  # fmt: skip
    return Team(members=[expert], model=model("lead", "expert"), name="lead", telemetry=False,
                **options)  # fmt: skip


async def three_levels(telemetry: InMemoryTelemetry, tracer: Tracer) -> tuple[str, str]:
    """The three-level script (``_deep``): each delegation is the leader's
    ``delegate_task_to_member`` call."""
    from . import _deep as d

    await run_script(telemetry, agno_events(teams(tracer), d.QUESTION), agent_name="lead")
    return "delegate_task_to_member", "delegate_task_to_member"
