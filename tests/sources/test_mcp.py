"""MCP tools traced end to end: a real ``mcp`` 2.x server, real frameworks as its clients.

The model asks, in one response, for an MCP tool twice (other arguments), a second MCP tool
and a local tool; each MCP call's execute_tool span is current while the framework calls the
server, so the MCP SDK's client span (``MCP send tools/call <tool>``) is its child, and the
server's span (in-process: ours to see; over stdio: in another process, which answers with
the trace and the parent it ran under) continues that same trace. Each MCP tool span says it
is one (``mcp.*``, ``gen_ai.tool.type=extension``, the server's name); the tool metric counts
each call once.
"""

from __future__ import annotations

import re
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from agent_otel.testing import InMemoryTelemetry

from . import _mcp

SERVER_SCRIPT = Path(__file__).with_name("_mcp.py")
MCP_CALLS = [("c1", "add", 1), ("c2", "add", 2), ("c3", "mul", 3)]
LOCAL_CALL = ("c4", "square", 4)
SEEN = re.compile(r"trace=([0-9a-f]{32}) parent=([0-9a-f]{16})")


def _check(
    telemetry: InMemoryTelemetry,
    outputs: dict[str, str],
    *,
    in_process: bool,
    calls: list[tuple[str, str, int]] = MCP_CALLS,
) -> None:
    """One trace for the run; every MCP call's chain tool span > client span (> server span),
    exactly. (Connecting to the server before the run is a trace of its own.)"""
    [root] = [s for s in telemetry.spans() if s.name == "invoke_agent calc"]
    trace_id = root.context.trace_id
    spans = [s for s in telemetry.spans() if s.context.trace_id == trace_id]
    by_id = {s.context.span_id: s for s in spans}
    for span in spans:  # no span hangs off something outside the trace
        assert span.parent is None or span.parent.span_id in by_id, span.name
    tools = {_attr(s, "gen_ai.tool.call.id"): s for s in spans if s.name.startswith("execute_tool")}
    assert sorted(tools) == sorted([cid for cid, _, _ in calls] + [LOCAL_CALL[0]])
    for cid, name, _ in calls:
        tool = tools[cid]
        assert tool.name == f"execute_tool {name}"
        assert _attr(tool, "gen_ai.tool.type") == "extension"
        assert _attr(tool, "mcp.method.name") == "tools/call"
        assert _attr(tool, "agent_otel.mcp.server.name") == _mcp.SERVER_NAME
        assert _attr(tool, "mcp.protocol.version")
        seen = SEEN.search(outputs[cid])
        assert seen is not None, outputs[cid]
        assert int(seen.group(1), 16) == trace_id  # the server ran in our trace
        client = by_id[int(seen.group(2), 16)]  # the server's span's parent: the request
        assert client.name == f"MCP send tools/call {name}"
        assert client.kind is SpanKind.CLIENT
        assert client.parent is not None and client.parent.span_id == tool.context.span_id
        assert _attr(client, "jsonrpc.request.id")
        servers = _children(spans, client)
        if in_process:
            [server] = servers
            assert server.name == f"tools/call {name}" and server.kind is SpanKind.SERVER
        else:
            assert servers == []  # the stdio server's spans live in its own process
    local = tools[LOCAL_CALL[0]]
    assert _attr(local, "gen_ai.tool.type") == "function"
    assert not any(k.startswith("mcp.") for k in local.attributes or {})
    points = telemetry.histograms()["gen_ai.execute_tool.duration"]
    assert sum(p.count for p in points) == len(calls) + 1  # each call counted once


def _attr(span: ReadableSpan, key: str) -> Any:
    return dict(span.attributes or {}).get(key)


def _children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


# --- the OpenAI Agents SDK ------------------------------------------------------------------


