"""A remote agent called over A2A from inside a run continues the caller's trace.

A real a2a-sdk server (its own Starlette app under uvicorn, on a free loopback port, in a
thread of its own: nothing of the caller's context can leak into it but the request) runs an
agent traced by ``otel_wrapper()``. A traced agent's tool calls it with a2a-sdk's own client,
once and twice in parallel. Each run must be one trace, every span under the exact parent:

    invoke_agent caller > step > execute_tool ask_weather > invoke_agent weather [CLIENT]
        > invoke_agent weather (the remote run) > chat remote-model

and A2A's ``contextId`` is ``gen_ai.conversation.id`` on both sides of the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("a2a.server.routes", reason="a2a-sdk[http-server] is not installed")
pytest.importorskip("uvicorn")

from a2a.client import ClientCallContext, ClientConfig, create_client
from a2a.helpers.proto_helpers import (
    get_message_text,
    new_task_from_user_message,
    new_text_message,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    CancelTaskRequest,
    GetTaskRequest,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from benchmarks._process import free_port
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind
from starlette.applications import Starlette

from _serving import serve
from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import (
    FunctionCall,
    LLMCallEnd,
    LLMCallStart,
    Message,
    StepBoundary,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agent_contract.scope import tool_scope
from agent_otel import ContinueTraceMiddleware, end_open_runs, instrument
from agent_otel import _attributes as A
from agent_otel.remote.a2a import trace_a2a_client, trace_a2a_executor
from agent_otel.testing import InMemoryTelemetry
from test_hostile_endings import HostileTracerProvider

pytestmark = pytest.mark.heavy  # real servers on loopback, 10 s: run by the heavy suite


# --- the remote agent: an a2a-sdk server whose executor runs an agent traced by otel_wrapper ---
class WeatherExecutor(AgentExecutor):
    """Answers with the forecast for the city asked; the answer is an agent run of its own."""

    def __init__(self, telemetry: InMemoryTelemetry) -> None:
        self.telemetry = telemetry

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        city = context.get_user_input()

        async def agent() -> AsyncIterator[Any]:
            yield LLMCallStart(model="remote-model", provider="openai")
            # The two parallel calls overlap on the server too; "slow" is still running when
            # the caller cancels it.
            await asyncio.sleep(0.5 if city == "slow" else 0.01)
            yield TextDelta(text=f"sunny in {city}")
            yield LLMCallEnd(model="remote-model")

        wrapper = self.telemetry.wrapper(agent_name="weather")
        text = "".join([e.text async for e in wrapper(agent()) if isinstance(e, TextDelta)])
        await event_queue.enqueue_event(
            new_text_message(text, context_id=context.context_id, task_id=context.task_id)
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


class InstrumentedWeather(AgentExecutor):
    """The same agent, an event-contract agent traced by ``instrument()``."""

    def __init__(self, telemetry: InMemoryTelemetry) -> None:
        self.telemetry = telemetry

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        city = context.get_user_input()
        script = [
            LLMCallStart(model="remote-model", provider="openai"),
            TextDelta(text=f"sunny in {city}"),
            LLMCallEnd(model="remote-model"),
        ]
        agent = instrument(
            ScriptedAgent(script), name="weather", tracer_provider=self.telemetry.tracer_provider
        )
        events = [e async for e in agent.stream([Message(role="user", content=city)])]
        text = "".join(e.text for e in events if isinstance(e, TextDelta))
        await event_queue.enqueue_event(
            new_text_message(text, context_id=context.context_id, task_id=context.task_id)
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


@dataclass
class Server:
    url: str
    port: int
    card: AgentCard
    requests: list[dict[str, str]] = field(default_factory=list)


def _card(url: str, streaming: bool = False, binding: str = "JSONRPC") -> AgentCard:
    return AgentCard(
        name="weather",
        description="Forecasts by city",
        version="1.2.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding, protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="forecast", name="forecast", description="A city's weather", tags=["weather"]
            )
        ],
    )


def _serve(
    executor: AgentExecutor, streaming: bool, middleware: bool = False, rest: bool = False
) -> Iterator[Server]:
    """The a2a-sdk app, served for real (see ``_serving``): JSON-RPC, or ``rest`` (HTTP+JSON);
    ``middleware``: behind ``ContinueTraceMiddleware``."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    card = _card(url, streaming, "HTTP+JSON" if rest else "JSONRPC")
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_rest_routes(handler) if rest else create_jsonrpc_routes(handler, "/")
    app = Starlette(routes=[*create_agent_card_routes(card), *routes])
    if middleware:
        app.add_middleware(ContinueTraceMiddleware)
    server = Server(url=url, port=port, card=card)
    with serve(app, server.requests, port=port):
        yield server


def _serve_grpc(executor: AgentExecutor, streaming: bool) -> Iterator[Server]:
    """The a2a-sdk gRPC service (``GrpcHandler``), served for real on a loopback port by
    ``grpc.aio`` on a loop and thread of its own (nothing of the caller's context reaches it
    but what a call carries: its metadata)."""
    import a2a.types.a2a_pb2_grpc as a2a_grpc
    import grpc.aio
    from a2a.server.request_handlers import GrpcHandler

    port = free_port()
    card = _card(f"127.0.0.1:{port}", streaming, "GRPC")
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    loop = asyncio.new_event_loop()
    started, stopping = threading.Event(), asyncio.Event()

    async def run() -> None:
        server = grpc.aio.server()
        a2a_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        started.set()
        await stopping.wait()
        await server.stop(None)

    thread = threading.Thread(target=loop.run_until_complete, args=(run(),), daemon=True)
    thread.start()
    assert started.wait(10), "the gRPC server did not start"
    try:
        yield Server(url=card.supported_interfaces[0].url, port=port, card=card)
    finally:
        loop.call_soon_threadsafe(stopping.set)
        thread.join(10)
        loop.close()


def _grpc_channel(url: str) -> Any:
    """The channel the a2a-sdk's gRPC transport calls ``url`` on (plain, on loopback)."""
    import grpc.aio

    return grpc.aio.insecure_channel(url)


