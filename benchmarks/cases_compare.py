"""The issue's cases side by side: agent-otel against each framework's own tracing or OpenInference.

    python -m benchmarks.cases_compare            # every framework the environment has
    python -m benchmarks.cases_compare --only agno,langgraph
    .venv-google-adk/bin/python -m benchmarks.cases_compare --only google_adk

Each case runs once on the framework's own test model or the SDK's mock transport, traced by
agent-otel's adapter and ``otel_wrapper()`` and by each peer tracer (OpenInference's
instrumentation, or the framework's own spans: pydantic-ai's instrumentation, AutoGen's, ADK's
and Strands' tracing to the global provider), each into its own in-memory provider. Google
ADK, Strands and CrewAI install only in their own environments (``.ci/separate-envs``): run
from there, the comparison covers the frameworks it finds installed. The cases:

* **parallel tools, one failing**: the conformance script (``tests/sources/_script``: two
  tools called in parallel, ``forecast`` raising under the framework's own failure handling,
  then the answer), every framework;
* **refused request**: the same, with turn 2's request refused (a 429) before its first chunk,
  the frameworks whose builder can refuse;
* **beside a provider instrumentation**: the script again with the OpenAI SDK's
  instrumentations (openai-v2, OpenInference's, OpenLLMetry's) active too, as a deployment has
  them, the frameworks whose model calls go through the OpenAI SDK (ADK and Strands: on their
  OpenAI model classes, the conformance rows ``google_adk_openai``, ``strands_openai``);
* **sub-agent in a tool**: a lead agent whose tool runs an expert agent (the conformance
  builders' ``subagent``; for the peer the same script without agent-otel's wrappers);
* the hard cases of one framework each: a LangGraph compiled sub-graph used as a node, the
  Agents SDK's default tool-failure handler and ``agent.as_tool()``, pydantic-ai's
  ``ModelRetry``, ADK's ``AgentTool`` called twice in parallel, Strands' ``agent.as_tool()``,
  a hierarchical CrewAI crew delegating twice.

Prints a markdown table: the tree (``_compare.shape``), the model-call spans, the input tokens
summed over every span (what a backend summing spans counts), and every span that ended in
error with its ``error.type`` (or the status description a peer writes instead).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import logging
import sys
import warnings
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any

from opentelemetry import trace
from tests.sources import _frameworks as fw
from tests.sources import _recorded
from tests.sources._http import openai_client, sse

from agent_contract.sources.langgraph_stream import langgraph_events
from agent_contract.sources.openai_agents import openai_agents_events
from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events
from agent_otel import otel_wrapper
from agent_otel.testing import InMemoryTelemetry

from . import fig15_frameworks as fig15
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
    client = openai_client(body, _streamed_or_not(_recorded.responses(tools=False)), answer)
    expert = Agent(
        name="expert", model=OpenAIResponsesModel(model="gpt-5-mini", openai_client=client)
    )
    tool = expert.as_tool("ask_expert", "Ask the expert.")
    lead_model = OpenAIResponsesModel(model="gpt-5-mini", openai_client=client)
    return Agent(name="lead", tools=[tool], model=lead_model)


def _streamed_or_not(events: list[dict[str, Any]]) -> Any:
    """The answer as a stream when the request streams, else as the whole response: the SDK
    runs an agent tool's agent unstreamed (agent-otel's adapter streams it, to trace it)."""
    import httpx2 as httpx  # the OpenAI SDK's HTTP client

    def respond(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content).get("stream"):
            headers = {"content-type": "text/event-stream"}
            return httpx.Response(200, headers=headers, content=sse(events, named=True))
        [done] = [e["response"] for e in events if e["type"] == "response.completed"]
        return httpx.Response(200, json=done)

    return respond


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


CASES: dict[str, tuple[str, tuple[str, Case], tuple[str, Case]]] = {
    "sub-graph as a node": ("LangGraph", ("agent-otel", graph_ours),
                            ("OpenInference", graph_theirs)),
    "tool failing under the default handler": ("OpenAI Agents SDK", ("agent-otel", failing_ours),
                                               ("OpenInference", failing_theirs)),
    "agent.as_tool()": ("OpenAI Agents SDK", ("agent-otel", as_tool_ours),
                        ("OpenInference", as_tool_theirs)),
    "tool raising ModelRetry": ("pydantic-ai", ("agent-otel", retry_ours),
                                ("pydantic-ai's own", retry_theirs)),
}  # fmt: skip


MODEL_CALLS = ("chat", "generate_content", "text_completion")  # the GenAI conventions' names


def _is_llm(span: Any) -> bool:
    attributes = span.attributes or {}
    return (attributes.get("gen_ai.operation.name") in MODEL_CALLS
            or attributes.get("openinference.span.kind") == "LLM")  # fmt: skip


# --- every framework of the default environment, on the conformance builders ---------------

Peer = Callable[[InMemoryTelemetry], contextlib.AbstractContextManager[None]]


@contextlib.contextmanager
def _pydantic_ai_own(telemetry: InMemoryTelemetry) -> Iterator[None]:
    """pydantic-ai's own instrumentation, for every agent, into ``telemetry``."""
    from pydantic_ai import Agent, InstrumentationSettings

    settings = InstrumentationSettings(tracer_provider=telemetry.tracer_provider,
                                       meter_provider=telemetry.meter_provider)  # fmt: skip
    Agent.instrument_all(settings)
    try:
        yield
    finally:
        Agent.instrument_all(False)


