"""MCP tools through each framework's own MCP integration, traced end to end.

A real ``mcp`` 2.x server (``_mcp.server()``) served over streamable HTTP on loopback, and each
framework's own MCP client (Agno's ``MCPTools``, LlamaIndex's ``McpToolSpec``, Google ADK's
``McpToolset``, Strands' ``MCPClient``, CrewAI's ``mcps``) driven by the framework's own test
model, which asks
for ``add`` twice and ``mul`` once in one response (the framework runs them in parallel). As
the user sees it with ``configure()`` (the MCP SDK, fastmcp and the framework trace to the
global provider, ``RunIdentityProcessor`` on it): each call's MCP client request hangs under
that call's ``execute_tool`` span (fastmcp's client span between, where the framework's client
is fastmcp's), the server's span under the request, all in the run's trace with the run's
session; no MCP span under anything else (a framework's own tool span, the step). Where the
framework says which server a tool comes from, our tool span says so (``mcp.*``,
``gen_ai.tool.type=extension``, the request's id). ADK and Strands run in their own
environments (``.ci/separate-envs``); the MCP rows of the Agents SDK and pydantic-ai are in
``test_mcp.py``. CrewAI's environment holds the MCP SDK 1.x, which traces nothing: its test
checks the context each request is sent in.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from agent_contract.protocol import AgentEvent
from agent_otel.testing import InMemoryTelemetry

from . import _mcp
from . import _script_chat as chat

CALLS = [("c1", "add", 1), ("c2", "add", 2), ("c3", "mul", 3)]
SESSION = "s-mcp"


async def _agno(url: str, run: Callable[[AsyncIterator[AgentEvent]], Any]) -> None:
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat
    from agno.tools.mcp import MCPTools

    from agent_contract.sources.agno_stream import agno_events

    from ._http import openai_client

    first = chat.calls([(cid, name, {"x": arg}) for cid, name, arg in CALLS])
    model = OpenAIChat(id="gpt-4o-mini", async_client=openai_client(first, chat.answer("done")))
    async with MCPTools(url=url, transport="streamable-http") as tools:
        await run(
            agno_events(Agent(model=model, tools=[tools], name="calc", telemetry=False), "go")
        )


async def _llama_index(url: str, run: Callable[[AsyncIterator[AgentEvent]], Any]) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock
    from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

    from agent_contract.sources.llama_index_stream import llama_index_events

    from ._fw_llama_index import replies

    tools = await McpToolSpec(BasicMCPClient(url)).to_tool_list_async()
    calls = [ToolCallBlock(tool_call_id=cid, tool_name=name, tool_kwargs={"x": arg})
             for cid, name, arg in CALLS]  # fmt: skip
    agent = FunctionAgent(name="calc", tools=tools, llm=replies(calls, "done"), streaming=True)
    await run(llama_index_events(agent, "go"))


async def _google_adk(url: str, run: Callable[[AsyncIterator[AgentEvent]], Any]) -> None:
    from google.adk.tools.mcp_tool import McpToolset, StreamableHTTPConnectionParams
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model, agent

    calls = [types.Part(function_call=types.FunctionCall(id=cid, name=name, args={"x": arg}))
             for cid, name, arg in CALLS]  # fmt: skip
    toolset = McpToolset(connection_params=StreamableHTTPConnectionParams(url=url))
    try:
        model = _model([calls, [types.Part(text="done")]])
        await run(google_adk_events(agent(model, [toolset], name="calc"), "go"))
    finally:
        await toolset.close()


async def _strands(url: str, run: Callable[[AsyncIterator[AgentEvent]], Any]) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from strands import Agent
    from strands.tools.mcp import MCPClient

    from agent_contract.sources.strands_stream import strands_events

    from . import _script as s
    from ._fw_strands import _model, _text, _uses

    first = [{"messageStart": {"role": "assistant"}},
             *_uses(*(s.Call(cid, name, {"x": arg}) for cid, name, arg in CALLS)),
             {"messageStop": {"stopReason": "tool_use"}}]  # fmt: skip
    second = [{"messageStart": {"role": "assistant"}}, *_text("done"),
              {"messageStop": {"stopReason": "end_turn"}}]  # fmt: skip
    client = MCPClient(lambda: streamable_http_client(url))  # Strands starts and stops it
    agent = Agent(model=_model([first, second]), tools=[client], name="calc",
                  callback_handler=None)  # fmt: skip
    await run(strands_events(agent, "go"))


# framework: (its MCP module, its runner, whether it says which server a tool comes from)
ROWS: dict[str, tuple[str, Any, bool]] = {
    "agno": ("agno.tools.mcp", _agno, True),
    "llama_index": ("llama_index.tools.mcp", _llama_index, True),
    "google_adk": ("google.adk.tools.mcp_tool.mcp_toolset", _google_adk, True),
    "strands": ("strands.tools.mcp", _strands, True),
}


def _chain(by_id: dict[int, ReadableSpan], span: ReadableSpan) -> list[ReadableSpan]:
    """``span``'s ancestors, nearest first."""
    out = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        out.append(span)
    return out


