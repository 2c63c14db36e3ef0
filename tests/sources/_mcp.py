"""A real ``mcp`` 2.x server for the MCP tests, in-process and as a stdio program.

``python tests/sources/_mcp.py`` serves the same tools over stdio (the stdio tests start it;
``--failing``: the failing server's; ``--legacy``: the ``mcp`` 1.x server's; ``--erring``:
:func:`erring_server`; ``--erring --http PORT``: that one over streamable HTTP on loopback;
``--legacy --erring --http PORT``: :func:`legacy_erring_server` so; ``--legacy --relay``:
:func:`legacy_relay_server`).
Each tool answers with the W3C trace context it ran under (its trace id and the span that was
current, read from its own context), so a test can check that the client's request carried
the caller's trace across the process boundary.

The MCP SDK traces itself through the global tracer; :func:`sdk_tracing_to` points its one
tracer at a test's provider instead (the tests never set the global provider).
"""

from __future__ import annotations

import sys
from typing import Any

SERVER_NAME = "calc"


def server(failing: bool = False) -> Any:
    """The MCP server (``mcp.server.mcpserver.MCPServer``) with ``add`` and ``mul``;
    ``failing``: both raise, so the server answers each call with an ``isError`` result."""
    from mcp.server.mcpserver import MCPServer

    calc = MCPServer(SERVER_NAME)

    @calc.tool()
    def add(x: int) -> str:
        """Add one."""
        _fail(failing, "mcp.server.mcpserver.exceptions")
        return f"{x + 1} {_seen()}"

    @calc.tool()
    def mul(x: int) -> str:
        """Double."""
        _fail(failing, "mcp.server.mcpserver.exceptions")
        return f"{x * 2} {_seen()}"

    return calc


def erring_server() -> Any:
    """An MCP server whose requests fail below the tool: ``invalid`` answers a JSON-RPC error
    (``-32602``, invalid params), ``slow`` answers after a client's timeout ran out, ``add``
    answers, ``count`` answers after ``x`` progress notifications, ``sample`` asks the
    client's model, ``die`` kills the server's
    process (``--erring`` serves it over stdio)."""
    import anyio
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.shared.exceptions import MCPError

    calc = MCPServer(SERVER_NAME)

    @calc.tool()
    def invalid(x: int) -> str:
        """Refuse the arguments."""
        raise MCPError(-32602, "x is out of range")

    @calc.tool()
    async def slow(x: int) -> str:
        """Take too long."""
        await anyio.sleep(30)
        return str(x)

    @calc.tool()
    def add(x: int) -> str:
        """Add one."""
        return str(x + 1)

    async def count(x: int, ctx: Any) -> str:
        """Count to ``x``, telling the client its progress."""
        for step in range(1, x + 1):
            await ctx.report_progress(step, x)
        return str(x)

    count.__annotations__["ctx"] = Context  # (the SDK finds its context by the annotation)
    calc.tool()(count)

    async def sample(x: int, ctx: Any) -> str:
        """Ask the client's model mid-call (``sampling/createMessage``, a request of the
        server's own on a handshake-era connection); answer with its text and the span the
        tool runs in (``trace=<id> span=<id>``, hex): the span serving the call."""
        from mcp import types
        from opentelemetry import trace

        text = types.TextContent(type="text", text=str(x))
        message = types.SamplingMessage(role="user", content=text)
        answer = await ctx.session.create_message(
            [message], max_tokens=5, related_request_id=ctx.request_id
        )
        span = trace.get_current_span().get_span_context()
        return f"{answer.content.text} trace={span.trace_id:032x} span={span.span_id:016x}"

    sample.__annotations__["ctx"] = Context
    calc.tool()(sample)

    @calc.tool()
    def die(x: int) -> str:
        """Kill the server's process mid-call (over stdio: the connection closes)."""
        import os

        os._exit(3)

    return calc


def legacy_server(failing: bool = False) -> Any:
    """The same ``add`` and ``mul`` on an ``mcp`` 1.x server (``FastMCP``), for a framework
    whose environment holds the MCP SDK 1.x (CrewAI's). That SDK traces nothing: each tool
    answers with the context the request's ``_meta`` names, read with agent-otel's
    ``continue_trace``. ``failing``: as for :func:`server`."""
    from mcp.server.fastmcp import FastMCP

    calc = FastMCP(SERVER_NAME)

    @calc.tool()
    def add(x: int) -> str:
        """Add one."""
        _fail(failing, "mcp.server.fastmcp.exceptions")
        return f"{x + 1} {continued(calc)}"

    @calc.tool()
    def mul(x: int) -> str:
        """Double."""
        _fail(failing, "mcp.server.fastmcp.exceptions")
        return f"{x * 2} {continued(calc)}"

    return calc


