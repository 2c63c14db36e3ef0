"""A fresh process whose MCP SDK is first imported after agent-otel was set up.

Run by ``tests/sources/test_mcp_frameworks.py`` as ``python mcp_late_child.py SETUP``: SETUP
``configure`` (``configure()``, nothing exported) or ``wrapper`` (a wrapper made) happens
before anything imports the MCP SDK; only then is it imported, a server made in process, and
one ``tools/call`` sent in the application's own span, outside any traced tool body. Prints one
JSON line: the ``traceparent`` the server found in each request's ``_meta`` (``None``: none)
and the one the application's span writes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from opentelemetry import propagate, trace

if sys.argv[1] == "configure":
    from agent_otel import configure

    configure(service_name="late", console=False)  # (the test sets OTEL_*_EXPORTER=none)
    tracer = trace.get_tracer("app")
else:
    from agent_otel.testing import InMemoryTelemetry

    telemetry = InMemoryTelemetry()
    telemetry.wrapper(agent_name="calc")
    tracer = telemetry.tracer_provider.get_tracer("app")

loaded_before = sorted(name for name in sys.modules if name.split(".")[0] == "mcp")

from mcp.server.fastmcp import FastMCP  # noqa: E402  (the point: imported after the setup)
from mcp.shared.memory import create_connected_server_and_client_session  # noqa: E402

server = FastMCP("late")
seen: list[Any] = []


@server.tool()
def add(x: int) -> str:
    """Note the trace the request names."""
    meta = server.get_context().request_context.meta
    seen.append((meta.model_dump() if meta is not None else {}).get("traceparent"))
    return str(x)


async def main() -> None:
    async with create_connected_server_and_client_session(server._mcp_server) as session:
        with tracer.start_as_current_span("handle"):
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            await session.call_tool("add", {"x": 1})
    print(json.dumps({"loaded_before": loaded_before, "seen": seen,
                      "want": carrier["traceparent"]}))  # fmt: skip


asyncio.run(main())
