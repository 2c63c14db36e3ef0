"""An MCP tool's answer: a result the server flagged ``isError`` fails the tool's span.

An MCP server reports a tool that failed in the result (``CallToolResult.isError``), not as a
JSON-RPC error, and most frameworks hand that result to the model as the call's ordinary
output (the OpenAI Agents SDK, Agno, smolagents' mcpadapt): the stream says nothing failed.
Every one of them sends the call through the MCP SDK's ``ClientSession.call_tool`` (fastmcp's
client too), from the tool body, under the call's span. :func:`watch` wraps that method (once:
it is looked at again each time) when a tool body starts (importing the SDK for an MCP tool,
``agent_contract.scope.tool_scope(..., mcp=...)``): the wrapper reads the flag off the result
(``is_error`` in the MCP SDK 2.x, ``isError`` in 1.x) and notes it on the call whose body sent
it (:meth:`ToolCall.on_mcp_result`), so its result event ends the span failed,
``error.type=tool_error`` (the MCP conventions' value), unless the adapter named the failure
itself. A tool the caller knew as an MCP server's but not by its server's name or protocol
version (a client that opens a session per call, LlamaIndex's ``BasicMCPClient``) gets them
from the session the call went on, once it is answered. Arguments, result and exceptions pass
through unchanged; outside a traced MCP tool's
body the wrapper only looks the call up in the context. A local tool whose body happens to call
an MCP server is not failed by the server's answer: its body decides.

The MCP SDK 2.x's ``Client.call_tool`` (and fastmcp's ``Client.call_tool_mcp``) may not hand
on what the session's ``call_tool`` returned: a result of a ``resultType`` a client extension
claims (a handle to the call's result, as a long-running call's is: fastmcp's tasks) is
finished by that extension's resolver, with requests of its own, into the
``CallToolResult`` the body gets. Those methods are wrapped too (once their client is
loaded): the final answer, or the failure of fetching it, is the call's.

A request that fails below the tool (a JSON-RPC error answer, a timeout, a connection lost)
raises the SDK's error instead: the wrapper notes its JSON-RPC code on the call
(:meth:`ToolCall.on_mcp_failure`), which names the call's failure by it, as the MCP
conventions' ``error.type`` does, however the call then ends failed.

The MCP SDK 1.x sends no trace context at all (2.x puts it in every request's
``params._meta``), so over stdio nothing told its server which trace a request belongs to.
The session's ``send_request`` adds the current one to each 1.x request's ``_meta`` as 2.x
does, whatever its kind (a tool call, a resource read, a prompt got; the keys the caller's
``meta`` has are kept): a server that reads it (``continue_trace(ctx.request_context.meta)``,
or 2.x's own server) runs the request under the tool span, and a server's tool that runs so
and calls another server hands the trace on to it (the remote side's entries watch the SDK
too: ``remote/_continue``).

A request lost below the session (over streamable HTTP, both SDK generations carry each
request's POST in a task of its own: a server that dies before it answers fails that task
with the HTTP client's error, and the SDK cancels every request in flight on the transport,
and their callers, instead of raising it there) is noted on the call of each of those
requests, as what failed its body: the call's span names that cause, not the
``CancelledError`` its body got. The SDK 2.x runs that task in a copy of its sender's
context; 1.x in the transport's, so the calls lost are read off the session the request's
answer would have gone to (its requests in flight, noted where the transport's end of its
read stream sees them).

A server's progress notifications for the call go to the callback the call was given, also
on the session's receiving task: it runs in the tool body's context too (it is the call's own,
so there is no doubt whose), and a log line or span it writes is the tool call's.

A server may ask the client something while it serves the call (``sampling/createMessage``: a
completion from the client's model; elicitation; roots). The session answers with the caller's
callback, on its own receiving task, whose context is the one the session was opened in (before
the run, usually): a model call or agent run made there would land in a trace of its own. The
session's callbacks run in the context of the tool body whose call awaits its answer, so what
they record nests under that tool's span, in the run's trace (with several calls in flight on
one session, under the span the server's request names in its ``_meta``, the MCP SDK 2.x's
W3C context, when it names one: else where the SDK runs them). The
server's log messages (``notifications/message``, the session's ``logging_callback``) are told
the same way. Every request of the session is in flight while it awaits its answer, with its
caller's context (the session's ``send_request``, wrapped once with ``call_tool``, counts from
its first request of any kind after the first traced tool body started): one sent outside a
traced tool body, or of another kind (reading a resource, getting a prompt, listing tools), is
not taken for a traced call's, and a request the server sends while serving it runs where it
was made (not where the session was opened: in a run's tool, maybe, that has ended since). A
request already awaiting its answer when the wrapper is put in place (before any traced tool
body ran) cannot be counted. A callback run where the request's own code runs, after its result
asked it for input (``InputRequiredResult``, the 2026-07-28 revision's way to ask mid-call,
from ``tools/call``, ``resources/read`` or ``prompts/get`` alike: the MCP SDK 2.x's ``Client``
answers from the calling code, between two requests of the call), is that code's and runs as it
is, while another call may be the one in flight.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.context.context import Context

from agent_otel._guard import report
from agent_otel.decorating._propagation import BAGGAGE_HEADER
from agent_otel.standdown._context import uncovered

from ._tool import ToolCall

__all__ = ["MODULES", "watch"]

_MARK = "_agent_otel_watched"
_SESSIONS = ("mcp.client.session",)  # where ClientSession lives, in both SDK generations
_CLIENTS = (
    ("mcp.client.client", "Client", "call_tool"),  # the MCP SDK 2.x's Client (1.x has none)
    ("fastmcp.client.mixins.tools", "ClientToolsMixin", "call_tool_mcp"),  # fastmcp's Client
)
"""Where a client finishes what the session's ``call_tool`` returned into the answer its
caller gets: module, class, method."""
_CARRIERS = (
    ("mcp.client.streamable_http", "StreamableHTTPTransport", "_run_request_post"),
    ("mcp.client.streamable_http", "StreamableHTTPTransport", "_handle_post_request"),
)
"""Where a transport carries each request in a task of its own (the streamable HTTP client's
POST): module, class, method; a class's first method listed is wrapped, the others not. The
MCP SDK 2.x runs that task in a copy of its sender's context; 1.x in the transport's own, its
request context (``ctx``) naming the stream the answer goes back on."""
_absent: set[str] = set()  # modules that failed to import: not tried again
MODULES = frozenset(
    [*_SESSIONS, *(name for table in (_CLIENTS, _CARRIERS) for name, _, _ in table)]
)
"""Every module whose classes :func:`watch` wraps: each is watched as it loads
(``_scope.watch_sessions``), whoever imports it and whenever."""


def watch(tool_key: str, load: bool = True) -> None:
    """Wrap the MCP SDK's ``ClientSession.call_tool``, unless it is wrapped already (looked at
    each time: whoever replaced the method since, a test's patch undone or another
    instrumentation's, is wrapped in turn); ``tool_key``: the context key of the call whose
    body runs (``_scope._TOOL``); ``load``: import the SDK when it is not loaded yet (else
    nothing is wrapped until something else imports it). Never raises."""
    for name in _SESSIONS:
        module = sys.modules.get(name)
        if module is None:
            if not load or name in _absent:
                continue
            try:
                module = importlib.import_module(name)
            except Exception:  # no MCP SDK (a contract agent's own client): nothing to watch
                _absent.add(name)
                continue
        session = getattr(module, "ClientSession", None)
        if not isinstance(session, type):
            continue
        send = getattr(session, "send_request", None)
        if send is not None and not getattr(send, _MARK, False):
            try:
                carries = _sends_no_context(module)
                session.send_request = _sending(send, tool_key, carries)  # type: ignore[attr-defined]
            except Exception:
                report("mcp result watch")
        call_tool = getattr(session, "call_tool", None)
        if call_tool is None or getattr(call_tool, _MARK, False):
            continue
        try:
            progress = _progress_position(call_tool)
            session.call_tool = _watching(call_tool, tool_key, progress)  # type: ignore[attr-defined]
        except Exception:
            report("mcp result watch")
    done: set[object] = set()  # the classes whose method was looked at: one each
    for table, wrap in ((_CLIENTS, _answering), (_CARRIERS, _carrying)):
        for name, owner, method in table:  # loaded by whoever uses them: never imported here
            holder = getattr(sys.modules.get(name), owner, None)
            wrapped = getattr(holder, method, None) if isinstance(holder, type) else None
            if wrapped is None or holder in done:
                continue
            done.add(holder)
            if getattr(wrapped, _MARK, False):
                continue
            try:
                setattr(holder, method, wrap(wrapped, tool_key))
            except Exception:
                report("mcp result watch")


def _sends_no_context(module: Any) -> bool:
    """Whether requests of this SDK go without the trace context: the MCP SDK 1.x, which has
    no ``mcp.shared._otel`` (2.x puts it in every request's ``_meta`` itself, from its own
    request span)."""
    package = module.__name__.split(".", 1)[0]
    return importlib.util.find_spec(f"{package}.shared._otel") is None


def _progress_position(call_tool: Callable[..., Any]) -> int | None:
    """Where ``call_tool`` takes its ``progress_callback`` positionally (after ``self``: 2 in
    both SDK generations), ``None`` when it takes none so."""
    names = [p.name for p in inspect.signature(call_tool).parameters.values()
             if p.kind is p.POSITIONAL_OR_KEYWORD][1:]  # fmt: skip
    return names.index(_PROGRESS) if _PROGRESS in names else None


_PROGRESS = "progress_callback"


def _watching(
    call_tool: Callable[..., Any], tool_key: str, progress: int | None
) -> Callable[..., Any]:
    @functools.wraps(call_tool)
    async def call_tool_watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        tool = otel_context.get_value(tool_key)  # the call whose body sends it, if any
        if not isinstance(tool, ToolCall):  # its request is noted in flight as any other
            return await call_tool(self, *args, **kwargs)
        if _serving(tool, tool_key):  # a server in this process, serving that tool's call
            return await _outside(call_tool, tool_key)(self, *args, **kwargs)
        body = otel_context.get_current()
        # The server's progress notifications for this request: its callback runs in the
        # body's context (the session calls it on its own receiving task, whose context is
        # the one the session was opened in), so what it records is the tool call's.
        if kwargs.get(_PROGRESS) is not None:
            kwargs = {**kwargs, _PROGRESS: _in_context(kwargs[_PROGRESS], body)}
        elif progress is not None and len(args) > progress and args[progress] is not None:
            args = (*args[:progress], _in_context(args[progress], body), *args[progress + 1 :])
        sender = _SENDER.set((body, self))  # its request, in flight, is this body's
        try:
            result = await call_tool(self, *args, **kwargs)
        except BaseException as error:
            _failed(tool, error)
            raise
        finally:
            _SENDER.reset(sender)
        _answered(tool, result, self)
        return result

    setattr(call_tool_watched, _MARK, True)
    return call_tool_watched


def _answering(call_tool: Callable[..., Any], tool_key: str) -> Callable[..., Any]:
    """A client's ``call_tool`` (:data:`_CLIENTS`), whose answer is what the body gets: the
    session's answer, or, when that is a result an extension of the client claims (its own
    ``resultType``: a handle to the call's result), the ``CallToolResult`` the extension's
    resolver fetched with requests of its own, after the session's ``call_tool`` returned. That
    final answer (its ``isError``), or the failure of fetching it, is the call's."""

    @functools.wraps(call_tool)
    async def call_tool_answered(self: Any, *args: Any, **kwargs: Any) -> Any:
        tool = otel_context.get_value(tool_key)
        if not isinstance(tool, ToolCall) or tool.mcp is None or _serving(tool, tool_key):
            return await call_tool(self, *args, **kwargs)
        try:
            result = await call_tool(self, *args, **kwargs)
        except BaseException as error:
            _failed(tool, error)
            raise
        _answered(tool, result)
        return result

    setattr(call_tool_answered, _MARK, True)
    return call_tool_answered


