"""``with_trace_headers()``: every request an httpx or httpx2 client sends carries the current
trace context in its headers, the caller's own headers kept, and nothing it does can fail the
request. Each client kind (sync and async, both libraries) on its own mock transport; over a
real MCP server in tests/sources/test_mcp.py.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import baggage, propagate
from opentelemetry import context as otel_context
from opentelemetry.propagators.textmap import TextMapPropagator
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from agent_contract.protocol import LLMCallEnd, LLMCallStart
from agent_otel import run_identity, with_trace_headers
from agent_otel.testing import InMemoryTelemetry

httpx2 = pytest.importorskip("httpx2")

LIBRARIES = {"httpx": httpx, "httpx2": httpx2}
CALLER = "00-" + "a" * 32 + "-" + "b" * 16 + "-01"


def _send(library: str, is_async: bool, **options: Any) -> Callable[..., dict[str, str]]:
    """A ``send(headers=...)`` of a fresh client of ``library`` given ``with_trace_headers``
    (``options``): the headers the transport received, as a plain dict."""
    http = LIBRARIES[library]
    seen: list[dict[str, str]] = []

    def handler(request: Any) -> Any:
        seen.append(dict(request.headers))
        return http.Response(200)

    transport = http.MockTransport(handler)
    if is_async:
        client = with_trace_headers(http.AsyncClient(transport=transport), **options)

        def send(**request: Any) -> dict[str, str]:
            async def go() -> Any:
                return await client.get("http://tools.test/mcp", **request)

            assert asyncio.run(go()).status_code == 200
            return seen.pop()
    else:
        client = with_trace_headers(http.Client(transport=transport), **options)

        def send(**request: Any) -> dict[str, str]:
            assert client.get("http://tools.test/mcp", **request).status_code == 200
            return seen.pop()

    return send


CLIENTS = pytest.mark.parametrize(
    ("library", "is_async"),
    [(name, is_async) for name in LIBRARIES for is_async in (False, True)],
    ids=[f"{name}-{kind}" for name in LIBRARIES for kind in ("sync", "async")],
)


def _traceparent(span: Any) -> str:
    context = span.get_span_context()
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


@CLIENTS
def test_each_request_names_the_span_current_where_it_is_sent(
    otel_telemetry: InMemoryTelemetry, library: str, is_async: bool
) -> None:
    send = _send(library, is_async)
    tracer = otel_telemetry.tracer_provider.get_tracer("t")
    assert "traceparent" not in send()  # no span current: no context to send
    with tracer.start_as_current_span("first") as first:
        assert send()["traceparent"] == _traceparent(first)
        with tracer.start_as_current_span("second") as second:
            assert send()["traceparent"] == _traceparent(second)
    token = otel_context.attach(baggage.set_baggage("tenant", "t1"))
    try:
        assert send()["baggage"] == "tenant=t1"
    finally:
        otel_context.detach(token)


@CLIENTS
def test_the_callers_own_trace_headers_are_kept_whole(
    otel_telemetry: InMemoryTelemetry, library: str, is_async: bool
) -> None:
    """A request with a trace header of its own keeps its trace: no traceparent is replaced,
    no tracestate of another trace added; baggage the request lacks is added, and its own
    baggage kept."""
    send = _send(library, is_async)
    tracer = otel_telemetry.tracer_provider.get_tracer("t")
    token = otel_context.attach(baggage.set_baggage("tenant", "t1"))
    with tracer.start_as_current_span("s") as span:
        sent = send(headers={"TraceParent": CALLER})
        assert (sent["traceparent"], sent["baggage"]) == (CALLER, "tenant=t1")
        assert "tracestate" not in sent
        sent = send(headers={"tracestate": "vendor=1"})
        assert (sent["tracestate"], "traceparent" in sent) == ("vendor=1", False)
        sent = send(headers={"Baggage": "mine=1"})
        assert (sent["traceparent"], sent["baggage"]) == (_traceparent(span), "mine=1")
    otel_context.detach(token)


def test_the_client_comes_back_with_one_hook_after_its_own(
    otel_telemetry: InMemoryTelemetry,
) -> None:
    def own(request: Any) -> None:
        request.headers["traceparent"] = CALLER  # the caller's hook runs first and wins

    client = httpx2.Client(event_hooks={"request": [own]})
    assert with_trace_headers(client) is client
    assert with_trace_headers(client) is client  # again: replaced, not doubled
    assert client.event_hooks["request"][0] is own
    assert len(client.event_hooks["request"]) == 2
    with pytest.raises(TypeError, match="httpx or httpx2 client"):
        with_trace_headers(object())


@CLIENTS
def test_a_given_propagator_writes_them_else_the_global_one_at_each_request(
    otel_telemetry: InMemoryTelemetry,
    monkeypatch: pytest.MonkeyPatch,
    library: str,
    is_async: bool,
) -> None:
    """By default the propagator is the global one as it is when the request goes (configured
    after the client was made: still used); a given one instead, whatever the global is."""

    class Named(TextMapPropagator):
        def __init__(self, name: str) -> None:
            self.name = name

        def inject(self, carrier: Any, context: Any = None, setter: Any = None) -> None:
            carrier["x-trace"] = self.name

        def extract(self, carrier: Any, context: Any = None, getter: Any = None) -> Any:
            return context

        @property
        def fields(self) -> set[str]:
            return {"x-trace"}

    by_default, given_one = (
        _send(library, is_async),
        _send(library, is_async, propagator=Named("given")),
    )
    monkeypatch.setattr(propagate, "_HTTP_TEXT_FORMAT", Named("global"))
    assert by_default()["x-trace"] == "global"
    assert given_one()["x-trace"] == "given"


@pytest.mark.parametrize("library", LIBRARIES)
def test_the_runs_ids_are_never_sent(otel_telemetry: InMemoryTelemetry, library: str) -> None:
    """The run's session and user ids stay in the process (a tool server may be someone
    else's): the headers name the span, nothing of the run's identity."""
    send = _send(library, False)
    sent: list[dict[str, str]] = []

    async def agent() -> Any:
        yield LLMCallStart(model="m")
        sent.append(send())
        yield LLMCallEnd(model="m")

    async def run() -> None:
        with run_identity(session_id="s-secret", user_id="u-secret"):
            async for _ in otel_telemetry.wrapper(agent_name="a")(agent()):
                pass

    asyncio.run(run())
    (headers,) = sent
    assert headers["traceparent"]
    assert "secret" not in str(headers)


class Hostile(TextMapPropagator):
    """A propagator that raises, or writes what no HTTP header can carry."""

    def __init__(self, writes: dict[Any, Any] | None) -> None:
        self.writes = writes

    def inject(self, carrier: Any, context: Any = None, setter: Any = None) -> None:
        TraceContextTextMapPropagator().inject(carrier, context)
        if self.writes is None:
            raise RuntimeError("a propagator's own failure")
        carrier.update(self.writes)

    def extract(self, carrier: Any, context: Any = None, getter: Any = None) -> Any:
        return context

    @property
    def fields(self) -> set[str]:
        return {"traceparent"}


@pytest.mark.internal_errors
@CLIENTS
@pytest.mark.parametrize(
    "writes",
    [
        None,
        {"x-b3": "a\r\nInjected: 1"},
        {"bad name": "v"},
        {"x": 7},
        {b"x": "v"},
        {"x": "é"},
        {"Content-Length": "5", "transfer-encoding": "chunked"},
    ],
    ids=["raises", "crlf", "space-in-name", "int-value", "bytes-name", "non-ascii", "framing"],
)
def test_a_hostile_propagator_never_fails_the_request(
    otel_telemetry: InMemoryTelemetry,
    otel_internal_errors: list[str],
    library: str,
    is_async: bool,
    writes: dict[Any, Any] | None,
) -> None:
    """Reported once; what HTTP can carry goes (a raising one: nothing), the rest does not."""
    send = _send(library, is_async, propagator=Hostile(writes))
    with otel_telemetry.tracer_provider.get_tracer("t").start_as_current_span("s") as span:
        sent = send()
        send()
    assert ("traceparent" in sent) is (writes is not None)
    if writes is not None:
        assert sent["traceparent"] == _traceparent(span)
    assert not set(sent) - {"host", "accept", "accept-encoding", "connection", "user-agent",
                            "traceparent"}  # fmt: skip
    assert set(otel_internal_errors) == {"trace headers"}


class HostileHeaders:
    """A request whose headers raise on every read and write."""

    @property
    def headers(self) -> Any:
        raise RuntimeError("the request's own headers")


@pytest.mark.internal_errors
@settings(max_examples=80, deadline=None)
@given(
    writes=st.dictionaries(
        st.one_of(st.text(max_size=12), st.binary(max_size=4), st.integers()),
        st.one_of(st.text(max_size=40), st.none(), st.integers()),
        max_size=4,
    )
)
def test_anything_a_propagator_writes_leaves_a_sendable_request(writes: dict[Any, Any]) -> None:
    """Whatever the propagator writes, the request goes (the HTTP library accepts every header
    put on it) with the fields that are sendable, and only those."""
    seen: list[Any] = []

    def handler(request: Any) -> Any:
        seen.append(request.headers)
        return httpx2.Response(200)

    client = with_trace_headers(
        httpx2.Client(transport=httpx2.MockTransport(handler)), propagator=Hostile(writes)
    )
    assert client.get("http://tools.test/").status_code == 200
    (headers,) = seen
    sent = {name.lower(): value for name, value in headers.items()}
    for name in set(sent) - {"host", "accept", "accept-encoding", "connection", "user-agent"}:
        written = [v for n, v in writes.items() if isinstance(n, str) and n.lower() == name]
        assert sent[name] in written or name == "traceparent"  # only what was written


@pytest.mark.internal_errors
def test_a_request_whose_headers_raise_still_goes(
    otel_telemetry: InMemoryTelemetry, otel_internal_errors: list[str]
) -> None:
    client = with_trace_headers(httpx2.Client())
    (hook,) = client.event_hooks["request"]
    with otel_telemetry.tracer_provider.get_tracer("t").start_as_current_span("s"):
        assert hook(HostileHeaders()) is None
    assert otel_internal_errors == ["trace headers"]


def test_importing_it_loads_no_http_library() -> None:
    probe = (
        "import sys, agent_otel; agent_otel.with_trace_headers; "
        "print(sorted(m for m in ('httpx', 'httpx2') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