@pytest.fixture(params=[False, True], ids=["message:send", "message:stream"])
def weather(otel_telemetry: InMemoryTelemetry, request: pytest.FixtureRequest) -> Iterator[Server]:
    """The remote agent, answering in one response or over a stream (server-sent events)."""
    yield from _serve(trace_a2a_executor(WeatherExecutor(otel_telemetry)), request.param)


# --- the caller: a traced agent whose tools call the remote agent --------------------------------
async def _ask(
    telemetry: InMemoryTelemetry, server: Server, city: str, context_id: str | None, **options: Any
) -> str:
    """One call of the remote agent, as a tool body would make it with a2a-sdk's client."""
    bindings = [i.protocol_binding for i in server.card.supported_interfaces]
    config = ClientConfig(
        streaming=True, supported_protocol_bindings=bindings, grpc_channel_factory=_grpc_channel
    )
    client = await create_client(server.card, config)
    client = trace_a2a_client(client, tracer_provider=telemetry.tracer_provider, **options)
    message = new_text_message(city, context_id=context_id, role=Role.ROLE_USER)
    answers = []
    async with client:
        async for response in client.send_message(SendMessageRequest(message=message)):
            answers.append(get_message_text(response.message))
    return " ".join(answers)


async def _caller_run(
    telemetry: InMemoryTelemetry, calls: list[tuple[str, str, str | None]], server: Server
) -> list[str]:
    """The caller's run: the model asks for ``calls`` (id, city, context id), each tool body in
    a task of its own under ``tool_scope``, as a framework adapter runs it."""

    async def body(call_id: str, city: str, context_id: str | None) -> str:
        with tool_scope(call_id, "ask_weather"):
            return await _ask(telemetry, server, city, context_id)

    answers: list[str] = []

    async def stream() -> AsyncIterator[Any]:
        yield LLMCallStart(model="caller-model", provider="openai")
        tasks = [asyncio.create_task(body(*call)) for call in calls]
        for call_id, city, _ in calls:
            arguments = f'{{"city": "{city}"}}'
            yield ToolCall(
                id=call_id, function=FunctionCall(name="ask_weather", arguments=arguments)
            )
        yield LLMCallEnd(model="caller-model")
        answers.extend(await asyncio.gather(*tasks))
        for (call_id, _, _), answer in zip(calls, answers, strict=True):
            yield ToolResult(tool_call_id=call_id, content=answer)
        yield StepBoundary()

    async for _ in telemetry.wrapper(agent_name="caller")(stream()):
        pass
    return answers


# --- reading the trace -------------------------------------------------------------------------
def _parent(spans: list[ReadableSpan], span: ReadableSpan) -> ReadableSpan | None:
    if span.parent is None:
        return None
    found = [s for s in spans if s.context.span_id == span.parent.span_id]
    assert len(found) == 1, f"the parent of {span.name} is not among the finished spans"
    return found[0]


def _tool_span(spans: list[ReadableSpan], call_id: str) -> ReadableSpan:
    (tool,) = [s for s in spans if (s.attributes or {}).get(A.TOOL_CALL_ID) == call_id]
    return tool


def _children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def _assert_chain(spans: list[ReadableSpan], call_id: str, port: int, context_id: str) -> None:
    """tool span > invoke_agent CLIENT > the remote run > its chat, nothing else in between."""
    tool = _tool_span(spans, call_id)
    (client,) = _children(spans, tool)
    assert (client.name, client.kind) == ("invoke_agent weather", SpanKind.CLIENT)
    (remote,) = _children(spans, client)
    assert (remote.name, remote.kind) == ("invoke_agent weather", SpanKind.INTERNAL)
    (step,) = _children(spans, remote)
    assert step.name == "step 0"
    (chat,) = _children(spans, step)
    assert chat.name == "chat remote-model"
    assert _children(spans, chat) == []
    for span in (client, remote, step, chat):
        assert (span.attributes or {}).get(A.CONVERSATION_ID) == context_id, span.name
    assert dict(client.attributes or {}) == {
        A.OPERATION_NAME: "invoke_agent",
        A.PROVIDER_NAME: "unknown",
        A.AGENT_NAME: "weather",
        A.AGENT_DESCRIPTION: "Forecasts by city",
        A.AGENT_VERSION: "1.2.0",
        A.SERVER_ADDRESS: "127.0.0.1",
        A.SERVER_PORT: port,
        A.CONVERSATION_ID: context_id,
    }


def _caller_tree(spans: list[ReadableSpan], tool_ids: list[str]) -> None:
    """The caller's own spans: run > step > chat and the tool spans, one root in all."""
    roots = [s for s in spans if s.parent is None]
    assert [(r.name, r.kind) for r in roots] == [("invoke_agent caller", SpanKind.INTERNAL)]
    (step,) = _children(spans, roots[0])
    assert step.name == "step 0"
    assert sorted(s.name for s in _children(spans, step)) == sorted(
        ["chat caller-model"] + ["execute_tool ask_weather"] * len(tool_ids)
    )
    assert len({s.context.trace_id for s in spans}) == 1


# --- the tests ---------------------------------------------------------------------------------
async def test_one_remote_call_continues_the_callers_trace(
    otel_telemetry: InMemoryTelemetry, weather: Server
) -> None:
    answers = await _caller_run(otel_telemetry, [("call-1", "Paris", "ctx-paris")], weather)
    assert answers == ["sunny in Paris"]
    spans = otel_telemetry.spans()
    _caller_tree(spans, ["call-1"])
    _assert_chain(spans, "call-1", weather.port, "ctx-paris")
    (client,) = [s for s in spans if s.name == "invoke_agent weather" and s.kind is SpanKind.CLIENT]
    # W3C trace context on the request, naming the CLIENT span.
    (request,) = weather.requests
    trace_id = format(client.context.trace_id, "032x")
    span_id = format(client.context.span_id, "016x")
    assert request["traceparent"] == f"00-{trace_id}-{span_id}-01"