def _carrying(carry: Callable[..., Any], tool_key: str) -> Callable[..., Any]:
    """A transport's task carrying one request (:data:`_CARRIERS`). An exception that ends it
    (the HTTP client's: the server died before it answered, refused the connection, timed
    out) never reaches the request's sender as such: it fails the transport's task group,
    which cancels every request in flight on the transport and their senders, whose bodies
    see a ``CancelledError`` they did not ask for. It is noted on the traced MCP tool call of
    each request in flight on the transport as what failed that body
    (:meth:`ToolCall.on_mcp_lost`): the calls whose requests its tasks carry now, each task
    in a copy of its sender's context (the MCP SDK 2.x's: the call whose body sent it), and
    the calls awaiting their answers on the session the request's context answers to (1.x's
    task runs in the transport's context: :func:`_awaiting`). What the task returns or raises
    passes through unchanged."""

    @functools.wraps(carry)
    async def carry_watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls = _carried(self)
        if calls is None:
            return await carry(self, *args, **kwargs)
        tool = otel_context.get_value(tool_key)  # a traced call's request, or another
        calls.append(tool)
        _told_session(self, [tool, *_awaiting(args, tool_key)])
        try:
            return await carry(self, *args, **kwargs)
        except Exception as error:
            # all lost with it: the transport's task group is done
            for call in [*calls, *_awaiting(args, tool_key)]:
                if isinstance(call, ToolCall):
                    call.on_mcp_lost(error)
            raise
        finally:
            calls.remove(tool)

    setattr(carry_watched, _MARK, True)
    return carry_watched


