"""Every block of ours is entered with ``async with`` as with ``with``, to the same effect.

An async server's handler (Starlette, FastAPI, aiohttp) writes ``async with``: ``remote_agent()``,
``RemoteAgentCall``, ``continue_trace()``, ``run_identity()``, ``agent_contract.scope.tool_scope``
and the test kit's ``InMemoryTelemetry.instrumented()`` and ``FakeClock.installed()`` each work
there as their ``with`` form does: the same spans, the body's exception out as the same object,
and the context current before current again on every exit path (done, raised, cancelled).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx
import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace

from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agent_contract.scope import InnerCall, inner_tool, tool_scope
from agent_otel import (
    RemoteAgentCall,
    _clock,
    continue_trace,
    remote_agent,
    run_identity,
)
from agent_otel import _attributes as A
from agent_otel.identity._identity import identity_of
from agent_otel.testing import FakeClock, InMemoryTelemetry

HEADERS = {"traceparent": f"00-{'1' * 32}-{'2' * 16}-01"}


class _Instrumentor:
    """The least instrumentor ``instrumented()`` takes, telling whether it is on."""

    on = False

    def instrument(self, **_: Any) -> None:
        self.on = True

    def uninstrument(self) -> None:
        self.on = False


Blocks = dict[str, Callable[[InMemoryTelemetry], Any]]
BLOCKS: Blocks = {
    "remote_agent": lambda t: remote_agent("far", tracer_provider=t.tracer_provider),
    "RemoteAgentCall": lambda t: RemoteAgentCall("far", tracer_provider=t.tracer_provider),
    "continue_trace": lambda t: continue_trace(HEADERS, conversation_id="c-1"),
    "run_identity": lambda t: run_identity(session_id="s-1", user_id="u-1"),
    "tool_scope": lambda t: tool_scope("c1", "lookup"),
    "inner_tool": lambda t: inner_tool("lookup", {"q": "x"}),
    "instrumented": lambda t: t.instrumented(_Instrumentor()),
    "FakeClock.installed": lambda t: FakeClock().installed(),
}


def _inside(name: str, entered: Any) -> None:
    """What each block makes hold inside it (the same check for ``with`` and ``async with``)."""
    current = trace.get_current_span()
    if name in ("remote_agent", "RemoteAgentCall"):
        assert isinstance(entered, RemoteAgentCall)
        assert current.get_span_context() == entered._span.raw.get_span_context()
    elif name == "continue_trace":
        assert current.get_span_context().trace_id == int("1" * 32, 16)
        assert otel_context.get_current() == entered
    elif name == "run_identity":
        assert (entered.session_id, entered.user_id) == ("s-1", "u-1")
    elif name == "inner_tool":
        assert isinstance(entered, InnerCall)
    elif name == "instrumented":
        assert isinstance(entered, InMemoryTelemetry)
    elif name == "FakeClock.installed":
        assert _clock.now_ns is entered


@pytest.mark.parametrize("name", sorted(BLOCKS))
async def test_async_with_enters_each_block_as_with_does(
    otel_telemetry: InMemoryTelemetry, name: str
) -> None:
    before, clock = otel_context.get_current(), _clock.now_ns
    async with BLOCKS[name](otel_telemetry) as entered:
        _inside(name, entered)
    assert otel_context.get_current() == before
    assert _clock.now_ns is clock
    with BLOCKS[name](otel_telemetry) as entered:
        _inside(name, entered)
    assert otel_context.get_current() == before


@pytest.mark.parametrize("name", sorted(BLOCKS))
async def test_an_exception_leaves_an_async_with_block_as_the_same_object(
    otel_telemetry: InMemoryTelemetry, name: str
) -> None:
    before, clock = otel_context.get_current(), _clock.now_ns
    error = ConnectionError("refused")
    with pytest.raises(ConnectionError) as caught:
        async with BLOCKS[name](otel_telemetry):
            raise error
    assert caught.value is error
    assert otel_context.get_current() == before
    assert _clock.now_ns is clock


@pytest.mark.parametrize("name", sorted(BLOCKS))
async def test_a_task_cancelled_in_an_async_with_block_restores_its_context(
    otel_telemetry: InMemoryTelemetry, name: str
) -> None:
    clock = _clock.now_ns
    entered = asyncio.Event()
    left: list[bool] = []

    async def handler() -> None:
        before = otel_context.get_current()
        try:
            async with BLOCKS[name](otel_telemetry):
                entered.set()
                await asyncio.sleep(10)
        finally:
            left.append(otel_context.get_current() == before)

    task = asyncio.create_task(handler())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert left == [True]
    assert _clock.now_ns is clock


@pytest.mark.parametrize("closer", ["another task", "the finaliser"])
@pytest.mark.parametrize("name", sorted(BLOCKS))
async def test_a_block_around_a_yield_closed_in_another_task_says_nothing(
    otel_telemetry: InMemoryTelemetry,
    caplog: pytest.LogCaptureFixture,
    name: str,
    closer: str,
) -> None:
    """A block held open across a ``yield`` (an agent streaming a remote agent's answer, an
    SSE handler streaming a run) exits where its generator is closed: in another task's
    ``aclose()``, or in the task asyncio's finaliser makes for an abandoned one. Its context
    was never attached there: nothing is logged ("Failed to detach context" was, at ERROR),
    and its span ends once."""
    clock = _clock.now_ns

    async def streaming() -> AsyncIterator[int]:
        async with BLOCKS[name](otel_telemetry):
            yield 1
            yield 2

    stream = streaming()
    assert await stream.__anext__() == 1
    if closer == "another task":
        await asyncio.create_task(stream.aclose())  # type: ignore[attr-defined]
    else:
        del stream  # its last reference: finalised at once (no full collection, ~2 s here)
        for _ in range(3):
            await asyncio.sleep(0)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert _clock.now_ns is clock
    assert otel_telemetry.open_spans() == []
    assert len(otel_telemetry.spans()) == (1 if name in ("remote_agent", "RemoteAgentCall") else 0)


async def test_a_remote_call_in_async_with_records_the_span_with_does(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    error = TimeoutError("slow agent")
    with pytest.raises(TimeoutError):
        async with remote_agent(
            "far", "https://agents.example:8443/a", tracer_provider=otel_telemetry.tracer_provider
        ) as call:
            assert call.headers["traceparent"].startswith("00-")
            raise error
    span = otel_telemetry.span("invoke_agent far")
    assert span.kind is trace.SpanKind.CLIENT
    assert span.attributes[A.ERROR_TYPE] == "TimeoutError"  # type: ignore[index]
    assert span.attributes[A.SERVER_PORT] == 8443  # type: ignore[index]
    assert otel_telemetry.open_spans() == []


async def test_an_async_handler_continues_the_callers_trace_and_its_tool_scopes_nest(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A Starlette handler served over httpx's ASGI transport, all in ``async with``: the
    remote run is the child of the caller's CLIENT span, its tool body's span is current in
    ``async with tool_scope``, and the handler's ids reach the run."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    seen: list[str] = []

    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m")
        yield ToolCall(id="t1", function=FunctionCall(name="lookup", arguments="{}"))
        async with tool_scope("t1", "lookup"):
            seen.append(trace.get_current_span().name)  # type: ignore[attr-defined]
        yield LLMCallEnd()
        yield ToolResult(tool_call_id="t1", content="42")
        yield TextDelta(text="done")

    async def ask(request: Request) -> JSONResponse:
        async with (
            continue_trace(request.headers, conversation_id="conv-1"),
            run_identity(user_id="alice"),
        ):
            async for _ in otel_telemetry.wrapper(agent_name="remote")(agent()):
                pass
        return JSONResponse({"ok": True})

    app = Starlette(routes=[Route("/ask", ask, methods=["POST"])])
    transport = httpx.ASGITransport(app=app)
    async with (
        remote_agent("remote", "http://agent/ask",
                     tracer_provider=otel_telemetry.tracer_provider) as call,
        httpx.AsyncClient(transport=transport, base_url="http://agent") as http,
    ):  # fmt: skip
        response = await http.post("/ask", json={}, headers=call.headers)
    assert response.json() == {"ok": True}
    assert seen == ["execute_tool lookup"]
    runs = {s.kind: s for s in otel_telemetry.spans() if s.name == "invoke_agent remote"}
    client, run = runs[trace.SpanKind.CLIENT], runs[trace.SpanKind.INTERNAL]
    assert run.parent is not None and run.parent.span_id == client.context.span_id
    assert run.attributes[A.CONVERSATION_ID] == "conv-1"  # type: ignore[index]
    assert run.attributes[A.USER_ID] == "alice"  # type: ignore[index]
    assert otel_telemetry.open_spans() == []


def test_every_block_is_an_async_context_manager(otel_telemetry: InMemoryTelemetry) -> None:
    for name, make in BLOCKS.items():
        made = make(otel_telemetry)
        assert isinstance(made, AbstractAsyncContextManager), name
        with made:  # entered and left, so none is left open
            pass


async def test_a_block_decorating_a_function_wraps_each_call_async_ones_whole(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """``continue_trace()`` and ``run_identity()`` decorate functions, as ``contextmanager``'s
    blocks do, each call in a block of its own; an ``async def``'s whole awaited body runs in
    it (``contextmanager`` left the body outside: its ids were lost)."""
    seen: list[tuple[str | None, int]] = []

    def ids() -> tuple[str | None, int]:
        identity = identity_of()
        return (
            identity.user_id if identity else None,
            trace.get_current_span().get_span_context().trace_id,
        )

    @continue_trace(HEADERS)  # the outer: it starts from the headers alone
    @run_identity(user_id="alice")
    def handle() -> str:
        seen.append(ids())
        return "sync"

    @continue_trace(HEADERS)
    @run_identity(user_id="bob")
    async def ahandle() -> str:
        await asyncio.sleep(0)
        seen.append(ids())
        return "async"

    before = otel_context.get_current()
    assert (handle(), handle(), await ahandle()) == ("sync", "sync", "async")
    assert otel_context.get_current() == before
    remote = int("1" * 32, 16)
    assert seen == [("alice", remote), ("alice", remote), ("bob", remote)]
