"""Any HTTP agent: ``remote_agent()`` on the caller's side, ``continue_trace()`` on the agent's.

The caller's call is one ``invoke_agent`` CLIENT span, current in its block, whose headers make
the remote run its child; the remote side continues the trace from the request's headers
(through the HTTP server span that continued it, when there is one). Served for real over
loopback, and each piece on its own: the attributes the conventions list for the CLIENT span,
the address read from any URL, every way a block can end.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode, TraceFlags

import semconv_registry as semconv
from agent_contract.protocol import LLMCallEnd, LLMCallStart, TextDelta
from agent_otel import (
    ContinueTraceMiddleware,
    ContinueTraceWSGIMiddleware,
    RemoteAgentCall,
    continue_trace,
    extract_context,
    remote_agent,
    run_identity,
)
from agent_otel import _attributes as A
from agent_otel.remote._call import address_of
from agent_otel.testing import InMemoryTelemetry
from hostile_types import LyingStr
from otlp_check import assert_encodes
from otlp_receiver import POLL
from test_hostile_endings import METHODS, HostileTracerProvider

CLIENT_SPAN = "span.gen_ai.invoke_agent.client"


def _parent_name(spans: list[ReadableSpan], span: ReadableSpan) -> str | None:
    if span.parent is None:
        return None
    (parent,) = [s for s in spans if s.context.span_id == span.parent.span_id]
    return parent.name


async def _remote_run(telemetry: InMemoryTelemetry, city: str) -> str:
    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="remote-model", provider="openai")
        yield TextDelta(text=f"rain in {city}")
        yield LLMCallEnd(model="remote-model")

    wrapper = telemetry.wrapper(agent_name="weather", step_spans=False)
    return "".join([e.text async for e in wrapper(agent()) if isinstance(e, TextDelta)])


# --- served for real ---------------------------------------------------------------------------
async def test_an_http_agent_called_from_a_tool_is_the_child_of_the_call_span(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    pytest.importorskip("uvicorn")
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from _serving import serve

    async def ask(request: Request) -> JSONResponse:
        body = await request.json()
        with continue_trace(request.headers, conversation_id=body["conversation"]):
            answer = await _remote_run(otel_telemetry, body["city"])
        return JSONResponse({"answer": answer})

    app = Starlette(routes=[Route("/ask", ask, methods=["POST"])])
    requests: list[dict[str, str]] = []
    tracer = otel_telemetry.tracer_provider.get_tracer("caller")
    with serve(app, requests) as port:
        url = f"http://127.0.0.1:{port}/ask"

        async def tool(city: str) -> str:
            with (
                tracer.start_as_current_span(f"execute_tool ask {city}"),
                remote_agent(
                    "weather", url, tracer_provider=otel_telemetry.tracer_provider
                ) as call,
            ):
                async with httpx.AsyncClient() as http:
                    response = await http.post(
                        url,
                        json={"city": city, "conversation": f"conv-{city}"},
                        headers=call.headers,
                    )
                call.set_conversation_id(f"conv-{city}")
            return str(response.json()["answer"])

        with tracer.start_as_current_span("caller"):
            answers = await asyncio.gather(tool("Bern"), tool("Cork"))
    assert answers == ["rain in Bern", "rain in Cork"]
    spans = otel_telemetry.spans()
    assert len({s.context.trace_id for s in spans}) == 1
    for city in ("Bern", "Cork"):
        (client,) = [
            s
            for s in spans
            if s.kind is SpanKind.CLIENT
            and s.name.startswith("invoke_agent")
            and (s.attributes or {}).get(A.CONVERSATION_ID) == f"conv-{city}"
        ]
        assert client.name == "invoke_agent weather"
        assert _parent_name(spans, client) == f"execute_tool ask {city}"
        (remote,) = [
            s for s in spans if s.parent is not None and s.parent.span_id == client.context.span_id
        ]
        assert (remote.name, remote.kind) == ("invoke_agent weather", SpanKind.INTERNAL)
        assert remote.attributes[A.CONVERSATION_ID] == f"conv-{city}"  # type: ignore[index]
        (chat,) = [
            s for s in spans if s.parent is not None and s.parent.span_id == remote.context.span_id
        ]
        assert chat.name == "chat remote-model"
        assert client.attributes[A.SERVER_PORT] == port  # type: ignore[index]
    assert all("traceparent" in r for r in requests)


# --- the caller's side -------------------------------------------------------------------------
def test_the_call_span_carries_what_the_conventions_list_for_a_remote_agent(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    with remote_agent(
        "weather",
        "https://user:secret@agents.example/v1/weather?key=abc",
        description="Forecasts",
        version="2",
        conversation_id="conv-1",
        tracer_provider=otel_telemetry.tracer_provider,
    ):
        current = trace.get_current_span()
    span = otel_telemetry.span("invoke_agent weather")
    assert current.get_span_context().span_id == span.context.span_id  # current in the block
    assert span.kind is SpanKind.CLIENT
    assert dict(span.attributes or {}) == {
        A.OPERATION_NAME: "invoke_agent",
        A.PROVIDER_NAME: "unknown",
        A.AGENT_NAME: "weather",
        A.AGENT_DESCRIPTION: "Forecasts",
        A.AGENT_VERSION: "2",
        A.SERVER_ADDRESS: "agents.example",  # never the path, the query or the credentials
        A.SERVER_PORT: 443,
        A.CONVERSATION_ID: "conv-1",
    }
    definition = semconv.span(CLIENT_SPAN)
    assert definition.required <= set(span.attributes or {})
    assert set(span.attributes or {}) <= set(definition.levels)
    assert span.name == definition.expected_name(dict(span.attributes or {}))
    for key, value in (span.attributes or {}).items():
        if key.startswith("gen_ai."):  # server.* are the general registry's: str and int
            assert semconv.type_error(key, value) is None, key
    assert isinstance(span.attributes[A.SERVER_PORT], int)  # type: ignore[index]


def test_headers_name_the_call_span_and_carry_baggage_but_never_the_runs_ids(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    token = otel_context.attach(baggage.set_baggage("tenant", "acme"))
    try:
        with run_identity(user_id="alice", session_id="s-1"):
            call = remote_agent("a", "http://h:1", tracer_provider=otel_telemetry.tracer_provider)
            headers = call.headers
            call.end()
    finally:
        otel_context.detach(token)
    span = otel_telemetry.span("invoke_agent a")
    trace_id, span_id = format(span.context.trace_id, "032x"), format(span.context.span_id, "016x")
    assert headers["traceparent"] == f"00-{trace_id}-{span_id}-01"
    assert headers["baggage"] == "tenant=acme"  # the caller's own baggage; no user or session id
    assert span.attributes[A.USER_ID] == "alice"  # type: ignore[index]  # on our span, as every span of a run
    assert span.attributes[A.SESSION_ID] == "s-1"  # type: ignore[index]


async def test_an_exception_leaving_the_block_fails_the_span_and_passes_through_unchanged(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    error = ConnectionError("refused")
    with (
        pytest.raises(ConnectionError) as caught,
        remote_agent("a", tracer_provider=otel_telemetry.tracer_provider),
    ):
        raise error
    assert caught.value is error
    span = otel_telemetry.span("invoke_agent a")
    assert span.status.status_code.name == "ERROR"
    assert span.attributes[A.ERROR_TYPE] == "ConnectionError"  # type: ignore[index]
    assert trace.get_current_span() is trace.INVALID_SPAN  # the caller's context is back

    async def cancelled() -> None:
        with remote_agent("b", tracer_provider=otel_telemetry.tracer_provider):
            await asyncio.sleep(10)

    task = asyncio.create_task(cancelled())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert otel_telemetry.span("invoke_agent b").attributes[A.ERROR_TYPE] == "CancelledError"  # type: ignore[index]


def test_a_call_ends_once_and_a_conversation_id_is_taken_once(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    call = remote_agent(tracer_provider=otel_telemetry.tracer_provider)
    call.set_conversation_id("first")
    call.set_conversation_id("second")  # the first one named stays
    call.set_conversation_id(42)
    call.end()
    call.end(RuntimeError("late"))
    call.set_conversation_id("after the end")
    (span,) = otel_telemetry.spans()
    assert span.name == "invoke_agent"  # no name known: the conventions' bare name
    assert span.attributes[A.CONVERSATION_ID] == "first"  # type: ignore[index]
    assert span.status.status_code.name == "UNSET"


def test_a_failure_the_remote_side_answers_with_fails_the_span_without_an_exception(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Nothing raised, but the remote agent said it failed (an HTTP error status the caller
    reads, a task that failed): ``fail()`` marks the span as a raised error would, with the
    ``exception`` event; a type that is no text is the registry's ``_OTHER``; after the end,
    nothing changes."""
    with remote_agent("a", tracer_provider=otel_telemetry.tracer_provider) as call:
        call.fail("503", "Service Unavailable")
    with remote_agent("b", tracer_provider=otel_telemetry.tracer_provider) as call:
        call.fail(None)
    call.fail("late")
    a, b = otel_telemetry.span("invoke_agent a"), otel_telemetry.span("invoke_agent b")
    assert (a.status.status_code.name, a.status.description) == ("ERROR", "Service Unavailable")
    assert a.attributes[A.ERROR_TYPE] == "503"  # type: ignore[index]
    assert [(e.name, dict(e.attributes or {})) for e in a.events] == [
        ("exception", {"exception.type": "503"})
    ]
    assert (b.status.description, b.attributes[A.ERROR_TYPE]) == ("_OTHER", "_OTHER")  # type: ignore[index]


