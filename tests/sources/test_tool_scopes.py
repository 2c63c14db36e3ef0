"""Each framework adapter runs every tool body under its own ``execute_tool`` span.

Every tool here opens a span of another library's tracer (as an MCP client or an HTTP client
would) while it runs; the model asks for two tools at once, one of them twice, so a body
nesting under the step or under the wrong call fails. The frameworks run the tools their own
way (tasks, threads, the run's background task), through the adapter and nothing else: no
user code but the tools. Each row's builder plays the script of ``_parallel`` on the
framework's own test model (``parallel(tracer)`` in ``_fw_<name>``).
"""

from __future__ import annotations

import pytest

from agent_otel.testing import InMemoryTelemetry

from . import _parallel as p
from ._conformance import ROWS, Row

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
    tools = sorted(
        (
            tool["name"],
            tool["attributes"]["gen_ai.tool.call.id"],
            [c["name"] for c in tool["children"]],
        )
        for step in run["children"]
        if step["name"].startswith("step ")
        for tool in step["children"]
        if tool["name"].startswith("execute_tool ")
    )
    assert tools == EXPECTED  # one span per call, each body's client under it, all in steps
    assert sum(s.name.startswith("client ") for s in otel_telemetry.spans()) == len(p.CALLS)
