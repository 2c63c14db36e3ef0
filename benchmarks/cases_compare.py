"""Side by side on the hard cases: nested agents and failed tools, agent-otel against the peers.

    python -m benchmarks.cases_compare

Each case runs once on the framework's own test model or mock transport, traced by agent-otel's
adapter and by the peer tracer (OpenInference for LangGraph and the OpenAI Agents SDK,
pydantic-ai's own instrumentation), each into its own in-memory provider. Prints a markdown
table: the tree (``_compare.shape``), the model-call spans and the input tokens summed over
every span (a backend's sum: the run's own total is the right answer), and how the failed tool's
span ends (status and ``error.type``, or the status description a peer writes instead).
"""

from __future__ import annotations

import asyncio
import json
import logging
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from tests.sources import _frameworks as fw
from tests.sources import _recorded
from tests.sources._http import openai_client, sse

from agent_contract.sources.langgraph_stream import langgraph_events
from agent_contract.sources.openai_agents import openai_agents_events
from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events
from agent_otel import otel_wrapper
from agent_otel.testing import InMemoryTelemetry

from ._compare import shape, summed_input

warnings.filterwarnings("ignore", message="create_react_agent has been moved")
logging.getLogger("openai.agents").setLevel(logging.CRITICAL)  # it logs each handled tool error
GRAPH_INPUT = {"messages": [("user", "Weather?")]}
QUERY = '{"input": "Paris?"}'
Case = Callable[[InMemoryTelemetry], Awaitable[None]]


class ToolFailure(RuntimeError):
    """What the failing tool raises."""


async def _ours(telemetry: InMemoryTelemetry, events: Any) -> None:
    traced = otel_wrapper(agent_name="agent", tracer_provider=telemetry.tracer_provider,
                          meter_provider=telemetry.meter_provider)  # fmt: skip
    [_ async for _ in traced(events)]


# --- LangGraph: a compiled sub-graph used as a node --------------------------------------


def _supervisor() -> Any:
    from langgraph.graph import END, START, MessagesState, StateGraph

    graph = StateGraph(MessagesState)
    graph.add_node("worker", fw.langgraph_graph())
    graph.add_edge(START, "worker")
    graph.add_edge("worker", END)
    return graph.compile(name="supervisor")


async def graph_ours(telemetry: InMemoryTelemetry) -> None:
    await _ours(telemetry, langgraph_events(_supervisor(), GRAPH_INPUT))


async def graph_theirs(telemetry: InMemoryTelemetry) -> None:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=telemetry.tracer_provider)
    try:
        [_ async for _ in _supervisor().astream(GRAPH_INPUT, stream_mode=["messages", "updates"])]
    finally:
        instrumentor.uninstrument()


# --- OpenAI Agents SDK: a tool failing under the default handler; an agent as a tool ------


def _failing_agent(tracing: bool) -> Any:
    from agents import Agent, OpenAIResponsesModel, function_tool, set_tracing_disabled

    set_tracing_disabled(not tracing)

    async def weather(city: str) -> str:
        """Weather of a city."""
        if city == "Rome":
            raise ToolFailure("no weather for Rome")
        return f"sunny in {city}"

    bodies = (sse(_recorded.responses(tools=True), named=True),
              sse(_recorded.responses(tools=False), named=True))  # fmt: skip
    model = OpenAIResponsesModel(model="gpt-5-mini", openai_client=openai_client(*bodies))
    return Agent(name="weatherbot", tools=[function_tool(weather)], model=model)


def _lead_with_expert(tracing: bool) -> Any:
    """A lead agent whose one tool is another agent (``as_tool``): it asks, then answers."""
    from agents import Agent, OpenAIResponsesModel, set_tracing_disabled

    set_tracing_disabled(not tracing)
    ask = _recorded.responses(tools=True)
    ask = [e for e in ask if (e.get("item") or {}).get("id") != "fc_2"
           and e.get("item_id") != "fc_2"]  # fmt: skip
    for event in ask:
        if event["type"] == "response.completed":
            event["response"]["output"] = [o for o in event["response"]["output"]
                                           if o.get("id") != "fc_2"]  # fmt: skip
    for event in ask:  # the lead's one call: ask_expert, with the input an agent tool takes
        if event.get("item_id") == "fc_1" and "delta" in event:
            event["delta"] = QUERY[:10] if event["delta"] == _recorded.PARIS[:9] else QUERY[10:]
        if event.get("item_id") == "fc_1" and "arguments" in event:
            event["arguments"] = QUERY
    body = sse(ask, named=True).replace(b'"weather"', b'"ask_expert"')
    body = body.replace(json.dumps(_recorded.PARIS).encode(), json.dumps(QUERY).encode())
    answer = sse(_recorded.responses(tools=False), named=True)
    # the lead asks (1), the expert answers (2), the lead answers (3)
    client = openai_client(body, answer, answer)
    expert = Agent(
        name="expert", model=OpenAIResponsesModel(model="gpt-5-mini", openai_client=client)
    )
    tool = expert.as_tool("ask_expert", "Ask the expert.")
    lead_model = OpenAIResponsesModel(model="gpt-5-mini", openai_client=client)
    return Agent(name="lead", tools=[tool], model=lead_model)