def _told_session(transport: Any, calls: list[Any]) -> None:
    """The session a carried request goes on, as the MCP SDK 1.x's transport knows it and its
    session does not (its id, the server's ``Mcp-Session-Id``, and the revision negotiated):
    told on each traced MCP tool call awaiting answers on that session (of ``calls``). The
    frameworks keep no session id for their tools (LangChain's MCP adapters, AutoGen,
    smolagents). Never raises."""
    try:
        version = getattr(transport, "protocol_version", None)
        if version is None:  # (the 2.x transport's: its session says the version, at answer)
            return  # unknown yet: an id of a revision with no sessions is none
        session_id = getattr(transport, "session_id", None)
        for call in calls:
            if isinstance(call, ToolCall):
                call.on_mcp_session(None, version, session_id)
    except Exception:
        report("mcp session")


_CARRIED = "_agent_otel_carried"


def _carried(transport: Any) -> list[Any] | None:
    """The tool calls (``None`` for a request sent outside any) whose requests the transport
    carries now, noted on it; None when it cannot say (no instance dict). Never raises."""
    try:
        state = vars(transport)
        calls = dict.get(state, _CARRIED) if type(state) is dict else None
        if calls is None:
            calls = []
            setattr(transport, _CARRIED, calls)
    except Exception:
        return None
    return calls if isinstance(calls, list) else None


