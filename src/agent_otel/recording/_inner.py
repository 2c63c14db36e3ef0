"""Inner tools: a tool run inside another tool's body that no model asked for.

A CodeAgent's code calling its tools, a tool calling another tool, Strands'
``agent.tool.X()`` in a body: the stream never tells such a call (no ``ToolCall`` event), so
``tool_scope`` cannot name it. ``agent_contract.scope.inner_tool(name, arguments)`` asks
:func:`inner_hook` for an :class:`InnerToolCall`: an ``execute_tool {name}`` span of its own
(:class:`ToolCall` writes it) under the span current there, the calling tool's inside its body;
outside any tool body, in the run's open step (``nested_parent``). It is none of the run's
calls: the recorder never sees it, the chat span's output keeps what the model asked for, and
a retry or a same-named call of the model's is never taken for it. Its body runs with its span
current, so what it does (another inner tool, a provider's request, an agent) nests under it;
it ends as its block ends, before the calling tool's span: an exception leaving the block
fails it with its class, a cancellation of its task before its result was told cuts it short
(incomplete; one after it, a generator closed once its result is out, does not). A block
still open when its caller's span (or the step's or run's) ends is cut short then, incomplete
(``._children``), so it never outlives it; one entered after its caller's result was told
records nothing.
"""

from __future__ import annotations

import threading
from functools import partial
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context.context import Context

from agent_otel._guard import report
from agent_otel.standdown._context import tool_body

from ._activation import activate, deactivate
from ._children import Cut, add_child, ended
from ._errors import error_type_of
from ._scope import _RUN, _TOOL, ToolScopes, _failed
from ._tool import NO_RESULT, TOOL_ERROR, ToolCall


class InnerToolCall:
    """One inner tool's run (the contract's ``InnerTool``): its span from the block's entry
    to its exit, its result as told (see the module doc). The contract guards every method."""

    __slots__ = ("_arguments", "_body", "_children", "_error", "_lock", "_mcp", "_name", "_result",
                 "_scopes", "_token", "tool")  # fmt: skip

    def __init__(
        self, scopes: ToolScopes, body: Context, name: str | None, arguments: Any, mcp: Any
    ) -> None:
        self._scopes = scopes
        self._body = body  # the context the block runs in
        self._name = name
        self._arguments = arguments
        self._mcp = mcp
        self._result: Any = NO_RESULT
        self._error: bool | BaseException = False
        self._token: Any = None
        self.tool: ToolCall | None = None
        self._lock = threading.Lock()  # its end: by its block's exit, or cut by its caller's
        self._children: dict[object, Cut] | None = None  # its caller's, once under one

    def __enter__(self) -> InnerToolCall:
        scopes, body = self._scopes, self._body
        within = otel_context.get_value(_TOOL, body)
        caller = within if isinstance(within, ToolCall) else None
        # in a tool's body: under the span current there; else in the run's step (beside a
        # model call current here)
        parent = body if caller is not None else scopes.runner.nested_parent(body)
        with scopes.lock:
            if not scopes.live:  # the run ended meanwhile
                return self
            owner = caller if caller is not None else scopes.runner.owner_of(parent)
            if owner is not None and ended(owner.span):  # its caller's result was told
                return self
            tool = scopes.runner.inner_tool(parent, self._name)
            if owner is not None:  # cut short if its caller ends first
                self._children = add_child(owner, self, self._cut)
        self.tool = tool
        if self._mcp is not None:
            mcp = self._mcp
            tool.on_mcp_server(mcp.name, mcp.session_id, mcp.protocol_version)
        tool.capture_arguments(self._arguments, tool.count)
        context = otel_context.set_value(
            _TOOL, tool, trace.set_span_in_context(tool.span.raw, parent)
        )
        # its own model calls are traced by the providers, an agent's it runs not
        context = tool_body(context, partial(scopes.runs_in, tool))
        self._token = activate(context)
        return self

    def _cut(self, at: int) -> None:
        """Its caller's span ends while it is still open (a body's thread left behind, the
        run ending first): it ends now, cut short; its block's exit then changes nothing."""
        with self._lock:
            tool, self.tool = self.tool, None
        if tool is not None:
            tool.end(at, incomplete=True)

    def result(self, value: Any, error: bool | BaseException) -> None:
        self._result, self._error = value, error

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        token, self._token = self._token, None
        if token is not None:
            try:  # noqa: SIM105
                deactivate(token)
            except ValueError:  # exited in another context
                pass
        with self._lock:
            tool, self.tool = self.tool, None
        if tool is None:
            return
        if self._children is not None:
            self._children.pop(self, None)
        result, self._result = self._result, NO_RESULT  # (not kept alive by the span)
        told, self._error = self._error, False
        now = self._scopes.runner.now()
        if error is not None and kind is not None and _failed(kind):
            error_type = error_type_of(error)
            tool.fail(error, error_type, now)
            tool.end(now, error_type)
        elif error is not None and result is NO_RESULT and told is False:
            tool.end(now, incomplete=True)  # its task was cancelled before any result: cut short
        elif told is not False:  # a failure it returned: named by the exception, if told
            named = TOOL_ERROR if told is True else error_type_of(told)
            tool.end(now, named, result=result)
        else:
            tool.end(now, result=result)


def inner_hook(name: str | None, arguments: Any, mcp: Any) -> InnerToolCall | None:
    """``agent_contract.scope.inner_tool``'s hook: the inner tool's call in the current run,
    if any (``None``: no run current)."""
    body = otel_context.get_current()
    scopes = otel_context.get_value(_RUN, body)
    if not isinstance(scopes, ToolScopes) or not scopes.live:
        return None
    try:
        return InnerToolCall(scopes, body, name, arguments, mcp)
    except Exception:
        report("inner tool")
        return None
