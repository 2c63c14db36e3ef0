"""MCP tools traced end to end: a real ``mcp`` 2.x server, real frameworks as its clients.

The model asks for an MCP tool twice (other arguments), a second MCP tool and a local tool:
all four in one response (the framework runs them in parallel), or one per response
(sequential). Every span of the run is checked for its exact parent, as the user sees it with
``configure()`` (the MCP SDK and fastmcp trace to the global provider, ``RunIdentityProcessor``
on it): each MCP call's ``execute_tool`` span is current while the framework calls the server,
so the MCP client's spans hang under it, and the server's span under those. In-process the
server's span is ours to see; over stdio it lives in the server's process, which answers with
the trace and the parent it ran under. Each MCP tool span says it is one (``mcp.*``,
``jsonrpc.request.id``, ``gen_ai.tool.type=extension``, the server's name); the tool metric
counts each call once.
"""

from __future__ import annotations

import itertools
import re
import sys
import warnings
from collections import Counter
from contextlib import AbstractAsyncContextManager, ExitStack, nullcontext
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from agent_otel.testing import InMemoryTelemetry

from . import _mcp

SERVER_SCRIPT = Path(__file__).with_name("_mcp.py")
MCP_CALLS = [("c1", "add", 1), ("c2", "add", 2), ("c3", "mul", 3)]
LOCAL_CALL = ("c4", "square", 4)
CALLS = [*MCP_CALLS, LOCAL_CALL]
SEEN = re.compile(r"trace=([0-9a-f]{32}) parent=([0-9a-f]{16})")
CLIENTS = ["pydantic-ai", "agents-sdk"]
STDIO = pytest.param("stdio", marks=pytest.mark.heavy)
"""A server in a child process of its own (a second or more each to start): the heavy suite."""
TRANSPORTS = ["in-memory", STDIO]
PATTERNS = ["parallel", "sequential"]


def _turns(pattern: str) -> list[list[tuple[str, str, int]]]:
    """The model's responses that ask for tools: all four at once, or one each."""
    return [CALLS] if pattern == "parallel" else [[call] for call in CALLS]


# --- the check --------------------------------------------------------------------------------


def _canonical(nodes: list[dict[str, Any]]) -> list[Any]:
    """``tree()``'s nodes as ``(label, children)``: name and kind, a tool span with its call
    id; children sorted (parallel calls start in any order: what counts is whose child)."""
    out = []
    for node in nodes:
        call_id = node["attributes"].get("gen_ai.tool.call.id")
        label = f"{node['name']} [{node['kind']}]" + (f" #{call_id}" if call_id else "")
        out.append((label, _canonical(node["children"])))
    return sorted(out, key=repr)


def _run_tree(telemetry: InMemoryTelemetry) -> list[Any]:
    """The run's tree; connecting to the server (before the run) is the only other trace."""
    roots = telemetry.tree(attributes=["gen_ai.tool.call.id"], events=False)
    run = [r for r in roots if r["name"] == "invoke_agent calc"]
    others = [r["name"] for r in roots if r not in run]
    # (over SSE, fastmcp's client connects with the 2025 handshake)
    assert set(others) <= {"MCP send server/discover", "MCP send initialize",
                           "notifications/initialized"}, others  # fmt: skip
    return _canonical(run)


def _expected(client: str, pattern: str, in_process: bool, fastmcp: bool = True) -> list[Any]:
    """The run's tree as the user sees it (docs/mcp-and-agents.md shows it). ``fastmcp``:
    pydantic-ai's MCP client, fastmcp, has spans of its own (its default)."""

    def server(method: str) -> list[Any]:
        return [(f"{method} [SERVER]", [])] if in_process else []  # stdio: in its process

    def tool(cid: str, name: str) -> Any:
        if name == LOCAL_CALL[1]:
            return (f"execute_tool {name} [INTERNAL] #{cid}", [])
        request = (f"MCP send tools/call {name} [CLIENT]", server(f"tools/call {name}"))
        if client == "pydantic-ai" and fastmcp:
            request = (f"tools/call {name} [CLIENT]", [request])
        return (f"execute_tool {name} [INTERNAL] #{cid}", [request])

    listing = ("MCP send tools/list [CLIENT]", server("tools/list"))
    chat = "chat m [CLIENT]" if client == "pydantic-ai" else "chat [CLIENT]"
    turns = _turns(pattern)
    steps = []
    for index, calls in enumerate([*turns, []]):  # the last response answers
        # pydantic-ai lists the server's tools as it prepares the model request (under the
        # chat span), once per run: the first request
        lists = client == "pydantic-ai" and index == 0
        under_chat = [("tools/list [CLIENT]", [listing]) if fastmcp else listing]
        chat_node = (chat, under_chat if lists else [])
        steps.append((f"step {index} [INTERNAL]", [chat_node, *(tool(c, n) for c, n, _ in calls)]))
    # the Agents SDK lists them at the start of every turn, under the agent span
    listings = [listing] * (len(turns) + 1) if client == "agents-sdk" else []
    return [("invoke_agent calc [INTERNAL]", sorted([*listings, *steps], key=repr))]


def _check(
    telemetry: InMemoryTelemetry,
    outputs: dict[str, str],
    *,
    client: str,
    pattern: str,
    in_process: bool,
    fastmcp: bool = True,
    protocol: str = "2026-07-28",  # mcp 2.3 negotiates the latest
) -> None:
    assert _run_tree(telemetry) == _expected(client, pattern, in_process, fastmcp)
    root = telemetry.span("invoke_agent calc")
    trace_id = root.context.trace_id
    run = [s for s in telemetry.spans() if s.context.trace_id == trace_id]

    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in run if s.attributes and
             s.name.startswith("execute_tool")}  # fmt: skip
    by_id = {s.context.span_id: s for s in run}
    request_ids = set()
    for cid, name, _ in MCP_CALLS:
        tool = dict(tools[cid].attributes or {})
        assert tool["gen_ai.tool.type"] == "extension"
        assert tool["mcp.method.name"] == "tools/call"
        assert tool["agent_otel.mcp.server.name"] == _mcp.SERVER_NAME
        assert tool["mcp.protocol.version"] == protocol
        assert "mcp.session.id" not in tool  # stdio and in-memory have none (HTTP's header)
        # the request's own id, the one the MCP SDK's client span (and the server) has
        [send] = [s for s in run if s.name == f"MCP send tools/call {name}" and
                  _ancestor(by_id, s, tools[cid])]  # fmt: skip
        assert tool["jsonrpc.request.id"] == dict(send.attributes or {})["jsonrpc.request.id"]
        request_ids.add(tool["jsonrpc.request.id"])
        # the server ran in our trace, under the request (over stdio: its own word for it)
        seen = SEEN.search(outputs[cid])
        assert seen is not None, outputs[cid]
        assert int(seen.group(1), 16) == trace_id
        server_parent = by_id[int(seen.group(2), 16)]
        assert server_parent is send
    assert len(request_ids) == len(MCP_CALLS)
    local = dict(tools[LOCAL_CALL[0]].attributes or {})
    assert local["gen_ai.tool.type"] == "function"
    assert not any(k.startswith(("mcp.", "jsonrpc.", "agent_otel.mcp")) for k in local)

    # Each call counted once: one tool-duration record per call, by tool; the MCP SDK's and
    # fastmcp's spans (whose gen_ai.operation.name is execute_tool too) record nothing.
    histograms = telemetry.histograms()
    per_tool: Counter[str] = Counter()
    for point in histograms["gen_ai.execute_tool.duration"]:
        per_tool[str(point.attributes["gen_ai.tool.name"])] += point.count
    assert per_tool == Counter(name for _, name, _ in CALLS)
    operations = {
        str(p.attributes.get("gen_ai.operation.name"))
        for name, points in histograms.items()
        if name != "gen_ai.execute_tool.duration"
        for p in points
    }
    assert "execute_tool" not in operations
    [calls] = histograms["gen_ai.invoke_agent.tool_calls"]
    assert calls.sum == len(CALLS)


def _ancestor(by_id: dict[int, ReadableSpan], span: ReadableSpan, of: ReadableSpan) -> bool:
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        if span is of:
            return True
    return False


# --- the OpenAI Agents SDK ------------------------------------------------------------------


def _agents_server(in_process: bool, failing: bool = False) -> Any:
    from agents.mcp import MCPServerStdio

    if not in_process:
        args = [str(SERVER_SCRIPT), *(["--failing"] if failing else [])]
        params = {"command": sys.executable, "args": args}
        return MCPServerStdio(params, name="calc-stdio", client_session_timeout_seconds=30)

    from mcp.client._memory import InMemoryTransport

    class InProcess(MCPServerStdio):
        """The SDK's MCP server class, connected to the server in this process."""

        def create_streams(self) -> AbstractAsyncContextManager[Any]:
            return InMemoryTransport(_mcp.server(failing))  # type: ignore[return-value]

    return InProcess({"command": "unused"}, name="calc-memory")


async def _run_agents_sdk(
    telemetry: InMemoryTelemetry, pattern: str, in_process: bool, server: Any = None
) -> dict[str, str]:
    from agents import Agent, function_tool
    from agents.testing import assistant_message, function_call

    from agent_contract.sources.openai_agents import openai_agents_events

    from ._fw_openai_agents import scripted

    @function_tool
    def square(x: int) -> int:
        """Square it."""
        return x * x

    model = scripted(
        *[[function_call(name, {"x": arg}, call_id=cid) for cid, name, arg in turn]
          for turn in _turns(pattern)],
        [assistant_message("done")],
    )  # fmt: skip
    results: list[Any] = []
    async with server if server is not None else _agents_server(in_process) as server:
        agent = Agent(name="calc", tools=[square], mcp_servers=[server], model=model)
        stream = openai_agents_events(agent, "go", on_result=results.append)
        async for _ in telemetry.wrapper(agent_name="calc")(stream):
            pass
    return {
        str(_field(item.raw_item, "call_id")): str(item.output)
        for item in results[0].new_items
        if type(item).__name__ == "ToolCallOutputItem"
    }