async def test_two_parallel_remote_calls_each_land_under_their_own_tool(
    otel_telemetry: InMemoryTelemetry, weather: Server
) -> None:
    calls = [("call-1", "Paris", "ctx-paris"), ("call-2", "Oslo", "ctx-oslo")]
    answers = await _caller_run(otel_telemetry, calls, weather)
    assert answers == ["sunny in Paris", "sunny in Oslo"]
    spans = otel_telemetry.spans()
    _caller_tree(spans, ["call-1", "call-2"])
    _assert_chain(spans, "call-1", weather.port, "ctx-paris")
    _assert_chain(spans, "call-2", weather.port, "ctx-oslo")
    assert len(spans) == 3 + 2 * 5  # run, step, chat; per call: tool, client, run, step, chat


async def test_a_remote_agent_traced_by_instrument_is_the_child_too(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    for server in _serve(trace_a2a_executor(InstrumentedWeather(otel_telemetry)), True):
        answers = await _caller_run(otel_telemetry, [("call-1", "Oslo", "ctx-oslo")], server)
        assert answers == ["sunny in Oslo"]
        spans = otel_telemetry.spans()
        _caller_tree(spans, ["call-1"])
        _assert_chain(spans, "call-1", server.port, "ctx-oslo")


@pytest.mark.parametrize("streaming", [False, True], ids=["SendMessage", "SendStreamingMessage"])
async def test_the_grpc_binding_continues_the_trace_too(
    otel_telemetry: InMemoryTelemetry, streaming: bool
) -> None:
    """Over gRPC the SDK sends the call's service parameters as its metadata, and the
    executor reads the W3C context there: two parallel calls, each remote run under its own
    CLIENT span, the agent's address read off its ``host:port`` target."""
    pytest.importorskip("grpc", reason="a2a-sdk[grpc] is not installed")
    executor = trace_a2a_executor(WeatherExecutor(otel_telemetry))
    for server in _serve_grpc(executor, streaming):
        calls = [("call-1", "Paris", "ctx-paris"), ("call-2", "Oslo", "ctx-oslo")]
        answers = await _caller_run(otel_telemetry, calls, server)
        assert answers == ["sunny in Paris", "sunny in Oslo"]
        spans = otel_telemetry.spans()
        _caller_tree(spans, ["call-1", "call-2"])
        _assert_chain(spans, "call-1", server.port, "ctx-paris")
        _assert_chain(spans, "call-2", server.port, "ctx-oslo")


@pytest.mark.parametrize("streaming", [False, True], ids=["message:send", "message:stream"])
async def test_the_rest_binding_continues_the_trace_too(
    otel_telemetry: InMemoryTelemetry, streaming: bool
) -> None:
    """HTTP+JSON sends the service parameters as headers as JSON-RPC does."""
    executor = trace_a2a_executor(WeatherExecutor(otel_telemetry))
    for server in _serve(executor, streaming, rest=True):
        calls = [("call-1", "Lyon", "ctx-lyon"), ("call-2", "Pune", "ctx-pune")]
        assert await _caller_run(otel_telemetry, calls, server) == [
            "sunny in Lyon",
            "sunny in Pune",
        ]
        spans = otel_telemetry.spans()
        _caller_tree(spans, ["call-1", "call-2"])
        _assert_chain(spans, "call-1", server.port, "ctx-lyon")
        _assert_chain(spans, "call-2", server.port, "ctx-pune")


async def test_a_context_id_the_server_makes_is_the_conversation_id_on_both_sides(
    otel_telemetry: InMemoryTelemetry, weather: Server
) -> None:
    """No contextId on the request: the server generates one; both sides record that one."""
    await _caller_run(otel_telemetry, [("call-1", "Rome", None)], weather)
    spans = otel_telemetry.spans()
    remote = next(
        s for s in spans if s.name == "invoke_agent weather" and s.kind is SpanKind.INTERNAL
    )
    generated = (remote.attributes or {}).get(A.CONVERSATION_ID)
    assert isinstance(generated, str) and generated
    _assert_chain(spans, "call-1", weather.port, generated)


async def test_without_tracing_on_the_client_the_remote_run_is_another_trace(
    otel_telemetry: InMemoryTelemetry, weather: Server
) -> None:
    """The control: a2a-sdk 1.3 injects nothing itself, so without ``trace_a2a_client`` the
    remote run starts a trace of its own (the gap this module closes)."""
    client = await create_client(weather.card)
    message = new_text_message("Lima", role=Role.ROLE_USER)
    tracer = otel_telemetry.tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("caller"):
        async with client:
            async for _ in client.send_message(SendMessageRequest(message=message)):
                pass
    assert "traceparent" not in weather.requests[0]
    assert len({s.context.trace_id for s in otel_telemetry.spans()}) == 2


@pytest.mark.parametrize("middleware", [False, True], ids=["executor", "middleware"])
@pytest.mark.parametrize("traceparent", [None, "00-zz-garbage-01"], ids=["none", "malformed"])
async def test_a_request_naming_no_parent_served_in_the_callers_process_is_a_trace_of_its_own(
    otel_telemetry: InMemoryTelemetry, traceparent: str | None, middleware: bool
) -> None:
    """The app served in the caller's process (httpx's ``ASGITransport``), called from a
    traced tool of a run with a session and a user by a client that sends no trace context, or
    a ``traceparent`` that does not parse: the executor ran in the caller's task context, so its
    run was nested in the caller's, with the caller's ids. W3C Trace Context asks a receiver
    to start a new trace then: the run is a root, its conversation id the request's."""
    import httpx

    url = "http://agents.internal/"
    card = _card(url)
    handler = DefaultRequestHandler(
        agent_executor=trace_a2a_executor(WeatherExecutor(otel_telemetry)),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])
    if middleware:
        app.add_middleware(ContinueTraceMiddleware)
    headers = {} if traceparent is None else {"traceparent": traceparent}

    async def body() -> str:
        with tool_scope("call-1", "ask_weather"):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, headers=headers) as http:
                client = await create_client(card, ClientConfig(httpx_client=http))
                message = new_text_message("Lima", context_id="ctx-lima", role=Role.ROLE_USER)
                request = SendMessageRequest(message=message)
                return " ".join(
                    [get_message_text(r.message) async for r in client.send_message(request)]
                )

    async def stream() -> AsyncIterator[Any]:
        yield LLMCallStart(model="caller-model")
        yield ToolCall(id="call-1", function=FunctionCall(name="ask_weather", arguments="{}"))
        yield LLMCallEnd(model="caller-model")
        yield ToolResult(tool_call_id="call-1", content=await body())

    wrapper = otel_telemetry.wrapper(agent_name="caller", session_id="s-1", user_id="u-1")
    [_ async for _ in wrapper(stream())]
    spans = otel_telemetry.spans()
    (caller,) = [s for s in spans if s.name == "invoke_agent caller"]
    (run,) = [s for s in spans if s.name == "invoke_agent weather"]
    assert run.parent is None
    assert run.context.trace_id != caller.context.trace_id
    attributes = dict(run.attributes or {})
    assert attributes[A.CONVERSATION_ID] == "ctx-lima"
    assert not {"session.id", "user.id"} & set(attributes)