@pytest.mark.parametrize("stand_down", [True, False], ids=["stand-down", "own-spans"])
@pytest.mark.parametrize("framework", ROWS)
async def test_a_frameworks_mcp_tools_nest_their_requests_under_our_tool_spans(
    otel_telemetry: InMemoryTelemetry,
    monkeypatch: pytest.MonkeyPatch,
    framework: str,
    stand_down: bool,
) -> None:
    """``own-spans``: ``stand_down_providers=False``, where ADK and Strands record their own
    spans beside ours (Strands makes its own tool span current around the tool's body)."""
    module, runner, tells_server = ROWS[framework]
    pytest.importorskip(module)
    from _serving import serve

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)

    async def run(events: AsyncIterator[AgentEvent]) -> None:
        wrapper = otel_telemetry.wrapper(
            agent_name="calc", session_id=SESSION, stand_down_providers=stand_down
        )
        async for _ in wrapper(events):
            pass

    with serve(_mcp.server().streamable_http_app()) as port:
        await runner(f"http://127.0.0.1:{port}/mcp", run)

    spans = otel_telemetry.spans()
    by_id = {s.context.span_id: s for s in spans}
    # ours: ADK and Strands record spans of their own beside them (their own tracers)
    mine = [s for s in spans if s.instrumentation_scope and s.instrumentation_scope.name ==
            "agent_otel"]  # fmt: skip
    [root] = [s for s in mine if s.name == "invoke_agent calc"]
    ours = {s.attributes["gen_ai.tool.call.id"]: s for s in mine  # type: ignore[index]
            if s.name.startswith("execute_tool ")}  # fmt: skip
    assert sorted(ours) == [cid for cid, _, _ in CALLS]  # one tool span of ours per call

    sends = [s for s in spans if s.name.startswith("MCP send tools/call ")]
    assert len(sends) == len(CALLS)
    seen: set[str] = set()
    for send in sends:
        # the request's nearest tool span (fastmcp's client span may sit between) is ours,
        # a call of the tool it names, in the run's trace, with the run's session
        chain = _chain(by_id, send)
        tool = next(s for s in chain if s.name.startswith("execute_tool "))
        assert tool in ours.values(), (send.name, tool.instrumentation_scope)
        assert tool.name == f"execute_tool {send.name.rsplit(' ', 1)[1]}"
        assert root in chain
        assert dict(send.attributes or {})["session.id"] == SESSION
        [served] = [s for s in spans if s.parent and s.parent.span_id == send.context.span_id]
        assert served.name == send.name.removeprefix("MCP send ")  # the server, under it
        call = dict(tool.attributes or {})
        seen.add(str(call["gen_ai.tool.call.id"]))
        if tells_server:
            assert call["gen_ai.tool.type"] == "extension"
            assert call["mcp.method.name"] == "tools/call"
            assert call["agent_otel.mcp.server.name"] == _mcp.SERVER_NAME
            assert isinstance(call["mcp.protocol.version"], str)
            assert call["jsonrpc.request.id"] == dict(send.attributes or {})["jsonrpc.request.id"]
        else:
            assert call["gen_ai.tool.type"] == "function"
    assert seen == set(ours)  # each call sent its own request
    # nothing of the MCP client's in the run lands anywhere but under one of our tool spans
    # (connecting and listing the tools may happen before the run, or under a step or chat)
    for span in spans:
        if span.name.startswith(("MCP send tools/call", "tools/call")) and root in _chain(
            by_id, span
        ):
            assert any(s in ours.values() for s in _chain(by_id, span)), span.name


# --- The MCP SDK 1.x, untraced: CrewAI, LangGraph, smolagents, AutoGen --------------------------
# Their environments hold the MCP SDK 1.x (``.ci/separate-envs``), which records no span and
# sends no trace context: each row checks the context each request is sent in (the span
# current in ``ClientSession.call_tool``, which an MCP instrumentation would put in the
# request), and the tool span it is: that call's, with the run's ids and, where the framework
# says the tool is an MCP server's, ``mcp.*``.

Sent = list[tuple[str, Any, Any]]
"""(tool, arguments, the span current as it was sent), one per request."""


def _record_requests(monkeypatch: pytest.MonkeyPatch) -> Sent:
    """Each ``tools/call`` the MCP SDK 1.x's ``ClientSession`` sends, with the span current."""
    from mcp.client.session import ClientSession
    from opentelemetry import trace

    sent: Sent = []
    call_tool = ClientSession.call_tool

    async def recording(self: Any, name: str, arguments: Any = None, *a: Any, **k: Any) -> Any:
        sent.append((name, arguments, trace.get_current_span()))
        return await call_tool(self, name, arguments, *a, **k)

    monkeypatch.setattr(ClientSession, "call_tool", recording)
    return sent


def _sent_under_own_tool_spans(
    telemetry: InMemoryTelemetry, sent: Sent, server: str | bool | None, versioned: bool
) -> None:
    """Each request of ``CALLS`` was sent once, with its own call's tool span current (the run's
    session on it); ``server``: the server name the tool spans say (``None``: an MCP tool whose
    server is unnamed; ``False``: the framework does not say the tool is an MCP server's);
    ``versioned``: they say the protocol version the session negotiated."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    spans = {s.context.span_id: s for s in telemetry.spans()}
    [root] = [s for s in spans.values() if s.name == "invoke_agent calc"]
    assert sorted((name, args["x"]) for name, args, _ in sent) == sorted(
        (name, arg) for _, name, arg in CALLS
    )
    seen = set()
    for name, args, current in sent:  # each sent under its own call's span
        span = spans[current.get_span_context().span_id]
        [cid] = [cid for cid, tool, arg in CALLS if (tool, arg) == (name, args["x"])]
        attributes = dict(span.attributes or {})
        assert attributes["gen_ai.tool.call.id"] == cid, span.name
        assert span.name == f"execute_tool {name}"
        assert attributes["session.id"] == SESSION
        assert span.context.trace_id == root.context.trace_id
        seen.add(cid)
        if server is False:
            assert attributes["gen_ai.tool.type"] == "function"
            continue
        assert attributes["gen_ai.tool.type"] == "extension"
        assert attributes["mcp.method.name"] == "tools/call"
        assert attributes.get("agent_otel.mcp.server.name") == server
        if versioned:
            assert attributes["mcp.protocol.version"] == LATEST_PROTOCOL_VERSION
    assert seen == {cid for cid, _, _ in CALLS}
    tools = [s for s in spans.values() if s.name.startswith("execute_tool ")]
    assert len(tools) == len(CALLS)  # one tool span per call


async def test_crewai_mcps_send_each_request_under_its_own_tool_span_and_run_no_agent(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CrewAI's own MCP client (``Agent(mcps=[MCPServerHTTP(url)])``) runs each call on a
    thread of its own, with a loop of its own: each request is sent with that call's tool span
    current (so an MCP instrumentation's span would nest there). Its MCP events (connecting,
    calling) come from inside the tool and are the tool's own work: no nested agent run. Each
    tool span says it is an MCP server's (before, a plain ``function``)."""
    pytest.importorskip("crewai.mcp")
    import json

    from crewai import Agent
    from crewai.mcp import MCPServerHTTP

    from _serving import serve
    from agent_contract.sources.crewai_stream import crewai_events

    from ._fw_crewai import completion, llm

    sent = _record_requests(monkeypatch)
    names: dict[str, str] = {}  # the server's tool name -> CrewAI's name for it (the model's)

    def respond(turn: int) -> bytes:
        if turn == 0:
            calls = [(cid, names[name], json.dumps({"x": arg})) for cid, name, arg in CALLS]
            return completion(0, None, calls)
        return completion(1, "done", [])

    with serve(_mcp.legacy_server().streamable_http_app()) as port:
        server = MCPServerHTTP(url=f"http://127.0.0.1:{port}/mcp")
        agent = Agent(role="calc", goal="Add.", backstory="A calculator.", llm=llm(respond),
                      mcps=[server], verbose=False)  # fmt: skip
        for tool in agent.get_mcp_tools(agent.mcps):  # named after the server's URL
            names[tool.name.rsplit("_", 1)[1]] = tool.name.replace(":", "_")
        wrapper = otel_telemetry.wrapper(agent_name="calc", session_id=SESSION)
        async for _ in wrapper(crewai_events(agent, "go")):
            pass

    [run] = otel_telemetry.tree(attributes=["gen_ai.tool.call.id"], events=False)
    tools = {t["attributes"]["gen_ai.tool.call.id"]: t for step in run["children"]
             for t in step["children"] if t["name"].startswith("execute_tool ")}  # fmt: skip
    assert sorted(tools) == [cid for cid, _, _ in CALLS]
    assert all(t["children"] == [] for t in tools.values())  # no nested run in any
    assert [s.name for s in otel_telemetry.spans()].count("invoke_agent calc") == 1
    spans = {s.context.span_id: s for s in otel_telemetry.spans()}
    assert sorted((name, args["x"]) for name, args, _ in sent) == sorted(
        (name, arg) for _, name, arg in CALLS
    )
    for name, args, current in sent:  # each sent under its own call's span
        span = spans[current.get_span_context().span_id]
        [cid] = [cid for cid, tool, arg in CALLS if (tool, arg) == (name, args["x"])]
        assert span.attributes is not None
        assert span.attributes["gen_ai.tool.call.id"] == cid
        assert dict(span.attributes)["session.id"] == SESSION
        # an MCP server's tool: the server CrewAI named after its URL
        assert span.attributes["gen_ai.tool.type"] == "extension"
        assert span.attributes["mcp.method.name"] == "tools/call"
        assert "127_0_0_1" in str(span.attributes["agent_otel.mcp.server.name"])


