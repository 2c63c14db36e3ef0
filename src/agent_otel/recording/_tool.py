"""The tool span: one tool execution, from ``ToolCall`` to its ``ToolResult``.

:class:`ToolCall` writes every attribute, metric and ending of an ``execute_tool`` span.
"""

from __future__ import annotations

import json
import re
from asyncio import CancelledError
from typing import Any

from opentelemetry.context.context import Context
from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel._clock import SECONDS_PER_NS as _NS
from agent_otel._guard import report
from agent_otel._plain import text_of
from agent_otel.scrubbing import Scrub

from ._encodable import Count, checked, checked_text
from ._errors import error_type_of, fail_span, mark_error, record_error, report_failure
from ._settings import RunSettings
from ._span import current_in, known_start, remember, start_span
from .content._messages import parse_arguments
from .content._spans import failure_text, put

TOOL_ERROR = "tool_error"  # a failed tool's error.type when nothing names its class
NO_RESULT: Any = object()
"""What :meth:`ToolCall.end` gets for a tool that returned nothing (it was cut short)."""
Start = tuple[str, dict[str, AttributeValue], dict[str, AttributeValue]]
"""A tool's span name, start attributes and metric attributes, checked."""


class McpState:
    """What the call of a tool that runs on an MCP server learned of it: the ``mcp.*`` keys its
    caller told (:meth:`ToolCall.on_mcp_server`), whether the server's last answer said the
    tool failed (``isError``), the MCP SDK's error its body's last request raised (its
    class's name, and the JSON-RPC code that names the failure instead), and whether its
    request was lost below the session (``lost``: its ``body_error`` is then the cause of the
    cancellation the transport sent its body, and its run). Made only for an MCP tool: every
    other call holds one ``None`` (figure 2's tool call)."""

    __slots__ = ("error", "failure", "lost", "told")  # told: each key's value

    def __init__(self) -> None:
        self.told: dict[str, AttributeValue] = {}
        self.error = False
        self.failure: tuple[str, str] | None = None
        self.lost = False