def _field(raw: Any, key: str) -> Any:
    return raw.get(key) if isinstance(raw, dict) else getattr(raw, key, None)


# --- pydantic-ai ----------------------------------------------------------------------------


def _pydantic_ai_toolset(in_process: bool, failing: bool = False) -> Any:
    from fastmcp.client.transports.memory import FastMCPTransport
    from pydantic_ai.mcp import MCPToolset

    if in_process:  # fastmcp's in-memory transport, serving the MCP SDK's own server
        return MCPToolset(FastMCPTransport(_mcp.server(failing)))
    # a .py path: pydantic-ai runs it with this interpreter over stdio (slow to start when loaded)
    return MCPToolset(SERVER_SCRIPT, init_timeout=60)


async def _run_pydantic_ai(
    telemetry: InMemoryTelemetry, pattern: str, in_process: bool, toolset: Any = None
) -> dict[str, str]:
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from agent_contract.sources.pydantic_ai_stream import pydantic_ai_events

    turns = _turns(pattern)

    async def model(messages: list[Any], info: AgentInfo) -> Any:
        turn = len(messages) // 2  # the prompt, then a response and its tool returns per turn
        if turn < len(turns):
            yield {
                i: DeltaToolCall(name=name, json_args=f'{{"x": {arg}}}', tool_call_id=cid)
                for i, (cid, name, arg) in enumerate(turns[turn])
            }
        else:
            yield "done"

    toolset = toolset if toolset is not None else _pydantic_ai_toolset(in_process)
    agent = Agent(FunctionModel(stream_function=model, model_name="m"), name="calc",
                  toolsets=[toolset])  # fmt: skip

    @agent.tool_plain
    def square(x: int) -> int:
        """Square it."""
        return x * x

    results: list[Any] = []
    async with toolset:
        stream = pydantic_ai_events(agent, "go", on_result=results.append)
        async for _ in telemetry.wrapper(agent_name="calc")(stream):
            pass
    return {
        part.tool_call_id: str(part.content)
        for message in results[0].all_messages()
        for part in message.parts
        if part.part_kind == "tool-return"
    }


# --- the tests --------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("client", CLIENTS)
async def test_mcp_calls_nest_client_and_server_spans_under_their_own_tool_span(
    otel_telemetry: InMemoryTelemetry,
    monkeypatch: pytest.MonkeyPatch,
    client: str,
    transport: str,
    pattern: str,
) -> None:
    if client == "pydantic-ai":
        pytest.importorskip("fastmcp")  # pydantic-ai's MCP client (pydantic-ai-slim[mcp])
        run = _run_pydantic_ai
    else:
        pytest.importorskip("agents")
        run = _run_agents_sdk
    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    in_process = transport == "in-memory"
    outputs = await run(otel_telemetry, pattern, in_process)
    _check(otel_telemetry, outputs, client=client, pattern=pattern, in_process=in_process)


@pytest.mark.parametrize("transport", ["sse", "streamable-http"])
@pytest.mark.parametrize("client", CLIENTS)
async def test_mcp_calls_over_http_transports_nest_under_their_own_tool_span(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, client: str,
    transport: str,
) -> None:  # fmt: skip
    """The same tree over SSE and streamable HTTP, the server on loopback (its spans, from
    the server's thread, ours to see): each framework's own client for it (the Agents SDK's
    ``MCPServerSse`` and ``MCPServerStreamableHttp``, pydantic-ai's ``MCPToolset(url)``)."""
    from _serving import serve

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    app = _mcp.server()
    sse = transport == "sse"
    with serve(app.sse_app() if sse else app.streamable_http_app()) as port:
        url = f"http://127.0.0.1:{port}/{'sse' if sse else 'mcp'}"
        if client == "pydantic-ai":
            pytest.importorskip("fastmcp")
            from pydantic_ai.mcp import MCPToolset

            outputs = await _run_pydantic_ai(otel_telemetry, "parallel", False, MCPToolset(url))
        else:
            pytest.importorskip("agents")
            from agents.mcp import MCPServerSse, MCPServerStreamableHttp

            server = (MCPServerSse({"url": url}, name="calc-sse") if sse else
                      MCPServerStreamableHttp({"url": url}, name="calc-http"))  # fmt: skip
            outputs = await _run_agents_sdk(otel_telemetry, "parallel", False, server=server)
    # fastmcp's SSE client speaks the 2025 revision (as it connects with its handshake)
    protocol = "2025-11-25" if sse and client == "pydantic-ai" else "2026-07-28"
    _check(otel_telemetry, outputs, client=client, pattern="parallel", in_process=True,
           protocol=protocol)  # fmt: skip