@contextlib.contextmanager
def _agents_openinference(telemetry: InMemoryTelemetry) -> Iterator[None]:
    """OpenInference's Agents SDK instrumentation (a trace processor: the SDK's tracing on,
    its exporter to the vendor's endpoint dropped)."""
    from agents import set_trace_processors, set_tracing_disabled

    set_trace_processors([])
    set_tracing_disabled(False)
    with fig15.openinference("openinference.instrumentation.openai_agents",
                             "OpenAIAgentsInstrumentor")(telemetry):  # fmt: skip
        yield
    set_tracing_disabled(True)


@contextlib.contextmanager
def _adk_openinference(telemetry: InMemoryTelemetry) -> Iterator[None]:
    """OpenInference's ADK instrumentation into ``telemetry``, which is also the global
    provider, as its setup makes it: ADK's own spans go there too (the instrumentation turns
    off only the runner's)."""
    instrumentation = fig15.openinference("openinference.instrumentation.google_adk",
                                          "GoogleADKInstrumentor")  # fmt: skip
    with instrumentation(telemetry), fig15.PEERS["google-adk"](telemetry):
        yield


@dataclass(frozen=True)
class Framework:
    """A framework compared: its label, its peer tracers, and the conformance row whose model
    calls go through the OpenAI SDK (for the provider instrumentations beside it)."""

    label: str
    peers: tuple[tuple[str, Peer], ...]
    sdk_row: str = ""
    """The row of the "beside" cases, when not this one (ADK's and Strands' OpenAI models)."""
    env: str = ""
    """The separate environment (``.ci/separate-envs``) it installs in, if not the default."""


# row (the conformance builder ``tests/sources/_fw_<row>``): what is compared
FRAMEWORKS: dict[str, Framework] = {
    "pydantic_ai": Framework("pydantic-ai", (("pydantic-ai's own", _pydantic_ai_own),)),
    "langgraph": Framework("LangGraph", (("OpenInference", fig15.openinference(
        "openinference.instrumentation.langchain", "LangChainInstrumentor")),)),
    "openai_agents": Framework("OpenAI Agents SDK", (("OpenInference", _agents_openinference),)),
    "agno": Framework("Agno", (("OpenInference", fig15.PEERS["agno"]),)),
    "autogen": Framework("AutoGen AgentChat", (("AutoGen's own", fig15.PEERS["autogen"]),)),
    "smolagents": Framework("smolagents", (("OpenInference", fig15.PEERS["smolagents"]),)),
    "llama_index": Framework("LlamaIndex", (("OpenInference", fig15.PEERS["llama-index"]),)),
    # their own environments: python -m benchmarks.cases_compare --only google_adk from there
    "google_adk": Framework("Google ADK", (("ADK's own", fig15.PEERS["google-adk"]),
                                           ("OpenInference", _adk_openinference)),
                            sdk_row="google_adk_openai", env="google-adk"),
    "strands": Framework("Strands Agents", (("Strands' own", fig15.PEERS["strands"]),),
                         sdk_row="strands_openai", env="strands-agents"),
    "crewai": Framework("CrewAI", (("OpenInference", fig15.PEERS["crewai"]),), env="crewai"),
}  # fmt: skip


def _installed(package: str) -> bool:
    """Whether ``package`` (dotted) imports here: each environment runs the frameworks it has."""
    try:
        return find_spec(package) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


def _builder(row: str) -> Any:
    return importlib.import_module(f"tests.sources._fw_{row}")


async def _drain(events: Any) -> str:
    """Consume ``events``; the class of the exception that ended them ("" when none)."""
    try:
        [_ async for _ in events]
    except Exception as error:
        return type(error).__name__
    return ""


def _script(row: str, run: Any, peer: Peer | None, provider: Any = None) -> Case:
    """One play of the conformance script (``run``), traced by agent-otel (``peer`` None) or
    the peer, with a provider instrumentation beside it when given."""

    async def play(telemetry: InMemoryTelemetry) -> None:
        with provider.instrumented(telemetry) if provider else contextlib.nullcontext():
            events = _builder(row).events(run)
            if peer is None:
                traced = otel_wrapper(agent_name="agent", tracer_provider=telemetry.tracer_provider,
                                      meter_provider=telemetry.meter_provider)  # fmt: skip
                await _drain(traced(events))
            else:
                with peer(telemetry):
                    await _drain(events)

    return play