STDIO = "stdio"
"""The "URL" of the 1.x server over stdio: the runners start ``_mcp.py --legacy`` instead."""


def _stdio() -> dict[str, Any]:
    """The 1.x stdio server's command, for the frameworks' stdio parameters."""
    import sys

    script = str(Path(_mcp.__file__))
    return {"command": sys.executable, "args": [script, "--legacy"], "env": _mcp.child_env()}


def _langchain_connection(url: str) -> dict[str, Any]:
    """LangChain's MCP adapters' connection to the 1.x server: over stdio, SSE or HTTP."""
    if url == STDIO:
        return {**_stdio(), "transport": "stdio"}
    return {"url": url, "transport": "sse" if url.endswith("/sse") else "streamable_http"}


async def _langgraph(url: str, run: Callable[[AsyncIterator[AgentEvent]], Any]) -> None:
    """LangChain's MCP adapters: ``MultiServerMCPClient.get_tools()`` (a session of its own per
    call) in LangGraph's prebuilt ReAct agent."""
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langgraph.prebuilt import create_react_agent

    from agent_contract.sources.langgraph_stream import langgraph_events

    from ._fw_langgraph import chat_model
    from ._http import openai_client

    client = MultiServerMCPClient({"calc": _langchain_connection(url)})  # type: ignore[dict-item]
    tools = await client.get_tools()
    first = chat.calls([(cid, name, {"x": arg}) for cid, name, arg in CALLS])
    model = chat_model(openai_client(first, chat.answer("done")))
    graph = create_react_agent(model, tools, name="calc")
    await run(langgraph_events(graph, {"messages": [("user", "go")]}))


async def _langgraph_session(url: str, run: Callable[[AsyncIterator[AgentEvent]], Any]) -> None:
    """LangChain's MCP adapters on one session held open: ``load_mcp_tools(session)``."""
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools
    from langgraph.prebuilt import create_react_agent

    from agent_contract.sources.langgraph_stream import langgraph_events

    from ._fw_langgraph import chat_model
    from ._http import openai_client

    client = MultiServerMCPClient({"calc": _langchain_connection(url)})  # type: ignore[dict-item]
    async with client.session("calc") as session:
        tools = await load_mcp_tools(session, server_name="calc")
        first = chat.calls([(cid, name, {"x": arg}) for cid, name, arg in CALLS])
        model = chat_model(openai_client(first, chat.answer("done")))
        graph = create_react_agent(model, tools, name="calc")
        await run(langgraph_events(graph, {"messages": [("user", "go")]}))


async def _smolagents(url: str, run: Callable[[AsyncIterator[AgentEvent]], Any]) -> None:
    """smolagents' ``MCPClient`` (mcpadapt: the session on a loop and thread of its own)."""
    import json

    from smolagents import MCPClient, OpenAIModel, ToolCallingAgent

    from agent_contract.sources.smolagents_stream import smolagents_events

    from ._fw_smolagents import answer, client, completion

    turns: list[int] = []

    def respond(messages: list[dict[str, Any]]) -> bytes:
        turns.append(len(turns))
        if len(turns) == 1:
            return completion(0, None, [(c, n, json.dumps({"x": a})) for c, n, a in CALLS])
        return completion(1, None, answer("done"))

    model = OpenAIModel("gpt-4o-mini", api_key="offline", api_base="http://mock.invalid/v1",
                        client_kwargs=client(respond), retry=False)  # fmt: skip
    params: Any = {"url": url, "transport": "sse" if url.endswith("/sse") else "streamable-http"}
    if url == STDIO:
        from mcp import StdioServerParameters

        params = StdioServerParameters(**_stdio())
    with MCPClient(params) as tools:
        agent = ToolCallingAgent(tools=tools, model=model, verbosity_level=0, name="calc")
        await run(smolagents_events(agent, "go"))


async def _autogen(url: str, run: Callable[[AsyncIterator[AgentEvent]], Any]) -> None:
    """AutoGen's ``McpWorkbench`` (its session held by an actor task of its own)."""
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.tools.mcp import (
        McpWorkbench,
        SseServerParams,
        StdioServerParams,
        StreamableHttpServerParams,
    )

    from agent_contract.sources.autogen_stream import autogen_events

    from ._fw_autogen import _client, asking

    calls = asking(*((cid, name, f'{{"x": {arg}}}') for cid, name, arg in CALLS))
    params: Any = StreamableHttpServerParams(url=url)
    if url == STDIO:
        params = StdioServerParams(**_stdio(), read_timeout_seconds=30)
    elif url.endswith("/sse"):
        params = SseServerParams(url=url)
    async with McpWorkbench(params) as workbench:
        agent = AssistantAgent("calc", model_client=_client([calls, "done"]), workbench=workbench)
        await run(autogen_events(agent, "go"))


# framework: (its MCP module, its runner, the server name its tool spans say, whether they say
# the protocol version): LangChain's adapters name the server by the client's key for it (here
# "calc" too) and keep no session's answer; mcpadapt names no server; AutoGen's workbench keeps
# the server's answer to ``initialize`` (its ``serverInfo``, the version)
LEGACY: dict[str, tuple[str, Any, str | bool | None, bool]] = {
    "langgraph": ("langchain_mcp_adapters", _langgraph, "calc", False),
    "langgraph_session": ("langchain_mcp_adapters", _langgraph_session, "calc", False),
    "smolagents": ("mcpadapt", _smolagents, None, False),
    "autogen": ("autogen_ext.tools.mcp", _autogen, _mcp.SERVER_NAME, True),
}


