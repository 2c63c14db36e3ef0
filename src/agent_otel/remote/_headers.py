"""The current trace context in the HTTP headers of every request an httpx client sends.

:func:`with_trace_headers` adds one request hook to an ``httpx`` or ``httpx2`` client (sync or
async): each request goes with the headers the global propagator writes for the context it is
sent in (``traceparent``, ``tracestate``, ``baggage`` by default), the same the MCP SDK puts in
``params._meta``. So a server, gateway or proxy that reads only the headers continues the
caller's trace. Nothing is patched globally and no OTel global is set: the propagator is read
from ``opentelemetry.propagate`` at each request (or given). httpx is never imported here: the
hook touches only ``request.headers``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry.propagators.textmap import TextMapPropagator

from agent_otel._guard import report
from agent_otel._plain import a_kind, has_methods, items_of
from agent_otel.decorating._propagation import BAGGAGE_HEADER
from agent_otel.recording._hints import keyworded

__all__ = ["with_trace_headers"]

Client = TypeVar("Client")

# What HTTP can carry: a header name is a token, a value visible ASCII, spaces and tabs (a CR or
# LF would end the header, and the request would fail in the HTTP library).
_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VALUE = re.compile(r"[\t\x20-\x7e]*")
# Headers that frame or route the message itself: a propagator's value for one would break the
# request (a Content-Length with no body) or redirect it, so none is ever added.
_FRAMING = frozenset(
    {"connection", "content-length", "expect", "host", "keep-alive", "proxy-connection",
     "te", "trailer", "transfer-encoding", "upgrade"}
)  # fmt: skip


class _TraceHeaders:
    """The request hook of a sync client (the async one awaits the same injection)."""

    __slots__ = ("propagator",)

    def __init__(self, propagator: Callable[[], TextMapPropagator]) -> None:
        self.propagator = propagator

    def __call__(self, request: Any) -> None:
        _inject(request, self.propagator)


class _AsyncTraceHeaders(_TraceHeaders):
    __slots__ = ()

    async def __call__(self, request: Any) -> None:  # type: ignore[override]
        _inject(request, self.propagator)


@keyworded
def with_trace_headers(client: Client, *, propagator: TextMapPropagator | None = None) -> Client:
    """``client`` (an ``httpx`` or ``httpx2`` client, sync or async), each of whose requests
    now carries the current trace context in its headers; returned for use inline::

        http = with_trace_headers(create_mcp_http_client())       # the MCP SDK's client
        Client(streamable_http_client(url, http_client=http))

    The headers name the span current where the request is sent (for the MCP SDK: its request
    span, the one ``_meta`` names). ``propagator``: what writes them (default: the global
    propagator, read at each request, as the MCP SDK's ``_meta`` and OpenTelemetry's own HTTP
    instrumentations use it).

    A header the request already has is kept: when it carries any trace header of its own
    (``traceparent``, ``tracestate``, or whatever else the propagator writes), none of the
    context's trace headers is added (two traces on one request would be worse than one);
    ``baggage`` is added when the request has none. A propagator that fails, or writes a
    header HTTP cannot carry, never fails the request: reported once, that header not sent.
    Calling it again on the same client replaces the hook, never doubles it. A ``TypeError``
    when ``client`` has no ``event_hooks`` (not an httpx client).
    """
    hooks = _hooks_of(client)
    if propagator is None:
        from opentelemetry import propagate  # loads the configured propagators: on first use

        source: Callable[[], TextMapPropagator] = propagate.get_global_textmap
    else:
        _check_propagator(propagator)
        given = propagator
        source = lambda: given  # noqa: E731
    is_async = inspect.iscoroutinefunction(getattr(type(client), "send", None))
    hook = _AsyncTraceHeaders(source) if is_async else _TraceHeaders(source)
    request_hooks = [h for h in hooks.get("request", ()) if not issubclass(type(h), _TraceHeaders)]
    try:
        setattr(client, "event_hooks", {**hooks, "request": [*request_hooks, hook]})  # noqa: B010
    except Exception as error:
        raise TypeError(
            f"with_trace_headers(): {a_kind(client)}'s event_hooks cannot be set "
            f"({type(error).__name__}), so its requests cannot carry the trace headers: pass "
            "an httpx.Client or httpx.AsyncClient (or a subclass keeping its event_hooks "
            "setter)"
        ) from None
    return client


def _hooks_of(client: object) -> dict[Any, list[Any]]:
    """The client's event hooks as a plain dict of plain lists: a dict or list subclass is
    read by the base type's own methods (none of its own runs, here or in the client's
    setter, which copies what it is given)."""
    try:
        hooks = getattr(client, "event_hooks", None)
    except Exception:  # a property that raises: no hooks to add to
        hooks = None
    if not issubclass(type(hooks), Mapping) or issubclass(type(client), type):
        raise TypeError(
            f"with_trace_headers() takes an httpx or httpx2 client (an instance, with "
            f"event_hooks), not {a_kind(client)}"
        )
    given: Mapping[Any, Any] = hooks  # type: ignore[assignment]  # (a Mapping, by its type)
    pairs = dict.items(given) if issubclass(type(given), dict) else given.items()  # type: ignore[arg-type]
    return {
        key: items_of(value) if issubclass(type(value), (list, tuple)) else value
        for key, value in pairs
    }


def _check_propagator(propagator: object) -> None:
    """A propagator is an instance with ``inject``: a name (``"tracecontext"``), its class or
    anything else made every request report an error and go without headers."""
    if not has_methods(propagator, ("inject",)):
        fix = (
            "pass an instance, as propagator=TraceContextTextMapPropagator()"
            if issubclass(type(propagator), type)
            else "pass a propagator, as TraceContextTextMapPropagator() (opentelemetry."
            "trace.propagation.tracecontext), or leave it out for the global one"
        )
        raise TypeError(
            f"with_trace_headers(propagator=...) takes a TextMapPropagator, "
            f"not {a_kind(propagator)}: {fix}"
        )


def _inject(request: Any, propagator: Callable[[], TextMapPropagator]) -> None:
    """Put the current context's headers on ``request``, keeping those it has. Never raises."""
    try:
        carrier: dict[Any, Any] = {}
        writer = propagator()
        writer.inject(carrier, context=otel_context.get_current())
        if not carrier:
            return
        fields, unsendable = [], 0
        for name, value in list(dict.items(carrier)):
            if (
                type(name) is str
                and type(value) is str
                and _NAME.fullmatch(name)
                and _VALUE.fullmatch(value)
                and name.lower() not in _FRAMING
            ):
                fields.append((name, value))
            else:
                unsendable += 1
        headers = request.headers
        # the trace headers the propagator may write (tracestate only when the context has one)
        trace_names = {n for n in (*writer.fields, *(n for n, _ in fields)) if type(n) is str}
        trace_names.discard(BAGGAGE_HEADER)
        # the caller's trace already there: only the baggage is added
        if any(name in headers for name in trace_names if _NAME.fullmatch(name)):
            fields = [(n, v) for n, v in fields if n.lower() == BAGGAGE_HEADER]
        for name, value in fields:
            if name not in headers:
                headers[name] = value
        if unsendable:
            raise ValueError(f"the propagator wrote {unsendable} header(s) HTTP cannot carry")
    except Exception:
        report("trace headers")