def test_a_failure_told_again_is_recorded_once(otel_telemetry: InMemoryTelemetry) -> None:
    """A stream may say the same failure twice (an A2A status update, then the task): one
    ``exception`` event, and the first failure names the call."""
    with remote_agent("a", tracer_provider=otel_telemetry.tracer_provider) as call:
        call.fail("TASK_STATE_FAILED")
        call.fail("TASK_STATE_REJECTED", "later")
    span = otel_telemetry.span("invoke_agent a")
    assert span.attributes[A.ERROR_TYPE] == "TASK_STATE_FAILED"  # type: ignore[index]
    assert span.status.description == "TASK_STATE_FAILED"
    assert [e.name for e in span.events] == ["exception"]


def test_no_provider_records_nothing_and_costs_no_error() -> None:
    with remote_agent("a", "http://h") as call:  # the global provider: a no-op one here
        assert call.headers == {} or "traceparent" in call.headers


@given(st.text(max_size=60))
def test_any_url_gives_an_address_or_none_and_never_raises(url: str) -> None:
    out = address_of(url)
    assert set(out) <= {A.SERVER_ADDRESS, A.SERVER_PORT}
    if A.SERVER_PORT in out:
        assert A.SERVER_ADDRESS in out
        assert isinstance(out[A.SERVER_PORT], int) and 0 <= out[A.SERVER_PORT] <= 65535  # type: ignore[operator]


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://127.0.0.1:8000/", {A.SERVER_ADDRESS: "127.0.0.1", A.SERVER_PORT: 8000}),
        ("https://agents.example", {A.SERVER_ADDRESS: "agents.example", A.SERVER_PORT: 443}),
        ("localhost:50051", {A.SERVER_ADDRESS: "localhost", A.SERVER_PORT: 50051}),  # gRPC
        ("http://[::1]:9/a2a", {A.SERVER_ADDRESS: "::1", A.SERVER_PORT: 9}),
        ("grpc://agents.example", {A.SERVER_ADDRESS: "agents.example"}),  # no port known
        ("http://h:99999/", {}),  # a port out of range: no address rather than a wrong one
        ("", {}),
        (None, {}),
    ],
)
def test_addresses_of_the_urls_agents_are_reached_at(url: Any, address: dict[str, Any]) -> None:
    assert dict(address_of(url)) == address