def _awaiting(args: tuple[Any, ...], tool_key: str) -> list[Any]:
    """What the tool calls (any value of the tool's key) awaiting their answers on the session
    a carried request's context (``ctx``, the MCP SDK 1.x's first argument) answers to are: the
    session reads the other end of its ``read_stream_writer``, whose shared state names that
    session's requests in flight (:func:`_in_flight` notes them there). Empty where the
    request's context says nothing of it. Never raises."""
    try:
        writer = getattr(args[0], "read_stream_writer", None) if args else None
        state = vars(writer).get("_state") if hasattr(writer, "__dict__") else None
        found = vars(state).get(_FLIGHTS) if hasattr(state, "__dict__") else None
        if type(found) is not list:
            return []
        return [otel_context.get_value(tool_key, context) for context in found]
    except Exception:
        report("mcp lost request")
        return []


def _failed(tool: ToolCall, error: BaseException) -> None:
    """``error`` came out of the request of ``tool``'s body: noted on it when it is an MCP
    tool's call (its JSON-RPC code names the call's failure). Never raises."""
    if tool.mcp is not None:
        try:
            tool.on_mcp_failure(error)
        except Exception:
            report("mcp failure")


def _answered(tool: ToolCall, result: object, session: Any = None) -> None:
    """``result`` answered the request of ``tool``'s body, sent on ``session`` (which names
    the server, when given): noted on it when it is an MCP tool's call. Never raises."""
    if tool.mcp is not None:
        try:
            if session is not None:
                tool.on_mcp_session(*_server(session))
            tool.on_mcp_result(result)
        except Exception:
            report("mcp result")


_SENDER: ContextVar[tuple[Context, Any] | None] = ContextVar("agent_otel_mcp_sender", default=None)
"""The context of the traced tool body whose ``tools/call`` is being sent, and the session it
goes on (its requests there are that body's, whatever span the SDK opens for them on the way).
A server in the same process (the MCP SDK 2.x's in-memory transport, fastmcp's, an ASGI app
called in process) serves the request in a copy of the sender's context variables: this one,
and the tool's key, are then still set in the server's handler (:func:`_serving`)."""


def _serving(tool: ToolCall, tool_key: str) -> bool:
    """Whether the code running is a server's, in this process, serving ``tool``'s own request:
    that request's send is under way in the context it runs in (the transport handed the
    sender's context on to the server's handler), while the tool's body awaits its answer.
    What that server sends itself (a tool of its own that calls another server) is not the
    tool's request: neither its id, nor its answer, nor the server it went to is the call's."""
    sent = _SENDER.get()
    return sent is not None and otel_context.get_value(tool_key, sent[0]) is tool