@pytest.mark.parametrize("framework", LEGACY)
async def test_an_mcp_one_frameworks_requests_are_sent_under_our_tool_spans(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, framework: str
) -> None:
    """LangGraph (LangChain's MCP adapters, a session per call or one held open), smolagents
    (``MCPClient``: mcpadapt's session on a thread and loop of its own) and AutoGen
    (``McpWorkbench``: its session in an actor task of its own), over the MCP SDK 1.x.
    Streamable HTTP's sessions have an id (the server's ``Mcp-Session-Id``, which the client
    sends back with every request after ``initialize``) and the revision they negotiated:
    each MCP tool span names both, as the MCP conventions ask (``mcp.session.id``,
    ``mcp.protocol.version``), whether or not the framework keeps them (none of these does
    keep the id: it was on none)."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    module, runner, server, versioned = LEGACY[framework]
    pytest.importorskip(module, exc_type=ImportError)  # beside the MCP SDK 2.x: no import
    from _serving import serve

    sent = _record_requests(monkeypatch)

    async def run(events: AsyncIterator[AgentEvent]) -> None:
        async for _ in otel_telemetry.wrapper(agent_name="calc", session_id=SESSION)(events):
            pass

    posts: list[dict[str, str]] = []
    with serve(_mcp.legacy_server().streamable_http_app(), posts) as port:
        await runner(f"http://127.0.0.1:{port}/mcp", run)
    _sent_under_own_tool_spans(otel_telemetry, sent, server, versioned)
    sessions = {post["mcp-session-id"] for post in posts if "mcp-session-id" in post}
    assert sessions  # (the server gave each session one)
    for span in otel_telemetry.spans():
        attributes = dict(span.attributes or {})
        if attributes.get("gen_ai.tool.type") == "extension":
            assert attributes.get("mcp.session.id") in sessions, span.name
            assert attributes.get("mcp.protocol.version") == LATEST_PROTOCOL_VERSION, span.name


@pytest.mark.parametrize("transport", ["stdio", "sse", "streamable-http"])
@pytest.mark.parametrize("framework", LEGACY)
async def test_an_mcp_one_frameworks_requests_carry_the_trace_to_the_server_over_each_transport(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, framework: str,
    transport: str,
) -> None:  # fmt: skip
    """The MCP SDK 1.x sends no trace context: over stdio (a server process of its own), SSE
    and streamable HTTP, each request now carries its tool span's in ``params._meta``, as the
    SDK 2.x does, and the server, reading it with ``continue_trace``, runs the call in the
    run's trace under that call's own tool span (parallel calls each their own). The tool
    span's result (content capture on) is the server's word for it."""
    import re

    module, runner, server, versioned = LEGACY[framework]
    pytest.importorskip(module, exc_type=ImportError)  # beside the MCP SDK 2.x: no import
    from _serving import serve

    sent = _record_requests(monkeypatch)

    async def run(events: AsyncIterator[AgentEvent]) -> None:
        wrapper = otel_telemetry.wrapper(
            agent_name="calc", session_id=SESSION, capture_content=True
        )
        async for _ in wrapper(events):
            pass

    if transport == "stdio":
        await runner(STDIO, run)
    else:
        app = _mcp.legacy_server()
        asgi = app.sse_app() if transport == "sse" else app.streamable_http_app()
        with serve(asgi) as port:
            path = "sse" if transport == "sse" else "mcp"
            await runner(f"http://127.0.0.1:{port}/{path}", run)
    _sent_under_own_tool_spans(otel_telemetry, sent, server, versioned)

    [root] = [s for s in otel_telemetry.spans() if s.name == "invoke_agent calc"]
    tools = [s for s in otel_telemetry.spans() if s.name.startswith("execute_tool ")]
    for tool in tools:
        result = str(dict(tool.attributes or {})["gen_ai.tool.call.result"])
        seen = re.search(r"trace=([0-9a-f]{32}) parent=([0-9a-f]{16})", result)
        assert seen is not None, result
        assert int(seen.group(1), 16) == root.context.trace_id
        assert int(seen.group(2), 16) == tool.context.span_id  # its own call's span


# --- A server that answers isError --------------------------------------------------------------


async def _failing_server_fails_each_tool_span(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, runner: Any,
    tells_server: bool, legacy: bool,
) -> None:  # fmt: skip
    """The server answers every call with an ``isError`` result (its tools raise its
    ``ToolError``): each MCP tool's span fails, each call its own, and the run goes on. A tool
    the framework does not say is an MCP server's decides for itself: OK."""
    from opentelemetry.trace import StatusCode

    from _serving import serve

    if not legacy:
        _mcp.sdk_tracing_to(monkeypatch, telemetry.tracer_provider)

    async def run(events: AsyncIterator[AgentEvent]) -> None:
        async for _ in telemetry.wrapper(agent_name="calc")(events):
            pass

    server = _mcp.legacy_server(failing=True) if legacy else _mcp.server(failing=True)
    with serve(server.streamable_http_app()) as port:
        await runner(f"http://127.0.0.1:{port}/mcp", run)

    mine = [s for s in telemetry.spans() if s.instrumentation_scope and
            s.instrumentation_scope.name == "agent_otel"]  # fmt: skip
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in mine  # type: ignore[index]
             if s.name.startswith("execute_tool ")}  # fmt: skip
    assert sorted(tools) == [cid for cid, _, _ in CALLS]
    for cid, tool in tools.items():
        attributes = dict(tool.attributes or {})
        if not tells_server:
            assert tool.status.status_code is StatusCode.UNSET, cid
            continue
        assert tool.status.status_code is StatusCode.ERROR, cid
        assert attributes["agent_otel.tool.is_error"] is True
        assert attributes["error.type"], cid
    [root] = [s for s in mine if s.name == "invoke_agent calc"]
    assert root.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize("framework", ROWS)
async def test_a_frameworks_mcp_tool_whose_server_answers_is_error_fails_its_own_span(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, framework: str
) -> None:
    """Agno hands the server's ``isError`` answer to the model as the call's text, Strands
    flags it, LlamaIndex hands it on as the tool's output: either way the span fails."""
    module, runner, tells_server = ROWS[framework]
    pytest.importorskip(module)
    await _failing_server_fails_each_tool_span(
        otel_telemetry, monkeypatch, runner, tells_server, legacy=False
    )