# --- the remote agent's side -------------------------------------------------------------------
async def test_continue_trace_nests_under_the_http_server_span_that_continued_the_same_trace(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """An HTTP server instrumentation already continued the caller's trace: its span stays the
    parent (the run sits under the request that started it); another trace's span does not."""
    tracer = otel_telemetry.tracer_provider.get_tracer("server")
    call = remote_agent("a", tracer_provider=otel_telemetry.tracer_provider)
    headers = call.headers
    call.end()

    server_span = tracer.start_as_current_span("POST /ask", context=extract_context(headers))
    with server_span, continue_trace(headers):
        await _remote_run(otel_telemetry, "Riga")
    with tracer.start_as_current_span("another trace's request"), continue_trace(headers):
        await _remote_run(otel_telemetry, "Oulu")
    spans = otel_telemetry.spans()
    first, second = [s for s in spans if s.name == "invoke_agent weather"]
    assert _parent_name(spans, first) == "POST /ask"
    assert _parent_name(spans, second) == "invoke_agent a"


async def test_a_request_naming_no_parent_nests_under_the_server_span_started_for_it(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """No valid ``traceparent``: an HTTP server instrumentation started the request's own trace
    (a SERVER span with no parent, or one its propagator read from another header: a remote
    parent), and the run sits under that span. Any other span current (the caller's, a span
    of the app's own around the handler) is not the request's: the run is a root."""
    tracer = otel_telemetry.tracer_provider.get_tracer("server")
    sampled = TraceFlags(TraceFlags.SAMPLED)
    b3_parent = trace.set_span_in_context(
        trace.NonRecordingSpan(
            trace.SpanContext(
                int("7" * 32, 16), int("8" * 16, 16), is_remote=True, trace_flags=sampled
            )
        )
    )
    server = SpanKind.SERVER
    cases = [
        ("POST /ask", server, otel_context.Context(), "POST /ask"),
        ("POST /b3", server, b3_parent, "POST /b3"),
        ("queue receive", SpanKind.CONSUMER, otel_context.Context(), "queue receive"),
        ("handler", SpanKind.INTERNAL, otel_context.Context(), None),
    ]
    for name, kind, parent, expected in cases:
        with tracer.start_as_current_span(name, context=parent, kind=kind):
            nested = tracer.start_as_current_span("inner", kind=server)  # a local parent
            with nested, continue_trace({"traceparent": "garbage"}):
                await _remote_run(otel_telemetry, "Oslo")
            with continue_trace({}):
                await _remote_run(otel_telemetry, "Oslo")
        spans = otel_telemetry.spans()
        inner, outer = [s for s in spans if s.name == "invoke_agent weather"]
        assert _parent_name(spans, inner) is None, name
        assert _parent_name(spans, outer) == expected, name
        otel_telemetry.clear()


async def test_behind_the_middleware_the_requests_own_spans_stay_and_a_callers_run_does_not(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A monolith serving its agents behind ``ContinueTraceMiddleware``: ``/plan``'s run asks
    ``/weather`` of the same app in process, sending no trace context. A library's span for a
    request (as a2a-sdk's server spans are, between the middleware and the executor) is that
    request's: the run a handler starts with ``continue_trace(request.headers)`` under it
    nests there. The planner's run, between the two requests, is not ``/weather``'s: its
    run is the root of a trace of its own, without the planner's session."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from agent_contract.protocol import FunctionCall, ToolCall, ToolResult
    from agent_contract.scope import tool_scope

    tracer = otel_telemetry.tracer_provider.get_tracer("library")

    async def weather(request: Request) -> PlainTextResponse:
        with tracer.start_as_current_span("library handles"):  # the library's, for /weather
            async with continue_trace(request.headers):
                return PlainTextResponse(await _remote_run(otel_telemetry, "Nice"))

    async def plan(request: Request) -> PlainTextResponse:
        async def planner() -> AsyncIterator[Any]:
            yield LLMCallStart(model="m")
            yield ToolCall(id="c1", function=FunctionCall(name="ask_weather", arguments="{}"))
            yield LLMCallEnd()
            with tool_scope("c1", "ask_weather"):
                async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
                    answer = (await http.post("http://self/weather")).text
            yield ToolResult(tool_call_id="c1", content=answer)

        wrapper = otel_telemetry.wrapper(agent_name="planner", session_id="s-1")
        [_ async for _ in wrapper(planner())]
        return PlainTextResponse("planned")

    routes = [Route("/plan", plan, methods=["POST"]), Route("/weather", weather, methods=["POST"])]
    app = Starlette(routes=routes)
    app.add_middleware(ContinueTraceMiddleware)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
        assert (await http.post("http://self/weather")).text == "rain in Nice"
        assert (await http.post("http://self/plan")).text == "planned"
    spans = otel_telemetry.spans()
    direct, asked = [s for s in spans if s.name == "invoke_agent weather"]
    (planner_span,) = [s for s in spans if s.name == "invoke_agent planner"]
    assert _parent_name(spans, direct) == "library handles"
    assert _parent_name(spans, asked) == "library handles"
    (library,) = [s for s in spans if asked.parent and s.context.span_id == asked.parent.span_id]
    assert library.parent is None  # /weather's own trace, not the planner's
    assert asked.context.trace_id != planner_span.context.trace_id
    assert "session.id" not in (asked.attributes or {})


@pytest.mark.parametrize(
    "headers",
    [{}, {"traceparent": "garbage"}, [("TraceParent", b"00-zz")], None, 42, object()],
    ids=["none", "invalid", "pairs-invalid", "None", "int", "object"],
)
async def test_headers_that_name_no_span_start_the_run_as_a_root(
    otel_telemetry: InMemoryTelemetry, headers: Any
) -> None:
    with continue_trace(headers, conversation_id="c-1"):
        await _remote_run(otel_telemetry, "Nice")
    (run,) = [s for s in otel_telemetry.spans() if s.name == "invoke_agent weather"]
    assert run.parent is None
    assert run.attributes[A.CONVERSATION_ID] == "c-1"  # type: ignore[index]


async def test_an_exception_in_the_block_passes_through_and_the_context_is_restored() -> None:
    before = otel_context.get_current()
    error = ValueError("agent failed")
    headers = {"traceparent": f"00-{'1' * 32}-{'2' * 16}-01"}
    with pytest.raises(ValueError) as caught, continue_trace(headers):
        assert trace.get_current_span().get_span_context().is_remote
        raise error
    assert caught.value is error
    assert otel_context.get_current() == before


async def test_an_asgi_app_behind_the_middleware_serves_each_request_in_its_callers_trace(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """No ``continue_trace`` in the handler: the middleware continued the request's trace."""
    pytest.importorskip("uvicorn")
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from _serving import serve

    async def ask(request: Request) -> PlainTextResponse:
        return PlainTextResponse(await _remote_run(otel_telemetry, (await request.body()).decode()))

    app = Starlette(routes=[Route("/ask", ask, methods=["POST"])])
    app.add_middleware(ContinueTraceMiddleware)
    with serve(app) as port:
        url = f"http://127.0.0.1:{port}/ask"

        async def call(city: str) -> str:
            provider = otel_telemetry.tracer_provider
            with remote_agent(city, url, tracer_provider=provider) as remote:
                async with httpx.AsyncClient() as http:
                    response = await http.post(url, content=city, headers=remote.headers)
            return response.text

        assert await asyncio.gather(call("Nice"), call("Bonn")) == ["rain in Nice", "rain in Bonn"]
        async with httpx.AsyncClient() as http:  # a request with no trace context: a root
            assert (await http.post(url, content="Graz")).text == "rain in Graz"
    spans = otel_telemetry.spans()
    runs = [s for s in spans if s.name == "invoke_agent weather"]
    assert sorted(str(_parent_name(spans, s)) for s in runs) == [
        "None",
        "invoke_agent Bonn",
        "invoke_agent Nice",
    ]


@pytest.mark.parametrize("served", ["handler", "asgi-in-process"])
async def test_a_remote_agent_served_in_the_callers_process_is_a_run_of_its_own(
    otel_telemetry: InMemoryTelemetry, served: str
) -> None:
    """The remote side called in the caller's own process (its handler given the headers, or
    an ASGI app behind the middleware over httpx's ``ASGITransport``), from a traced tool of a
    run with a session and a user: its run shared the caller's task context and was recorded as
    a run nested in the caller's, with the caller's ``session.id`` and ``user.id``, which the
    headers never carry. Now it starts from what the headers carry, as in another process:
    the CLIENT span's child in the same trace, with none of the caller's ids."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from agent_contract.protocol import FunctionCall, ToolCall, ToolResult
    from agent_contract.scope import tool_scope

    async def ask(request: Request) -> PlainTextResponse:
        return PlainTextResponse(await _remote_run(otel_telemetry, (await request.body()).decode()))

    app = Starlette(routes=[Route("/ask", ask, methods=["POST"])])
    app.add_middleware(ContinueTraceMiddleware)
    url = "http://agents.internal/ask"

    async def remote(city: str, headers: dict[str, str]) -> str:
        if served == "handler":
            with continue_trace(headers):
                return await _remote_run(otel_telemetry, city)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport) as http:
            return (await http.post(url, content=city, headers=headers)).text

    async def caller() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m")
        yield ToolCall(id="c1", function=FunctionCall(name="ask_weather", arguments="{}"))
        yield LLMCallEnd()
        with tool_scope("c1", "ask_weather"):
            provider = otel_telemetry.tracer_provider
            with remote_agent("weather", url, tracer_provider=provider) as call:
                answer = await remote("Nice", call.headers)
        yield ToolResult(tool_call_id="c1", content=answer)

    wrapper = otel_telemetry.wrapper(agent_name="planner", session_id="s-1", user_id="u-1")
    [_ async for _ in wrapper(caller())]

    spans = otel_telemetry.spans()
    (call_span,) = [s for s in spans if s.kind is SpanKind.CLIENT and s.name.startswith("invoke")]
    (run,) = [s for s in spans if s.name == "invoke_agent weather" and s.kind is SpanKind.INTERNAL]
    assert run.parent is not None and run.parent.span_id == call_span.context.span_id
    assert run.context.trace_id == call_span.context.trace_id
    assert (call_span.attributes or {})["session.id"] == "s-1"  # the caller's side: its ids
    assert not {"session.id", "user.id"} & set(run.attributes or {})


_NO_VALID_PARENT = {
    "none": {},
    "malformed": {"traceparent": "00-not-a-trace-01"},
    "all-zero": {"traceparent": f"00-{'0' * 32}-{'0' * 16}-01"},
    "baggage-only": {"baggage": "region=eu"},
}


@pytest.mark.parametrize("served", ["handler", "asgi-in-process", "wsgi-in-process"])
@pytest.mark.parametrize("headers", list(_NO_VALID_PARENT.values()), ids=list(_NO_VALID_PARENT))
async def test_a_request_naming_no_valid_parent_starts_a_trace_of_its_own_in_the_callers_process(
    otel_telemetry: InMemoryTelemetry, served: str, headers: dict[str, str]
) -> None:
    """W3C Trace Context: a receiver given no ``traceparent``, or one it cannot parse, starts a
    new trace; OpenTelemetry's ``extract`` then hands back the context it was given, so the root
    has to be explicit. Served in the caller's own process (a handler called with the request's
    headers, an ASGI app over httpx's ``ASGITransport``, a WSGI app over its ``WSGITransport``),
    from a traced tool of a run with a session and a user, the remote run was nested in the
    caller's run with the caller's ids. Now the wire decides: a root of a new trace, none of the
    caller's ids, only what the request carried (its baggage)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from agent_contract.protocol import FunctionCall, ToolCall, ToolResult
    from agent_contract.scope import tool_scope

    seen: list[dict[str, object]] = []

    async def run(city: str) -> str:
        seen.append(dict(baggage.get_all()))
        return await _remote_run(otel_telemetry, city)

    async def ask(request: Request) -> PlainTextResponse:
        return PlainTextResponse(await run((await request.body()).decode()))

    asgi = Starlette(routes=[Route("/ask", ask, methods=["POST"])])
    asgi.add_middleware(ContinueTraceMiddleware)

    def wsgi(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        city = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)).decode()
        answer = asyncio.run(run(city))  # the WSGI server's thread: a loop of its own
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [answer.encode()]

    url = "http://agents.internal/ask"

    async def remote(city: str) -> str:
        if served == "handler":
            async with continue_trace(headers, conversation_id="c-9"):
                return await run(city)
        if served == "asgi-in-process":
            transport = httpx.ASGITransport(app=asgi)
            async with httpx.AsyncClient(transport=transport) as http:
                return (await http.post(url, content=city, headers=headers)).text
        app = ContinueTraceWSGIMiddleware(wsgi)
        with httpx.Client(transport=httpx.WSGITransport(app=app)) as client:
            return await asyncio.to_thread(
                lambda: client.post(url, content=city, headers=headers).text
            )

    async def caller() -> AsyncIterator[Any]:
        yield LLMCallStart(model="m")
        yield ToolCall(id="c1", function=FunctionCall(name="ask_weather", arguments="{}"))
        yield LLMCallEnd()
        with tool_scope("c1", "ask_weather"):
            answer = await remote("Nice")
        yield ToolResult(tool_call_id="c1", content=answer)

    token = otel_context.attach(baggage.set_baggage("tenant", "caller-only"))  # the caller's own
    try:
        wrapper = otel_telemetry.wrapper(agent_name="planner", session_id="s-1", user_id="u-1")
        [_ async for _ in wrapper(caller())]
    finally:
        otel_context.detach(token)

    spans = otel_telemetry.spans()
    (planner,) = [s for s in spans if s.name == "invoke_agent planner"]
    (run_span,) = [s for s in spans if s.name == "invoke_agent weather"]
    assert run_span.parent is None
    assert run_span.context.trace_id != planner.context.trace_id
    assert not {"session.id", "user.id"} & set(run_span.attributes or {})
    assert seen == [{"region": "eu"} if "baggage" in headers else {}]
    if served == "handler":
        assert (run_span.attributes or {})[A.CONVERSATION_ID] == "c-9"


@contextmanager
def _wsgi_served(app: Any) -> Iterator[int]:
    """A WSGI app served for real on loopback (the standard library's server, a thread per
    request, each starting with an empty context); yields its port."""
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    class Threading(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    server = make_server("127.0.0.1", 0, app, server_class=Threading, handler_class=Quiet)
    thread = threading.Thread(
        target=server.serve_forever, kwargs=POLL, name="wsgi-agent", daemon=True
    )
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


async def test_a_wsgi_app_behind_the_middleware_runs_each_remote_agent_under_its_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A raw WSGI app (no framework) behind ``ContinueTraceWSGIMiddleware``, called with
    ``requests`` from two tools at once and a third whose remote agent fails. Its response is
    streamed: the agent runs while the server pulls the body, after the app returned, and its
    run is still the child of the call that asked, in the caller's trace. The failing agent's
    run fails there, the caller's ``raise_for_status()`` fails its CLIENT span."""
    import requests

    from agent_otel import ContinueTraceWSGIMiddleware

    def app(environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        city = environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"])).decode()
        if city == "Atlantis":
            try:
                asyncio.run(_failing_remote_run(otel_telemetry))
            except RuntimeError:
                start_response("500 Internal Server Error", [("Content-Type", "text/plain")])
                return iter([b"no such city"])
        start_response("200 OK", [("Content-Type", "text/plain")])

        def body() -> Iterator[bytes]:  # the agent runs as the server pulls the body
            yield asyncio.run(_remote_run(otel_telemetry, city)).encode()

        return body()

    tracer = otel_telemetry.tracer_provider.get_tracer("caller")
    with _wsgi_served(ContinueTraceWSGIMiddleware(app)) as port:
        url = f"http://127.0.0.1:{port}/ask"

        async def tool(city: str) -> str:
            provider = otel_telemetry.tracer_provider
            with (
                tracer.start_as_current_span(f"execute_tool ask {city}"),
                remote_agent(city, url, tracer_provider=provider) as call,
            ):
                response = await asyncio.to_thread(
                    requests.post, url, data=city, headers=call.headers, timeout=10
                )
                response.raise_for_status()
            return response.text

        with tracer.start_as_current_span("caller"):
            answers = await asyncio.gather(
                tool("Nice"), tool("Bonn"), tool("Atlantis"), return_exceptions=True
            )
    assert answers[:2] == ["rain in Nice", "rain in Bonn"]
    assert isinstance(answers[2], requests.HTTPError)
    spans = otel_telemetry.spans()
    assert len({s.context.trace_id for s in spans}) == 1
    by_parent = {str(_parent_name(spans, s)): s for s in spans if s.name.startswith("invoke_agent")}
    for city in ("Nice", "Bonn", "Atlantis"):
        call = by_parent[f"execute_tool ask {city}"]
        assert call.kind is SpanKind.CLIENT
        run = by_parent[f"invoke_agent {city}"]
        assert (run.kind, run.name) == (SpanKind.INTERNAL, "invoke_agent weather")
    failed_call, failed_run = (
        by_parent["execute_tool ask Atlantis"],
        by_parent["invoke_agent Atlantis"],
    )
    assert failed_call.status.status_code is StatusCode.ERROR
    assert failed_call.attributes[A.ERROR_TYPE] == "HTTPError"  # type: ignore[index]
    assert failed_run.status.status_code is StatusCode.ERROR
    assert by_parent["execute_tool ask Nice"].status.status_code is StatusCode.UNSET


async def _failing_remote_run(telemetry: InMemoryTelemetry) -> None:
    async def agent() -> AsyncIterator[Any]:
        yield LLMCallStart(model="remote-model", provider="openai")
        raise RuntimeError("the remote agent failed")

    async for _ in telemetry.wrapper(agent_name="weather", step_spans=False)(agent()):
        pass


def test_continue_trace_reads_a_wsgi_environ_and_each_middleware_keeps_the_context_to_the_end(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A handler given the raw WSGI ``environ`` (``HTTP_TRACEPARENT``) continues the trace; the
    middleware keeps the context current while the server pulls each chunk and closes the
    body, and restores the server's after."""
    from agent_otel import ContinueTraceWSGIMiddleware

    call = remote_agent("a", tracer_provider=otel_telemetry.tracer_provider)
    headers = call.headers
    call.end()
    named = call.context
    expected = trace.get_current_span(named).get_span_context().span_id
    environ = {"REQUEST_METHOD": "POST", "HTTP_TRACEPARENT": headers["traceparent"],
               "wsgi.version": (1, 0)}  # fmt: skip
    with continue_trace(environ):
        assert trace.get_current_span().get_span_context().span_id == expected

    seen: list[int] = []

    class Body:
        def __iter__(self) -> Iterator[bytes]:
            for chunk in (b"a", b"b"):
                seen.append(trace.get_current_span().get_span_context().span_id)
                yield chunk

        def close(self) -> None:
            seen.append(trace.get_current_span().get_span_context().span_id)

    def app(environ: Any, start_response: Any) -> Any:
        seen.append(trace.get_current_span().get_span_context().span_id)
        return Body()

    before = otel_context.get_current()
    body = ContinueTraceWSGIMiddleware(app)(environ, lambda *a: None)
    assert otel_context.get_current() == before
    assert list(body) == [b"a", b"b"]
    body.close()  # type: ignore[attr-defined]
    assert seen == [expected] * 4
    assert otel_context.get_current() == before


@pytest.mark.parametrize(
    "body", [[b"hello"], (b"hello",), "file"], ids=["list", "tuple", "file_wrapper"]
)
def test_a_wsgi_body_read_without_the_apps_code_goes_to_the_server_as_it_is(body: Any) -> None:
    """The middleware wrapped every body, so a server no longer saw a one-chunk list's length
    (the standard library's server dropped ``Content-Length``) nor its own file wrapper (sent
    as a file): a body whose reading runs none of the app's code goes back as it is."""
    import io
    from wsgiref.handlers import SimpleHandler

    from agent_otel import ContinueTraceWSGIMiddleware

    returned: list[Any] = []
    served: list[Any] = []

    class Handler(SimpleHandler):
        def finish_response(self) -> None:
            served.append(self.result)  # what the server got back
            super().finish_response()

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        start_response("200 OK", [("Content-Type", "text/plain")])
        made = environ["wsgi.file_wrapper"](io.BytesIO(b"hello")) if body == "file" else body
        returned.append(made)
        return made

    out = io.BytesIO()
    environ = {"REQUEST_METHOD": "GET", "SERVER_PROTOCOL": "HTTP/1.1", "SERVER_NAME": "agent",
               "SERVER_PORT": "80", "wsgi.url_scheme": "http"}  # fmt: skip
    Handler(io.BytesIO(), out, io.StringIO(), environ).run(ContinueTraceWSGIMiddleware(app))
    head, _, sent = out.getvalue().partition(b"\r\n\r\n")
    assert sent == b"hello"
    assert served == returned
    if body != "file":  # (a file's length is the server's to find)
        assert b"Content-Length: 5" in head.split(b"\r\n")


@pytest.mark.parametrize(
    "carrier",
    [
        [(b"traceparent", b"00-{t}-{s}-01"), (b"tracestate", b"a=1"), (b"baggage", b"k=1"),
         (b"TraceState", b"b=2"), (b"baggage", b"j=2")],
        {"traceparent": "00-{t}-{s}-01", "tracestate": ["a=1", "b=2"], "baggage": ("k=1", "j=2")},
        {"HTTP_TRACEPARENT": "00-{t}-{s}-01", "HTTP_TRACESTATE": "a=1,b=2",
         "HTTP_BAGGAGE": "k=1,j=2"},
    ],
    ids=["asgi-pairs", "list-values", "wsgi-environ"],
)  # fmt: skip
def test_a_list_field_sent_as_several_headers_is_read_whole(carrier: Any) -> None:
    """W3C ``tracestate`` and ``baggage`` may arrive as several headers (an ASGI scope's
    pairs, aiohttp's multidict), which a receiver joins in order: none is dropped."""
    t, s = "1" * 32, "2" * 16

    def filled(value: Any) -> Any:
        if isinstance(value, bytes):
            return value.replace(b"{t}", t.encode()).replace(b"{s}", s.encode())
        if isinstance(value, str):
            return value.format(t=t, s=s)
        return value

    if isinstance(carrier, list):
        carrier = [(k, filled(v)) for k, v in carrier]
    else:
        carrier = {k: filled(v) for k, v in carrier.items()}
    context = extract_context(carrier)
    span = trace.get_current_span(context).get_span_context()
    assert (span.trace_id, span.span_id) == (int(t, 16), int(s, 16))
    assert list(span.trace_state.items()) == [("a", "1"), ("b", "2")]
    assert {k: baggage.get_baggage(k, context) for k in ("k", "j")} == {"k": "1", "j": "2"}


_MEMBERS = st.lists(
    st.tuples(st.from_regex(r"[a-z][a-z0-9]{0,7}", fullmatch=True),
              st.text("xyz0123456789", min_size=1, max_size=200)),
    min_size=33, max_size=250, unique_by=lambda m: m[0],
)  # fmt: skip
"""Past the tracestate's 32 members; past baggage's 180 members or 8192 bytes, often."""


@settings(max_examples=60, deadline=None)
@given(_MEMBERS, st.integers(1, 12), st.sampled_from(["tracestate", "baggage"]))
@example(members=[(f"k{i}", "v" * 90) for i in range(100)], headers=2, field="baggage")
@example(members=[(f"k{i}", "v") for i in range(40)], headers=2, field="tracestate")
def test_list_fields_past_the_limits_keep_their_first_members_as_the_specs_truncate(
    members: list[tuple[str, str]], headers: int, field: str
) -> None:
    """``tracestate`` and ``baggage`` over the limits (32 tracestate members; 180 baggage
    members, 8192 bytes), which several headers joined easily are, each within them: the
    receiver keeps the first members whole, as the W3C specs truncate, and drops the rest
    (OpenTelemetry's propagators dropped the whole field: all of the caller's vendors'
    tracestate, all its baggage). The trace continues either way."""
    t, s = "3" * 32, "4" * 16
    pairs = [f"{k}={v}" for k, v in members]
    size = -(-len(pairs) // headers)
    carrier = [("traceparent", f"00-{t}-{s}-01")] + [
        (field, ",".join(pairs[i : i + size])) for i in range(0, len(pairs), size)
    ]
    context = extract_context(carrier)
    span = trace.get_current_span(context).get_span_context()
    assert (span.trace_id, span.span_id) == (int(t, 16), int(s, 16))
    if field == "tracestate":
        got = list(span.trace_state.items())
        limit = 32
    else:
        got = list(baggage.get_all(context).items())
        limit = next(n for n in range(len(pairs), -1, -1)
                     if n <= 180 and len(",".join(pairs[:n])) <= 8192)  # fmt: skip
    assert got == members[:limit]


async def test_the_middleware_passes_other_scopes_through_untouched() -> None:
    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append((scope["type"], trace.get_current_span()))

    middleware = ContinueTraceMiddleware(app)
    await middleware({"type": "lifespan"}, None, None)
    await middleware({"type": "http", "headers": [(b"traceparent", b"garbage")]}, None, None)
    assert seen == [("lifespan", trace.INVALID_SPAN), ("http", trace.INVALID_SPAN)]


# --- never hurt the call -------------------------------------------------------------------------
@pytest.mark.internal_errors
@pytest.mark.parametrize("method", ["get_tracer", *METHODS])
@pytest.mark.parametrize("fails", [False, True], ids=["returns", "raises"])
def test_a_tracer_that_raises_anywhere_costs_the_call_nothing(
    otel_telemetry: InMemoryTelemetry, method: str, fails: bool
) -> None:
    """The block's result and its own exception are the same with a tracer that raises in
    ``method``; a description arriving late (the A2A card) too."""
    provider = HostileTracerProvider(otel_telemetry.tracer_provider, method, "invoke_agent")
    error = KeyError("the agent's own")
    raised: list[BaseException] = []
    try:
        with remote_agent(url="http://h:1", tracer_provider=provider) as call:
            call.describe("late", "http://h:2", "d", "v")
            assert isinstance(call.headers, dict)
            call.set_conversation_id("c")
            call.fail("503")
            if fails:
                raise error
    except KeyError as caught:
        raised.append(caught)
    assert raised == ([error] if fails else [])
    assert not fails or raised[0] is error
    assert otel_context.get_current() == otel_context.Context()  # the caller's context is back


HOSTILE = st.one_of(
    st.none(),
    st.text(),  # surrogates, controls, NULs
    st.sampled_from(["x" * 300_000, "é" * 150_000 + "\ud800"]),  # past every text bound
    st.integers(),
    st.binary(max_size=8),
    st.builds(object),
)


@settings(max_examples=60, deadline=None)
@given(name=HOSTILE, url=HOSTILE, conversation_id=HOSTILE, description=HOSTILE, answer=HOSTILE)
def test_any_values_a_caller_or_a_remote_agent_gives_make_a_span_that_encodes(
    name: Any, url: Any, conversation_id: Any, description: Any, answer: Any
) -> None:
    """Names, URLs and ids from a caller, a card or a response are data: whatever they are,
    the call goes on and its span is exported (OTLP-encodable, bounded, scrubbed)."""
    telemetry = InMemoryTelemetry()
    with remote_agent(
        name,
        url,
        conversation_id=conversation_id,
        description=description,
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
    ) as call:
        call.describe(answer, answer, answer, answer)
        call.set_conversation_id(answer)
        call.fail(answer, description)
        assert isinstance(call.headers, dict)
    (span,) = telemetry.spans()
    assert_encodes([span])
    assert span.kind is SpanKind.CLIENT and span.name.startswith("invoke_agent")
    assert all(isinstance(v, (str, int)) for v in (span.attributes or {}).values())


def test_remote_agent_takes_the_calls_options_and_only_the_call_takes_a_parent(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """One list of options for both doors: every one works through ``remote_agent()`` as
    through ``RemoteAgentCall``; ``parent`` is the class's alone; a misspelt one raises."""
    options: dict[str, Any] = {
        "conversation_id": "conv-1",
        "description": "forecasts",
        "version": "2",
        "provider": "openai",
        "tracer_provider": otel_telemetry.tracer_provider,
        "meter_provider": None,
        "scrub": False,
    }
    remote_agent("a", "http://h:1", **options).end()
    parent = trace.set_span_in_context(
        otel_telemetry.tracer_provider.get_tracer("t").start_span("outer")
    )
    RemoteAgentCall("b", "http://h:1", parent=parent, **options).end()
    a, b = otel_telemetry.span("invoke_agent a"), otel_telemetry.span("invoke_agent b")
    same = {k: v for k, v in (a.attributes or {}).items() if k != A.AGENT_NAME}
    assert same == {k: v for k, v in (b.attributes or {}).items() if k != A.AGENT_NAME}
    assert same[A.CONVERSATION_ID] == "conv-1" and same[A.PROVIDER_NAME] == "openai"
    assert b.parent is not None and a.parent is None
    with pytest.raises(TypeError, match="parent"):
        remote_agent("a", parent=parent)  # type: ignore[call-arg]
    for door in (remote_agent, RemoteAgentCall):
        with pytest.raises(TypeError, match="conversaton_id"):
            door("a", conversaton_id="x")  # type: ignore[call-arg]


def test_names_urls_and_ids_of_a_str_subclass_are_read_as_the_str_they_are(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A remote agent's name, URL and conversation id, and a run's ids from ``run_identity``,
    of a ``str`` subclass whose own methods (length, hash, ``format()``) raise: each is the
    ``str`` it is on the spans, and nothing is reported as an internal error."""
    s = LyingStr
    with (
        run_identity(session_id=s("sess-1")),
        remote_agent(
            s("weather"),
            s("https://agents.example/v1"),
            conversation_id=s("conv-1"),
            tracer_provider=otel_telemetry.tracer_provider,
        ) as call,
    ):
        call.set_conversation_id(s("conv-2"))
    span = otel_telemetry.span("invoke_agent weather")
    attributes = dict(span.attributes or {})
    assert attributes[A.AGENT_NAME] == "weather"
    assert attributes[A.SERVER_ADDRESS] == "agents.example"
    assert attributes[A.CONVERSATION_ID] == "conv-1"
    assert all(not isinstance(v, LyingStr) for v in attributes.values())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_call_held_for_its_task_is_the_parents_in_a_forked_child(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A call held open for its remote task (an A2A task still at work) is the process's to
    end: a forked child (a pool's worker) holds none of it, so its polling or its exit never
    ends the parent's span a second time; the parent still ends it when it learns the end."""
    from agent_otel.remote._held import HELD

    call = RemoteAgentCall("weather", tracer_provider=otel_telemetry.tracer_provider)
    HELD.hold("task-forked", call)
    pid = os.fork()
    if pid == 0:  # the child: nothing held
        os._exit(0 if not HELD else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert otel_telemetry.open_spans() == ["invoke_agent weather"]
    HELD.ended("task-forked", "TASK_STATE_FAILED")
    [span] = otel_telemetry.spans()
    assert span.status.status_code is StatusCode.ERROR


def test_a_held_call_dropped_or_followed_on_ends_incomplete_and_one_told_its_end_does_not(
    otel_telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls held for their remote tasks: one whose task a newer call follows on (the caller
    sent another message on it), and the oldest once more than the limit are held, end without
    anyone learning how their task ended. They ended as plain successes; each now says
    ``agent_otel.incomplete`` (no end reason: the process is not shutting down). A held call
    told its task's end (``tasks/get``) is complete: neither key."""
    from agent_otel.remote import _held

    monkeypatch.setattr(_held, "MAX_HELD", 2)
    held = _held.HeldCalls()
    provider = otel_telemetry.tracer_provider
    calls = {name: RemoteAgentCall(name, tracer_provider=provider) for name in "abcde"}
    held.hold("t1", calls["a"])
    held.hold("t1", calls["b"])  # follows t1 on: a ends
    held.hold("t2", calls["c"])
    held.hold("t3", calls["d"])  # past the limit: b, the oldest, ends
    held.ended("t2", None)  # c: told its task completed
    assert sorted(otel_telemetry.open_spans()) == ["invoke_agent d", "invoke_agent e"]
    held.hold("t4", calls["e"])
    held.end_where(lambda span: True)  # a shutdown
    ended = {s.name.split()[-1]: dict(s.attributes or {}) for s in otel_telemetry.spans()}
    for name in "ab":
        assert ended[name][A.INCOMPLETE] is True, name
        assert A.END_REASON not in ended[name], name
    assert A.INCOMPLETE not in ended["c"] and A.END_REASON not in ended["c"]
    for name in "de":
        assert (ended[name][A.INCOMPLETE], ended[name][A.END_REASON]) == (True, "shutdown"), name
    assert all(s.status.status_code is StatusCode.UNSET for s in otel_telemetry.spans())