# --- every way a call can end --------------------------------------------------------------------
def _client_span(telemetry: InMemoryTelemetry) -> ReadableSpan:
    (span,) = [
        s for s in telemetry.spans() if s.kind is SpanKind.CLIENT and "invoke_agent" in s.name
    ]
    return span


async def test_an_unreachable_agent_fails_the_call_span_and_the_error_passes_through(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    card = _card(f"http://127.0.0.1:{free_port()}/")  # nothing listens there
    inner = await create_client(card, ClientConfig(streaming=False))
    client = trace_a2a_client(inner, tracer_provider=otel_telemetry.tracer_provider)
    raised: list[BaseException] = []

    async def failing() -> AsyncIterator[Any]:
        async with client:
            try:
                async for _ in client.send_message(
                    SendMessageRequest(message=new_text_message("x", role=Role.ROLE_USER))
                ):
                    pass
            except Exception as error:
                raised.append(error)
                raise
        yield  # pragma: no cover

    with pytest.raises(Exception) as caught:
        async for _ in failing():
            pass
    assert caught.value is raised[0]  # the very object the SDK raised
    span = _client_span(otel_telemetry)
    assert span.status.status_code.name == "ERROR"
    assert span.attributes[A.ERROR_TYPE] == type(raised[0]).__qualname__  # type: ignore[index]
    assert [e.name for e in span.events] == ["exception"]
    assert span.attributes[A.SERVER_PORT] == int(
        card.supported_interfaces[0].url.split(":")[2][:-1]
    )  # type: ignore[index]


async def test_a_caller_that_stops_reading_ends_the_span_without_an_error(
    otel_telemetry: InMemoryTelemetry, weather: Server
) -> None:
    inner = await create_client(weather.card, ClientConfig(streaming=True))
    client = trace_a2a_client(inner, tracer_provider=otel_telemetry.tracer_provider)
    message = new_text_message("Kyiv", role=Role.ROLE_USER)
    async with client:
        responses = client.send_message(SendMessageRequest(message=message))
        async for _ in responses:
            break
        await responses.aclose()  # type: ignore[attr-defined]
    span = _client_span(otel_telemetry)
    assert span.end_time is not None
    assert span.status.status_code.name == "UNSET"
    assert A.ERROR_TYPE not in (span.attributes or {})


async def test_a_cancelled_call_ends_its_span_as_cancelled(
    otel_telemetry: InMemoryTelemetry, weather: Server
) -> None:
    inner = await create_client(weather.card)
    client = trace_a2a_client(inner, tracer_provider=otel_telemetry.tracer_provider)

    async def call() -> None:
        message = new_text_message("slow", role=Role.ROLE_USER)
        async for _ in client.send_message(SendMessageRequest(message=message)):
            pass

    async with client:
        task = asyncio.create_task(call())
        for _ in range(1000):  # until the request is in flight (the remote run not done)
            if weather.requests:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    span = _client_span(otel_telemetry)
    assert span.attributes[A.ERROR_TYPE] == "CancelledError"  # type: ignore[index]


class LongWeather(AgentExecutor):
    """A remote agent whose task works until the caller cancels it; its ``cancel`` notes the
    span current as it runs (the context the cancel request's headers named)."""

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()
        self.cancel_parent: Any = None

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        await TaskUpdater(event_queue, task.id, task.context_id).start_work()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.cancelled.wait(), 10)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.cancel_parent = trace.get_current_span().get_span_context()
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()
        self.cancelled.set()


async def _start_read_cancel(client: Any) -> AsyncIterator[Any]:
    """A caller whose tool starts a remote task, reads it (once with service parameters of its
    own) and cancels it."""
    own = ClientCallContext(service_parameters={"x-tenant": "t-1", "traceparent": "kept"})
    yield LLMCallStart(model="caller-model")
    yield ToolCall(id="c1", function=FunctionCall(name="start_forecast", arguments="{}"))
    yield LLMCallEnd(model="caller-model")
    with tool_scope("c1", "start_forecast"):
        message = new_text_message("Oslo", role=Role.ROLE_USER)
        async with client:
            async for response in client.send_message(SendMessageRequest(message=message)):
                task_id = response.task.id
                break
            await client.get_task(GetTaskRequest(id=task_id))
            await client.get_task(GetTaskRequest(id=task_id), context=own)
            cancelled = await client.cancel_task(CancelTaskRequest(id=task_id))
    yield ToolResult(tool_call_id="c1", content=str(cancelled.status.state))