@pytest.mark.parametrize("framework", LEGACY)
async def test_an_mcp_one_frameworks_tool_whose_server_answers_is_error_fails_its_own_span(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, framework: str
) -> None:
    """smolagents' mcpadapt hands the MCP SDK 1.x's ``isError`` answer to the model as text;
    LangChain's adapters raise and AutoGen flags it: each span fails."""
    module, runner, *_ = LEGACY[framework]
    pytest.importorskip(module, exc_type=ImportError)  # beside the MCP SDK 2.x: no import
    await _failing_server_fails_each_tool_span(
        otel_telemetry, monkeypatch, runner, tells_server=True, legacy=True
    )


async def test_an_mcp_one_streamable_http_server_that_dies_mid_call_fails_the_call_with_the_cause(
    otel_telemetry: InMemoryTelemetry, tmp_path: Path
) -> None:
    """The MCP SDK 1.x over streamable HTTP, its server (a process of its own, on loopback,
    answering with one JSON response) dying before it answers two calls in flight: the
    transport's task for the lost request fails with the HTTP client's error (httpx's
    ``RemoteProtocolError``) and the transport's task group cancels everything in it, the
    calling code included, so each tool body sees only a ``CancelledError``. That task runs in
    the transport's context, not the caller's. Each call's span fails with the cause all the
    same (class, message, ``exception`` event, on the metric too); the call answered before
    stays OK."""
    import importlib.util

    if importlib.util.find_spec("mcp.shared._otel") is not None:
        pytest.skip("the MCP SDK 2.x's own row is test_mcp.py's")
    import httpx
    from benchmarks._process import free_port, port_open, serving
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from agent_contract.scope import McpServer

    port = free_port()
    script = str(Path(_mcp.__file__))
    command = [sys.executable, script, "--legacy", "--erring", "--http", str(port)]
    ready = lambda: port_open(port)  # noqa: E731
    with serving(command, log=tmp_path / "server.log", ready=ready, timeout=60):
        url = f"http://127.0.0.1:{port}/mcp"
        cancelled: list[BaseException] = []
        with pytest.raises(Exception) as raised:  # the SDK's group of it, on the way out
            async with (
                streamable_http_client(url) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                server = McpServer(name=_mcp.SERVER_NAME)
                await _mcp.run_lost_calls(otel_telemetry, session.call_tool, server, cancelled)
        assert raised.group_contains(httpx.RemoteProtocolError)
        assert len(cancelled) == 1
    _mcp.check_lost_calls(otel_telemetry)


async def test_a_session_per_call_lost_with_its_server_fails_each_call_with_the_cause(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """LangChain's MCP adapters open a session per call, in the tool's body: the MCP SDK 1.x
    server over streamable HTTP (a process of its own) dies with both calls in flight, and
    the transport's task group, closing in the body, raises its ``ExceptionGroup`` of the HTTP
    client's error out of it, and out of the run. Each call's span names the cause
    (``RemoteProtocolError``), not the group that carried it, and so does the run's."""
    pytest.importorskip("langchain_mcp_adapters", exc_type=ImportError)
    import httpx
    from benchmarks._process import free_port, port_open, serving
    from opentelemetry.trace import StatusCode

    monkeypatch.setattr(sys.modules[__name__], "CALLS", [("c1", "slow", 1), ("c2", "die", 2)])
    port = free_port()
    script = str(Path(_mcp.__file__))
    command = [sys.executable, script, "--legacy", "--erring", "--http", str(port)]

    async def run(events: AsyncIterator[AgentEvent]) -> None:
        async for _ in otel_telemetry.wrapper(agent_name="calc")(events):
            pass

    with (
        serving(command, log=tmp_path / "server.log", ready=lambda: port_open(port), timeout=60),
        pytest.raises(Exception) as raised,
    ):
        await _langgraph(f"http://127.0.0.1:{port}/mcp", run)
    assert raised.value.subgroup(httpx.RemoteProtocolError) is not None
    for name in ("slow", "die"):
        tool = otel_telemetry.span(f"execute_tool {name}")
        assert tool.status.status_code is StatusCode.ERROR, name
        assert dict(tool.attributes or {})["error.type"] == "RemoteProtocolError", name
    failed = {str(p.attributes.get("gen_ai.tool.name")): p.attributes.get("error.type")
              for p in otel_telemetry.histograms()["gen_ai.execute_tool.duration"]}  # fmt: skip
    assert failed == {"slow": "RemoteProtocolError", "die": "RemoteProtocolError"}
    run = otel_telemetry.span("invoke_agent calc")
    assert run.status.status_code is StatusCode.ERROR
    assert dict(run.attributes or {})["error.type"] == "RemoteProtocolError"
    assert "Server disconnected" in str(run.status.description)


async def test_an_mcp_one_server_that_calls_another_server_carries_the_trace_to_it(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Three hops, three processes, the MCP SDK 1.x: a traced tool calls a server over stdio
    whose tool runs in the caller's trace (``continue_trace`` of the request's ``_meta``, as
    the docs show) and calls a third server there, over stdio too. That third request went
    without the trace (1.x sends none, and agent-otel added it only in a traced tool's
    body): the third server now runs in the run's trace, under the call's own tool span (a
    1.x server has no span of its own between)."""
    import importlib.util
    import re

    if importlib.util.find_spec("mcp.shared._otel") is not None:
        pytest.skip("the MCP SDK 2.x propagates itself")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import McpServer, tool_scope

    script = str(Path(_mcp.__file__))
    params = StdioServerParameters(
        command=sys.executable, args=[script, "--legacy", "--relay"], env=_mcp.child_env()
    )
    answers: list[str] = []

    async def agent(session: Any) -> AsyncIterator[AgentEvent]:
        yield LLMCallStart(model="m")
        yield ToolCall(id="c1", function=FunctionCall(name="relay", arguments='{"x": 1}'))
        yield LLMCallEnd(model="m")
        with tool_scope("c1", "relay", mcp=McpServer(name="hub")):
            answer = await session.call_tool("relay", {"x": 1})
        answers.append(str(answer.content[0].text))
        yield ToolResult(tool_call_id="c1", content=answers[0])

    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        async for _ in otel_telemetry.wrapper(agent_name="calc")(agent(session)):
            pass
    seen = re.search(r"trace=([0-9a-f]{32}) parent=([0-9a-f]{16})", answers[0])
    assert seen is not None, answers
    tool = otel_telemetry.span("execute_tool relay")
    assert int(seen.group(1), 16) == tool.context.trace_id
    assert int(seen.group(2), 16) == tool.context.span_id


async def test_an_mcp_one_resource_read_prompt_and_listing_carry_the_trace_to_the_server(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A tool body that reads a resource, gets a prompt and lists the tools of an MCP SDK 1.x
    server: only ``tools/call`` carried the trace (agent-otel added it to that request alone),
    so a server that continues each request's ``_meta`` served the others in a trace of its
    own. Every request now carries the context it is sent in, as the SDK 2.x sends it: each
    handler runs under the tool span; a request sent outside any trace names no parent."""
    import importlib.util

    if importlib.util.find_spec("mcp.shared._otel") is not None:
        pytest.skip("the MCP SDK 2.x propagates itself")
    from mcp import types
    from mcp.server.fastmcp import FastMCP
    from mcp.shared.memory import create_connected_server_and_client_session

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import tool_scope

    server = FastMCP(_mcp.SERVER_NAME)
    seen: list[tuple[str, str]] = []

    @server.resource("notes://today")
    def today() -> str:
        seen.append(("resources/read", _mcp.continued(server)))
        return "sunny"

    @server.prompt()
    def greet(who: str) -> str:
        seen.append(("prompts/get", _mcp.continued(server)))
        return f"hello {who}"

    handlers = server._mcp_server.request_handlers
    listing = handlers[types.ListToolsRequest]

    async def listed(request: Any) -> Any:  # (the listing runs no function of the server's)
        seen.append(("tools/list", _mcp.continued(server)))
        return await listing(request)

    handlers[types.ListToolsRequest] = listed

    async def agent(session: Any) -> AsyncIterator[AgentEvent]:
        yield LLMCallStart(model="m")
        yield ToolCall(id="c1", function=FunctionCall(name="lookup", arguments="{}"))
        yield LLMCallEnd(model="m")
        with tool_scope("c1", "lookup"):
            await session.read_resource("notes://today")
            await session.get_prompt("greet", {"who": "you"})
            await session.list_tools()
        yield ToolResult(tool_call_id="c1", content="sunny")

    async with create_connected_server_and_client_session(server._mcp_server) as session:
        async for _ in otel_telemetry.wrapper(agent_name="calc")(agent(session)):
            pass
        await session.read_resource("notes://today")  # after the run, outside any trace

    tool = otel_telemetry.span("execute_tool lookup").context
    inside = f"trace={tool.trace_id:032x} parent={tool.span_id:016x}"
    outside = f"trace={0:032x} parent={0:016x}"
    assert seen == [("resources/read", inside), ("prompts/get", inside),
                    ("tools/list", inside), ("resources/read", outside)]  # fmt: skip


@pytest.mark.parametrize("setup", ["configure", "wrapper"])
def test_an_mcp_one_sdk_imported_after_the_setup_carries_the_trace_from_its_first_request(
    setup: str,
) -> None:
    """The MCP SDK 1.x first imported after ``configure()`` or a wrapper was made (a lazy
    import in the handler), a call sent in the application's own span before any traced tool
    body ran: it went without the trace (the session was wrapped only when the SDK was loaded
    as a wrapper was made, and never by ``configure()``), so the server served it in a trace
    of its own. It now names the span it is sent in, as the SDK 2.x's requests do. A fresh
    process, so the import really is the first."""
    import importlib.util

    from child_process import child_json

    if importlib.util.find_spec("mcp.shared._otel") is not None:
        pytest.skip("the MCP SDK 2.x propagates itself")
    child = Path(__file__).with_name("mcp_late_child.py")
    off = {f"OTEL_{signal}_EXPORTER": "none" for signal in ("TRACES", "METRICS", "LOGS")}
    result = child_json(str(child), setup, timeout=120, env=off)
    assert result["loaded_before"] == []
    want = result["want"]
    assert want.startswith("00-") and len(want) == 55
    assert result["seen"] == [want]


# --- The server asks the client's model: sampling/createMessage --------------------------------


async def _one_mcp_call(session: Any, name: str) -> AsyncIterator[AgentEvent]:
    """An agent that asks for tool ``name`` once and calls it over the MCP ``session``, in
    the call's tool scope."""
    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import McpServer, tool_scope

    yield LLMCallStart(model="m")
    yield ToolCall(id="c1", function=FunctionCall(name=name, arguments='{"x": 1}'))
    yield LLMCallEnd(model="m")
    with tool_scope("c1", name, mcp=McpServer(name=_mcp.SERVER_NAME)):
        answer = await session.call_tool(name, {"x": 1})
    yield ToolResult(tool_call_id="c1", content=str(answer.content))


async def test_an_mcp_one_servers_sampling_request_runs_under_the_tool_call_it_serves(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A server tool asks the client's model (``sampling/createMessage``); the client answers
    with its sampling callback, which runs an agent of its own. The session runs callbacks on
    its receiving task, opened before the run: that run was a trace of its own. It now nests
    under the tool call whose request the server was serving, in the run's trace."""
    import importlib.util

    if importlib.util.find_spec("mcp.shared._otel") is not None:
        pytest.skip("the MCP SDK 2.x refuses sampling on an in-memory connection")
    from mcp import types
    from mcp.shared.memory import create_connected_server_and_client_session

    from agent_contract.protocol import (
        LLMCallEnd,
        LLMCallStart,
        TextDelta,
    )

    server = _one_server_asking_its_client()

    async def sampling(context: Any, params: Any) -> Any:
        async def sampler() -> AsyncIterator[AgentEvent]:
            yield LLMCallStart(model="sampler")
            yield TextDelta(text="sampled")
            yield LLMCallEnd(model="sampler")

        async for _ in otel_telemetry.wrapper(agent_name="sampler")(sampler()):
            pass
        text = types.TextContent(type="text", text="sampled")
        return types.CreateMessageResult(role="assistant", content=text, model="sampler")

    async with create_connected_server_and_client_session(
        server._mcp_server, sampling_callback=sampling
    ) as session:
        async for _ in otel_telemetry.wrapper(agent_name="calc")(_one_mcp_call(session, "ask")):
            pass

    [run] = otel_telemetry.tree(attributes=False, events=False)
    [step] = run["children"]
    [_, tool] = step["children"]
    assert tool["name"] == "execute_tool ask"
    [sampler] = tool["children"]
    assert sampler["name"] == "invoke_agent sampler"
    assert [c["name"] for c in sampler["children"][0]["children"]] == ["chat sampler"]


async def test_an_mcp_one_servers_sampling_requests_on_parallel_sessions_each_run_in_their_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Two sessions (two servers), one call each in flight at once from one run's parallel
    tool bodies, and each server asks the client's model while it serves its call: both
    sampling callbacks are running together (each waits for the other), each on its own
    session's receiving task. Each runs under the tool call its own session is serving, not the
    other's nor the session's opening context."""
    import importlib.util

    if importlib.util.find_spec("mcp.shared._otel") is not None:
        pytest.skip("the MCP SDK 2.x refuses sampling on an in-memory connection")
    from contextlib import AsyncExitStack

    import anyio
    from mcp import types
    from mcp.shared.memory import create_connected_server_and_client_session
    from opentelemetry import trace

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import McpServer, tool_scope

    seen: dict[str, int] = {}
    both = anyio.Event()

    def sampling_for(call_id: str) -> Any:
        async def sampling(context: Any, params: Any) -> Any:
            seen[call_id] = trace.get_current_span().get_span_context().span_id
            if len(seen) == 2:
                both.set()
            await both.wait()  # the other session's callback is running too
            text = types.TextContent(type="text", text=f"sampled {call_id}")
            return types.CreateMessageResult(role="assistant", content=text, model="sampler")

        return sampling

    ids = ["c1", "c2"]
    answers: dict[str, str] = {}
    async with AsyncExitStack() as stack:
        sessions = {
            cid: await stack.enter_async_context(
                create_connected_server_and_client_session(
                    _one_server_asking_its_client()._mcp_server, sampling_callback=sampling_for(cid)
                )
            )
            for cid in ids
        }

        async def body(cid: str) -> None:
            with tool_scope(cid, "ask", mcp=McpServer(name=_mcp.SERVER_NAME)):
                answer = await sessions[cid].call_tool("ask", {"x": 1})
            answers[cid] = str(answer.content[0].text)  # type: ignore[union-attr]

        async def agent() -> AsyncIterator[AgentEvent]:
            yield LLMCallStart(model="m")
            for cid in ids:
                yield ToolCall(id=cid, function=FunctionCall(name="ask", arguments='{"x": 1}'))
            yield LLMCallEnd(model="m")
            async with anyio.create_task_group() as group:
                for cid in ids:
                    group.start_soon(body, cid)
            for cid in ids:
                yield ToolResult(tool_call_id=cid, content=answers[cid])

        with anyio.fail_after(10):
            async for _ in otel_telemetry.wrapper(agent_name="calc")(agent()):
                pass

    assert answers == {"c1": "sampled c1", "c2": "sampled c2"}
    tools = {
        dict(span.attributes or {})["gen_ai.tool.call.id"]: span.context.span_id
        for span in otel_telemetry.by_name()["execute_tool ask"]
    }
    assert seen == tools and len(set(tools.values())) == 2


async def test_an_mcp_one_servers_log_messages_are_told_in_the_tool_call_they_serve(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A server tool logs to the client (``notifications/message``) while it serves a call;
    the session hands it to the client's ``logging_callback`` on its receiving task, opened
    before the run: a log line or span the callback wrote was outside the run's trace. It now
    runs in the tool call's span, the message passed through as the server sent it."""
    import importlib.util

    if importlib.util.find_spec("mcp.shared._otel") is not None:
        pytest.skip("the MCP SDK 2.x's in-memory client sends no log messages on 2026-07-28")
    from mcp.server.fastmcp import Context, FastMCP
    from mcp.shared.memory import create_connected_server_and_client_session
    from opentelemetry import trace

    server = FastMCP(_mcp.SERVER_NAME)

    async def chatty(x: int, ctx: Any) -> str:
        """Log, then answer."""
        await ctx.info(f"working on {x}")
        return str(x)

    chatty.__annotations__["ctx"] = Context  # (the SDK finds its context by the annotation)
    server.tool()(chatty)
    told: list[tuple[Any, int]] = []

    async def logged(params: Any) -> None:
        told.append((params.data, trace.get_current_span().get_span_context().span_id))

    async with create_connected_server_and_client_session(
        server._mcp_server, logging_callback=logged
    ) as session:
        async for _ in otel_telemetry.wrapper(agent_name="calc")(_one_mcp_call(session, "chatty")):
            pass

    tool = otel_telemetry.span("execute_tool chatty")
    assert told == [("working on 1", tool.context.span_id)]


async def test_an_mcp_one_servers_request_for_a_call_sent_outside_any_tool_is_not_the_tools(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """One session, two calls in flight: a traced tool's (``wait``, answering once released)
    and one sent outside any tool body (``ask``, whose server asks the client's model). The
    sampling request is ``ask``'s: its callback runs as the SDK runs it, not in ``wait``'s
    tool span, which was the one traced call in flight."""
    import importlib.util

    if importlib.util.find_spec("mcp.shared._otel") is not None:
        pytest.skip("the MCP SDK 2.x refuses sampling on an in-memory connection")
    import anyio
    from mcp.shared.memory import create_connected_server_and_client_session

    started, released = anyio.Event(), anyio.Event()
    server, sampling, seen = _asking_one_server(started, released)
    answers: list[str] = []
    async with create_connected_server_and_client_session(
        server._mcp_server, sampling_callback=sampling
    ) as session:

        async def traced() -> None:
            async for _ in otel_telemetry.wrapper(agent_name="calc")(
                _one_mcp_call(session, "wait")
            ):
                pass

        async def untraced() -> None:
            await started.wait()
            answers.append(str((await session.call_tool("ask", {"x": 1})).content))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(traced)
                group.start_soon(untraced)

    assert "sampled" in answers[0]
    assert otel_telemetry.span("execute_tool wait").context.span_id not in seen
    assert seen == [0]  # the session's own context: no span


def _one_server_asking_its_client() -> Any:
    """An MCP 1.x server (``FastMCP``) whose ``ask`` asks the client's model
    (``sampling/createMessage``) and answers with its text."""
    from mcp import types
    from mcp.server.fastmcp import FastMCP

    server = FastMCP(_mcp.SERVER_NAME)

    @server.tool()
    async def ask(x: int) -> str:
        """Ask the client's model."""
        text = types.TextContent(type="text", text="hi")
        question = types.SamplingMessage(role="user", content=text)
        answer = await server.get_context().session.create_message([question], max_tokens=5)
        return str(answer.content.text)  # type: ignore[union-attr]

    return server


def _asking_one_server(started: Any, released: Any) -> tuple[Any, Any, list[int]]:
    """An MCP 1.x server (``FastMCP``) whose ``wait`` answers once ``released`` is set (setting
    ``started`` when it runs) and whose ``ask`` asks the client's model; the client's sampling
    callback, which notes the span current as it runs (in the list returned) and releases
    ``wait``."""
    from mcp import types
    from opentelemetry import trace

    server = _one_server_asking_its_client()

    @server.tool()
    async def wait(x: int) -> str:
        """Answer once released."""
        started.set()
        await released.wait()
        return str(x)

    seen: list[int] = []

    async def sampling(context: Any, params: Any) -> Any:
        seen.append(trace.get_current_span().get_span_context().span_id)
        released.set()
        text = types.TextContent(type="text", text="sampled")
        return types.CreateMessageResult(role="assistant", content=text, model="sampler")

    return server, sampling, seen


async def test_an_mcp_one_session_opened_in_a_runs_tool_leaks_nothing_of_it_after_the_run(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A session opened in a run's tool body (its receiving task keeps that context) and used
    after the run ended, outside any tool: the server's sampling request runs where that call
    was made, not under the ended tool's span in the ended run's trace."""
    import importlib.util

    if importlib.util.find_spec("mcp.shared._otel") is not None:
        pytest.skip("the MCP SDK 2.x refuses sampling on an in-memory connection")
    from contextlib import AsyncExitStack

    import anyio
    from mcp.shared.memory import create_connected_server_and_client_session
    from opentelemetry import trace

    from agent_contract.protocol import FunctionCall, LLMCallEnd, LLMCallStart, ToolCall, ToolResult
    from agent_contract.scope import McpServer, tool_scope

    started, released = anyio.Event(), anyio.Event()
    released.set()  # wait answers at once
    server, sampling, seen = _asking_one_server(started, released)
    async with AsyncExitStack() as stack:
        sessions: list[Any] = []

        async def agent() -> AsyncIterator[AgentEvent]:
            yield LLMCallStart(model="m")
            yield ToolCall(id="c1", function=FunctionCall(name="wait", arguments='{"x": 1}'))
            yield LLMCallEnd(model="m")
            with tool_scope("c1", "wait", mcp=McpServer(name=_mcp.SERVER_NAME)):
                session = await stack.enter_async_context(
                    create_connected_server_and_client_session(
                        server._mcp_server, sampling_callback=sampling
                    )
                )
                sessions.append(session)
                answer = await session.call_tool("wait", {"x": 1})
            yield ToolResult(tool_call_id="c1", content=str(answer.content))

        async for _ in otel_telemetry.wrapper(agent_name="calc")(agent()):
            pass
        tracer = otel_telemetry.tracer_provider.get_tracer("app")
        with tracer.start_as_current_span("later") as later, anyio.fail_after(10):
            await sessions[0].call_tool("ask", {"x": 1})

    assert seen == [later.get_span_context().span_id]
    assert trace.get_current_span() is trace.INVALID_SPAN


async def _google_adk_timing_out(url: str, run: Callable[[AsyncIterator[AgentEvent]], Any]) -> None:
    """ADK's ``McpToolset`` whose connection gives each request 0.5 s (``sse_read_timeout``,
    the MCP SDK session's read timeout); its model asks for ``slow`` and ``add`` at once."""
    from google.adk.tools.mcp_tool import McpToolset, StreamableHTTPConnectionParams
    from google.genai import types

    from agent_contract.sources.google_adk_stream import google_adk_events

    from ._fw_google_adk import _model, agent

    calls = [types.Part(function_call=types.FunctionCall(id=cid, name=name, args={"x": 1}))
             for cid, name in TIMED_CALLS]  # fmt: skip
    params = StreamableHTTPConnectionParams(url=url, sse_read_timeout=0.5)
    toolset = McpToolset(connection_params=params)
    try:
        model = _model([calls, [types.Part(text="done")]])
        await run(google_adk_events(agent(model, [toolset], name="calc"), "go"))
    finally:
        await toolset.close()


async def _strands_timing_out(url: str, run: Callable[[AsyncIterator[AgentEvent]], Any]) -> None:
    """Strands' ``MCPClient`` whose tools give each call 0.5 s (``MCPAgentTool.timeout``,
    passed to the MCP SDK's ``read_timeout_seconds``); its model asks for ``slow`` and
    ``add`` at once."""
    from datetime import timedelta

    from mcp.client.streamable_http import streamable_http_client
    from strands import Agent
    from strands.tools.mcp import MCPClient

    from agent_contract.sources.strands_stream import strands_events

    from . import _script as s
    from ._fw_strands import _model, _text, _uses

    first = [{"messageStart": {"role": "assistant"}},
             *_uses(*(s.Call(cid, name, {"x": 1}) for cid, name in TIMED_CALLS)),
             {"messageStop": {"stopReason": "tool_use"}}]  # fmt: skip
    second = [{"messageStart": {"role": "assistant"}}, *_text("done"),
              {"messageStop": {"stopReason": "end_turn"}}]  # fmt: skip
    with MCPClient(lambda: streamable_http_client(url)) as client:
        tools = client.list_tools_sync()
        for tool in tools:
            tool.timeout = timedelta(seconds=0.5)
        agent = Agent(model=_model([first, second]), tools=list(tools), name="calc",
                      callback_handler=None)  # fmt: skip
        await run(strands_events(agent, "go"))


TIMED_CALLS = [("c1", "slow"), ("c2", "add")]
TIMING_OUT = {
    "google_adk": ("google.adk.tools.mcp_tool.mcp_toolset", _google_adk_timing_out),
    "strands": ("strands.tools.mcp", _strands_timing_out),
}


@pytest.mark.parametrize("framework", TIMING_OUT)
async def test_a_frameworks_mcp_call_that_times_out_names_the_failure_by_its_json_rpc_code(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, framework: str
) -> None:
    """A request that outlives the client's read timeout raises the MCP SDK's ``MCPError`` of
    ``REQUEST_TIMEOUT`` (``-32001``); ADK's error callback and Strands turn it into the call's
    failed result. The call's span names the failure by that code, as the MCP conventions do,
    on its metric too; the parallel call answered is OK, and the run goes on."""
    module, runner = TIMING_OUT[framework]
    pytest.importorskip(module)
    from opentelemetry.trace import StatusCode

    from _serving import serve

    _mcp.sdk_tracing_to(monkeypatch, otel_telemetry.tracer_provider)

    async def run(events: AsyncIterator[AgentEvent]) -> None:
        async for _ in otel_telemetry.wrapper(agent_name="calc")(events):
            pass

    with serve(_mcp.erring_server().streamable_http_app()) as port:
        await runner(f"http://127.0.0.1:{port}/mcp", run)

    mine = [s for s in otel_telemetry.spans() if s.instrumentation_scope and
            s.instrumentation_scope.name == "agent_otel"]  # fmt: skip
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in mine  # type: ignore[index]
             if s.name.startswith("execute_tool ")}  # fmt: skip
    slow, add = dict(tools["c1"].attributes or {}), dict(tools["c2"].attributes or {})
    assert tools["c1"].status.status_code is StatusCode.ERROR
    assert slow["error.type"] == "-32001"
    assert tools["c2"].status.status_code is StatusCode.UNSET and "error.type" not in add
    failed = {str(p.attributes.get("gen_ai.tool.name")): p.attributes.get("error.type")
              for p in otel_telemetry.histograms()["gen_ai.execute_tool.duration"]}  # fmt: skip
    assert failed == {"slow": "-32001", "add": None}
    [root] = [s for s in mine if s.name == "invoke_agent calc"]
    assert root.status.status_code is StatusCode.UNSET