def _agents_server(in_process: bool) -> Any:
    from agents.mcp import MCPServerStdio

    if not in_process:
        params = {"command": sys.executable, "args": [str(SERVER_SCRIPT)]}
        return MCPServerStdio(params, name="calc-stdio", client_session_timeout_seconds=30)

    from mcp.client._memory import InMemoryTransport

    class InProcess(MCPServerStdio):
        """The SDK's MCP server class, connected to the server in this process."""

        def create_streams(self) -> AbstractAsyncContextManager[Any]:
            return InMemoryTransport(_mcp.server())  # type: ignore[return-value]

    return InProcess({"command": "unused"}, name="calc-memory")


@pytest.mark.parametrize("in_process", [True, False], ids=["in-memory", "stdio"])
async def test_agents_sdk_mcp_calls_in_parallel_nest_server_side_under_their_tool_spans(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, in_process: bool
) -> None:
    pytest.importorskip("agents")
    from agents import Agent, function_tool
    from agents.testing import assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    from ._fw_openai_agents import scripted

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)

    @function_tool
    def square(x: int) -> int:
        """Square it."""
        return x * x

    asked = [*MCP_CALLS, LOCAL_CALL]
    model = scripted(
        [function_call(name, {"x": arg}, call_id=cid) for cid, name, arg in asked],
        [assistant_message("done")],
    )
    results: list[Any] = []
    async with _agents_server(in_process) as server:
        agent = Agent(name="calc", tools=[square], mcp_servers=[server], model=model)
        stream = openai_agents_events(agent, "go", on_result=results.append)
        async for _ in otel_telemetry.wrapper(agent_name="calc")(stream):
            pass

    outputs = {
        str(_field(item.raw_item, "call_id")): str(item.output)
        for item in results[0].new_items
        if type(item).__name__ == "ToolCallOutputItem"
    }
    _check(otel_telemetry, outputs, in_process=in_process)


def _field(raw: Any, key: str) -> Any:
    return raw.get(key) if isinstance(raw, dict) else getattr(raw, key, None)


# --- pydantic-ai ----------------------------------------------------------------------------


def _pydantic_ai_toolset(in_process: bool) -> Any:
    from fastmcp.client.transports.memory import FastMCPTransport
    from pydantic_ai.mcp import MCPToolset

    if in_process:  # fastmcp's in-memory transport, serving the MCP SDK's own server
        return MCPToolset(FastMCPTransport(_mcp.server()))
    # a .py path: pydantic-ai runs it with this interpreter over stdio (slow to start when loaded)
    return MCPToolset(SERVER_SCRIPT, init_timeout=60)


@pytest.mark.parametrize("in_process", [True, False], ids=["in-memory", "stdio"])
async def test_pydantic_ai_mcp_calls_in_parallel_nest_server_side_under_their_tool_spans(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, in_process: bool
) -> None:
    pytest.importorskip("fastmcp")  # pydantic-ai's MCP client (pydantic-ai-slim[mcp])
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)

    async def model(messages: list[Any], info: AgentInfo) -> Any:
        if len(messages) == 1:
            yield {
                i: DeltaToolCall(name=name, json_args=f'{{"x": {arg}}}', tool_call_id=cid)
                for i, (cid, name, arg) in enumerate([*MCP_CALLS, LOCAL_CALL])
            }
        else:
            yield "done"

    toolset = _pydantic_ai_toolset(in_process)
    agent = Agent(FunctionModel(stream_function=model, model_name="m"), name="calc",
                  toolsets=[toolset])  # fmt: skip

    @agent.tool_plain
    def square(x: int) -> int:
        """Square it."""
        return x * x

    results: list[Any] = []
    async with toolset:
        stream = pydantic_ai_events(agent, "go", on_result=results.append)
        async for _ in otel_telemetry.wrapper(agent_name="calc")(stream):
            pass

    outputs = {
        part.tool_call_id: str(part.content)
        for message in results[0].all_messages()
        for part in message.parts
        if part.part_kind == "tool-return"
    }
    _check(otel_telemetry, outputs, in_process=in_process)