class ToolCall:
    """One tool execution and its ``execute_tool {name}`` span (kind INTERNAL).

    ========================================  ===========================================
    attribute                                 written
    ========================================  ===========================================
    ``gen_ai.operation.name``                 at start (``execute_tool``)
    ``gen_ai.tool.name``                      at start (``unknown`` when it has none)
    ``gen_ai.tool.type``                      at start: the call's kind (``tool_type``;
                                              ``function`` when it names none), or
                                              after, when an early span's event names it
    ``mcp.method.name`` (``tools/call``),     when its body starts, for a tool on an MCP
    ``mcp.session.id``,                       server (``agent_contract.scope.McpServer``:
    ``mcp.protocol.version``,                 what the caller knows of it), with
    ``agent_otel.mcp.server.name``            ``gen_ai.tool.type=extension`` (no session id
                                              on a revision without sessions: 2026-07-28 on)
    ``jsonrpc.request.id``                    when its body sends the request, for an MCP
                                              tool (``RunIdentityProcessor`` reads it off
                                              the MCP SDK's client span)
    ``gen_ai.tool.call.id``                   at start, when the event has one
    ``session.id``, ``user.id``,              at start (the run's identity)
    ``gen_ai.conversation.id``
    ``gen_ai.tool.call.arguments``            at start (content capture on)
    ``gen_ai.tool.call.result``               at the result, when it is not an error
                                              (content capture on)
    ``agent_otel.tool.is_error``              at the result, when it is an error (or the
                                              MCP server's answer said ``isError``)
    ``error.type`` (+ ERROR status)           at the end: for an error result, the
                                              failure's class when the adapter names it
                                              (``error_type``), else ``tool_error``;
                                              an MCP tool whose request raised the MCP
                                              SDK's error: its JSON-RPC code
                                              (``-32602``), unless a framework's own
                                              outcome names the failure
                                              (status description: its text with
                                              content on spans, redacted and within
                                              ``max_bytes``, else its type; an
                                              ``exception`` event of that type and
                                              text); on an ``Error``
                                              event; the exception (+ ``exception`` event,
                                              description ``Type: message``) when the run
                                              failed in it
    ``agent_otel.incomplete``                 when it never got its result
    ========================================  ===========================================

    Metric: ``gen_ai.execute_tool.duration`` at the end (with ``error.type`` on failure).
    """

    __slots__ = (
        "arguments",
        "body_error",
        "call_id",
        "called",
        "context",
        "count",
        "error_text",
        "mcp",
        "metric_attributes",
        "name",
        "raised",
        "scoped",
        "settings",
        "span",
        "start",
    )

    def __init__(
        self,
        settings: RunSettings,
        count: Count,
        parent: Context,
        identity: dict[str, AttributeValue],
        call_id: str | None,
        name: Any,
        now: int,
        kind: Any = None,
    ) -> None:
        self.settings = settings
        self.count = count
        self.raised = False
        self.mcp: McpState | None = None  # it runs on an MCP server (on_mcp_server)
        name = name if type(name) is str and name else text_of(name) or "unknown"
        # The name, kind and attributes of a tool: checked once per wrapper (a kind that is not
        # an exact str, checked per call: its __eq__ and __hash__ never run in the key)
        key = (A.OP_EXECUTE_TOOL, name, kind) if kind is None or type(kind) is str else None
        start: Start | None = settings.starts.get(key) if key is not None else None
        if start is None:
            start = _start(settings, count, key, name, kind)
        span_name, attributes, self.metric_attributes = start
        scrub = settings.scrub
        if identity:  # the run's ids and the call's, checked together
            extra: dict[str, AttributeValue] = dict(identity)
            if call_id is not None:
                extra[A.TOOL_CALL_ID] = call_id
            attributes = {**attributes, **checked(extra, count, scrub)}
        else:  # (most runs) the call's id alone
            attributes = attributes.copy()
            if call_id is not None:
                attributes[A.TOOL_CALL_ID] = checked_text(call_id, count, scrub)
        self.span = start_span(
            settings.tracer, count, scrub, span_name, parent, SpanKind.INTERNAL, attributes, now
        )
        self.start = now
        self.name = name
        self.call_id = call_id
        self.scoped = False  # a tool body ran under it (agent_contract.scope)
        # What its body raised out of its scope (the body's thread writes it, once per body):
        # the class a failure the framework keeps only as text is named by, and the failure a
        # run that ends while it is open marks it with. Forgotten when it ends.
        self.body_error: BaseException | None = None
        self.arguments: Any = None  # as the event gave them, to tell calls of one name apart
        self.error_text: str | None = None
        self.context: Context | None = None  # where its span is current (as a chat span's)

    def _error_type(self, error_type: str) -> None:
        """``error.type`` on its metric (the start's attributes are shared: a copy gets it)."""
        self.metric_attributes = {**self.metric_attributes, A.ERROR_TYPE: error_type}

    def _kind(self, kind: Any) -> None:
        """The call names a kind: ``gen_ai.tool.type`` by :func:`tool_type` (``function``
        is already there from the start)."""
        value = tool_type(kind)
        if value != A.TOOL_TYPE_FUNCTION:
            self.span.set_attribute(A.TOOL_TYPE, value)

    def adopt(self, call_id: str | None, name: Any, kind: Any = None) -> None:
        """Its ``ToolCall`` event came after its body opened it early: take the event's id,
        name and kind (the span keeps its start, when the tool started)."""
        if kind is not None and not (type(kind) is str and kind == A.TOOL_TYPE_FUNCTION):
            self._kind(kind)
        if call_id is not None and self.call_id is None:
            self.call_id = call_id
            self.span.set_attribute(A.TOOL_CALL_ID, call_id)
        name = text_of(name)
        if name and name != self.name:
            self.name = name
            self.span.update_name(f"{A.OP_EXECUTE_TOOL} {name}")
            self.span.set_attribute(A.TOOL_NAME, name)
            self.metric_attributes = {**self.metric_attributes, A.TOOL_NAME: name}

    def on_mcp_server(self, name: Any, session_id: Any, protocol_version: Any) -> None:
        """The tool runs on an MCP server. This span stays the one tool span (the conventions'
        rule); the MCP SDK's client span below it is the request on the wire."""
        attributes: dict[str, AttributeValue] = {
            A.TOOL_TYPE: A.TOOL_TYPE_EXTENSION,
            A.MCP_METHOD_NAME: A.MCP_METHOD_TOOLS_CALL,
        }
        if sessionless(protocol_version):
            session_id = None
        for key, value in (
            (A.MCP_SERVER_NAME, name),
            (A.MCP_SESSION_ID, session_id),
            (A.MCP_PROTOCOL_VERSION, protocol_version),
        ):
            value = text_of(value)
            if value:
                attributes[key] = value
        self.span.set_attributes(checked(attributes, self.count, self.settings.scrub))
        if self.mcp is None:
            self.mcp = McpState()
        self.mcp.told.update(attributes)

    def on_mcp_session(self, name: Any, protocol_version: Any, session_id: Any = None) -> None:
        """The session its body's request went on (initialised by then) names its server:
        its name, protocol version and id (streamable HTTP's, on a revision with sessions),
        where the caller did not know them (a client that opens a session per call,
        LlamaIndex's ``BasicMCPClient``; a framework that keeps no session id)."""
        mcp = self.mcp
        if mcp is None:
            return
        if sessionless(mcp.told.get(A.MCP_PROTOCOL_VERSION, protocol_version)):
            session_id = None
        attributes: dict[str, AttributeValue] = {}
        for key, value in (
            (A.MCP_SERVER_NAME, name),
            (A.MCP_PROTOCOL_VERSION, protocol_version),
            (A.MCP_SESSION_ID, session_id),
        ):
            value = text_of(value)
            if value and key not in mcp.told:
                attributes[key] = value
        if attributes:
            self.span.set_attributes(checked(attributes, self.count, self.settings.scrub))
            mcp.told.update(attributes)

    def on_mcp_request(self, request_id: Any) -> None:
        """Its body sent its ``tools/call`` request (the MCP SDK's client span started with
        the JSON-RPC id): that id (a retried request's replaces it: the answer is the last's)."""
        request_id = text_of(request_id)
        if self.mcp is not None and request_id:
            attributes = {A.JSONRPC_REQUEST_ID: request_id}
            self.span.set_attributes(checked(attributes, self.count, self.settings.scrub))

    def on_mcp_result(self, result: Any) -> None:
        """Its body got the server's answer (``_mcp``): whether it says the tool failed
        (``isError``; a retried request's answer replaces it: the last one counts)."""
        from ._mcp import is_error  # (it imports this module)

        mcp = self.mcp
        if mcp is not None:
            mcp.error = is_error(result)
            mcp.failure = None

    def on_mcp_failure(self, error: BaseException) -> None:
        """Its body's request raised (``_mcp``): an MCP SDK error (a JSON-RPC error answer, a
        timeout, a connection lost) names the call's failure by its JSON-RPC code (the MCP
        conventions' ``error.type``), and a cancellation (the body gave up on the request:
        ``anyio.move_on_after``) by its class, as a cancelled run is named, should the call
        end failed with it (:meth:`failure`)."""
        from ._mcp import error_code  # (it imports this module)

        mcp = self.mcp
        if mcp is None:
            return
        kind = error_type_of(error)
        code = kind if isinstance(error, CancelledError) else error_code(error)
        mcp.failure = (kind, code) if code is not None else None

    def on_mcp_lost(self, error: BaseException) -> None:
        """Its body's request was lost below the session (``_mcp``: the transport's task that
        carried it failed with ``error``, and the MCP SDK cancelled the body instead of raising
        it there): an MCP tool's body failed with it, as if it had raised it (``body_error``),
        so the call's span names that cause, not the cancellation its body got; so does the
        run, should it end by that cancellation while the call is open (``RunRecorder.end``)."""
        mcp = self.mcp
        if mcp is not None:
            self.body_error = error
            mcp.lost = True

    def on_mcp_declined(self, code: int) -> None:
        """Its body declined what the server's answer asked for (a callback answered with the
        MCP SDK's ``ErrorData``): the SDK 2.x's ``Client`` raises its ``MCPError`` of that
        code, past the request, which names the call's failure as a request's error would."""
        mcp = self.mcp
        if mcp is not None:
            mcp.failure = ("MCPError", str(code))

    def failure(self, error_type: str) -> str:
        """The ``error.type`` of this call failing as ``error_type``. An MCP tool's own answer
        names it, as the MCP conventions do, whatever the framework made of it (pydantic-ai
        turns every one into ``ModelRetry``): the JSON-RPC code of the MCP error its body's
        request raised, ``tool_error`` for a server's ``isError`` answer. A cancellation of
        the request names it only when the failure is that or unnamed; any other framework
        outcome (its answer was fine) keeps its name."""
        mcp = self.mcp
        if mcp is None:
            return error_type
        failure = mcp.failure
        if failure is not None:
            coded = failure[1] != failure[0]  # (a cancellation is named by its class)
            return failure[1] if coded or error_type in (failure[0], TOOL_ERROR) else error_type
        return TOOL_ERROR if mcp.error else error_type

    def called_with(self, arguments: Any) -> None:
        """Its body runs with ``arguments``, not the call's (a middleware or a reviewer edited
        them): the conventions' arguments are what the tool was called with, so the span
        tells these, whether its event came before or comes after."""
        self.called = arguments
        self.capture_arguments(arguments, self.count)

    def capture_arguments(self, arguments: Any, count: Count) -> None:
        """The call's arguments, or those its body ran with (content capture on; a JSON text
        is parsed first)."""
        if self.settings.capture is not None and arguments is not None:
            # (``called`` is set only by ``called_with``: unset costs a plain call nothing)
            called = getattr(self, "called", None)
            value = parse_arguments(arguments if called is None else called, count)
            put(self.settings.capture, self.span, "tool_arguments", A.TOOL_CALL_ARGUMENTS, value)

    def record_error(self, kind: str, description: str | None, fatal: bool, time: int) -> None:
        """An ``Error`` event while the tool runs: on the span, and ``error.type`` on its metric."""
        record_error(self.span, kind, description, fatal, time)
        self._error_type(kind)

    def fail(self, error: BaseException, error_type: str, now: int) -> None:
        """The run failed while the tool ran: the exception and ERROR status on its span."""
        error_type = self.failure(error_type)
        fail_span(self.span, error, error_type, now)
        self._error_type(error_type)
        self.raised = True

    def end(
        self,
        now: int,
        error_type: str | None = None,
        incomplete: bool = False,
        result: Any = NO_RESULT,
    ) -> None:
        """End the span at ``now``; ``error_type``: it failed (also on its metric).

        ``result``: the content the tool returned (``NO_RESULT``: it returned nothing, cut
        short). A success's content is recorded with capture on; a returned failure is
        flagged, and its text becomes the status description only where content goes on
        spans, redacted and bounded as the result would be (it is content; otherwise the
        description is its type).
        """
        try:  # whatever raises while describing it, the span ends
            if error_type is not None:
                error_type = self.failure(error_type)
                if result is not NO_RESULT:
                    self.span.set_attribute(A.TOOL_IS_ERROR, True)
                    capture = self.settings.capture
                    if capture is not None and capture.spans:
                        text = error_text(result, self.span.scrub)
                        self.error_text = failure_text(capture, self.span, text)
                self._error_type(error_type)
                mark_error(self.span, error_type, self.error_text)
                if not self.raised:  # a reported failure: the exception event it stands for
                    report_failure(self.span, error_type, self.error_text, now)
            elif result is not NO_RESULT and self.settings.capture is not None:
                # gen_ai.tool.call.result is the result "if execution was successful"
                put(self.settings.capture, self.span, "tool_result", A.TOOL_CALL_RESULT, result)
            if incomplete:
                self.span.set_attribute(A.INCOMPLETE, True)
            duration = self.settings.instruments.tool_duration
            took, context = (now - self.start) * _NS, self.context
            if context is None:  # never current (the run's context pointed elsewhere)
                context = current_in(self.span)
            if A.ERROR_TYPE in self.metric_attributes:  # an error type of the events: checked
                duration.record(took, self.metric_attributes, context)
            else:  # checked with the start attributes, and inside this guard
                duration.histogram.record(took, self.metric_attributes, context)
        except Exception:
            report("tool span end")
        finally:
            # read by now: a context copied into a task the body started keeps this call, and
            # the exception's traceback would keep the body's frames (and all they held) alive
            self.body_error = None
            self.span.end(now)  # never raises


