"""The remote agent's side: the run a request starts continues the caller's trace.

:func:`remote_parent` reads the W3C headers a caller sent (``remote_agent().headers``, any
OpenTelemetry HTTP client's) into the context a run should start in; :func:`continue_trace`
makes that context current for a block, :class:`ContinueTraceMiddleware` for every
request an ASGI app serves and :class:`ContinueTraceWSGIMiddleware` for a WSGI app's, so any
run started inside (``otel_wrapper()``, ``instrument()``, the instrumentor) is a child of the
caller's ``invoke_agent`` CLIENT span and carries the conversation id.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import Any, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context.context import Context
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from agent_otel._block import block, detach
from agent_otel._guard import report
from agent_otel._plain import get, text_of
from agent_otel.decorating._propagation import extract_context
from agent_otel.identity._identity import make_identity, with_identity
from agent_otel.recording._hints import keyworded
from agent_otel.recording._run import in_run
from agent_otel.recording._scope import watch_sessions

__all__ = [
    "ContinueTraceMiddleware",
    "ContinueTraceWSGIMiddleware",
    "continue_trace",
    "remote_parent",
]

# Set in every context :func:`remote_parent` makes: what runs under it serves that request.
_REQUEST = otel_context.create_key("agent_otel.remote_request")


def remote_parent(
    headers: Any, *, conversation_id: object = None, context: Context | None = None
) -> Context:
    """The context a remote call's run should start in: what ``headers`` carry, nothing else.

    The span ``headers`` name becomes the parent, unless a span of that same trace is current
    in ``context`` (default: the current one) already (an HTTP server span that continued it:
    the run nests under that one). Headers that name no valid span (none, a malformed or
    all-zero ``traceparent``) start a new trace, as W3C Trace Context asks of a receiver:
    the run is a root, unless the span current is the request's own: one a server
    instrumentation started for it (a SERVER or CONSUMER span with no parent in this
    process), or one started under a context made here for the request with no run since
    (a2a-sdk's server spans behind :class:`ContinueTraceMiddleware`): the run nests under
    it, in its trace. The rest of ``context`` is never kept: a caller in the
    same process (a test, a monolith serving its own agents, an ASGI app called in process)
    shares its task's context with the handler, and its run's own (its span, its ids, its
    baggage, its providers' stand-down) would make the remote run a nested run of the
    caller's with the caller's ids, as no remote process sees it. ``conversation_id`` (A2A's
    ``contextId``) becomes the run's ``gen_ai.conversation.id``. Never raises: a carrier it
    cannot read is no carrier.
    """
    base = context if context is not None else otel_context.get_current()
    watch_sessions()  # an MCP SDK 1.x request its work sends carries the trace on (recording/_mcp)
    try:
        extracted = extract_context(headers)  # what the headers carry, and nothing else
        remote = trace.get_current_span(extracted).get_span_context()
        server = trace.get_current_span(base)
        current = server.get_span_context()
        out = extracted  # a valid span in it is the parent; none: the root of a new trace
        if remote.is_valid:
            if current.is_valid and current.trace_id == remote.trace_id:
                out = trace.set_span_in_context(server, extracted)
        elif current.is_valid and (_serves_this_request(server) or _within_request(base)):
            out = trace.set_span_in_context(server, extracted)
        identity = make_identity(conversation_id=conversation_id)
        if identity:
            out = with_identity(identity, out)
        out = otel_context.set_value(_REQUEST, True, out)
    except Exception:
        report("remote parent")
        return Context()  # no carrier read: a new trace, still none of ``base``'s
    return out


def _within_request(context: Context) -> bool:
    """Whether ``context`` descends from one this module made for a request, with no run
    started since: a library's spans for the same request (a2a-sdk's server spans, behind
    :class:`ContinueTraceMiddleware`, around the executor). A run in between is a caller's,
    sharing the process (a monolith calling its own agents in process): not the request's."""
    return otel_context.get_value(_REQUEST, context) is True and not in_run(context)


def _serves_this_request(span: trace.Span) -> bool:
    """Whether ``span`` is one a server instrumentation started for the request being served:
    a SERVER (or CONSUMER) span whose parent is not in this process (none, or one its own
    propagator read from the request). The caller's spans in a shared process have a local
    parent or another kind, and a span that cannot tell (not the SDK's) is taken as not."""
    if not issubclass(type(span), ReadableSpan):  # (its type, never its __class__)
        return False
    parent = cast(ReadableSpan, span).parent
    kind = cast(ReadableSpan, span).kind
    return (kind is SpanKind.SERVER or kind is SpanKind.CONSUMER) and (
        parent is None or parent.is_remote
    )


@keyworded
@block
def continue_trace(headers: Any, *, conversation_id: object = None) -> Iterator[Context]:
    """Run the block in the context the caller's ``headers`` name, or, when they name no valid
    parent, in a trace of its own (see :func:`remote_parent`)::

        async def handle(request):  # an agent served over HTTP
            async with continue_trace(request.headers, conversation_id=body["conversation_id"]):
                return await instrument(agent).run(body["input"])

    ``headers``: a mapping or ``(key, value)`` pairs, keys in any case, as a web framework or
    gRPC metadata gives them, or a WSGI ``environ`` (its ``HTTP_TRACEPARENT``). The block's own
    exceptions pass through unchanged, and the context current before is current again however
    it ends. ``with`` and ``async with`` alike (the same block).
    """
    context = remote_parent(headers, conversation_id=conversation_id)
    token = otel_context.attach(context)
    try:
        yield context
    finally:
        detach(token)


Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]