def _outside(call_tool: Callable[..., Any], tool_key: str) -> Callable[..., Any]:
    """``call_tool`` run as outside any traced tool body (the tool's key and the sender
    cleared): its request, spans and answer are the server's own, in the trace it runs in."""

    async def outside(self: Any, *args: Any, **kwargs: Any) -> Any:
        token = otel_context.attach(otel_context.set_value(tool_key, None))
        sender = _SENDER.set(None)
        try:
            return await call_tool(self, *args, **kwargs)
        finally:
            _SENDER.reset(sender)
            otel_context.detach(token)

    return outside


def _sending(send_request: Callable[..., Any], tool_key: str, carries: bool) -> Callable[..., Any]:
    """``send_request``, the one door every request of a session goes through (both SDK
    generations'), noting each request in flight with its caller's context for as long as it
    awaits its answer, from the session's first request of any kind (``initialize`` when the
    session opens after the first traced tool body started, and calls sent outside any
    traced tool body), and noting in the caller's context whether its result asks for input
    (:func:`_asking`): every kind that can ask (``tools/call``, ``resources/read``,
    ``prompts/get``), by one rule. A request the server sends while a call is served is
    thereby never taken for another call's. ``carries``: the SDK sends no trace context (1.x):
    each request gets the current one in its ``_meta`` here (:func:`_request_with_context`),
    whoever sends it (a tool body, a server's tool in its caller's trace) and whatever its
    kind (``tools/call``, ``resources/read``, ``prompts/get``, ``tools/list``), as the SDK 2.x
    sends it. What it returns or raises passes through."""

    @functools.wraps(send_request)
    async def send_request_watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        if carries and args:  # (the SDK passes the request first, by position)
            args = (_request_with_context(args[0]), *args[1:])
        calls = _in_flight(self, tool_key)
        if calls is None:
            return await send_request(self, *args, **kwargs)
        sent = _SENDER.get()  # the body's request goes on its session: another's is not its
        caller = sent[0] if sent is not None and sent[1] is self else otel_context.get_current()
        calls.append(caller)
        try:
            result = await send_request(self, *args, **kwargs)
        finally:
            calls.remove(caller)
        _asking(self, result)
        return result

    setattr(send_request_watched, _MARK, True)
    return send_request_watched


_ASKED: ContextVar[object] = ContextVar("agent_otel_mcp_asked", default=None)
"""The session whose server the calling code is answering (its last request there, of any
kind, was answered with an ``InputRequiredResult``): the callbacks run next in this context
are this code's own."""


def _asking(session: Any, result: object) -> None:
    """Note in the caller's context whether ``result``, of a request of any kind, asks it for
    input (an ``InputRequiredResult``, by its class's name: the MCP SDK 2.x's ``Client`` then
    runs the session's callbacks from here, between two requests of the call). Never
    raises."""
    if type(result).__name__ == "InputRequiredResult":
        _ASKED.set(session)
    elif _ASKED.get() is session:
        _ASKED.set(None)


def _server(session: Any) -> tuple[Any, Any]:
    """The server's name and the protocol version ``session`` negotiated (the MCP SDK 2.x's
    ``server_info`` and ``protocol_version``, read once the call is answered: the session is
    initialised then; None where it cannot say, the SDK 1.x's)."""
    try:
        info = getattr(session, "server_info", None)
        return getattr(info, "name", None), getattr(session, "protocol_version", None)
    except Exception:  # a property that raises on a session not initialised: unknown
        return None, None


_CALLBACKS = (
    "_sampling_callback",
    "_elicitation_callback",
    "_list_roots_callback",
    "_logging_callback",
)
"""The session's handlers of the server's own requests and of its log messages (both SDK
generations' names)."""
_FLIGHTS = "_agent_otel_in_flight"