async def test_fastmcp_propagating_only_leaves_one_tool_span_per_call_with_pydantic_ai(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fastmcp's own setting for an outer instrumentation that owns the MCP spans
    (``FASTMCP_TELEMETRY_MODE=propagation_only``): its client span goes, the request still
    carries the trace, and the tree is the Agents SDK's: tool > request > server."""
    fastmcp = pytest.importorskip("fastmcp")
    monkeypatch.setattr(fastmcp.settings, "telemetry_mode", "propagation_only")
    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    outputs = await _run_pydantic_ai(otel_telemetry, "parallel", True)
    _check(otel_telemetry, outputs, client="pydantic-ai", pattern="parallel", in_process=True,
           fastmcp=False)  # fmt: skip


async def test_two_servers_the_agents_sdk_names_alike_each_name_their_own_calls(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two MCP servers of one agent, started by the same command (``npx`` for two servers of
    npm packages): the Agents SDK names both ``stdio: npx``, the one label its tools' origin
    keeps. Each call's span names the server it went to (its ``serverInfo``), not the first
    of the agent's servers with that label; both calls in one response, in parallel."""
    pytest.importorskip("agents")
    from agents import Agent
    from agents.mcp import MCPServerStdio
    from agents.testing import assistant_message, function_call
    from mcp.client._memory import InMemoryTransport
    from mcp.server.mcpserver import MCPServer

    from agent_contract.sources.openai_agents import openai_agents_events

    from ._fw_openai_agents import scripted

    files, issues = MCPServer("files"), MCPServer("issues")

    @files.tool()
    def read(path: str) -> str:
        """Read a file."""
        return f"text of {path}"

    @issues.tool()
    def open_issue(title: str) -> str:
        """Open an issue."""
        return f"opened {title}"

    class Started(MCPServerStdio):
        """The SDK's stdio server class, connected to its server in this process."""

        def __init__(self, server: MCPServer) -> None:
            super().__init__({"command": "npx"})
            self.server = server

        def create_streams(self) -> AbstractAsyncContextManager[Any]:
            return InMemoryTransport(self.server)  # type: ignore[return-value]

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    model = scripted(
        [function_call("read", {"path": "a.txt"}, call_id="c1"),
         function_call("open_issue", {"title": "bug"}, call_id="c2")],
        [assistant_message("done")],
    )  # fmt: skip
    async with Started(files) as first, Started(issues) as second:
        assert first.name == second.name == "stdio: npx"
        agent = Agent(name="calc", mcp_servers=[first, second], model=model)
        stream = openai_agents_events(agent, "go")
        async for _ in otel_telemetry.wrapper(agent_name="calc")(stream):
            pass

    tools = [dict(s.attributes or {}) for s in otel_telemetry.spans()
             if s.name.startswith("execute_tool ")]  # fmt: skip
    named = {t["gen_ai.tool.call.id"]: t.get("agent_otel.mcp.server.name") for t in tools}
    assert named == {"c1": "files", "c2": "issues"}
    assert {t.get("mcp.protocol.version") for t in tools} == {"2026-07-28"}


# --- a server that answers isError ------------------------------------------------------------


def _check_failed(telemetry: InMemoryTelemetry, error_type: str) -> None:
    """Each MCP call's tool span failed with ``error_type``, its metric point too; the local
    call and the run did not."""
    tools = {str(s.attributes["gen_ai.tool.call.id"]): s for s in telemetry.spans()
             if s.attributes and s.name.startswith("execute_tool ")}  # fmt: skip
    assert sorted(tools) == sorted(cid for cid, _, _ in CALLS)
    for cid, _, _ in MCP_CALLS:
        attributes = dict(tools[cid].attributes or {})
        assert tools[cid].status.status_code is StatusCode.ERROR, cid
        assert attributes["error.type"] == error_type
        assert attributes["agent_otel.tool.is_error"] is True
        assert attributes["gen_ai.tool.type"] == "extension"
    local = tools[LOCAL_CALL[0]]
    assert local.status.status_code is StatusCode.UNSET
    assert "error.type" not in dict(local.attributes or {})
    assert telemetry.span("invoke_agent calc").status.status_code is StatusCode.UNSET
    failed: Counter[str] = Counter()
    for point in telemetry.histograms()["gen_ai.execute_tool.duration"]:
        if point.attributes.get("error.type") is not None:
            failed[str(point.attributes["error.type"])] += point.count
    assert failed == Counter({error_type: len(MCP_CALLS)})


@pytest.mark.parametrize(
    ("client", "transport"),
    [
        ("agents-sdk", "in-memory"),
        pytest.param("agents-sdk", "stdio", marks=pytest.mark.heavy),
        ("pydantic-ai", "in-memory"),
    ],
)
async def test_an_mcp_tool_whose_server_answers_is_error_fails_its_own_tool_span(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, client: str,
    transport: str,
) -> None:  # fmt: skip
    """A server reports a failed tool in its result (``isError``), not as a JSON-RPC error.
    The Agents SDK hands that result to the model as the call's output, so the stream says
    nothing failed: the tool span reads the answer as its body gets it, and fails
    (``tool_error``, the MCP conventions' value), each parallel call its own. pydantic-ai asks
    the model to retry (``ModelRetry``, its name for every failure of an MCP tool): the
    server's answer still names the failure, ``tool_error``."""
    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    in_process = transport == "in-memory"
    if client == "pydantic-ai":
        pytest.importorskip("fastmcp")
        toolset = _pydantic_ai_toolset(in_process, failing=True)
        await _run_pydantic_ai(otel_telemetry, "parallel", in_process, toolset=toolset)
        _check_failed(otel_telemetry, "tool_error")
        return
    pytest.importorskip("agents")
    server = _agents_server(in_process, failing=True)
    outputs = await _run_agents_sdk(otel_telemetry, "parallel", in_process, server=server)
    assert all("the tool broke" in outputs[cid] for cid, _, _ in MCP_CALLS)  # as the SDK gave it
    _check_failed(otel_telemetry, "tool_error")


# --- an agent of the contracts, the MCP SDK's own client ----------------------------------------


async def test_a_contract_agents_mcp_call_says_so_and_a_local_tools_request_does_not(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A contract agent names the server (``tool_scope(..., mcp=McpServer(...))``) around its
    ``Client.call_tool``: its span is the MCP tool span, with the request's id. A local tool
    whose body happens to send an MCP request is no MCP tool: the request nests under it, and
    its span takes none of the MCP keys (nor the request id)."""
    from mcp import Client
    from mcp.client._memory import InMemoryTransport

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import McpServer, tool_scope

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    # Over a transport: Client(server) would call the server directly, with no request (no
    # client span, no request id) at all.
    async with Client(InMemoryTransport(_mcp.server())) as client:
        server = McpServer(name=client.server_info.name if client.server_info else None,
                           protocol_version=client.protocol_version)  # fmt: skip

        async def agent() -> Any:
            yield LLMCallStart(model="m")
            for cid, name in (("c1", "add"), ("c2", "report")):
                yield ToolCall(id=cid, function=FunctionCall(name=name, arguments="{}"))
            yield LLMCallEnd(model="m")
            with tool_scope("c1", "add", mcp=server):
                answer = await client.call_tool("add", {"x": 1})
            yield ToolResult(tool_call_id="c1", content=str(answer.content))
            with tool_scope("c2", "report"):  # a local tool that calls the server itself
                await client.call_tool("mul", {"x": 2})
            yield ToolResult(tool_call_id="c2", content="sent")

        async for _ in otel_telemetry.wrapper(agent_name="calc", session_id="s-1")(agent()):
            pass

    # The SDK's client lists the server's tools before its first call (to check the result
    # against the tool's output schema): that request is the first tool's too.
    assert _run_tree(otel_telemetry) == [("invoke_agent calc [INTERNAL]", [("step 0 [INTERNAL]", [
        ("chat m [CLIENT]", []),
        ("execute_tool add [INTERNAL] #c1", [
            ("MCP send tools/call add [CLIENT]", [("tools/call add [SERVER]", [])]),
            ("MCP send tools/list [CLIENT]", [("tools/list [SERVER]", [])])]),
        ("execute_tool report [INTERNAL] #c2", [
            ("MCP send tools/call mul [CLIENT]", [("tools/call mul [SERVER]", [])])]),
    ])])]  # fmt: skip
    by_name = {s.name: dict(s.attributes or {}) for s in otel_telemetry.spans()}
    add, report = by_name["execute_tool add"], by_name["execute_tool report"]
    assert add["jsonrpc.request.id"] == by_name["MCP send tools/call add"]["jsonrpc.request.id"]
    assert (add["mcp.method.name"], add["gen_ai.tool.type"]) == ("tools/call", "extension")
    assert add["agent_otel.mcp.server.name"] == _mcp.SERVER_NAME
    assert add["mcp.protocol.version"] == server.protocol_version == "2026-07-28"
    assert report["gen_ai.tool.type"] == "function"
    assert not any(k.startswith(("mcp.", "jsonrpc.", "agent_otel.mcp")) for k in report)
    # the SDK's requests, sent from the tool bodies, carry the run's session
    # (RunIdentityProcessor, from the tool body's context)
    for name in ("MCP send tools/call add", "MCP send tools/list", "MCP send tools/call mul"):
        assert by_name[name]["session.id"] == "s-1", name


async def test_a_server_in_process_that_calls_another_server_leaves_the_tool_span_its_own(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In memory, the MCP SDK serves a request in a copy of the sender's context: the traced
    tool body's. The server's tool calls a second server (a session of its own, whose answer
    is an error): that request is the server's, nested under its span, not the tool's. The
    tool span keeps its own request's id and its own server's name, and is not failed."""
    from mcp import Client
    from mcp.client._memory import InMemoryTransport
    from mcp.server.mcpserver import MCPServer

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import McpServer, tool_scope

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    inner = MCPServer("inner")

    @inner.tool()
    def deep(x: int) -> int:
        raise ValueError("deep broke")

    outer = MCPServer("outer")

    @outer.tool()
    async def relay(x: int) -> str:
        async with Client(InMemoryTransport(inner)) as nested:
            answer = await nested.call_tool("deep", {"x": x})
        return f"relayed, deep failed: {answer.is_error}"

    async with Client(InMemoryTransport(outer)) as client:
        await client.list_tools()  # the output schemas: the call sends no tools/list then

        async def agent() -> Any:
            yield LLMCallStart(model="m")
            yield ToolCall(id="c1", function=FunctionCall(name="relay", arguments="{}"))
            yield LLMCallEnd(model="m")
            with tool_scope("c1", "relay", mcp=McpServer()):  # the server's name: the session's
                answer = await client.call_tool("relay", {"x": 1})
            yield ToolResult(tool_call_id="c1", content=str(answer.content))

        async for _ in otel_telemetry.wrapper(agent_name="calc")(agent()):
            pass

    tool = otel_telemetry.span("execute_tool relay")
    send = otel_telemetry.span("MCP send tools/call relay")
    served = otel_telemetry.span("tools/call relay")
    nested = otel_telemetry.span("MCP send tools/call deep")
    assert send.parent is not None and send.parent.span_id == tool.context.span_id
    assert served.parent is not None and served.parent.span_id == send.context.span_id
    assert nested.parent is not None and nested.parent.span_id == served.context.span_id
    attributes = dict(tool.attributes or {})
    assert attributes["jsonrpc.request.id"] == (send.attributes or {})["jsonrpc.request.id"]
    assert attributes["jsonrpc.request.id"] != (nested.attributes or {})["jsonrpc.request.id"]
    assert attributes["agent_otel.mcp.server.name"] == "outer"
    assert tool.status.status_code is StatusCode.UNSET
    assert "error.type" not in attributes


async def test_a_contract_agents_mcp_tool_fails_on_an_is_error_answer_and_a_local_tool_does_not(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server answers both requests ``isError``. The call scoped as an MCP tool fails
    (``tool_error``), though the agent reports a plain result; a local tool whose body sends
    the same request decides for itself (it reported success: its span stays OK). The answer
    reaches the agent as the SDK gave it; the same call, retried and answered, ends OK."""
    from mcp import Client
    from mcp.client._memory import InMemoryTransport

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import McpServer, tool_scope

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    answers: list[Any] = []
    async with (
        Client(InMemoryTransport(_mcp.server(failing=True))) as failing,
        Client(InMemoryTransport(_mcp.server())) as working,
    ):
        server = McpServer(name=_mcp.SERVER_NAME)

        async def agent() -> Any:
            yield LLMCallStart(model="m")
            for cid, name in (("c1", "add"), ("c2", "report"), ("c3", "mul")):
                yield ToolCall(id=cid, function=FunctionCall(name=name, arguments="{}"))
            yield LLMCallEnd(model="m")
            with tool_scope("c1", "add", mcp=server):
                answers.append(await failing.call_tool("add", {"x": 1}))
            yield ToolResult(tool_call_id="c1", content="the text the framework made of it")
            with tool_scope("c2", "report"):
                answers.append(await failing.call_tool("mul", {"x": 2}))
            yield ToolResult(tool_call_id="c2", content="reported")
            with tool_scope("c3", "mul", mcp=server):  # failed, then retried: answered
                answers.append(await failing.call_tool("mul", {"x": 3}))
            with tool_scope("c3", "mul", mcp=server):
                answers.append(await working.call_tool("mul", {"x": 3}))
            yield ToolResult(tool_call_id="c3", content="6")

        async for _ in otel_telemetry.wrapper(agent_name="calc")(agent()):
            pass

    assert [a.is_error for a in answers] == [True, True, True, False]
    assert "the tool broke" in str(answers[0].content)
    spans = {s.name: s for s in otel_telemetry.spans() if s.name.startswith("execute_tool")}
    add = spans["execute_tool add"]
    assert add.status.status_code is StatusCode.ERROR
    assert dict(add.attributes or {})["error.type"] == "tool_error"
    assert dict(add.attributes or {})["agent_otel.tool.is_error"] is True
    for name in ("execute_tool report", "execute_tool mul"):
        assert spans[name].status.status_code is StatusCode.UNSET, name
        assert "error.type" not in dict(spans[name].attributes or {}), name


# --- a server that reads the trace from the HTTP headers only -----------------------------------


def _header_only(app: Any, contexts: list[tuple[int, int]]) -> Any:
    """``app`` behind ``ContinueTraceMiddleware``: each POST is served in the context its HTTP
    headers name (never its ``_meta``), recorded in ``contexts`` as (trace id, span id)."""
    from opentelemetry import trace

    from agent_otel import ContinueTraceMiddleware

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            current = trace.get_current_span().get_span_context()
            contexts.append((current.trace_id, current.span_id))
        await app(scope, receive, send)

    return ContinueTraceMiddleware(recording)


def _traced_factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
    """The MCP SDK's client factory, its client sending the trace in the headers (the page's)."""
    from mcp.shared._httpx_utils import create_mcp_http_client

    from agent_otel import with_trace_headers

    return with_trace_headers(create_mcp_http_client(headers, timeout, auth))


async def _run_mcp_sdk(telemetry: InMemoryTelemetry, url: str, traced: bool) -> None:
    """A contract agent calling ``add`` with the MCP SDK's own client, over streamable HTTP."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import tool_scope

    http = _traced_factory() if traced else create_mcp_http_client()
    async with http, Client(streamable_http_client(url, http_client=http)) as client:

        async def agent() -> Any:
            yield LLMCallStart(model="m")
            yield ToolCall(id="c1", function=FunctionCall(name="add", arguments="{}"))
            yield LLMCallEnd(model="m")
            with tool_scope("c1", "add"):
                answer = await client.call_tool("add", {"x": 1})
            yield ToolResult(tool_call_id="c1", content=str(answer.content))

        async for _ in telemetry.wrapper(agent_name="calc")(agent()):
            pass


async def _run_agents_sdk_over_http(telemetry: InMemoryTelemetry, url: str, traced: bool) -> None:
    from agents.mcp import MCPServerStreamableHttp

    params: dict[str, Any] = {"url": url}
    if traced:
        params["httpx_client_factory"] = _traced_factory
    server = MCPServerStreamableHttp(params, name="calc-http")  # type: ignore[arg-type]
    await _run_agents_sdk(telemetry, "sequential", False, server=server)


async def _run_pydantic_ai_over_http(telemetry: InMemoryTelemetry, url: str, traced: bool) -> None:
    from pydantic_ai.mcp import MCPToolset

    toolset = MCPToolset(url, http_client=_traced_factory()) if traced else MCPToolset(url)
    await _run_pydantic_ai(telemetry, "sequential", False, toolset=toolset)


HTTP_CLIENTS = {
    "mcp-sdk": _run_mcp_sdk,
    "agents-sdk": _run_agents_sdk_over_http,
    "pydantic-ai": _run_pydantic_ai_over_http,
}


@pytest.mark.parametrize("traced", [False, True], ids=["meta-only", "with_trace_headers"])
@pytest.mark.parametrize("client", HTTP_CLIENTS)
async def test_over_streamable_http_the_headers_name_the_request_span_as_meta_does(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, client: str, traced: bool
) -> None:
    """The MCP SDK puts the W3C context in ``params._meta`` only: a server (or a gateway in
    front of it) that reads the HTTP headers sees none and starts a trace of its own. With
    ``with_trace_headers()`` on the client's HTTP client (docs/mcp-and-agents.md: the MCP SDK's
    ``http_client``, the Agents SDK's ``httpx_client_factory``, pydantic-ai's ``http_client``),
    the POST of each request names the SDK's request span, under its tool span, exactly as
    its ``_meta`` does, and a server reading the headers alone continues the run's trace."""
    if client == "pydantic-ai":
        pytest.importorskip("fastmcp")
    elif client == "agents-sdk":
        pytest.importorskip("agents")
    from _serving import serve

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    requests: list[dict[str, str]] = []
    served_in: list[tuple[int, int]] = []
    app = _header_only(_mcp.server().streamable_http_app(), served_in)
    with serve(app, requests) as port:
        await HTTP_CLIENTS[client](otel_telemetry, f"http://127.0.0.1:{port}/mcp", traced)

    calls = [s for s in otel_telemetry.spans() if s.name.startswith("MCP send tools/call")]
    assert calls, "the MCP SDK traced no tool call"
    by_id = {s.context.span_id: s for s in otel_telemetry.spans()}
    tools = [s for s in otel_telemetry.spans() if s.name.startswith("execute_tool ")]
    for send in calls:  # the SDK's request span, under its tool span (fastmcp's span between)
        name = f"execute_tool {send.name.rsplit(' ', 1)[1]}"
        assert any(_ancestor(by_id, send, t) for t in tools if t.name == name), send.name
    run = otel_telemetry.span("invoke_agent calc").context.trace_id
    sent = {(s.context.trace_id, s.context.span_id) for s in otel_telemetry.spans()
            if s.name.startswith("MCP send")}  # fmt: skip
    named = [r["traceparent"] for r in requests if "traceparent" in r]
    if not traced:
        assert named == []  # the headers carry nothing: a header-only server starts a trace
        assert all(span_id == 0 for _, span_id in served_in)
        return
    assert len(named) == len(requests) == len(served_in)  # every request
    # each names its own request span: the one _meta names, sent in that span's context
    assert [(int(t[3:35], 16), int(t[36:52], 16)) for t in named] == served_in
    assert set(served_in) <= sent
    # each request of the run, its tool calls among them, continues the run's trace there
    assert {(c.context.trace_id, c.context.span_id) for c in calls} <= set(served_in)
    assert {(t, s) for t, s in sent if t == run} <= set(served_in)


class _Unconnected:
    """A client whose ``initialize_result`` raises until it is connected."""

    @property
    def initialize_result(self) -> Any:
        raise RuntimeError("not connected")


@pytest.mark.parametrize(
    ("holder", "expected"),
    [
        # the MCP SDK 2.x's names, on the session
        ({"server_info": {"name": "calc"}, "protocol_version": "2025-11-25"},
         ("calc", "2025-11-25")),
        # what holds the MCP SDK 1.x's InitializeResult (AutoGen's McpWorkbench): wire names
        ({"initialize_result": {"serverInfo": {"name": "calc"}, "protocolVersion": "2025-06-18"}},
         ("calc", "2025-06-18")),
        # unknown server: the client's own name for it
        ({"initialize_result": {"serverInfo": {"name": ""}, "protocolVersion": 7}},
         ("mine", None)),
    ],
)  # fmt: skip
def test_server_of_reads_either_sdks_initialize_result(
    holder: dict[str, Any], expected: tuple[str | None, str | None]
) -> None:
    from types import SimpleNamespace

    from agent_contract.sources._mcp import server_of

    def shaped(value: Any) -> Any:
        if isinstance(value, dict):
            return SimpleNamespace(**{k: shaped(v) for k, v in value.items()})
        return value

    server = server_of(shaped(holder), "mine")
    assert (server.name, server.protocol_version) == expected
    assert server_of(_Unconnected(), "mine").name == "mine"  # a raising property: unknown


class _Raising:
    """A result whose every attribute raises (a proxy of a closed session)."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(name)


@pytest.mark.parametrize(
    ("result", "failed"),
    [
        ({"isError": True}, True),
        ({"is_error": True, "content": []}, True),
        ({"isError": 1}, False),  # the flag itself must be True: no truthiness asked
        ({"isError": False}, False),
        (type("V2", (), {"is_error": True})(), True),
        (type("V1", (), {"isError": True})(), True),
        (type("Neither", (), {})(), False),
        (_Raising(), False),
        (None, False),
    ],
    ids=["wire", "wire-2", "truthy", "false", "2.x", "1.x", "neither", "raising", "None"],
)
def test_is_error_reads_either_sdks_flag_and_nothing_else(result: Any, failed: bool) -> None:
    from agent_otel.recording._mcp import is_error

    assert is_error(result) is failed


class _Bridged:
    """The MCP SDK 2.x's result once fastmcp is imported: ``is_error`` and a deprecated
    ``isError`` that warns (fastmcp's own compatibility property)."""

    is_error = False

    @property
    def isError(self) -> bool:
        warnings.warn("Accessing `CallToolResult.isError` is deprecated", DeprecationWarning,
                      stacklevel=2)  # fmt: skip
        return self.is_error


TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.mark.parametrize(
    "meta",
    [{"traceparent": 123}, {"traceparent": [TRACEPARENT]}, {1: TRACEPARENT}, "x", None, {}],
    ids=["int", "list", "int-key", "str", "None", "empty"],
)
def test_a_servers_meta_of_odd_values_names_no_parent_and_costs_no_error(
    meta: Any, otel_internal_errors: list[str]
) -> None:
    """A server's request whose ``_meta`` holds no W3C header as text (a server of another
    SDK, or a hostile one) names no span: its callback runs as the SDK runs it, and nothing
    is reported; a ``traceparent`` as text names its span."""
    from types import SimpleNamespace

    from opentelemetry import trace

    from agent_otel.recording._mcp import _named_parent

    assert _named_parent((SimpleNamespace(meta=meta), object())) is None
    named = _named_parent((SimpleNamespace(meta={"traceparent": TRACEPARENT}),))
    assert named is not None
    assert trace.get_current_span(named).get_span_context().span_id == 0xB7AD6B7169203331
    assert otel_internal_errors == []


def test_a_result_with_the_2x_flag_is_never_asked_for_the_deprecated_one() -> None:
    """Every MCP tool answer that succeeded was asked ``isError`` after ``is_error`` said
    False: with fastmcp loaded, a ``FastMCPDeprecationWarning`` pointing at agent-otel's line
    in the user's logs and test reports. The 2.x flag, when there, is the answer."""
    from agent_otel.recording._mcp import is_error

    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        assert is_error(_Bridged()) is False
    assert [str(w.message) for w in told] == []


def test_a_requests_meta_gets_the_trace_context_and_keeps_the_callers_own(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The MCP SDK 1.x's request ``_meta``: the current context added, the caller's keys kept;
    a ``_meta`` that is no plain dict is left as it is."""
    from agent_otel.recording._mcp import _with_context

    tracer = otel_telemetry.tracer_provider.get_tracer("t")
    with tracer.start_as_current_span("tool") as span:
        ids = span.get_span_context()
        added = _with_context(None)
        kept = _with_context({"traceparent": "mine", "progressToken": 7})
        odd = _Raising()
        untouched = _with_context(odd)
    traceparent = f"00-{ids.trace_id:032x}-{ids.span_id:016x}-01"
    assert added == {"traceparent": traceparent}
    assert kept == {"traceparent": "mine", "progressToken": 7}
    assert untouched is odd
    assert _with_context({}) == {}  # no span current: nothing to add


def test_a_requests_meta_naming_a_trace_of_its_own_keeps_it_whole(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A caller whose 1.x request ``meta`` carries a trace header of its own (another
    tracer's ``traceparent``, or its ``tracestate``) keeps its trace whole: none of the
    current context's trace headers joins it (a ``tracestate`` is the state of the trace its
    ``traceparent`` names: the tool span's, beside another trace's parent, would be read as
    that trace's), only the ``baggage`` it lacks, as ``with_trace_headers`` does for HTTP."""
    from opentelemetry import baggage, context, propagate

    from agent_otel.recording._mcp import _with_context

    upstream = {"traceparent": f"00-{1:032x}-{2:016x}-01", "tracestate": "vendor=v1"}
    tracer = otel_telemetry.tracer_provider.get_tracer("t")
    token = context.attach(baggage.set_baggage("tenant", "t1", propagate.extract(upstream)))
    try:
        with tracer.start_as_current_span("tool") as span:
            ids = span.get_span_context()
            theirs = _with_context({"traceparent": "00-theirs-01", "progressToken": 7})
            state = _with_context({"tracestate": "theirs=1"})
            ours = _with_context({"progressToken": 7})
    finally:
        context.detach(token)
    assert theirs == {"traceparent": "00-theirs-01", "progressToken": 7, "baggage": "tenant=t1"}
    assert state == {"tracestate": "theirs=1", "baggage": "tenant=t1"}
    traceparent = f"00-{ids.trace_id:032x}-{ids.span_id:016x}-01"
    assert ours == {"progressToken": 7, "traceparent": traceparent,
                    "tracestate": "vendor=v1", "baggage": "tenant=t1"}  # fmt: skip


# --- a request that fails below the tool: a JSON-RPC error, a timeout --------------------------

FAILED_REQUESTS = [("invalid", "-32602"), ("slow", "-32001")]
TIMEOUT_S = 1.5
"""The client's request timeout in these tests: ``slow`` answers after 30 s, the other calls (and
the session's start) well inside it, even in a loaded full run (with 0.5 s, the pydantic-ai case
failed once there and never alone)."""
"""A tool of ``_mcp.erring_server()`` and the JSON-RPC code its request fails with (the MCP
SDK's ``REQUEST_TIMEOUT`` for the call a timeout gave up on)."""


def _check_failed_requests(telemetry: InMemoryTelemetry, codes: dict[str, str]) -> None:
    """Each call's span (by call id) failed with its request's code, on its metric too; the
    call that was answered, its step and its run are unmarked."""
    tools = {str(s.attributes["gen_ai.tool.call.id"]): s for s in telemetry.spans()
             if s.name.startswith("execute_tool") and s.attributes}  # fmt: skip
    for cid, span in tools.items():
        attributes = dict(span.attributes or {})
        if cid in codes:
            assert span.status.status_code is StatusCode.ERROR, cid
            assert attributes["error.type"] == codes[cid], cid
        else:
            assert span.status.status_code is StatusCode.UNSET, cid
            assert "error.type" not in attributes, cid
    for name in ("invoke_agent calc", "step 0"):
        assert "error.type" not in dict(telemetry.span(name).attributes or {}), name
    failed = Counter(str(p.attributes.get("error.type"))
                     for p in telemetry.histograms()["gen_ai.execute_tool.duration"]
                     for _ in range(p.count))  # fmt: skip
    assert failed == Counter([*codes.values(), *["None"] * (len(tools) - len(codes))])


@pytest.mark.parametrize("cancel", [None, "c1"], ids=["failed", "cancelled"])
async def test_a_contract_agents_mcp_request_that_fails_names_the_failure_by_its_json_rpc_code(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, cancel: str | None
) -> None:
    """A request that fails below the tool raises the MCP SDK's error: a JSON-RPC error
    answer, a timeout. Reported by the agent as a failed result (it caught the error), the
    call's span names the failure as the MCP conventions do, by the error's JSON-RPC code,
    not ``tool_error`` (the server's ``isError`` answer, a failure of another kind); three
    calls at once, each its own. A request the body gave up on (``move_on_after``: the SDK
    tells the server it is cancelled) is ``CancelledError``, as a cancelled run is."""
    import anyio
    from mcp import Client
    from mcp.client._memory import InMemoryTransport

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import McpServer, tool_scope

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    calls = [(f"c{i}", name) for i, name in enumerate([n for n, _ in FAILED_REQUESTS] + ["add"])]
    give_up = 5.0 if cancel is None else 0.1  # (the SDK's timeout: TIMEOUT_S)
    if cancel is not None:
        calls = [(cid, "slow" if cid == cancel else "add") for cid, _ in calls]
    async with Client(InMemoryTransport(_mcp.erring_server())) as client:
        server = McpServer(name=_mcp.SERVER_NAME)
        results: dict[str, str | None] = {}

        async def body(cid: str, name: str) -> None:
            results[cid] = "cancelled"  # what the agent tells its model when it gave up
            # only the slow call is given up on: a quick one is never cut short under load
            patience = give_up if cid == cancel or cancel is None else 30.0
            with tool_scope(cid, name, mcp=server), anyio.move_on_after(patience):
                try:
                    await client.call_tool(name, {"x": 1}, read_timeout_seconds=TIMEOUT_S)
                    results[cid] = None
                except Exception as error:
                    results[cid] = str(error)

        async def agent() -> Any:
            yield LLMCallStart(model="m")
            for cid, name in calls:
                yield ToolCall(id=cid, function=FunctionCall(name=name, arguments='{"x": 1}'))
            yield LLMCallEnd(model="m")
            async with anyio.create_task_group() as group:
                for cid, name in calls:
                    group.start_soon(body, cid, name)
            for cid, _ in calls:
                error = results[cid]
                yield ToolResult(tool_call_id=cid, content=error or "2", is_error=error is not None)

        async for _ in otel_telemetry.wrapper(agent_name="calc")(agent()):
            pass

    if cancel is None:
        _check_failed_requests(otel_telemetry, {"c0": "-32602", "c1": "-32001"})
    else:
        _check_failed_requests(otel_telemetry, {cancel: "CancelledError"})


@pytest.mark.parametrize(("tool", "code"), [*FAILED_REQUESTS, ("die", "-32000")])
async def test_a_frameworks_mcp_request_that_fails_names_the_failure_by_its_json_rpc_code(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, tool: str, code: str
) -> None:
    """The Agents SDK hands the MCP SDK's error to the model as the call's failure (its
    adapter names it by its class, ``MCPError``, for a JSON-RPC error and a timeout alike):
    the call's span names it by its JSON-RPC code; the parallel call answered is OK. A
    server over stdio that dies mid-call closes the connection (the SDK's ``-32000``): the
    run fails with the error, and both calls in flight end with that code."""
    pytest.importorskip("agents")
    from agents import Agent
    from agents.mcp import MCPServerStdio
    from agents.testing import assistant_message, function_call
    from mcp.client._memory import InMemoryTransport

    from agent_contract.sources.openai_agents import openai_agents_events

    from ._fw_openai_agents import scripted

    class InProcess(MCPServerStdio):
        def create_streams(self) -> AbstractAsyncContextManager[Any]:
            return InMemoryTransport(_mcp.erring_server())  # type: ignore[return-value]

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    server = (
        MCPServerStdio({"command": sys.executable, "args": [str(SERVER_SCRIPT), "--erring"]},
                       name="calc", client_session_timeout_seconds=30)
        if tool == "die"
        else InProcess({"command": "unused"}, name="calc", client_session_timeout_seconds=TIMEOUT_S)
    )  # fmt: skip
    model = scripted(
        [function_call(tool, {"x": 1}, call_id="c0"), function_call("add", {"x": 1}, call_id="c1")],
        [assistant_message("done")],
    )
    async with server:
        agent = Agent(name="calc", mcp_servers=[server], model=model)
        stream = otel_telemetry.wrapper(agent_name="calc")(openai_agents_events(agent, "go"))
        if tool != "die":
            async for _ in stream:
                pass
            _check_failed_requests(otel_telemetry, {"c0": code})
            return
        with pytest.raises(Exception, match="Connection closed"):
            async for _ in stream:
                pass
    for cid in ("c0", "c1"):
        [span] = [s for s in otel_telemetry.spans()
                  if dict(s.attributes or {}).get("gen_ai.tool.call.id") == cid]  # fmt: skip
        assert dict(span.attributes or {})["error.type"] == code, cid


@pytest.mark.parametrize(("tool", "code"), FAILED_REQUESTS)
async def test_a_pydantic_ai_mcp_request_that_fails_names_the_failure_by_its_json_rpc_code(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, tool: str, code: str
) -> None:
    """pydantic-ai turns a JSON-RPC error answer and a timeout into ``ModelRetry`` (the model
    is asked to try again), as it does a server's ``isError``: the call's span still names
    the failure by the request's JSON-RPC code, as the MCP conventions do; the parallel call
    answered is OK."""
    pytest.importorskip("fastmcp")
    from fastmcp.client.transports.memory import FastMCPTransport
    from pydantic_ai.mcp import MCPToolset

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    toolset = MCPToolset(FastMCPTransport(_mcp.erring_server()), read_timeout=TIMEOUT_S)
    monkeypatch.setattr(sys.modules[__name__], "_turns",
                        lambda pattern: [[("c0", tool, 1), ("c1", "add", 1)]])  # fmt: skip
    outputs = await _run_pydantic_ai(otel_telemetry, "parallel", True, toolset=toolset)
    assert outputs["c1"] == "2"
    _check_failed_requests(otel_telemetry, {"c0": code})


async def test_a_streamable_http_server_that_dies_mid_call_fails_the_call_with_the_cause(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A server over streamable HTTP (a process of its own, on loopback) that dies before it
    answers two calls in flight: the MCP SDK's request task fails with the HTTP client's
    error (httpx's ``RemoteProtocolError``: the server disconnected without a response) and
    the SDK cancels the transport's other requests and their callers, so each tool body sees
    only a ``CancelledError`` it did not ask for. Each call's span fails with the cause
    instead (its class, its message, its ``exception`` event, on the metric too), whichever
    request's task failed first; the call answered before stays OK."""
    import httpx2
    from benchmarks._process import free_port, port_open, serving
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from agent_contract.scope import McpServer

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    port = free_port()
    command = [sys.executable, str(SERVER_SCRIPT), "--erring", "--http", str(port)]
    ready = lambda: port_open(port)  # noqa: E731
    with serving(command, log=tmp_path / "server.log", ready=ready, timeout=60):
        url = f"http://127.0.0.1:{port}/mcp"
        cancelled: list[BaseException] = []
        with pytest.raises(Exception) as raised:  # the SDK's group of it, on the way out
            async with Client(streamable_http_client(url)) as client:
                server = McpServer(name=_mcp.SERVER_NAME, protocol_version=client.protocol_version)
                await _mcp.run_lost_calls(otel_telemetry, client.call_tool, server, cancelled)
        assert raised.group_contains(httpx2.RemoteProtocolError)
        assert len(cancelled) == 1
    assert client.protocol_version == "2026-07-28"
    _mcp.check_lost_calls(otel_telemetry)


def test_only_an_mcp_sdk_errors_own_code_names_a_failure() -> None:
    """``error_code`` reads the code the MCP SDK's error carries (an int on its ``ErrorData``),
    and nothing of any other exception: no property of its own runs."""
    from mcp.shared.exceptions import MCPError

    from agent_otel.recording._mcp import error_code

    class Hostile(Exception):
        @property
        def error(self) -> Any:
            raise AssertionError("read")

    class Coded(Exception):  # a code of its own, not the MCP SDK's
        def __init__(self) -> None:
            self.error = MCPError(-32000, "x").error

    assert error_code(MCPError(-32602, "bad")) == "-32602"
    assert error_code(MCPError(408, "timed out")) == "408"  # the SDK 1.x's timeout code
    assert [error_code(e) for e in (Hostile(), Coded(), ValueError(), TimeoutError())] == [None] * 4


async def test_a_calls_progress_notifications_are_told_in_its_own_tool_span(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's progress notifications for a call go to the callback the call was given,
    which the session runs on its own receiving task (in memory: inside the server's span):
    it runs in its call's tool span, each of three parallel calls its own, so a log line or
    span it writes is the call's. What it returns, and the answer, pass through; nothing of
    the callback but its call is asked."""
    import anyio
    from mcp import Client
    from mcp.client._memory import InMemoryTransport
    from opentelemetry import trace

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import McpServer, tool_scope

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    told: dict[str, list[tuple[float, int]]] = {}
    answers: dict[str, str] = {}
    async with Client(InMemoryTransport(_mcp.erring_server())) as client:
        server = McpServer(name=_mcp.SERVER_NAME)

        async def body(cid: str, x: int, positional: bool) -> None:
            class Progress:  # a callable whose every other attribute raises
                async def __call__(self, done: float, total: Any, message: Any) -> None:
                    span = trace.get_current_span().get_span_context().span_id
                    told.setdefault(cid, []).append((done, span))

                def __getattr__(self, name: str) -> Any:
                    raise RuntimeError(name)

            progress = Progress()

            with tool_scope(cid, "count", mcp=server):
                if positional:  # the SDK's call_tool takes it in either form
                    answer = await client.session.call_tool("count", {"x": x}, None, progress)
                else:
                    answer = await client.call_tool("count", {"x": x}, progress_callback=progress)
            answers[cid] = str(answer.content[0].text)  # type: ignore[union-attr]

        calls = [("c1", 1, False), ("c2", 2, True), ("c3", 3, False)]

        async def agent() -> Any:
            yield LLMCallStart(model="m")
            for cid, x, _ in calls:
                arguments = f'{{"x": {x}}}'
                yield ToolCall(id=cid, function=FunctionCall(name="count", arguments=arguments))
            yield LLMCallEnd(model="m")
            async with anyio.create_task_group() as group:
                for call in calls:
                    group.start_soon(body, *call)
            for cid, _, _ in calls:
                yield ToolResult(tool_call_id=cid, content=answers[cid])

        async for _ in otel_telemetry.wrapper(agent_name="calc")(agent()):
            pass

    tools = {str(s.attributes["gen_ai.tool.call.id"]): s.context.span_id
             for s in otel_telemetry.spans()
             if s.name == "execute_tool count" and s.attributes}  # fmt: skip
    for cid, x, _ in calls:
        assert told[cid] == [(float(n), tools[cid]) for n in range(1, x + 1)], cid
        assert answers[cid] == str(x)


# --- A result an extension of the client finishes (a claimed result) -----------------------------


def _deferring() -> tuple[Any, Any]:
    """An MCP server (``MCPServer``) whose extension answers each ``tools/call`` with a handle
    (a result of its own ``resultType``, which the MCP SDK 2.x's ``Client`` hands to the client
    extension claiming it), the tool's real answer fetched with a request of the extension's
    (``deferred/result``), as a long-running call's result is; and that client extension.
    Tools: ``add`` fails (an ``isError`` answer), ``square`` answers, and ``lost`` answers but
    its handle is unknown when fetched (``-32602``)."""
    from typing import Literal

    from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
    from mcp.server.extension import Extension, MethodBinding
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.shared.exceptions import MCPError
    from mcp_types import CallToolResult, Request, RequestParams, Result

    held: dict[str, Any] = {}
    handles = itertools.count()

    class Handle(RequestParams):
        handle: str

    class Deferred(Result):
        result_type: Literal["deferred"] = "deferred"
        handle: str

    class Fetch(Request[Handle, Literal["deferred/result"]]):
        method: Literal["deferred/result"] = "deferred/result"

    class Deferring(Extension):
        identifier = "com.example/deferred"

        async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
            handle = f"h{next(handles)}"
            answer = await call_next(ctx)
            if params.name != "lost":
                held[handle] = answer
            return {"resultType": "deferred", "handle": handle}

        def methods(self) -> list[MethodBinding]:
            async def fetch(ctx: Any, params: Handle) -> Any:
                if params.handle not in held:
                    raise MCPError(-32602, "unknown handle")
                return held.pop(params.handle)

            return [MethodBinding("deferred/result", Handle, fetch)]

    async def resolve(claimed: Deferred, ctx: ClaimContext) -> CallToolResult:
        request = Fetch(params=Handle(handle=claimed.handle))
        return await ctx.session.send_request(request, CallToolResult)

    class Resolving(ClientExtension):
        identifier = "com.example/deferred"

        def claims(self) -> list[ResultClaim[Any]]:
            return [ResultClaim(result_type="deferred", model=Deferred, resolve=resolve)]

    calc = MCPServer(_mcp.SERVER_NAME, extensions=[Deferring()])

    @calc.tool()
    def add(x: int) -> str:
        """Fail."""
        raise ToolError("the tool broke")

    @calc.tool()
    def square(x: int) -> str:
        """Square it."""
        return str(x * x)

    @calc.tool()
    def lost(x: int) -> str:
        """Answer, though the answer is lost."""
        return str(x)

    return calc, Resolving()


def _claiming_client(client: str, server: Any, extension: Any) -> tuple[Any, Any]:
    """A client of ``server`` with ``extension`` (``mcp-sdk``: the MCP SDK 2.x's ``Client``;
    ``fastmcp``: fastmcp's, pydantic-ai's and Agno's MCP client), in memory, and how a tool
    body calls a tool with it (fastmcp's as pydantic-ai does: no raising on an ``isError``
    answer)."""
    if client == "fastmcp":
        import fastmcp
        from fastmcp.client.transports.memory import FastMCPTransport

        held = fastmcp.Client(FastMCPTransport(server), extensions=[extension])
        return held, lambda name, x: held.call_tool(name, x, raise_on_error=False)
    from mcp import Client
    from mcp.client._memory import InMemoryTransport

    sdk = Client(InMemoryTransport(server), extensions=[extension])
    return sdk, lambda name, x: sdk.call_tool(name, x)


@pytest.mark.parametrize("client", ["mcp-sdk", "fastmcp"])
async def test_a_result_the_clients_extension_finishes_fails_the_call_by_its_final_answer(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    """A server may answer ``tools/call`` with a result of an extension's own ``resultType``
    (a handle to the call's result, as a long-running call's is): the MCP SDK 2.x's ``Client``
    and fastmcp's hand it to the client extension that claims it, whose resolver fetches the
    real answer with requests of its own, and return that one. The tool span reads the
    answer the body got: the final ``isError`` fails its call (``tool_error``), a fetch the
    server refused names the failure by its JSON-RPC code, and a call answered stays OK;
    three at once."""
    import anyio

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import McpServer, tool_scope

    if client == "fastmcp":
        pytest.importorskip("fastmcp")
    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)
    held, call = _claiming_client(client, *_deferring())
    calls = [("c1", "add"), ("c2", "lost"), ("c3", "square")]
    answers: dict[str, Any] = {}
    async with held:

        async def body(cid: str, name: str) -> None:
            with tool_scope(cid, name, mcp=McpServer(name=_mcp.SERVER_NAME)):
                try:
                    answers[cid] = await call(name, {"x": 2})
                except Exception as error:
                    answers[cid] = error

        async def agent() -> Any:
            yield LLMCallStart(model="m")
            for cid, name in calls:
                yield ToolCall(id=cid, function=FunctionCall(name=name, arguments='{"x": 2}'))
            yield LLMCallEnd(model="m")
            async with anyio.create_task_group() as group:
                for call in calls:
                    group.start_soon(body, *call)
            for cid, _ in calls:  # the agent reports the server's answers as plain results
                failed = isinstance(answers[cid], Exception)
                yield ToolResult(tool_call_id=cid, content=str(answers[cid]), is_error=failed)

        with anyio.fail_after(10):
            async for _ in otel_telemetry.wrapper(agent_name="calc")(agent()):
                pass

    # the body got the final answers, as the SDK gave them
    assert answers["c1"].is_error is True and answers["c3"].content[0].text == "4"
    assert getattr(answers["c2"], "code", None) == -32602
    _check_failed_requests(otel_telemetry, {"c1": "tool_error", "c2": "-32602"})


# --- What a result asks for mid-call (the 2026-07-28 revision's InputRequiredResult) ----------


def _asking_server(ask: str, started: Any, released: Any) -> Any:
    """An MCP 2.x server whose ``ask`` tool asks the client, through a resolver, for what
    ``ask`` names (``sample``: the client's model, ``elicit``: the user, ``roots``: its roots;
    on the 2026-07-28 revision, by answering the call with an ``InputRequiredResult``), and
    whose ``wait`` tool answers once ``released`` is set (``started`` is set when it runs)."""
    from typing import Annotated

    from mcp import types
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
    from pydantic import BaseModel

    calc = MCPServer(_mcp.SERVER_NAME)

    class Name(BaseModel):
        name: str

    def question() -> Any:
        if ask == "sample":
            text = types.TextContent(type="text", text="hi")
            return Sample([types.SamplingMessage(role="user", content=text)], max_tokens=5)
        return Elicit("Your name?", Name) if ask == "elicit" else ListRoots()

    async def asking(answer: Any) -> str:
        return type(answer).__name__

    asking.__annotations__["answer"] = Annotated[Any, Resolve(question)]
    calc.tool(name="ask")(asking)

    @calc.tool()
    async def wait(x: int) -> str:
        """Answer once released."""
        started.set()
        await released.wait()
        return str(x)

    return calc


@pytest.mark.parametrize("traced", [True, False], ids=["in-its-tool", "outside-any-tool"])
@pytest.mark.parametrize("ask", ["sample", "elicit", "roots"])
async def test_a_callback_a_result_asks_for_runs_in_its_own_call_while_another_is_in_flight(
    otel_telemetry: InMemoryTelemetry, ask: str, traced: bool
) -> None:
    """On the 2026-07-28 revision a server asks the client mid-call by answering the call with
    an ``InputRequiredResult``; the MCP SDK 2.x's ``Client`` runs the callback from the calling
    code, between two requests of that call. With another tool's call in flight on the same
    session at that moment, the callback (and the run it starts) stays where its own call was
    made (its tool's span, or the code's own span when sent outside any tool body), not under
    the call in flight; the caller's run counts the callback run's tokens not."""
    import anyio
    from mcp import Client, types
    from mcp.client._memory import InMemoryTransport
    from opentelemetry import trace

    from agent_contract.protocol import (
        FunctionCall,
        LLMCallEnd,
        LLMCallStart,
        TextDelta,
        ToolCall,
        ToolResult,
        Usage,
    )
    from agent_contract.scope import McpServer, tool_scope

    started, released = anyio.Event(), anyio.Event()
    seen: list[int] = []
    callers: dict[str, int] = {}

    async def answer(*args: Any) -> Any:
        seen.append(trace.get_current_span().get_span_context().span_id)

        async def helper() -> Any:
            yield LLMCallStart(model="helper")
            yield TextDelta(text="ok")
            yield Usage(input_tokens=100, output_tokens=50)
            yield LLMCallEnd(model="helper")

        async for _ in otel_telemetry.wrapper(agent_name="helper")(helper()):
            pass
        released.set()  # the other call answers only now: it was in flight throughout
        text = types.TextContent(type="text", text="ok")
        if ask == "sample":
            return types.CreateMessageResult(role="assistant", content=text, model="helper")
        if ask == "elicit":
            return types.ElicitResult(action="accept", content={"name": "Ada"})
        return types.ListRootsResult(roots=[types.Root(uri="file:///work")])

    callback = {"sample": "sampling_callback", "elicit": "elicitation_callback",
                "roots": "list_roots_callback"}[ask]  # fmt: skip
    answers: dict[str, str] = {}
    transport = InMemoryTransport(_asking_server(ask, started, released))
    async with Client(transport, **{callback: answer}) as client:
        server = McpServer(name=_mcp.SERVER_NAME)

        async def body(cid: str, name: str, arguments: dict[str, Any]) -> None:
            if name == "ask":
                await started.wait()  # the other call is in flight
            with tool_scope(cid, name, mcp=server) if traced or name != "ask" else nullcontext():
                callers[cid] = trace.get_current_span().get_span_context().span_id
                result = await client.call_tool(name, arguments)
            answers[cid] = str(result.content[0].text)  # type: ignore[union-attr]

        async def agent() -> Any:
            yield LLMCallStart(model="m")
            yield ToolCall(id="c1", function=FunctionCall(name="wait", arguments='{"x": 1}'))
            yield ToolCall(id="c2", function=FunctionCall(name="ask", arguments="{}"))
            yield Usage(input_tokens=10, output_tokens=1)
            yield LLMCallEnd(model="m")
            async with anyio.create_task_group() as group:
                group.start_soon(body, "c1", "wait", {"x": 1})
                group.start_soon(body, "c2", "ask", {})
            for cid in ("c1", "c2"):
                yield ToolResult(tool_call_id=cid, content=answers[cid])

        with anyio.fail_after(10):
            async for _ in otel_telemetry.wrapper(agent_name="calc")(agent()):
                pass

    assert answers["c1"] == "1" and answers["c2"] != ""
    waiting = otel_telemetry.span("execute_tool wait")
    assert callers["c2"] != waiting.context.span_id
    if traced:
        assert callers["c2"] == otel_telemetry.span("execute_tool ask").context.span_id
    assert seen == [callers["c2"]]
    helper = otel_telemetry.span("invoke_agent helper")
    assert helper.parent is not None and helper.parent.span_id == callers["c2"]
    root = dict(otel_telemetry.span("invoke_agent calc").attributes or {})
    tokens = (root["agent_otel.usage.input_tokens"], root["agent_otel.usage.output_tokens"])
    assert tokens == (10, 1)


@pytest.mark.parametrize("caught", ["in-the-body", "past-the-scope"])
@pytest.mark.parametrize("ask", ["sample", "elicit", "roots"])
async def test_a_callback_that_declines_what_a_result_asks_names_the_failure_by_its_code(
    otel_telemetry: InMemoryTelemetry, ask: str, caught: str
) -> None:
    """A callback that declines what the server's result asked for answers with the MCP SDK's
    ``ErrorData``; the SDK 2.x's ``Client`` raises its ``MCPError`` of that code, past the
    request. However the agent then reports the call failed (it caught the error in the tool
    body, or the error left the tool's scope), the call's span names the failure by that
    JSON-RPC code, as for a request's own error."""
    import anyio
    from mcp import Client, types
    from mcp.client._memory import InMemoryTransport
    from mcp.shared.exceptions import MCPError

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import McpServer, tool_scope

    async def decline(*args: Any) -> Any:
        return types.ErrorData(code=-1, message="the user declined")

    callback = {"sample": "sampling_callback", "elicit": "elicitation_callback",
                "roots": "list_roots_callback"}[ask]  # fmt: skip
    transport = InMemoryTransport(_asking_server(ask, anyio.Event(), anyio.Event()))
    async with Client(transport, **{callback: decline}) as client:
        server = McpServer(name=_mcp.SERVER_NAME)

        async def agent() -> Any:
            yield LLMCallStart(model="m")
            yield ToolCall(id="c1", function=FunctionCall(name="ask", arguments="{}"))
            yield LLMCallEnd(model="m")
            try:
                with tool_scope("c1", "ask", mcp=server):
                    try:
                        await client.call_tool("ask", {})
                    except MCPError as error:
                        if caught != "in-the-body":
                            raise
                        failure = error
            except MCPError as error:
                failure = error
            yield ToolResult(tool_call_id="c1", content=str(failure), is_error=True)

        async for _ in otel_telemetry.wrapper(agent_name="calc")(agent()):
            pass

    _check_failed_requests(otel_telemetry, {"c1": "-1"})


def _asking_prompt(server: Any, entered: Any, started: Any) -> None:
    """``server`` (:func:`_asking_server`'s) with a prompt that asks the client's model
    mid-call, as its ``ask`` tool does (an ``InputRequiredResult``, the 2026-07-28 revision's
    way): getting a prompt can ask, as reading a resource can. It sets ``entered`` as it is
    served, and asks once ``started`` is set (the ``wait`` tool runs)."""
    from mcp import types
    from mcp.server.mcpserver import Context

    async def asking(ctx: Context) -> Any:
        if ctx.input_responses:  # the client's retry, with the model's answer
            return "answered"
        entered.set()
        await started.wait()
        text = types.TextContent(type="text", text="hi")
        params = types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=text)], max_tokens=5
        )
        return types.InputRequiredResult(
            input_requests={"q": types.CreateMessageRequest(params=params)}
        )

    asking.__annotations__["ctx"] = Context  # (a local name: the string cannot be resolved)
    server.prompt(name="asking")(asking)


@pytest.mark.parametrize("sent", ["after-the-call", "before-any-traced-call"])
async def test_a_callback_a_prompt_asks_for_stays_with_its_caller(
    otel_telemetry: InMemoryTelemetry, sent: str
) -> None:
    """Getting a prompt can ask the client mid-call as a tool call can (an
    ``InputRequiredResult``; the MCP SDK 2.x's ``Client`` answers from the calling code): every
    request kind is marked by one rule, the request's (reading a resource too). With a traced
    tool's call in flight on the same session meanwhile, the sampling callback stays with the
    code that got the prompt, not under that tool's span; the same when the prompt was asked
    for before the session's first traced call (counted from its first request of any kind).
    """
    import anyio
    from mcp import Client, types
    from mcp.client._memory import InMemoryTransport
    from opentelemetry import trace

    from agent_contract.protocol import FunctionCall, ToolCall, ToolResult
    from agent_contract.scope import McpServer, tool_scope

    started, released, entered = anyio.Event(), anyio.Event(), anyio.Event()
    seen: list[int] = []

    async def answer(*args: Any) -> Any:
        seen.append(trace.get_current_span().get_span_context().span_id)
        released.set()  # the tool's call answers only now: it was in flight throughout
        text = types.TextContent(type="text", text="ok")
        return types.CreateMessageResult(role="assistant", content=text, model="helper")

    server = _asking_server("sample", started, released)
    _asking_prompt(server, entered, started)
    tracer = otel_telemetry.tracer_provider.get_tracer("test")
    reader: list[int] = []
    async with Client(InMemoryTransport(server), sampling_callback=answer) as client:

        async def wait() -> None:
            if sent != "after-the-call":
                await entered.wait()  # the prompt was asked for first
            with tool_scope("c1", "wait", mcp=McpServer(name=_mcp.SERVER_NAME)):
                await client.call_tool("wait", {"x": 1})

        async def read() -> None:
            if sent == "after-the-call":
                await started.wait()
            with tracer.start_as_current_span("reader") as span:
                reader.append(span.get_span_context().span_id)
                await client.get_prompt("asking")

        async def agent() -> Any:
            yield ToolCall(id="c1", function=FunctionCall(name="wait", arguments='{"x": 1}'))
            async with anyio.create_task_group() as group:
                group.start_soon(wait)
                group.start_soon(read)
            yield ToolResult(tool_call_id="c1", content="1")

        with anyio.fail_after(10):
            async for _ in otel_telemetry.wrapper(agent_name="calc")(agent()):
                pass

    assert otel_telemetry.span("execute_tool wait")
    assert seen == reader


@pytest.mark.parametrize("transport", [STDIO, "sse"])
async def test_a_servers_requests_for_parallel_calls_each_land_under_their_own_call(
    otel_telemetry: InMemoryTelemetry, transport: str
) -> None:
    """Three calls in flight at once on one session (the handshake-era revision; over stdio,
    the server a process of its own, and SSE, on loopback), each of whose server tools asks
    the client's model (``sampling/createMessage``): the session answers each on its
    receiving task, in the context the session was opened in, outside the run. The server's
    request names the span serving its call in its ``_meta`` (the W3C context the MCP SDK
    2.x sends with every message): each sampling run starts under that span, in the caller's
    trace, not in a trace of its own."""
    from mcp import StdioServerParameters, types
    from opentelemetry import propagate, trace

    from agent_contract.protocol import LLMCallEnd, LLMCallStart, TextDelta

    named: dict[str, Any] = {}  # per call's x: the span the server's request names

    async def sample(context: Any, params: Any) -> Any:
        x = params.messages[0].content.text
        named[x] = trace.get_current_span(propagate.extract(context.meta)).get_span_context()

        async def model() -> Any:
            yield LLMCallStart(model="sampler")
            yield TextDelta(text=f"sampled {x}")
            yield LLMCallEnd(model="sampler")

        async for _ in otel_telemetry.wrapper(agent_name=f"sampler {x}")(model()):
            pass
        text = types.TextContent(type="text", text=f"sampled {x}")
        return types.CreateMessageResult(role="assistant", content=text, model="sampler")

    xs = ["1", "2", "3"]
    answers: dict[str, str] = {}
    with ExitStack() as stack:
        if transport == "stdio":
            args = [str(SERVER_SCRIPT), "--erring"]
            server_at: Any = StdioServerParameters(command=sys.executable, args=args)
        else:
            from mcp.client.sse import sse_client

            from _serving import serve

            port = stack.enter_context(serve(_mcp.erring_server().sse_app()))
            server_at = sse_client(f"http://127.0.0.1:{port}/sse")
        await _sample_in_parallel(otel_telemetry, server_at, sample, xs, answers)

    run = otel_telemetry.span("invoke_agent calc")
    for x in xs:
        assert answers[x].startswith(f"sampled {x} trace={run.context.trace_id:032x}"), answers
        sampler = otel_telemetry.span(f"invoke_agent sampler {x}")
        assert named[x].trace_id == run.context.trace_id  # the server's request: in our trace
        assert sampler.context.trace_id == run.context.trace_id
        assert sampler.parent is not None and sampler.parent.span_id == named[x].span_id
    assert len({named[x].span_id for x in xs}) == len(xs)  # each call's own


async def _sample_in_parallel(
    telemetry: InMemoryTelemetry,
    server_at: Any,
    sample: Any,
    xs: list[str],
    answers: dict[str, str],
) -> None:
    """A run whose model asks for ``sample`` once per ``x``, the calls in parallel on one
    session (the handshake-era revision) to the erring server at ``server_at``."""
    import anyio
    from mcp import Client

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import McpServer, tool_scope

    async with Client(server_at, mode="legacy", sampling_callback=sample) as client:
        server = McpServer(name=_mcp.SERVER_NAME, protocol_version=client.protocol_version)

        async def body(x: str) -> None:
            with tool_scope(f"c{x}", "sample", mcp=server):
                result = await client.call_tool("sample", {"x": int(x)})
            answers[x] = str(result.content[0].text)  # type: ignore[union-attr]

        async def agent() -> Any:
            yield LLMCallStart(model="m")
            for x in xs:
                call = FunctionCall(name="sample", arguments=f'{{"x": {x}}}')
                yield ToolCall(id=f"c{x}", function=call)
            yield LLMCallEnd(model="m")
            async with anyio.create_task_group() as group:
                for x in xs:
                    group.start_soon(body, x)
            for x in xs:
                yield ToolResult(tool_call_id=f"c{x}", content=answers[x])

        with anyio.fail_after(30):
            async for _ in telemetry.wrapper(agent_name="calc")(agent()):
                pass


@pytest.mark.parametrize("framework", [False, True], ids=["contract-agent", "framework-run"])
async def test_a_sampling_callbacks_own_model_call_is_traced_under_the_tool_call(
    otel_telemetry: InMemoryTelemetry, framework: bool
) -> None:
    """A server's tool asks the client's model (``sampling/createMessage``; over stdio, the
    server a process of its own) and the client's sampling callback calls the OpenAI SDK
    itself, traced by openai-v2: no span of ours tells that call. In a framework adapter's run
    (one that said it started, ``framework_started``), the providers stand down for the whole
    run, and the callback runs in the tool body's context: the call went untraced. It is no
    call of the framework's: openai-v2's chat span now nests under the tool call the server
    was serving, in either run."""
    from mcp import Client, StdioServerParameters, types

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import McpServer, framework_started, tool_scope

    from . import _conformance
    from . import _http as http
    from . import _script_chat as chat

    model = http.openai_client(chat.answer("sampled"))

    async def sample(context: Any, params: Any) -> Any:
        stream = await model.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        words = [c.choices[0].delta.content or "" async for c in stream if c.choices]
        text = types.TextContent(type="text", text="".join(words))
        return types.CreateMessageResult(role="assistant", content=text, model="gpt-4o-mini")

    params = StdioServerParameters(command=sys.executable, args=[str(SERVER_SCRIPT), "--erring"])
    answers: list[str] = []
    with _conformance.OPENAI_V2.instrumented(otel_telemetry):
        async with Client(params, mode="legacy", sampling_callback=sample) as client:

            async def agent() -> Any:
                if framework:  # as a framework adapter of one's own says it runs its framework
                    framework_started(__name__)
                yield LLMCallStart(model="m")
                yield ToolCall(id="c1", function=FunctionCall(name="sample", arguments='{"x": 1}'))
                yield LLMCallEnd(model="m")
                with tool_scope("c1", "sample", mcp=McpServer(name=_mcp.SERVER_NAME)):
                    result = await client.call_tool("sample", {"x": 1})
                answers.append(str(result.content[0].text))  # type: ignore[union-attr]
                yield ToolResult(tool_call_id="c1", content=answers[0])

            async for _ in otel_telemetry.wrapper(agent_name="calc")(agent()):
                pass

    assert answers[0].startswith("sampled ")
    tool = otel_telemetry.span("execute_tool sample")
    [sampled] = [s for s in otel_telemetry.spans() if s.name == "chat gpt-4o-mini"]
    assert sampled.parent is not None and sampled.parent.span_id == tool.context.span_id
    assert dict(sampled.attributes or {})["gen_ai.usage.output_tokens"] > 0