def legacy_erring_server(port: int) -> Any:
    """An ``mcp`` 1.x server (``FastMCP``) on loopback ``port``, answering each request with
    one JSON response, whose ``add`` answers, ``slow`` answers after 30 s and ``die`` kills
    the server's process before it answers."""
    import os

    import anyio
    from mcp.server.fastmcp import FastMCP

    calc = FastMCP(SERVER_NAME, host="127.0.0.1", port=port, json_response=True)

    @calc.tool()
    def add(x: int) -> str:
        """Add one."""
        return str(x + 1)

    @calc.tool()
    async def slow(x: int) -> str:
        """Take too long."""
        await anyio.sleep(30)
        return str(x)

    @calc.tool()
    def die(x: int) -> str:
        """Kill the server's process mid-call."""
        os._exit(3)

    return calc


def legacy_relay_server() -> Any:
    """An ``mcp`` 1.x server (``FastMCP``) whose ``relay`` runs in the caller's trace
    (``continue_trace`` of the request's ``_meta``, as the docs show) and there calls
    :func:`legacy_server`'s ``add`` over stdio, a server process of its own: it answers with
    what ``add`` answered (the context that request's ``_meta`` named)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.server.fastmcp import FastMCP

    from agent_otel import continue_trace

    hub = FastMCP("hub")

    @hub.tool()
    async def relay(x: int) -> str:
        """Ask the next server."""
        meta = hub.get_context().request_context.meta
        params = StdioServerParameters(
            command=sys.executable, args=[__file__, "--legacy"], env=child_env()
        )
        with continue_trace(meta if meta is not None else {}):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as inner:
                await inner.initialize()
                answer = await inner.call_tool("add", {"x": x})
        return str(answer.content[0].text)  # type: ignore[union-attr]

    return hub


def _fail(failing: bool, module: str) -> None:
    """A failing server's tool raises the SDK's ``ToolError`` (from ``module``): the server
    answers the call with an ``isError`` result whose text is the error's."""
    if failing:
        import importlib

        raise importlib.import_module(module).ToolError("the tool broke")


def continued(server: Any) -> str:
    """``trace=<id> parent=<id>`` of the context the request's ``_meta`` names, as a 1.x
    server reads it with agent-otel's ``continue_trace`` (zeros: it names none)."""
    from opentelemetry import trace

    from agent_otel import continue_trace

    meta = server.get_context().request_context.meta
    with continue_trace(meta if meta is not None else {}):
        context = trace.get_current_span().get_span_context()
    return f"trace={context.trace_id:032x} parent={context.span_id:016x}"


def child_env() -> dict[str, str]:
    """The environment of a stdio server the MCP SDK 1.x starts (it passes on only a few
    variables of its own): this one's, so the child imports the same agent-otel."""
    import os

    return dict(os.environ)


def _seen() -> str:
    """``trace=<id> parent=<id>``: the trace and the parent of the span current in the tool
    (the server's own span, whose parent is the client's request span), hex."""
    from opentelemetry import trace

    span = trace.get_current_span()
    parent = getattr(span, "parent", None)
    trace_id = span.get_span_context().trace_id
    return f"trace={trace_id:032x} parent={parent.span_id if parent else 0:016x}"


async def run_lost_calls(
    telemetry: Any, call_tool: Any, server: Any, cancelled: list[BaseException]
) -> None:
    """The run ``check_lost_calls`` reads: ``add`` (``c0``) called through ``call_tool`` (a
    session's or client's) and answered, then ``slow`` (``c1``) and ``die`` (``c2``) in two
    tool bodies at once, ``die`` once ``slow`` is in flight, so that a server that dies on
    ``die`` loses both. The ``CancelledError`` the run ends with is kept in ``cancelled``
    and raised on, unchanged."""
    import asyncio

    import anyio

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import tool_scope

    async def body(cid: str, name: str) -> None:
        with tool_scope(cid, name, mcp=server):
            if name == "die":  # once the other call is in flight
                await anyio.sleep(0.5)
            await call_tool(name, {"x": 1})  # never answered

    async def agent() -> Any:
        yield LLMCallStart(model="m")
        for cid, name in (("c0", "add"), ("c1", "slow"), ("c2", "die")):
            yield ToolCall(id=cid, function=FunctionCall(name=name, arguments='{"x": 1}'))
        yield LLMCallEnd(model="m")
        with tool_scope("c0", "add", mcp=server):
            await call_tool("add", {"x": 1})
        yield ToolResult(tool_call_id="c0", content="2")
        async with anyio.create_task_group() as group:
            group.start_soon(body, "c1", "slow")
            group.start_soon(body, "c2", "die")
        yield ToolResult(tool_call_id="c1", content="unreachable")

    try:
        with anyio.fail_after(20):
            async for _ in telemetry.wrapper(agent_name="calc")(agent()):
                pass
    except asyncio.CancelledError as error:  # the agent's own, unchanged
        cancelled.append(error)
        raise


