"""Each framework adapter runs every tool body under its own ``execute_tool`` span.

Every tool here opens a span of another library's tracer (as an MCP client or an HTTP client
would) while it runs; the model asks for two tools at once, one of them twice, so a body
nesting under the step or under the wrong call fails. The frameworks run the tools their own
way (tasks, threads, the run's background task), through the adapter and nothing else: no
user code but the tools. Each row's builder plays the script of ``_parallel`` on the
framework's own test model (``parallel(tracer)`` in ``_fw_<name>``).
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_otel.testing import InMemoryTelemetry

from . import _parallel as p
from ._conformance import ROWS, Row
from ._trace import as_global

EXPECTED = sorted((f"execute_tool {name}", cid, [f"client {arg}"]) for cid, name, arg in p.CALLS)
"""Each call's tool span (by name and call id) with the one client span its body opened."""


@pytest.mark.parametrize("row", [row.param() for row in ROWS if row.runs_tools])
async def test_parallel_tool_bodies_nest_under_their_own_spans(
    row: Row, otel_telemetry: InMemoryTelemetry
) -> None:
    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")
    async for _ in otel_telemetry.wrapper(agent_name=p.AGENT)(row.parallel(tracer)):
        pass

    [run] = otel_telemetry.tree(attributes={"gen_ai.tool.call.id"}, events=False)  # one trace
    _check(otel_telemetry, run)


@pytest.mark.parametrize("row", [row.param() for row in ROWS if row.runs_tools])
async def test_tool_bodies_nest_under_our_spans_with_the_frameworks_own_tracer_on(
    row: Row, otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same, with the provider global as ``configure()`` makes it and the frameworks that
    trace themselves (ADK, Strands, AutoGen) recording their own spans
    (``stand_down_providers=False``): no body leaves our tool span for one of theirs
    (Strands makes its own tool span current around the body; AutoGen's sits under ours,
    the body under it)."""
    as_global(monkeypatch, otel_telemetry.tracer_provider)
    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")
    wrapper = otel_telemetry.wrapper(agent_name=p.AGENT, stand_down_providers=False)
    async for _ in wrapper(row.parallel(tracer)):
        pass

    # ours at the root of the run's trace (the framework's own spans under it, beside our
    # steps; AutoGen's own tool span under ours, the body under that: deep=True)
    [run] = [r for r in otel_telemetry.tree(attributes={"gen_ai.tool.call.id"}, events=False)
             if r["name"] == f"invoke_agent {p.AGENT}"]  # fmt: skip
    _check(otel_telemetry, run, deep=True)


def _check(telemetry: InMemoryTelemetry, run: dict[str, Any], *, deep: bool = False) -> None:
    """Each call's tool span of ours (in a step) holds its body's client span, and only it
    (``deep``: anywhere below it, else as its child)."""
    tools = sorted(
        (
            tool["name"],
            tool["attributes"]["gen_ai.tool.call.id"],
            _clients(tool) if deep else [c["name"] for c in tool["children"]],
        )
        for step in run["children"]
        if step["name"].startswith("step ")
        for tool in step["children"]
        if tool["name"].startswith("execute_tool ")
    )
    assert tools == EXPECTED  # one span per call, each body's client under it, all in steps
    assert sum(s.name.startswith("client ") for s in telemetry.spans()) == len(p.CALLS)


def _clients(node: dict[str, Any]) -> list[str]:
    """The client spans anywhere below ``node``."""
    out: list[str] = []
    for child in node["children"]:
        client = child["name"].startswith("client ")
        out += [child["name"]] if client else _clients(child)
    return out


@pytest.mark.parametrize(
    "row", [row.param() for row in ROWS if row.runs_tools and row.name.startswith("llama_index")]
)
async def test_tool_bodies_nest_under_our_spans_beside_openllmetrys_llama_index_handler(
    row: Row, otel_telemetry: InMemoryTelemetry
) -> None:
    """OpenLLMetry's span handler on LlamaIndex's dispatcher makes a span current around each
    dispatcher span (the tool's own call inside its step too), named from its own record of
    parents: standing down, its stand-in was the span current when the workflow started, so
    every body's spans left our tool span for the run. A stand-in is now a child of where the
    code runs."""
    instrumentation = pytest.importorskip("opentelemetry.instrumentation.llamaindex")
    tracer = otel_telemetry.tracer_provider.get_tracer("some.client")
    with otel_telemetry.instrumented(instrumentation.LlamaIndexInstrumentor()):
        async for _ in otel_telemetry.wrapper(agent_name=p.AGENT)(row.parallel(tracer)):
            pass

    [run] = otel_telemetry.tree(attributes={"gen_ai.tool.call.id"}, events=False)  # one trace
    _check(otel_telemetry, run)
