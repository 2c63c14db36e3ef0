"""pydantic-ai's conformance builder: the script on ``FunctionModel`` with a stream function.

pydantic-ai ends the run on any exception a tool raises; a tool failure the model sees is a
``ModelRetry``, so ``forecast`` raises that here. ``FunctionModel`` estimates usage itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from opentelemetry.trace import Tracer

from agent_contract.protocol import AgentEvent
from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events
from agent_otel.testing import InMemoryTelemetry, run_script

from . import _parallel as p
from . import _script as s
from ._conformance import Totals


def agent(run: s.Run, name: str = "weatherbot") -> Any:
    from pydantic_ai.models.function import (
        AgentInfo,
        DeltaThinkingPart,
        DeltaToolCall,
        FunctionModel,
    )

    async def stream(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {0: DeltaThinkingPart(content=s.REASONING)}
            yield s.WORDS[0]
            if run.fail:
                raise s.Overloaded("overloaded")
            yield s.WORDS[1]
            for i, call in enumerate(s.CALLS, start=2):
                yield {i: DeltaToolCall(name=call.name, json_args=call.json, tool_call_id=call.id)}
        else:
            if run.refuse:
                raise s.Overloaded("rate limited")  # before the first chunk
            for word in s.ANSWER:
                yield word

    return with_tools(FunctionModel(stream_function=stream, model_name="scripted-model"), run, name)


def with_tools(model: Any, run: s.Run, name: str) -> Any:
    """The script's agent on ``model``: its two tools, ``forecast`` failing by ``ModelRetry``."""
    from pydantic_ai import Agent, ModelRetry

    built = Agent(model, name=name)
    built.tool_plain(s.weather_tool(hang=run.hang))

    @built.tool_plain
    async def forecast(city: str) -> str:
        """Tomorrow's forecast for a city."""
        try:
            return s.forecast_sync(city)
        except s.ToolFailure as failure:
            raise ModelRetry(str(failure)) from failure

    return built


def events(run: s.Run) -> AsyncIterator[AgentEvent]:
    return pydantic_ai_events(agent(run), s.QUESTION, on_result=run.kept.append)


def usage(run: s.Run) -> Totals:
    used = run.kept[0].usage
    return {"input": used.input_tokens, "output": used.output_tokens}


async def subagent(
    telemetry: InMemoryTelemetry, lead_model: str = "scripted-model", expert_model: str = ""
) -> None:
    """A lead agent (run ``lead``, its model ``lead_model``) whose tool ``ask_expert`` runs an
    expert agent (run ``expert``, its model ``expert_model``, else the lead's)."""
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    async def lead(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {0: DeltaToolCall(name="ask_expert", json_args='{"q": "Paris?"}',
                                    tool_call_id="call_e")}  # fmt: skip
        else:
            yield "The expert says: sunny."

    async def answer(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        yield "sunny"

    expert = Agent(FunctionModel(stream_function=answer, model_name=expert_model or lead_model))
    boss = Agent(FunctionModel(stream_function=lead, model_name=lead_model))

    @boss.tool_plain
    async def ask_expert(q: str) -> str:
        """Ask the expert."""
        kept: list[Any] = []
        inner = pydantic_ai_events(expert, q, on_result=kept.append)
        await run_script(telemetry, inner, agent_name="expert")
        return str(kept[0].output)

    await run_script(telemetry, pydantic_ai_events(boss, s.QUESTION), agent_name="lead")


def parallel(tracer: Tracer) -> AsyncIterator[AgentEvent]:
    """The tool-scope script (``_parallel``): ``mul`` sync, run on a thread by pydantic-ai."""
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    async def model(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {
                i: DeltaToolCall(name=name, json_args=f'{{"x": {arg}}}', tool_call_id=cid)
                for i, (cid, name, arg) in enumerate(p.CALLS)
            }
        else:
            yield "done"

    scripted = FunctionModel(stream_function=model, model_name="m")
    built = Agent(scripted, name=p.AGENT, tools=p.tools(tracer))
    return pydantic_ai_events(built, "go")


async def three_levels(telemetry: InMemoryTelemetry, tracer: Tracer) -> tuple[str, str]:
    """The three-level script (``_deep``): pydantic-ai has no agent tool of its own; each
    tool delegates as its docs show, streaming the agent through the adapter and its own
    ``otel_wrapper``."""
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from . import _deep as d

    def level(name: str, tool: str, args: str) -> Any:
        async def stream(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
            if len(messages) == 1:
                yield {0: DeltaToolCall(name=tool, json_args=args, tool_call_id=d.CALL_IDS[name])}
            else:
                yield d.ANSWERS[name]

        return Agent(FunctionModel(stream_function=stream, model_name="scripted-model"),
                     name=name)  # fmt: skip

    async def delegate(agent: Any, q: str) -> str:
        kept: list[Any] = []
        events = pydantic_ai_events(agent, q, on_result=kept.append)
        await run_script(telemetry, events, agent_name=agent.name)
        return str(kept[0].output)

    clerk = level("clerk", "lookup", '{"term": "Paris"}')
    clerk.tool_plain(d.lookup(tracer))
    expert = level("expert", "ask_clerk", '{"q": "Paris?"}')
    lead = level("lead", "ask_expert", '{"q": "Paris?"}')

    @expert.tool_plain
    async def ask_clerk(q: str) -> str:
        """Ask the clerk."""
        return await delegate(clerk, q)

    @lead.tool_plain
    async def ask_expert(q: str) -> str:
        """Ask the expert."""
        return await delegate(expert, q)

    await run_script(telemetry, pydantic_ai_events(lead, d.QUESTION), agent_name="lead")
    return "ask_expert", "ask_clerk"