def _start(settings: RunSettings, count: Count, key: Any, name: str, kind: Any) -> Start:
    """A tool's span name, start attributes (``gen_ai.tool.type`` by :func:`tool_type`) and
    metric attributes, checked; remembered under ``key`` when they needed no repair."""
    attributes: dict[str, AttributeValue] = {
        A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
        A.TOOL_NAME: name,
        A.TOOL_TYPE: A.TOOL_TYPE_FUNCTION if kind is None else tool_type(kind),
    }
    raw_name = f"{A.OP_EXECUTE_TOOL} {name}"
    span_name, clean = known_start(None, key, raw_name, attributes, count, settings.scrub)
    metric: dict[str, AttributeValue] = {A.TOOL_NAME: clean.get(A.TOOL_NAME, "unknown")}
    if settings.conventions.tool_operation:  # the head's metric lists no operation
        metric[A.OPERATION_NAME] = A.OP_EXECUTE_TOOL
    start = span_name, clean, metric
    if key is not None and span_name is raw_name and clean is attributes:
        remember(settings.starts, key, start)
    return start


# What a tool call's ``type`` (an OpenAI-style ``ToolCall.type``, a Responses API output item
# type, an adapter's kind) says, as the registry's gen_ai.tool.type values: the one mapping.
_TOOL_TYPES = {
    "function": A.TOOL_TYPE_FUNCTION,
    "custom": A.TOOL_TYPE_FUNCTION,
    "function_call": A.TOOL_TYPE_FUNCTION,
    "extension": A.TOOL_TYPE_EXTENSION,
    "mcp": A.TOOL_TYPE_EXTENSION,
    "mcp_call": A.TOOL_TYPE_EXTENSION,
    "web_search": A.TOOL_TYPE_EXTENSION,
    "web_search_call": A.TOOL_TYPE_EXTENSION,
    "code_interpreter": A.TOOL_TYPE_EXTENSION,
    "code_interpreter_call": A.TOOL_TYPE_EXTENSION,
    "computer_call": A.TOOL_TYPE_EXTENSION,
    "datastore": A.TOOL_TYPE_DATASTORE,
    "retrieval": A.TOOL_TYPE_DATASTORE,
    "file_search": A.TOOL_TYPE_DATASTORE,
    "file_search_call": A.TOOL_TYPE_DATASTORE,
}