@keyworded
class ContinueTraceMiddleware:
    """ASGI middleware: each HTTP (or WebSocket) request is served in the context its W3C
    headers name, so everything the app does for it is in the caller's trace: the runs it
    starts, and the spans of the libraries it calls (a2a-sdk's server spans among them); a
    request that names no valid parent, in a trace of its own (see :func:`remote_parent`)::

        app = ContinueTraceMiddleware(app)                 # any ASGI app
        app.add_middleware(ContinueTraceMiddleware)        # Starlette, FastAPI

    It opens no span of its own (an HTTP server instrumentation, if any, does) and sets no
    conversation id (the request's body names it: ``continue_trace()`` in the handler, or
    ``trace_a2a_executor()``). Other scopes (lifespan) pass through untouched.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        # The scope is read by dict's own methods, its type as the str it is: a server's
        # scope of an odd shape goes to the app untouched, whatever it holds.
        kind = text_of(get(scope, "type")) if isinstance(scope, Mapping) else None
        if kind != "http" and kind != "websocket":
            await self.app(scope, receive, send)
            return
        headers = get(scope, "headers")
        token = otel_context.attach(remote_parent(() if headers is None else headers))
        try:
            await self.app(scope, receive, send)
        finally:
            otel_context.detach(token)


WSGIApp = Callable[[dict[str, Any], Any], Iterable[bytes]]


@keyworded
class ContinueTraceWSGIMiddleware:
    """WSGI middleware: each request is served in the context its W3C headers name (the
    environ's ``HTTP_TRACEPARENT``, ``HTTP_TRACESTATE``, ``HTTP_BAGGAGE``), as
    :class:`ContinueTraceMiddleware` does for ASGI::

        app = ContinueTraceWSGIMiddleware(app)             # any WSGI app
        flask_app.wsgi_app = ContinueTraceWSGIMiddleware(flask_app.wsgi_app)

    The context is current while the app is called and while the server pulls each chunk of
    the response and closes it (a streamed response runs the app's code then). A body whose
    chunks run no code of the app's (a list or tuple of chunks, the server's
    ``wsgi.file_wrapper``) goes back as it is, so the server still sets its
    ``Content-Length`` from it, or sends the file as it sends files. It opens no span and sets
    no conversation id; the app's exceptions pass through unchanged.
    """

    def __init__(self, app: WSGIApp) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        context = remote_parent(environ if isinstance(environ, Mapping) else ())
        token = otel_context.attach(context)
        try:
            body = self.app(environ, start_response)
        finally:
            otel_context.detach(token)
        if type(body) is list or type(body) is tuple or _served_as_file(environ, body):
            return body  # no code of the app's runs as it is read: the server's to handle
        return _InContext(body, context)


def _served_as_file(environ: Any, body: object) -> bool:
    """Whether ``body`` is what the server's ``wsgi.file_wrapper`` made (it sends it as a file)."""
    try:
        wrapper = environ.get("wsgi.file_wrapper") if isinstance(environ, Mapping) else None
        return isinstance(wrapper, type) and isinstance(body, wrapper)
    except Exception:  # an environ of an odd shape: wrapped as any body
        return False


class _InContext:
    """A WSGI response body whose chunks are pulled, and which is closed, in ``context``."""

    __slots__ = ("_body", "_context", "_iterator")

    def __init__(self, body: Iterable[bytes], context: Context) -> None:
        self._body = body
        self._context = context
        self._iterator: Iterator[bytes] | None = None

    def __iter__(self) -> _InContext:
        return self

    def __next__(self) -> bytes:
        token = otel_context.attach(self._context)
        try:
            if self._iterator is None:
                self._iterator = iter(self._body)
            return next(self._iterator)
        finally:
            otel_context.detach(token)

    def close(self) -> None:
        close = getattr(self._body, "close", None)
        if close is None:
            return
        token = otel_context.attach(self._context)
        try:
            close()
        finally:
            otel_context.detach(token)
