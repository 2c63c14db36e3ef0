"""Side by side: each framework's run traced by agent-otel's adapter and by the peer tracer.

    python -m benchmarks.adapters_compare [--runs N] [--rounds R]

The scripted conversation of the adapter tests (``tests/sources/_frameworks.py``: two
parallel tool calls, then an answer), on each framework's own test model or mock transport.
Peers: pydantic-ai's own instrumentation, OpenInference for the OpenAI Agents SDK and for
LangChain/LangGraph. Prints a markdown table (``_compare`` says what each column measures);
CPU per event is the traced run minus its own untraced run (agent-otel: the adapter alone;
the peer: the framework's plain stream), per interleaved round: median [min, max].
"""

from __future__ import annotations

import argparse
import asyncio
import warnings
from collections.abc import Callable
from typing import Any

from tests.sources import _frameworks as fw

from agent_contract.sources.langgraph_stream import langgraph_events
from agent_contract.sources.openai_agents import openai_agents_events
from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events
from agent_otel import otel_wrapper
from agent_otel.testing import InMemoryTelemetry

from ._compare import Run, left_open, per_event, shape, summed_input
from ._harness import Stat, diff, fmt, interleave, ratio

warnings.filterwarnings("ignore", message="create_react_agent has been moved")
QUESTION = "Weather?"
GRAPH_INPUT = {"messages": [("user", QUESTION)]}


async def _count(events: Any, telemetry: InMemoryTelemetry | None) -> int:
    if telemetry is not None:
        events = otel_wrapper(
            agent_name="agent", tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
        )(events)  # fmt: skip
    return sum([1 async for _ in events])


# --- agent-otel: each framework's adapter, traced by otel_wrapper() ------------------------


async def _pydantic_ours(telemetry: InMemoryTelemetry | None, hang: bool) -> int:
    return await _count(pydantic_ai_events(fw.pydantic_agent(hang=hang), QUESTION), telemetry)


async def _agents_ours(telemetry: InMemoryTelemetry | None, hang: bool) -> int:
    return await _count(openai_agents_events(fw.agents_agent(hang=hang), QUESTION), telemetry)


async def _graph_ours(telemetry: InMemoryTelemetry | None, hang: bool) -> int:
    return await _count(langgraph_events(fw.langgraph_graph(hang=hang), GRAPH_INPUT), telemetry)


# --- the peers: the framework's plain stream, traced by its own or OpenInference's tracer ---


async def _pydantic_theirs(telemetry: InMemoryTelemetry | None, hang: bool) -> int:
    from pydantic_ai import InstrumentationSettings
    from pydantic_ai.capabilities import Instrumentation

    capabilities = []
    if telemetry is not None:
        settings = InstrumentationSettings(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
        capabilities.append(Instrumentation(settings))
    agent = fw.pydantic_agent(hang=hang, capabilities=capabilities)
    async with agent.run_stream_events(QUESTION) as events:
        return sum([1 async for _ in events])


async def _agents_theirs(telemetry: InMemoryTelemetry | None, hang: bool) -> int:
    from agents import Runner, set_trace_processors
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    instrumentor = OpenAIAgentsInstrumentor()
    if telemetry is not None:
        set_trace_processors([])  # drop the SDK's exporter to the vendor's endpoint
        instrumentor.instrument(tracer_provider=telemetry.tracer_provider)
    try:
        result = Runner.run_streamed(fw.agents_agent(hang=hang, tracing=telemetry is not None),
                                     QUESTION)  # fmt: skip
        return sum([1 async for _ in result.stream_events()])
    finally:
        if telemetry is not None:
            instrumentor.uninstrument()


async def _graph_theirs(telemetry: InMemoryTelemetry | None, hang: bool) -> int:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    instrumentor = LangChainInstrumentor()
    if telemetry is not None:
        instrumentor.instrument(tracer_provider=telemetry.tracer_provider)
    try:
        stream = fw.langgraph_graph(hang=hang).astream(
            GRAPH_INPUT, stream_mode=["messages", "updates"]
        )
        return sum([1 async for _ in stream])
    finally:
        if telemetry is not None:
            instrumentor.uninstrument()


FRAMEWORKS: dict[str, tuple[tuple[str, Run], tuple[str, Run]]] = {
    "pydantic-ai": (("agent-otel", _pydantic_ours), ("pydantic-ai's own", _pydantic_theirs)),
    "OpenAI Agents SDK": (("agent-otel", _agents_ours), ("OpenInference", _agents_theirs)),
    "LangGraph": (("agent-otel", _graph_ours), ("OpenInference", _graph_theirs)),
}


async def _cpu(ours: Run, theirs: Run, runs: int, rounds: int) -> dict[str, list[float]]:
    telemetry, events = InMemoryTelemetry(), await theirs(None, False)
    configs: dict[str, Callable[[], Any]] = {
        "ours_bare": per_event(ours, None, runs, events),
        "ours": per_event(ours, telemetry, runs, events),
        "theirs_bare": per_event(theirs, None, runs, events),
        "theirs": per_event(theirs, telemetry, runs, events),
    }
    return await interleave(configs, rounds)


async def main(runs: int, rounds: int) -> None:
    print("| framework | tracer | tree | input tokens summed over all spans | spans open after "
          "cancel | CPU added per event, µs | ratio to untraced |")  # fmt: skip
    print("|---|---|---|---:|---:|---|---:|")
    for framework, pair in FRAMEWORKS.items():
        seen = []
        for _, run in pair:  # the trees first: a tracer's run must not follow its CPU rounds
            telemetry = InMemoryTelemetry()
            await run(telemetry, False)
            seen.append((shape(telemetry), summed_input(telemetry), await left_open(run)))
            telemetry.shutdown()
        cpu = await _cpu(pair[0][1], pair[1][1], runs, rounds)
        for (tracer, _), (tree, summed, left), key in zip(
            pair, seen, ("ours", "theirs"), strict=True
        ):
            added, times = diff(cpu, key, f"{key}_bare"), ratio(cpu, key, f"{key}_bare")
            spread = f"+{fmt(added.median)} [{fmt(added.lo)}, {fmt(added.hi)}]"
            print(f"| {framework} | {tracer} | {tree} | {summed} | {left} | {spread} "
                  f"| {times.median:.2f}x |", flush=True)  # fmt: skip
        base = Stat.of(cpu["ours_bare"]).median, Stat.of(cpu["theirs_bare"]).median
        print(f"<!-- {framework} untraced CPU per framework event: adapter {fmt(base[0])} µs, "
              f"plain stream {fmt(base[1])} µs -->")  # fmt: skip
    print(f"\n{rounds} interleaved rounds of {runs} runs per configuration.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10, help="runs per measurement")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.rounds))