async def test_a_tools_other_requests_carry_its_trace_and_the_remote_cancel_runs_in_it(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A tool that starts a remote task, reads it and cancels it: ``get_task`` and
    ``cancel_task`` open no span, and send the tool span's W3C context (the caller's own
    service parameters kept), so the executor's ``cancel`` runs in the caller's trace, under
    that tool, as the decorated executor promises."""
    executor = LongWeather()
    for server in _serve(trace_a2a_executor(executor), streaming=True):
        inner = await create_client(server.card, ClientConfig(streaming=True))
        client = trace_a2a_client(inner, tracer_provider=otel_telemetry.tracer_provider)
        async for _ in otel_telemetry.wrapper(agent_name="caller")(_start_read_cancel(client)):
            pass
    tool = _tool_span(otel_telemetry.spans(), "c1")
    traceparent = f"00-{tool.context.trace_id:032x}-{tool.context.span_id:016x}-01"
    _, read, read_own, cancel = server.requests  # send_message first: its own CLIENT span
    assert read["traceparent"] == cancel["traceparent"] == traceparent
    assert (read_own["traceparent"], read_own["x-tenant"]) == ("kept", "t-1")
    parent = executor.cancel_parent
    assert (parent.trace_id, parent.span_id) == (tool.context.trace_id, tool.context.span_id)
    # no span of their own: the tool's children are the one call's CLIENT span
    assert [s.name for s in _children(otel_telemetry.spans(), tool)] == ["invoke_agent weather"]


async def test_a_card_given_names_the_span_at_its_start_and_leaves_the_client_as_it_was(
    otel_telemetry: InMemoryTelemetry, weather: Server
) -> None:
    """With ``card=`` nothing is added to the SDK's client; ``agent_name``/``url`` win."""
    inner = await create_client(weather.card)
    client = trace_a2a_client(
        inner,
        card=weather.card,
        agent_name="forecaster",
        url="https://agents.example:8443/weather",
        provider="openai",
        tracer_provider=otel_telemetry.tracer_provider,
    )
    message = new_text_message("Lagos", context_id="ctx-lagos", role=Role.ROLE_USER)
    async with client:
        async for _ in client.send_message(SendMessageRequest(message=message)):
            pass
    assert inner._interceptors == []  # type: ignore[attr-defined]
    span = _client_span(otel_telemetry)
    assert span.name == "invoke_agent forecaster"
    assert {
        k: span.attributes[k]
        for k in (A.AGENT_NAME, A.SERVER_ADDRESS, A.SERVER_PORT, A.PROVIDER_NAME, A.AGENT_VERSION)
    } == {  # type: ignore[index]
        A.AGENT_NAME: "forecaster",
        A.SERVER_ADDRESS: "agents.example",
        A.SERVER_PORT: 8443,
        A.PROVIDER_NAME: "openai",
        A.AGENT_VERSION: "1.2.0",
    }


class FailingWeather(AgentExecutor):
    """A remote agent that answers, and says its task failed (or was rejected): the SDK
    raises nothing on the caller's side."""

    def __init__(self, state: int) -> None:
        self.state = state

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        answer = new_text_message("no forecast", context_id=context.context_id,
                                  task_id=context.task_id)  # fmt: skip
        await updater.update_status(self.state, message=answer)  # type: ignore[arg-type]

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


@pytest.mark.parametrize("streaming", [False, True], ids=["message:send", "message:stream"])
@pytest.mark.parametrize(
    "state",
    [TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED],
    ids=["failed", "rejected"],
)
async def test_a_remote_task_that_fails_fails_the_call_span(
    otel_telemetry: InMemoryTelemetry, streaming: bool, state: int
) -> None:
    """The agent answered, its task failed: the caller's CLIENT span says so (ERROR,
    ``error.type`` the state's name), and the responses reach the caller as they were."""
    for server in _serve(trace_a2a_executor(FailingWeather(state)), streaming):
        inner = await create_client(server.card, ClientConfig(streaming=streaming))
        client = trace_a2a_client(inner, tracer_provider=otel_telemetry.tracer_provider)
        message = new_text_message("Paris", role=Role.ROLE_USER)
        async with client:
            responses = [r async for r in client.send_message(SendMessageRequest(message=message))]
    last = responses[-1]
    final = last.task.status if last.HasField("task") else last.status_update.status
    assert final.state == state
    span = _client_span(otel_telemetry)
    assert span.status.status_code.name == "ERROR"
    assert span.attributes[A.ERROR_TYPE] == TaskState.Name(state)  # type: ignore[index, arg-type]
    assert [e.name for e in span.events] == ["exception"]


class _Unreadable:
    """A response of an SDK laid out otherwise: its task's state is no enum value (unhashable,
    and equal to nothing)."""

    task = SimpleNamespace(status=SimpleNamespace(state=[]))

    def WhichOneof(self, name: str) -> str:
        return "task"


def _then(send: Any, extra: object) -> Any:
    """``send_message`` answering with ``extra`` after the SDK's own responses."""

    async def send_message(*args: Any, **kwargs: Any) -> Any:
        async for response in send(*args, **kwargs):
            yield response
        yield extra

    return send_message


