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
from agent_otel.testing import InMemoryTelemetry

from . import _parallel as p
from . import _script as s
from . import _script_chat as chat
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


async def three_levels(telemetry: Any, tracer: Tracer) -> tuple[str, str]:
    """The three-level script (``_deep``): each agent an ``as_tool()`` of the one above."""
    from agents import Agent, Usage, function_tool
    from agents.testing import ModelStep, assistant_message, function_call

    from agent_otel.testing import run_script

    from . import _deep as d

    def usage(turn: s.Turn) -> Any:
        return Usage(requests=1, input_tokens=turn.input, output_tokens=turn.output,
                     total_tokens=turn.total)  # fmt: skip

    def model(name: str, tool: str, args: dict[str, Any]) -> Any:
        call = function_call(tool, args, call_id=d.CALL_IDS[name])
        return scripted(ModelStep(output=[call], usage=usage(s.TURNS[0])),
                        ModelStep(output=[assistant_message(d.ANSWERS[name])],
                                  usage=usage(s.TURNS[1])))  # fmt: skip

    clerk = Agent(name="clerk", tools=[function_tool(d.lookup(tracer))],
                  model=model("clerk", "lookup", {"term": "Paris"}))  # fmt: skip
    expert = Agent(name="expert", tools=[clerk.as_tool("ask_clerk", "Ask the clerk.")],
                   model=model("expert", "ask_clerk", {"input": "Paris?"}))  # fmt: skip
    lead = Agent(name="lead", tools=[expert.as_tool("ask_expert", "Ask the expert.")],
                 model=model("lead", "ask_expert", {"input": "Paris?"}))  # fmt: skip
    await run_script(telemetry, openai_agents_events(lead, d.QUESTION), agent_name="lead")
    return "ask_expert", "ask_clerk"


async def subagent(telemetry: InMemoryTelemetry) -> None:
    """The SDK's own way: the expert ``as_tool()`` of the lead (the adapter records it as a
    nested run under the tool's span), both on ``OpenAIChatCompletionsModel``."""
    from agents import Agent, OpenAIChatCompletionsModel, set_tracing_disabled

    from agent_otel.testing import run_script

    set_tracing_disabled(True)

    def model(*bodies: bytes) -> Any:
        return OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=openai_client(*bodies))

    expert = Agent(name="expert", instructions="Be brief.", model=model(chat.answer("sunny")))
    ask = chat.call("ask_expert", {"input": "Paris?"}, "call_e")
    lead = Agent(name="lead", instructions="Delegate.", model=model(ask, chat.answer("Sunny.")),
                 tools=[expert.as_tool("ask_expert", "Ask the expert.")])  # fmt: skip
    await run_script(telemetry, openai_agents_events(lead, s.QUESTION), agent_name="lead")