async def _agents_theirs(telemetry: InMemoryTelemetry, agent: Callable[[bool], Any]) -> None:
    from agents import Runner, set_trace_processors
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    instrumentor = OpenAIAgentsInstrumentor()
    set_trace_processors([])  # drop the SDK's exporter to the vendor's endpoint
    instrumentor.instrument(tracer_provider=telemetry.tracer_provider)
    try:
        result = Runner.run_streamed(agent(True), "Weather?")
        [_ async for _ in result.stream_events()]
    finally:
        instrumentor.uninstrument()


async def failing_ours(telemetry: InMemoryTelemetry) -> None:
    await _ours(telemetry, openai_agents_events(_failing_agent(False), "Weather?"))


async def failing_theirs(telemetry: InMemoryTelemetry) -> None:
    await _agents_theirs(telemetry, _failing_agent)


async def as_tool_ours(telemetry: InMemoryTelemetry) -> None:
    await _ours(telemetry, openai_agents_events(_lead_with_expert(False), "Weather?"))


async def as_tool_theirs(telemetry: InMemoryTelemetry) -> None:
    await _agents_theirs(telemetry, _lead_with_expert)


# --- pydantic-ai: a tool raising ModelRetry ----------------------------------------------


def _retrying_agent(capabilities: Any = ()) -> Any:
    from pydantic_ai import ModelRetry

    agent = fw.pydantic_agent(capabilities=capabilities)

    @agent.tool_plain
    async def forecast(city: str) -> str:
        """Tomorrow's forecast for a city."""
        raise ModelRetry(f"no forecast for {city}")

    return agent


def _retry_model(agent: Any) -> Any:
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    async def stream(messages: list[Any], info: Any) -> Any:
        if len(messages) == 1:
            yield {0: DeltaToolCall("weather", '{"city": "Paris"}', tool_call_id="call_w")}
            yield {1: DeltaToolCall("forecast", '{"city": "Rome"}', tool_call_id="call_f")}
        else:
            yield "Sunny in Paris."

    return FunctionModel(stream_function=stream, model_name="scripted-model")


async def retry_ours(telemetry: InMemoryTelemetry) -> None:
    agent = _retrying_agent()
    await _ours(telemetry, pydantic_ai_events(agent, "Weather?", model=_retry_model(agent)))


async def retry_theirs(telemetry: InMemoryTelemetry) -> None:
    from pydantic_ai import InstrumentationSettings
    from pydantic_ai.capabilities import Instrumentation

    settings = InstrumentationSettings(tracer_provider=telemetry.tracer_provider,
                                       meter_provider=telemetry.meter_provider)  # fmt: skip
    agent = _retrying_agent([Instrumentation(settings)])
    async with agent.run_stream_events("Weather?", model=_retry_model(agent)) as events:
        [_ async for _ in events]


CASES: dict[str, tuple[tuple[str, Case], tuple[str, Case], str]] = {
    "LangGraph sub-graph as a node": (("agent-otel", graph_ours),
                                      ("OpenInference", graph_theirs), ""),
    "Agents SDK tool failing, default handler": (("agent-otel", failing_ours),
                                                 ("OpenInference", failing_theirs), "weather"),
    "Agents SDK agent.as_tool()": (("agent-otel", as_tool_ours),
                                   ("OpenInference", as_tool_theirs), ""),
    "pydantic-ai ModelRetry": (("agent-otel", retry_ours),
                               ("pydantic-ai's own", retry_theirs), "forecast"),
}  # fmt: skip


def _is_llm(span: Any) -> bool:
    attributes = span.attributes or {}
    return (attributes.get("gen_ai.operation.name") == "chat"
            or attributes.get("openinference.span.kind") == "LLM")  # fmt: skip


def _failed_tool(telemetry: InMemoryTelemetry, tool: str) -> str:
    """How each span of the failing tool ended: ``ERROR error.type`` or its status, per call."""
    if not tool:
        return "-"
    ends = []
    for span in telemetry.spans():
        name = span.name.removeprefix("execute_tool ").removeprefix("running tool: ")
        if name != tool:
            continue
        attributes = span.attributes or {}
        status = span.status.status_code.name
        kind = attributes.get("error.type") or span.status.description or ""
        ends.append(f"{status} {kind}".strip()[:60])
    return "; ".join(sorted(ends)) or "no span"


async def main() -> None:
    head = ("case", "tracer", "tree", "model-call spans", "input tokens summed",
            "the failing tool's spans")  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|---|---|---|---:|---:|---|")
    for case, (ours, theirs, tool) in CASES.items():
        for name, run in (ours, theirs):
            telemetry = InMemoryTelemetry()
            await run(telemetry)
            calls = sum(1 for span in telemetry.spans() if _is_llm(span))
            print(f"| {case} | {name} | {shape(telemetry)} | {calls} | {summed_input(telemetry)} "
                  f"| {_failed_tool(telemetry, tool)} |")  # fmt: skip
            telemetry.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
