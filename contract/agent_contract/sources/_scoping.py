"""Tool scopes entered at a framework's "tool started" callback, exited at "tool ended".

For frameworks whose seam is a pair of callbacks rather than a wrapper around the tool body
(LangChain's callback handlers, for instance): the callbacks run in the body's own context,
before and after it, so a scope entered in the first and exited in the second holds the call's
span current while the body runs. Keyed by the framework's id of that execution. A tool run
inside another's body that no model asked for (a LangChain tool invoking another) is entered
as an ``inner_tool`` instead (:meth:`OpenScopes.enter_inner`), told its result as it exits.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from agent_contract.scope import InnerCall, McpServer, inner_tool, tool_scope

__all__ = ["OpenScopes"]


class OpenScopes:
    """The scopes entered and not yet exited, by the framework's key of each execution."""

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: dict[object, AbstractContextManager[Any]] = {}

    def __contains__(self, key: object) -> bool:
        """Whether execution ``key`` is open (its body runs)."""
        return key in self._open

    def enter(
        self,
        key: object,
        call_id: Any,
        name: Any,
        arguments: Any = None,
        *,
        mcp: McpServer | None = None,
        called_with: Any = None,
    ) -> None:
        scope = tool_scope(call_id, name, arguments, mcp=mcp, called_with=called_with)
        scope.__enter__()
        self._open[key] = scope

    def enter_inner(
        self, key: object, name: Any, arguments: Any = None, *, mcp: McpServer | None = None
    ) -> None:
        """Enter execution ``key`` as an inner tool (run inside another tool's body, asked
        for by no model): a span of its own under the calling tool's."""
        call = inner_tool(name, arguments, mcp=mcp)
        call.__enter__()
        self._open[key] = call

    def exit(
        self,
        key: object,
        error: BaseException | None = None,
        result: Any = None,
        failed: bool | BaseException = False,
    ) -> None:
        """Leave the scope of execution ``key``; ``error``: what its body raised (the
        framework's "tool failed" callback hands it), told to the tracer as a ``with`` would;
        ``result`` (``failed``: a failure it returned), told to an inner tool."""
        scope = self._open.pop(key, None)
        if isinstance(scope, InnerCall) and error is None:
            scope.result(result, failed)
        if scope is not None:
            if error is None:
                scope.__exit__(None, None, None)
            else:
                scope.__exit__(type(error), error, error.__traceback__)