class _Unwrapped:
    """A telemetry whose ``wrapper()`` passes the stream through: the builders' script runs
    untraced by agent-otel, for the peer (every other attribute is the telemetry's)."""

    def __init__(self, telemetry: InMemoryTelemetry) -> None:
        self._telemetry = telemetry

    def wrapper(self, **options: Any) -> Callable[[Any], Any]:
        return lambda events: events

    def __getattr__(self, name: str) -> Any:
        return getattr(self._telemetry, name)


def _nested(play: Callable[[Any], Awaitable[Any]], peer: Peer | None) -> Case:
    """A builder's script of agents run by tools (``play(telemetry)``, each run through
    ``telemetry.wrapper()``); for the peer, without agent-otel's wrappers."""

    async def run(telemetry: InMemoryTelemetry) -> None:
        if peer is None:
            await play(telemetry)
            return
        with peer(telemetry):
            await play(_Unwrapped(telemetry))

    return run


# a framework's own way of running an agent inside a tool: (case, builder function)
NESTED = {
    "google_adk": ("AgentTool, two calls in parallel", "agent_tools"),
    "strands": ("agent.as_tool()", "agent_tool"),
    "crewai": ("hierarchical crew delegating twice", "delegations"),
}


def _framework_cases(name: str, rows: dict[str, Any]) -> list[tuple[str, str, str, Case]]:
    """(case, framework, tracer, run) of the cases every framework has, for one framework."""
    from tests.sources import _script as s

    framework, row, builder = FRAMEWORKS[name], rows[name], _builder(name)
    sides: list[tuple[str, Peer | None]] = [("agent-otel", None), *framework.peers]
    out: list[tuple[str, str, str, Case]] = []

    def add(case: str, suffix: str, make: Callable[[Peer | None], Case]) -> None:
        out.extend((case, framework.label, tracer + suffix, make(peer)) for tracer, peer in sides)

    add("parallel tools, one failing", "", lambda peer: _script(name, s.Run(), peer))
    if row.refuses:
        add("refused request (429 before the first chunk)", "",
            lambda peer: _script(name, s.Run(refuse=True), peer))  # fmt: skip
    sdk = rows[framework.sdk_row or name]
    if _installed(sdk.package):
        for provider in sdk.providers:
            add(f"beside {provider.name}", f" + {provider.name}",
                lambda peer, p=provider: _script(sdk.name, s.Run(), peer, p))  # fmt: skip
    if hasattr(builder, "subagent"):
        add("sub-agent in a tool", "", lambda peer: _nested(builder.subagent, peer))
    if name in NESTED:
        case, function = NESTED[name]
        add(case, "", lambda peer: _nested(getattr(builder, function), peer))
    return out


def _cases(only: set[str] | None) -> list[tuple[str, str, str, Case]]:
    """(case, framework, tracer, run) for each installed framework the case applies to."""
    from tests.sources._conformance import ROWS

    rows = {row.name: row for row in ROWS}
    chosen = [name for name in FRAMEWORKS if (not only or name in only)
              and _installed(rows[name].package)]  # fmt: skip
    out = [case for name in chosen for case in _framework_cases(name, rows)]
    for case, (label, *tracers) in CASES.items():
        if not any(FRAMEWORKS[name].label == label for name in chosen):
            continue
        out.extend((case, label, tracer, run) for tracer, run in tracers)
    return out


def _errors(telemetry: InMemoryTelemetry) -> str:
    """Every span that ended in error: its name, then ``error.type`` or its status text."""
    ends = []
    for span in telemetry.spans():
        if span.status.status_code.name != "ERROR":
            continue
        attributes = span.attributes or {}
        kind = str(attributes.get("error.type") or span.status.description or "")
        kind = kind.split("Traceback")[0].strip().splitlines()[0][:40] if kind.strip() else ""
        ends.append(f"{span.name}: {kind}".rstrip(": ").replace("|", "/"))
    return "; ".join(sorted(ends)) or "none"


async def main(only: set[str] | None) -> None:
    if trace.get_tracer_provider() is not fig15.SWITCH:  # AutoGen's own spans, when its turn
        trace.set_tracer_provider(fig15.SWITCH)
    head = ("case", "framework", "tracer", "tree", "model-call spans", "input tokens summed",
            "spans in error")  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|---|---|---|---|---:|---:|---|")
    for case, framework, tracer, run in _cases(only):
        telemetry = InMemoryTelemetry()
        await run(telemetry)
        calls = sum(1 for span in telemetry.spans() if _is_llm(span))
        # one write a row: a framework's threads print to stdout too (CrewAI's panels), and
        # print() writes the line and its end apart, so a panel could land between them
        sys.stdout.write(f"| {case} | {framework} | {tracer} | {shape(telemetry)} | {calls} "
                         f"| {summed_input(telemetry)} | {_errors(telemetry)} |\n")  # fmt: skip
        sys.stdout.flush()
        telemetry.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", help="comma-separated conformance rows (agno,langgraph,...)")
    args = parser.parse_args()
    asyncio.run(main(set(args.only.split(",")) if args.only else None))