def check_lost_calls(telemetry: Any) -> None:
    """A run whose ``add`` (``c0``) was answered, then ``slow`` (``c1``) and ``die`` (``c2``)
    lost in flight with a streamable HTTP server that died: each lost call's span failed by
    the HTTP client's ``RemoteProtocolError`` (class, message, ``exception`` event, metric),
    the answered one's OK. The run failed with that cause too (docs/endings.md: the transport's
    task group cancelled it, a cancel nobody asked for): ERROR, ``error.type``, its message and
    ``exception`` event, ``end_reason=error``, on the run's metric too."""
    from opentelemetry.trace import StatusCode

    tools = {str(s.attributes["gen_ai.tool.call.id"]): s for s in telemetry.spans()
             if s.name.startswith("execute_tool") and s.attributes}  # fmt: skip
    for cid in ("c1", "c2"):  # both lost with the connection, each failed by it
        assert tools[cid].status.status_code is StatusCode.ERROR, cid
        assert dict(tools[cid].attributes or {})["error.type"] == "RemoteProtocolError", cid
        assert "Server disconnected" in str(tools[cid].status.description), cid
        [event] = [e for e in tools[cid].events if e.name == "exception"]
        assert dict(event.attributes or {})["exception.type"].endswith("RemoteProtocolError")
    assert tools["c0"].status.status_code is StatusCode.UNSET
    assert "error.type" not in dict(tools["c0"].attributes or {})
    failed = {str(p.attributes.get("gen_ai.tool.name")): p.attributes.get("error.type")
              for p in telemetry.histograms()["gen_ai.execute_tool.duration"]}  # fmt: skip
    assert failed == {"add": None, "slow": "RemoteProtocolError", "die": "RemoteProtocolError"}
    run = telemetry.span("invoke_agent calc")
    attributes = dict(run.attributes or {})
    assert run.status.status_code is StatusCode.ERROR
    assert "Server disconnected" in str(run.status.description)
    assert (attributes["error.type"], attributes["agent_otel.end_reason"]) == (
        "RemoteProtocolError", "error")  # fmt: skip
    [event] = [e for e in run.events if e.name == "exception"]
    assert dict(event.attributes or {})["exception.type"].endswith("RemoteProtocolError")
    [point] = telemetry.histograms()["gen_ai.invoke_agent.duration"]
    assert point.attributes.get("error.type") == "RemoteProtocolError"


def sdk_tracing_to(monkeypatch: Any, provider: Any) -> None:
    """For this test, ``provider`` is what ``configure()`` makes it: the global provider, so
    the MCP SDK's spans (client and in-process server) and fastmcp's (pydantic-ai's MCP
    client) go to it, with ``RunIdentityProcessor`` on it (it gives an MCP tool's span its
    request id) (``_trace.as_global``)."""
    import mcp.shared._otel as otel

    from agent_otel import RunIdentityProcessor

    from ._trace import as_global

    provider.add_span_processor(RunIdentityProcessor())
    as_global(monkeypatch, provider)
    # The MCP SDK took its tracer at import (a proxy that keeps the first provider it finds).
    monkeypatch.setattr(otel, "_tracer", provider.get_tracer("mcp-python-sdk"))


if __name__ == "__main__":  # the stdio server: a process of its own, with an SDK provider
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    trace.set_tracer_provider(TracerProvider())  # its spans are real (and go nowhere)
    if {"--legacy", "--relay"} <= set(sys.argv):
        legacy_relay_server().run("stdio")
        sys.exit(0)
    if {"--legacy", "--erring", "--http"} <= set(sys.argv):  # the mcp 1.x one, to kill
        legacy_erring_server(int(sys.argv[sys.argv.index("--http") + 1])).run("streamable-http")
        sys.exit(0)
    if "--erring" in sys.argv and "--http" in sys.argv:  # a process of its own to kill
        port = int(sys.argv[sys.argv.index("--http") + 1])
        erring_server().run("streamable-http", host="127.0.0.1", port=port)
        sys.exit(0)
    if "--erring" in sys.argv:
        erring_server().run("stdio")
        sys.exit(0)
    make = legacy_server if "--legacy" in sys.argv else server
    make("--failing" in sys.argv).run("stdio")
    sys.exit(0)
