"""An agent and the MCP server or A2A agent it calls, each a process exporting to one Collector.

``test_remote_tier.py`` runs them as a user would: both ``configure()`` with the endpoint from
``OTEL_EXPORTER_OTLP_ENDPOINT``, the server traced by the MCP SDK itself (its spans go to the
global provider ``configure()`` sets, as docs/mcp-and-agents.md says).

* ``server stdio``: the server over stdio (the agent's MCP client starts it).
* ``server http PORT``: the server over streamable HTTP on loopback ``PORT``, until SIGTERM.
* ``agent stdio`` / ``agent http URL``: a contract agent calling the server's ``add`` (answers),
  ``broken`` (answers ``isError``) and ``invalid`` (a JSON-RPC error) under
  ``tool_scope(..., mcp=McpServer(...))``; prints its run's trace id and exits.
* ``a2a-server PORT``: a remote agent (a2a-sdk, JSON-RPC, ``trace_a2a_executor``) whose runs
  are traced by ``otel_wrapper``; asked for ``fail``, its agent raises.
* ``a2a-agent URL``: a contract agent whose tools ask it for ``Oslo`` and ``fail`` with
  a2a-sdk's client (``trace_a2a_client``); prints its run's trace id and exits.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

SERVER_NAME = "calc"
AGENT_SERVICE = "mcp-tier-agent"
SERVER_SERVICE = "mcp-tier-server"
A2A_SERVICE = "a2a-tier-remote"
AGENT = "calc-agent"
REMOTE = "weather"
CITIES = [("w1", "Oslo"), ("w2", "fail")]
# (call id, tool, arguments); broken answers isError, invalid a JSON-RPC error (-32602)
CALLS = [("c1", "add", {"x": 1}), ("c2", "broken", {"x": 2}), ("c3", "invalid", {"x": 3})]


def server() -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.shared.exceptions import MCPError

    calc = MCPServer(SERVER_NAME)

    @calc.tool()
    def add(x: int) -> str:
        """Add one."""
        return str(x + 1)

    @calc.tool()
    def broken(x: int) -> str:
        """Fail as a tool (the answer carries isError)."""
        raise ToolError(f"the tool broke on {x}")

    @calc.tool()
    def invalid(x: int) -> str:
        """Refuse the arguments (a JSON-RPC error)."""
        raise MCPError(-32602, f"x={x} is out of range")

    return calc


async def agent(target: str) -> str:
    from mcp import Client, StdioServerParameters
    from opentelemetry import trace

    from agent_contract.protocol import (
        FunctionCall,
        LLMCallEnd,
        LLMCallStart,
        ToolCall,
        ToolResult,
    )
    from agent_contract.scope import McpServer, tool_scope
    from agent_otel import otel_wrapper

    if target == "stdio":
        # The server gets only the SDK's default environment: the OTEL_* variables handed on
        # as docs/mcp-and-agents.md says (and this checkout's import path, for the test run).
        env = {k: v for k, v in os.environ.items() if k.startswith(("OTEL_", "PYTHONPATH"))}
        params = StdioServerParameters(
            command=sys.executable, args=[__file__, "server", "stdio"], env=env
        )
        connect: Any = Client(params)
    else:
        connect = Client(target)

    trace_ids: list[str] = []
    async with connect as client:

        async def events() -> AsyncIterator[Any]:
            trace_ids.append(f"{trace.get_current_span().get_span_context().trace_id:032x}")
            yield LLMCallStart(model="m", provider="openai")
            for call_id, name, args in CALLS:
                yield ToolCall(id=call_id, function=FunctionCall(name=name, arguments=str(args)))
            yield LLMCallEnd(model="m", finish_reason="tool_calls")
            session = getattr(client, "session", None)
            mcp = McpServer(
                name=SERVER_NAME,
                protocol_version=client.protocol_version,
                session_id=getattr(session, "session_id", None),
            )
            for call_id, name, args in CALLS:
                failed = False
                with tool_scope(call_id, name, mcp=mcp):
                    try:
                        answer = await client.call_tool(name, args)
                        text, failed = str(answer.content), bool(answer.is_error)
                    except Exception as exc:  # the JSON-RPC error: the agent reports it
                        text, failed = str(exc), True
                yield ToolResult(tool_call_id=call_id, content=text, is_error=failed)

        async for _ in otel_wrapper(agent_name=AGENT)(events()):
            pass
    return trace_ids[0]


def card(url: str) -> Any:
    from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

    return AgentCard(
        name=REMOTE,
        description="Forecasts by city",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="forecast", name="forecast", description="weather", tags=["w"])],
    )


def a2a_server(port: int) -> None:
    import uvicorn
    from a2a.helpers.proto_helpers import new_text_message
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from starlette.applications import Starlette

    from agent_contract.protocol import LLMCallEnd, LLMCallStart, TextDelta
    from agent_otel import otel_wrapper
    from agent_otel.remote.a2a import trace_a2a_executor

    class Weather(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            city = context.get_user_input()

            async def agent() -> AsyncIterator[Any]:
                yield LLMCallStart(model="remote-model", provider="openai")
                if city == "fail":
                    raise RuntimeError("no forecast for fail")
                yield TextDelta(text=f"sunny in {city}")
                yield LLMCallEnd(model="remote-model")

            wrapper = otel_wrapper(agent_name=REMOTE)
            text = "".join([e.text async for e in wrapper(agent()) if isinstance(e, TextDelta)])
            await event_queue.enqueue_event(
                new_text_message(text, context_id=context.context_id, task_id=context.task_id)
            )

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            raise NotImplementedError

    the_card = card(f"http://127.0.0.1:{port}/")
    handler = DefaultRequestHandler(
        agent_executor=trace_a2a_executor(Weather()),
        task_store=InMemoryTaskStore(),
        agent_card=the_card,
    )
    routes = [*create_agent_card_routes(the_card), *create_jsonrpc_routes(handler, "/")]
    uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=port, log_level="warning")


async def a2a_agent(url: str) -> str:
    from a2a.client import ClientConfig, create_client
    from a2a.helpers.proto_helpers import get_message_text, new_text_message
    from a2a.types.a2a_pb2 import Role, SendMessageRequest
    from opentelemetry import trace

    from agent_contract.protocol import (
        FunctionCall,
        LLMCallEnd,
        LLMCallStart,
        ToolCall,
        ToolResult,
    )
    from agent_contract.scope import tool_scope
    from agent_otel import otel_wrapper
    from agent_otel.remote.a2a import trace_a2a_client

    async def ask(city: str) -> str:
        config = ClientConfig(streaming=False, supported_protocol_bindings=["JSONRPC"])
        client = trace_a2a_client(await create_client(card(url), config))
        message = new_text_message(city, role=Role.ROLE_USER)
        async with client:
            answers = [
                get_message_text(r.message)
                async for r in client.send_message(SendMessageRequest(message=message))
            ]
        return " ".join(answers)

    trace_ids: list[str] = []

    async def events() -> AsyncIterator[Any]:
        trace_ids.append(f"{trace.get_current_span().get_span_context().trace_id:032x}")
        yield LLMCallStart(model="m", provider="openai")
        for call_id, city in CITIES:
            yield ToolCall(id=call_id, function=FunctionCall(name="ask_weather", arguments=city))
        yield LLMCallEnd(model="m", finish_reason="tool_calls")
        for call_id, city in CITIES:
            failed = False
            with tool_scope(call_id, "ask_weather"):
                try:
                    text = await ask(city)
                except Exception as exc:  # the remote agent failed: the agent reports it
                    text, failed = f"{type(exc).__name__}: {exc}", True
            yield ToolResult(tool_call_id=call_id, content=text, is_error=failed)

    async for _ in otel_wrapper(agent_name=AGENT)(events()):
        pass
    return trace_ids[0]


def main(argv: list[str]) -> None:
    from agent_otel import configure

    role, transport = argv[0], argv[1]
    if role == "a2a-server":
        configure(A2A_SERVICE, console=False)
        a2a_server(int(transport))
        return
    if role == "a2a-agent":
        configure(AGENT_SERVICE, console=False)
        print(asyncio.run(a2a_agent(transport)), flush=True)
        return
    if role == "server":
        configure(SERVER_SERVICE, console=False)
        if transport == "stdio":
            server().run("stdio")
        else:
            server().run("streamable-http", host="127.0.0.1", port=int(argv[2]))
        return
    configure(AGENT_SERVICE, console=False)
    target = "stdio" if transport == "stdio" else argv[2]
    print(asyncio.run(agent(target)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