async def test_a_response_whose_state_cannot_be_read_reaches_the_caller_as_it_is(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """Each response is read, never trusted: one whose state is not an A2A state passes
    through unchanged, and the call is not failed for it."""
    odd = _Unreadable()
    for server in _serve(trace_a2a_executor(FailingWeather(TaskState.TASK_STATE_COMPLETED)), True):
        inner = await create_client(server.card, ClientConfig(streaming=True))
        inner.send_message = _then(inner.send_message, odd)  # type: ignore[method-assign]
        client = trace_a2a_client(inner, tracer_provider=otel_telemetry.tracer_provider)
        message = new_text_message("Paris", role=Role.ROLE_USER)
        async with client:
            responses = [r async for r in client.send_message(SendMessageRequest(message=message))]
    assert responses[-1] is odd
    assert _client_span(otel_telemetry).status.status_code.name == "UNSET"


async def test_a_remote_task_that_completes_leaves_the_call_span_unset(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    for server in _serve(trace_a2a_executor(FailingWeather(TaskState.TASK_STATE_COMPLETED)), True):
        inner = await create_client(server.card, ClientConfig(streaming=True))
        client = trace_a2a_client(inner, tracer_provider=otel_telemetry.tracer_provider)
        message = new_text_message("Paris", role=Role.ROLE_USER)
        async with client:
            async for _ in client.send_message(SendMessageRequest(message=message)):
                pass
    span = _client_span(otel_telemetry)
    assert span.status.status_code.name == "UNSET"
    assert A.ERROR_TYPE not in (span.attributes or {})


class LateWeather(AgentExecutor):
    """A remote agent that takes the task, works on it, and ends it in ``state`` once the
    caller has its answer (``go``, set by the caller: the server runs on a loop and thread of
    its own): after the call returned to a caller that does not wait for the end (polling,
    or a stream it stopped reading)."""

    def __init__(self, state: int) -> None:
        self.state = state
        self.go = threading.Event()
        self.ending = 0  # when it ended the task (ns since the epoch)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        await asyncio.to_thread(self.go.wait, 10)
        self.ending = time.time_ns()
        await updater.update_status(self.state)  # type: ignore[arg-type]

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


_ENDED = (TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED)


async def _polled(client: Any, executor: LateWeather) -> int:
    """Send without waiting (the client's ``polling``), then ``tasks/get`` until it ended."""
    message = new_text_message("Rome", role=Role.ROLE_USER)
    [response] = [r async for r in client.send_message(SendMessageRequest(message=message))]
    assert response.task.status.state != executor.state  # answered before it ended
    executor.go.set()
    for _ in range(500):
        task = await client.get_task(GetTaskRequest(id=response.task.id))
        if task.status.state in _ENDED:
            return int(task.status.state)
        await asyncio.sleep(0.02)
    raise AssertionError("the task never ended")


async def _resubscribed(client: Any, executor: LateWeather) -> int:
    """Stop reading the stream once the task is taken, then ``tasks/resubscribe`` to its end."""
    message = new_text_message("Rome", role=Role.ROLE_USER)
    responses = client.send_message(SendMessageRequest(message=message))
    async for response in responses:
        task_id = response.task.id
        break
    await responses.aclose()
    states = []
    async for update in client.subscribe(SubscribeToTaskRequest(id=task_id)):
        executor.go.set()  # once subscribed (a task that ended cannot be)
        status = update.task.status if update.HasField("task") else update.status_update.status
        states.append(int(status.state))
    return states[-1]


@pytest.mark.parametrize("state", _ENDED, ids=["completed", "failed"])
@pytest.mark.parametrize("follow", [_polled, _resubscribed], ids=["polled", "resubscribed"])
async def test_a_remote_task_that_ends_after_the_call_returned_ends_the_call_span_then(
    otel_telemetry: InMemoryTelemetry, follow: Any, state: int
) -> None:
    """The call returned with the task still working (sent without waiting, or a stream the
    caller stopped reading); the caller follows it to its end (``tasks/get``,
    ``tasks/resubscribe``). The CLIENT span is the remote agent's invocation: it lasts until
    the caller sees the task end, and a task that ended failed fails it, as one that fails
    within the call does."""
    executor = LateWeather(state)
    streaming = follow is _resubscribed
    for server in _serve(trace_a2a_executor(executor), streaming):
        config = ClientConfig(streaming=streaming, polling=not streaming)
        inner = await create_client(server.card, config)
        client = trace_a2a_client(inner, tracer_provider=otel_telemetry.tracer_provider)
        async with client:
            assert await follow(client, executor) == state
            ended = time.time_ns()
            span = _client_span(otel_telemetry)  # ended before the client closed
    assert span.end_time is not None and executor.ending <= span.end_time <= ended
    if state == TaskState.TASK_STATE_FAILED:
        assert span.status.status_code.name == "ERROR"
        assert span.attributes[A.ERROR_TYPE] == "TASK_STATE_FAILED"  # type: ignore[index]
        assert [e.name for e in span.events] == ["agent_otel.held", "exception"]
    else:
        assert span.status.status_code.name == "UNSET"
        assert A.ERROR_TYPE not in (span.attributes or {})


@pytest.mark.parametrize("state", _ENDED, ids=["completed", "failed"])
async def test_a_task_sent_with_one_client_and_polled_with_another_ends_the_call_span_then(
    otel_telemetry: InMemoryTelemetry, state: int
) -> None:
    """One client sends without waiting and closes (a request handler's client); another
    traced client (a later handler's, a webhook's) polls the task to its end. The CLIENT
    span is the remote agent's invocation, not the first client's: it lasts until the caller
    sees the task end, with whichever client, and a task that ended failed fails it."""
    executor = LateWeather(state)
    for server in _serve(trace_a2a_executor(executor), False):
        config = ClientConfig(streaming=False, polling=True)
        provider = otel_telemetry.tracer_provider
        inner = await create_client(server.card, config)
        sender = trace_a2a_client(inner, tracer_provider=provider)
        message = new_text_message("Rome", role=Role.ROLE_USER)
        async with sender:
            [sent] = [r async for r in sender.send_message(SendMessageRequest(message=message))]
        assert sent.task.status.state != state  # answered before it ended
        assert otel_telemetry.open_spans()  # the call, still open: its task works
        executor.go.set()
        inner = await create_client(server.card, config)
        poller = trace_a2a_client(inner, tracer_provider=provider)
        async with poller:
            for _ in range(500):
                task = await poller.get_task(GetTaskRequest(id=sent.task.id))
                if task.status.state in _ENDED:
                    break
                await asyncio.sleep(0.02)
            ended = time.time_ns()
            span = _client_span(otel_telemetry)  # ended before the second client closed
    assert span.end_time is not None and executor.ending <= span.end_time <= ended
    if state == TaskState.TASK_STATE_FAILED:
        assert span.status.status_code.name == "ERROR"
        assert span.attributes[A.ERROR_TYPE] == "TASK_STATE_FAILED"  # type: ignore[index]
    else:
        assert span.status.status_code.name == "UNSET"
        assert A.ERROR_TYPE not in (span.attributes or {})


async def test_a_push_notifications_webhook_that_polls_the_task_ends_the_call_span_then(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A call sent without waiting, with a push notification config: the agent's server
    posts the task's updates to the caller's webhook (a2a-sdk's ``BasePushNotificationSender``,
    a server of its own on loopback), not to the client. The webhook's handler, told the task
    completed, asks it with a traced client of its own (``tasks/get``): the call, held until
    then, ends there as a success, its ``agent_otel.held`` event at the send's answer."""
    import httpx
    from a2a.server.tasks import BasePushNotificationSender, InMemoryPushNotificationConfigStore
    from a2a.types.a2a_pb2 import TaskPushNotificationConfig
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    pushed: list[dict[str, Any]] = []

    async def webhook(request: Request) -> Response:
        pushed.append(await request.json())
        return Response(status_code=200)

    executor = LateWeather(TaskState.TASK_STATE_COMPLETED)
    port = free_port()
    card = _card(f"http://127.0.0.1:{port}/")
    card.capabilities.push_notifications = True
    store = InMemoryPushNotificationConfigStore()
    async with httpx.AsyncClient() as pushing:
        handler = DefaultRequestHandler(
            agent_executor=trace_a2a_executor(executor), task_store=InMemoryTaskStore(),
            agent_card=card, push_config_store=store,
            push_sender=BasePushNotificationSender(pushing, store),
        )  # fmt: skip
        app = Starlette(
            routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")]
        )
        hook = Starlette(routes=[Route("/hook", webhook, methods=["POST"])])
        with serve(app, port=port), serve(hook) as hook_port:
            config = ClientConfig(
                streaming=False, polling=True,
                push_notification_config=TaskPushNotificationConfig(
                    url=f"http://127.0.0.1:{hook_port}/hook"
                ),
            )  # fmt: skip
            provider = otel_telemetry.tracer_provider
            sender = trace_a2a_client(await create_client(card, config), tracer_provider=provider)
            message = new_text_message("Rome", role=Role.ROLE_USER)
            async with sender:
                [sent] = [r async for r in sender.send_message(SendMessageRequest(message=message))]
            answered = time.time_ns()
            executor.go.set()
            for _ in range(500):  # the webhook is told the task completed
                if any("COMPLETED" in str(p) for p in pushed):
                    break
                await asyncio.sleep(0.02)
            assert any("COMPLETED" in str(p) for p in pushed), pushed
            assert otel_telemetry.open_spans()  # held: the client was never told
            poller = trace_a2a_client(await create_client(card, config), tracer_provider=provider)
            async with poller:  # the webhook handler's own client
                task = await poller.get_task(GetTaskRequest(id=sent.task.id))
                span = _client_span(otel_telemetry)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert span.status.status_code.name == "UNSET"
    assert [e.name for e in span.events] == ["agent_otel.held"]
    assert span.events[0].timestamp <= answered < executor.ending <= (span.end_time or 0)
    assert A.INCOMPLETE not in (span.attributes or {})


async def test_a_call_whose_task_nobody_follows_ends_at_shutdown(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """A call sent without waiting whose task no client follows to its end (its client
    closed): the span is held past the client, and ``end_open_runs()`` (what every shutdown
    path runs: exit, ``Telemetry.shutdown()``) ends it, so the provider's shutdown exports it;
    a held call on another provider is left to that provider's shutdown."""
    executor = LateWeather(TaskState.TASK_STATE_COMPLETED)
    other = InMemoryTelemetry()
    for server in _serve(trace_a2a_executor(executor), False):
        config = ClientConfig(streaming=False, polling=True)
        for telemetry in (otel_telemetry, other):
            inner = await create_client(server.card, config)
            client = trace_a2a_client(inner, tracer_provider=telemetry.tracer_provider)
            message = new_text_message("Rome", role=Role.ROLE_USER)
            async with client:
                [_ async for _ in client.send_message(SendMessageRequest(message=message))]
        executor.go.set()
    assert otel_telemetry.open_spans() and other.open_spans()
    end_open_runs(otel_telemetry.tracer_provider)
    assert not otel_telemetry.open_spans()
    assert _client_span(otel_telemetry).end_time is not None
    assert other.open_spans()  # another provider's: its own shutdown ends it
    end_open_runs(other.tracer_provider)
    assert not other.open_spans()


class LeavingWeather(AgentExecutor):
    """A remote agent that takes the task, says it works on it and returns: the server closes
    the call's stream cleanly, its last word ``TASK_STATE_WORKING``, and the task stays so."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        await TaskUpdater(event_queue, task.id, task.context_id).start_work()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


async def test_a_stream_closed_before_its_task_ended_says_so_on_the_held_call(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    """The server closes the call's stream cleanly with its task still working (A2A: a stream
    ends at a final or interrupted state; one that ends before leaves a task the caller can
    still poll or resubscribe to). The call is held, as a call sent without waiting is, and
    nobody learns the task's end: its span ended at shutdown saying nothing of why it lasted
    past its stream. It now tells when its stream left it at work (an ``agent_otel.held``
    event, the task's state) and that it ended unfinished at shutdown
    (``agent_otel.incomplete``, ``agent_otel.end_reason=shutdown``), not failed."""
    for server in _serve(trace_a2a_executor(LeavingWeather()), True):
        inner = await create_client(server.card, ClientConfig(streaming=True))
        client = trace_a2a_client(inner, tracer_provider=otel_telemetry.tracer_provider)
        message = new_text_message("Oslo", role=Role.ROLE_USER)
        async with client:
            answers = [r async for r in client.send_message(SendMessageRequest(message=message))]
            returned = time.time_ns()
            polled = await client.get_task(GetTaskRequest(id=answers[0].task.id))
    last = answers[-1]
    assert last.HasField("status_update")
    assert last.status_update.status.state == TaskState.TASK_STATE_WORKING
    assert polled.status.state == TaskState.TASK_STATE_WORKING  # the task is still there
    assert otel_telemetry.open_spans()  # held: the task may still end
    end_open_runs(otel_telemetry.tracer_provider)
    span = _client_span(otel_telemetry)
    [held] = [e for e in span.events if e.name == "agent_otel.held"]
    assert dict(held.attributes or {}) == {"state": "TASK_STATE_WORKING"}
    assert span.start_time is not None and span.start_time <= held.timestamp <= returned
    attributes = dict(span.attributes or {})
    assert attributes[A.INCOMPLETE] is True
    assert attributes[A.END_REASON] == A.END_SHUTDOWN
    assert span.status.status_code.name == "UNSET"
    assert A.ERROR_TYPE not in attributes


async def _cancelled_mid_stream(client: Any, message: Any) -> int:
    """Cancel the task from another task while its stream is still read to its end."""
    cancels: list[Any] = []
    states = []
    async for response in client.send_message(SendMessageRequest(message=message)):
        kind = response.WhichOneof("payload")
        update = getattr(response, kind)
        states.append(int(update.status.state))
        if kind == "status_update" and states[-1] == TaskState.TASK_STATE_WORKING:
            cancels.append(
                asyncio.create_task(client.cancel_task(CancelTaskRequest(id=update.task_id)))
            )
        await asyncio.sleep(0)
    await asyncio.gather(*cancels)
    return states[-1]


async def _cancelled_after_reading(client: Any, message: Any) -> int:
    """Stop reading the stream once the task works (the call is held), then cancel it."""
    responses = client.send_message(SendMessageRequest(message=message))
    async for response in responses:
        if response.HasField("status_update"):
            task_id = response.status_update.task_id
            break
    await responses.aclose()
    return int((await client.cancel_task(CancelTaskRequest(id=task_id))).status.state)


@pytest.mark.parametrize(
    "cancel", [_cancelled_mid_stream, _cancelled_after_reading], ids=["mid-stream", "held"]
)
async def test_a_remote_task_cancelled_by_the_caller_ends_the_call_span_cancelled(
    otel_telemetry: InMemoryTelemetry, cancel: Any
) -> None:
    """The caller cancels the remote task (``tasks/cancel``) while the call's stream is read,
    or after it stopped reading: the task ends ``TASK_STATE_CANCELED``, its work undone. The
    CLIENT span, the remote agent's invocation, ends failed with that state's name, as a
    cancelled run ends failed (``CancelledError``) and a failed or rejected task fails it:
    a UI shows the invocation as not done, not as a success."""
    for server in _serve(trace_a2a_executor(LongWeather()), streaming=True):
        inner = await create_client(server.card, ClientConfig(streaming=True))
        client = trace_a2a_client(inner, tracer_provider=otel_telemetry.tracer_provider)
        message = new_text_message("Oslo", role=Role.ROLE_USER)
        async with client:
            assert await cancel(client, message) == TaskState.TASK_STATE_CANCELED
    span = _client_span(otel_telemetry)
    assert span.status.status_code.name == "ERROR"
    assert span.attributes[A.ERROR_TYPE] == "TASK_STATE_CANCELED"  # type: ignore[index]
    held = ["agent_otel.held"] if cancel is _cancelled_after_reading else []
    assert [e.name for e in span.events] == [*held, "exception"]
    assert A.INCOMPLETE not in (span.attributes or {})  # its end was learned


# --- with a2a-sdk's own spans recorded -----------------------------------------------------------
SDK_TELEMETRY_ON = """
import asyncio, json, sys
sys.path[:0] = [{tests!r}, {root!r}]
from opentelemetry import trace
from agent_otel.testing import InMemoryTelemetry

telemetry = InMemoryTelemetry()
trace.set_tracer_provider(telemetry.tracer_provider)  # as configure() does: a2a-sdk traces here
import test_remote_a2a as t

async def main():
    executor = t.trace_a2a_executor(t.WeatherExecutor(telemetry))
    for server in t._serve(executor, True, middleware=True):
        calls = [("call-1", "Paris", "ctx-paris"), ("call-2", "Oslo", "ctx-oslo")]
        await t._caller_run(telemetry, calls, server)

asyncio.run(main())
print(json.dumps([
    dict(name=s.name, kind=s.kind.name, id=s.context.span_id, trace=s.context.trace_id,
         parent=s.parent.span_id if s.parent else None, attributes=dict(s.attributes or {{}}))
    for s in telemetry.spans()
]))
"""


def test_with_the_sdks_own_spans_and_the_middleware_the_whole_exchange_is_one_trace() -> None:
    """a2a-sdk records spans of its own on the global provider (``configure()`` sets it): its
    client spans nest under the CLIENT span; behind ``ContinueTraceMiddleware`` its server spans
    too, and the remote run under them, each call's under its own CLIENT span. Run in a
    process of its own: the global provider is set once per process."""
    from pathlib import Path

    from child_process import child_json

    tests = Path(__file__).resolve().parent
    script = SDK_TELEMETRY_ON.format(tests=str(tests), root=str(tests.parent))
    spans = child_json("-c", script, timeout=120)
    by_id = {s["id"]: s for s in spans}
    assert len({s["trace"] for s in spans}) == 1

    def ancestors(span: dict[str, Any]) -> list[str]:
        names = []
        while span["parent"] is not None:
            span = by_id[span["parent"]]
            names.append(f"{span['name']} {span['kind']}")
        return names

    for call_id, context_id in (("call-1", "ctx-paris"), ("call-2", "ctx-oslo")):
        (tool,) = [s for s in spans if s["attributes"].get(A.TOOL_CALL_ID) == call_id]
        (client,) = [
            s for s in spans if s["parent"] == tool["id"] and s["name"] == "invoke_agent weather"
        ]
        assert client["kind"] == "CLIENT"
        below = [s for s in spans if client["id"] in _chain_ids(by_id, s)]
        sdk_client = [s["name"] for s in below if s["name"].startswith("a2a.client.")]
        sdk_server = [s["name"] for s in below if s["name"].startswith("a2a.server.")]
        assert any(n.endswith("send_message_streaming") for n in sdk_client), sdk_client
        assert any(n.endswith("handle_requests") for n in sdk_server), sdk_server
        (run,) = [
            s for s in below if s["name"] == "invoke_agent weather" and s["kind"] == "INTERNAL"
        ]
        assert run["attributes"][A.CONVERSATION_ID] == context_id
        assert any(a.startswith("a2a.server.") for a in ancestors(run))  # under the SDK's spans
    roots = [s["name"] for s in spans if s["parent"] is None]
    assert roots == ["invoke_agent caller"]


def _chain_ids(by_id: dict[int, dict[str, Any]], span: dict[str, Any]) -> set[int]:
    ids = set()
    while span["parent"] is not None:
        ids.add(span["parent"])
        span = by_id[span["parent"]]
    return ids


@pytest.mark.internal_errors
@pytest.mark.parametrize("method", ["get_tracer", "start_span", "update_name", "end"])
async def test_a_tracer_that_raises_costs_the_remote_call_nothing(
    otel_telemetry: InMemoryTelemetry, weather: Server, method: str
) -> None:
    provider = HostileTracerProvider(otel_telemetry.tracer_provider, method, "invoke_agent")
    inner = await create_client(weather.card)
    client = trace_a2a_client(inner, tracer_provider=provider)
    message = new_text_message("Oran", role=Role.ROLE_USER)
    async with client:
        answers = [
            get_message_text(r.message)
            async for r in client.send_message(SendMessageRequest(message=message))
        ]
    assert answers == ["sunny in Oran"]