def _in_flight(session: Any, tool_key: str) -> list[Context] | None:
    """The contexts of the callers whose requests on ``session`` await their answer (a traced
    tool body's for its ``tools/call``; ``None``: the session cannot say). The first time (the
    session's first request of any kind), the session's handlers of the server's
    requests (``sampling/createMessage``, elicitation, roots: the caller's callbacks) and of
    its log messages are wrapped to run in that body's context, so a model call or run they
    make nests under the tool whose call the server is serving. Never raises."""
    try:
        state = vars(session)
    except TypeError:  # a session with no instance dict: nothing to note on it
        return None
    try:
        calls = dict.get(state, _FLIGHTS) if type(state) is dict else None
        if calls is None:
            calls = []
            for name in _CALLBACKS:
                callback = dict.get(state, name) if type(state) is dict else None
                if callback is not None and not getattr(callback, "__module__", "").startswith(
                    "mcp."
                ):  # the SDK's defaults answer by themselves: left alone
                    setattr(session, name, _in_tool_context(callback, calls, session, tool_key))
            setattr(session, _FLIGHTS, calls)
            _shared(session, calls)
    except Exception:
        report("mcp session callbacks")
        return None
    return calls if isinstance(calls, list) else None


def _shared(session: Any, calls: list[Context]) -> None:
    """Note ``calls`` (the session's requests in flight) on the state the session's read
    stream shares with the transport's end that writes to it (an ``anyio`` memory stream's,
    the MCP SDK 1.x's), so a request the transport lost names the calls lost with it
    (:func:`_awaiting`). Nothing where the session reads no such stream (the SDK 2.x's
    dispatcher). May raise: its caller reports."""
    stream = dict.get(vars(session), "_read_stream")
    state = vars(stream).get("_state") if hasattr(stream, "__dict__") else None
    if hasattr(state, "__dict__"):
        setattr(state, _FLIGHTS, calls)


def _in_tool_context(
    callback: Callable[..., Any], calls: list[Context], session: Any, tool_key: str
) -> Callable[..., Any]:
    """``callback`` run in the context of the one call awaiting its answer on the session
    (with several at once, under the span the server's request names in its ``_meta``, if
    any, :func:`_named_parent`; else left as it was).
    Called where the code whose call a result asked for input runs (the MCP SDK 2.x's
    ``Client`` answering, from there, the requests a result asked for), it is that code's:
    left as it was; an ``ErrorData`` it answers with there (it declined) names the failure
    of that code's tool call, as the ``MCPError`` the ``Client`` raises of it would."""

    @functools.wraps(callback)
    async def in_tool_context(*args: Any, **kwargs: Any) -> Any:
        if _ASKED.get() is session:
            answer = await _in_context(callback, otel_context.get_current())(*args, **kwargs)
            _declined(answer, tool_key)
            return answer
        if len(calls) != 1:
            named = _named_parent(args)
            if named is None:
                return await callback(*args, **kwargs)
            return await _in_context(callback, named)(*args, **kwargs)
        return await _in_context(callback, calls[0])(*args, **kwargs)

    return in_tool_context


def _named_parent(args: tuple[Any, ...]) -> Context | None:
    """The context the server's own request (or log message) names in its ``_meta``: the W3C
    context the MCP SDK 2.x sends with every message, naming the span that serves the call
    it asks for (the server's, or the call's own request span when the server records none),
    so the callback's work lands under that one call, whichever of several in flight it is.
    Only what the ``_meta`` carries, as a remote request's run starts (``continue_trace``);
    ``None`` when it names no span, or a span of the trace current already is (the SDK ran
    the callback in the request's own context: over HTTP, the POST's). Never raises."""
    for arg in args:  # the request's context (``meta``), or a log message's params
        try:
            fields = vars(arg)
        except TypeError:
            continue
        meta = dict.get(fields, "meta") if type(fields) is dict else None
        if type(meta) is not dict:
            continue
        carrier = {k: v for k, v in meta.items() if type(k) is str and type(v) is str}
        try:  # (a value of another type is no header: a server's odd one is left out)
            named = propagate.extract(carrier)
            span = trace.get_current_span(named).get_span_context()
            current = trace.get_current_span().get_span_context()
        except Exception:
            report("mcp request context")
            return None
        if not span.is_valid or (current.is_valid and current.trace_id == span.trace_id):
            return None
        return named
    return None


def _declined(answer: object, tool_key: str) -> None:
    """``answer``, a callback's, declines with a JSON-RPC code (the MCP SDK's ``ErrorData``):
    noted on the traced MCP tool call whose body runs it. Never raises."""
    kind = type(answer)
    if kind.__name__ != "ErrorData" or not kind.__module__.startswith("mcp"):
        return
    tool = otel_context.get_value(tool_key)
    try:
        code = vars(answer).get("code")
        if isinstance(tool, ToolCall) and type(code) is int:
            tool.on_mcp_declined(code)
    except Exception:
        report("mcp declined")