# The MCP revision that has no sessions: the conventions' mcp.session.id "MUST NOT be set for a
# 2026-07-28-and-later session, since none exists to identify".
_SESSIONLESS_SINCE = "2026-07-28"
_REVISION = re.compile(r"\d{4}-\d{2}-\d{2}")


def sessionless(protocol_version: Any) -> bool:
    """Whether MCP revision ``protocol_version`` (a date) has no sessions (2026-07-28 on)."""
    protocol_version = text_of(protocol_version)
    return (
        protocol_version is not None
        and _REVISION.fullmatch(protocol_version) is not None
        and protocol_version >= _SESSIONLESS_SINCE
    )


def tool_type(kind: Any) -> str:
    """``gen_ai.tool.type`` for a tool of ``kind``: ``extension`` for tools run agent-side
    against external systems (MCP servers, provider-hosted search or code), ``datastore`` for
    retrieval, ``function`` for the rest (the client runs it), unknown kinds included."""
    kind = text_of(kind)
    if kind is not None:
        return _TOOL_TYPES.get(kind.strip().lower(), A.TOOL_TYPE_FUNCTION)
    return A.TOOL_TYPE_FUNCTION


def error_text(content: Any, scrub: Scrub | None = None) -> str | None:
    """A returned error's content as text: a string as is, else its JSON (``None``: none);
    structured content scrubbed by ``scrub`` first, its values under secret keys replaced
    as in captured content (in the JSON text, a nested value's key is not beside it)."""
    if content is None:
        return None
    if scrub is not None and type(content) in (dict, list):
        content = scrub.value(content)
    if isinstance(content, str):
        return str.__str__(content)
    if issubclass(type(content), BaseException):  # its message, as an exception event says it
        try:
            return text_of(str(content))
        except Exception:  # an __str__ that raises: its type describes the error
            return None
    try:
        return json.dumps(content, default=str, ensure_ascii=False)
    except Exception:  # hostile content: its type describes the error
        return None