def _in_context(callback: Callable[..., Any], context: Context) -> Callable[..., Any]:
    """``callback`` (an async callback of the session's, as the SDK calls it) run in
    ``context``, uncovered: a model call it makes (sampling's, the client's model) is none a
    framework run's chat spans tell, so the provider instrumentations trace it there (in a
    framework run, a tool body's context stands them down). What it returns or raises passes
    through unchanged. Nothing of the callback is read (a callable whose attributes raise is
    called all the same)."""

    async def in_context(*args: Any, **kwargs: Any) -> Any:
        token = otel_context.attach(uncovered(context))
        try:
            answer = callback(*args, **kwargs)
            return await answer if inspect.isawaitable(answer) else answer
        finally:
            otel_context.detach(token)

    return in_context


def _request_with_context(request: Any) -> Any:
    """``request`` (the MCP SDK 1.x's ``ClientRequest``, of any method) with the current trace
    context in its ``params._meta`` by :func:`_with_context`'s rule: a copy, made by the SDK's
    own model from what the request holds (the caller's request is left as it was; a request
    with no params gets them, as the wire allows any request). The request itself when there
    is nothing to add or it is of no model known here. Never raises."""
    root: Any = getattr(request, "root", None)
    if not hasattr(root, "model_dump") or not hasattr(request, "model_dump"):
        return request
    try:
        meta: Any = getattr(getattr(root, "params", None), "meta", None)
        own = meta.model_dump() if hasattr(meta, "model_dump") else {}
        merged = _with_context(own)
        if merged is own:
            return request
        data = request.model_dump(by_alias=True)
        data["params"] = {**(data.get("params") or {}), "_meta": merged}
        return type(request).model_validate(data)
    except Exception:
        report("mcp request context")
        return request


def _with_context(meta: Any) -> Any:
    """``meta`` (a request's ``_meta``, ``None`` for none) with the current trace context added
    (what the global propagator writes: ``traceparent``, ``tracestate``, ``baggage``), as the
    MCP SDK 2.x sends it; the keys it has are kept, and a ``meta`` that carries a trace header
    of its own (another tracer's) keeps its trace whole: only the ``baggage`` it lacks is added
    (a ``tracestate`` belongs to the trace its ``traceparent`` names). ``meta`` itself when
    there is nothing to add or it is no dict."""
    if meta is not None and type(meta) is not dict:
        return meta
    try:
        carrier: dict[str, str] = {}
        propagator = propagate.get_global_textmap()
        propagator.inject(carrier)
        own = meta or {}
        traced = {*propagator.fields, *carrier} - {BAGGAGE_HEADER}  # the trace headers it may write
        if any(key in own for key in traced):  # the caller's trace: only what it lacks of ours
            carrier = {k: v for k, v in carrier.items() if k == BAGGAGE_HEADER}
        added = {k: v for k, v in carrier.items() if k not in own}
    except Exception:
        report("mcp request context")
        return meta
    if not added:
        return meta
    return {**(meta or {}), **added}


def error_code(error: BaseException) -> str | None:
    """The JSON-RPC error code an MCP SDK error carries (``McpError`` of 1.x, ``MCPError`` of
    2.x: ``error.code``, an int; a timeout and a lost connection are such errors too, with the
    SDK's codes), as text: what the MCP conventions put in ``error.type``. ``None`` for any
    other exception (read without running a property of its own)."""
    if not type(error).__module__.startswith("mcp."):
        return None
    data = vars(error).get("error") if hasattr(error, "__dict__") else None
    code = getattr(data, "code", None) if type(data).__module__.startswith("mcp") else None
    return str(code) if type(code) is int else None


def is_error(result: object) -> bool:
    """Whether an MCP ``CallToolResult`` (either SDK generation's, or its wire dict) says the
    tool failed: its flag is ``True`` itself (a proxy's truthiness is never asked). The 2.x
    name, when the result has it, is the answer: the 1.x name is not read then (fastmcp gives
    the 2.x class a ``isError`` that warns of its deprecation, from the caller's line)."""
    if isinstance(result, dict):
        flag = dict.get(result, "isError", dict.get(result, "is_error"))
        return flag is True
    for name in ("is_error", "isError"):
        try:
            flag = getattr(result, name, None)
        except Exception:
            continue
        if flag is not None:
            return flag is True
    return False
