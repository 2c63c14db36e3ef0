"""Running a tool body under its tool call's span, without knowing about tracing.

A tracer records a tool call as a span (``execute_tool``) from the ``ToolCall`` event to its
``ToolResult``. What the tool does meanwhile (an MCP client request, an HTTP call, a sub-agent
run) nests under that span only if the span is *current* while the body runs. Frameworks run
tool bodies in tasks and threads of their own, where the consumer of the event stream cannot
reach, so the code that runs the body says which call it is running::

    from agent_contract.scope import tool_scope

    with tool_scope(call.id, call.function.name):  # the id of the ToolCall event
        result = await my_tool(**arguments)       # sync or async, threads included

(``async with tool_scope(...)`` is the same block.)

``tool_scope`` asks each installed hook (a tracer installs one, ``agent_otel`` does on its
first run) for a context manager that makes the call's span current; with no hook installed
it is a no-op costing one function call and one ``with``. The hook finds the run from the
context the body runs in, so the body must run in a copy of the context the framework started
the run in (asyncio tasks, ``asyncio.to_thread`` and anyio's threads copy it; a bare
``ThreadPoolExecutor.submit`` and ``loop.run_in_executor`` do not: hand them
``contextvars.copy_context().run`` and the function). The framework adapters of
``agent_contract.sources`` call it through each framework's own tool-wrapping seam.

``call_id`` is the ``ToolCall`` event's id. A body may start before the consumer has read its
``ToolCall`` event: the tracer then opens the span early, and the event adopts it. When the
runner of a body does not know the id, pass ``None``, the name and the arguments: the tracer
then takes the oldest open call of that name, with equal arguments if several are open, whose
body has not started (calls with the same name and arguments are interchangeable). Never
scope a call the stream will not report as a ``ToolCall`` (an output tool, a framework's
internal call).

A tool that runs on an MCP server says so with ``mcp=McpServer(...)`` (what the caller knows
of the server: its name, the session, the negotiated protocol version); the tracer records it
on the tool's span.

A body that runs with other arguments than its call's (a framework's middleware or a reviewer
edited them) says so with ``called_with=arguments`` beside the call's id: the tracer records
them as what the tool was called with.

The tool's own exceptions pass through unchanged; a hook that fails costs only the scope.

A framework may run a whole agent inside a tool body, where no consumer of the outer stream
sees it (the Agents SDK's ``agent.as_tool()`` runs it unstreamed). An adapter that can stream
that agent itself asks ``nested_run(name)`` for a wrapper: an installed tracer returns one that
records the stream as a run nested under the span current at that call (the tool's, inside its
scope), however later it is pulled, with the current run's settings; ``None`` when no tracer
claims it (no run current), and the adapter then leaves the framework's own way alone::

    wrap = nested_run(agent.name)
    if wrap is not None:
        async for _ in wrap(events_of(agent, input)):
            pass

A framework adapter also says, as its stream starts, that it is about to run its framework:
``framework_started(__name__)``. The framework makes its model requests in tasks and threads
of its own, before the adapter hears of them; a tracer whose run the adapter's stream feeds
(directly, or through the caller's own generator, filter class or agent class, also after the
caller's own events) then covers the run from there,
so that a provider instrumentation does not trace those requests a second time.

A tool that runs inside another tool's body, that no model asked for (a CodeAgent's code
calling tools, a tool calling another tool, ``agent.tool.X()`` in a body), is no call of the
run: the stream never tells it, and ``tool_scope`` must not be used for it (it would take a
call the model asked for, or wait for an event that never comes). The code that runs it says
so with ``inner_tool(name, arguments)``::

    with inner_tool("weather", {"city": "Paris"}) as call:
        result = weather(city="Paris")
        call.result(result)  # call.result(text, error=True): it returned a failure
                             # (error=exception: the one a framework caught, naming it)

The tracer records it as a tool span of its own under the span current there (the calling
tool's, inside its body; outside any tool body, in the run's open step), ended as the block
ends: an exception leaving the block fails it with its class and goes on unchanged. It is not
one of the calls the model made. A no-op when no tracer is installed or no run is current.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

__all__ = [
    "McpServer",
    "RunHook",
    "CalledWith",
    "ScopeHook",
    "FrameworkHook",
    "ToolScope",
    "InnerCall",
    "InnerTool",
    "InnerToolHook",
    "add_framework_hook",
    "add_inner_tool_hook",
    "add_run_hook",
    "add_scope_hook",
    "framework_started",
    "inner_tool",
    "nested_run",
    "remove_framework_hook",
    "remove_inner_tool_hook",
    "remove_run_hook",
    "remove_scope_hook",
    "tool_scope",
]


@dataclass(frozen=True)
class McpServer:
    """The MCP server a tool call goes to, as far as the caller knows it (``None``: unknown)."""

    name: str | None = None
    """The server's own name (its ``serverInfo``), else the name the caller gave it."""
    session_id: str | None = None
    """The MCP session (streamable HTTP's ``Mcp-Session-Id``); stdio has none."""
    protocol_version: str | None = None
    """The protocol version the session negotiated (``2025-06-18``...)."""


@dataclass(frozen=True)
class CalledWith:
    """What a scope hook gets as ``arguments`` for a body that runs with other arguments than
    its call's (``tool_scope(..., called_with=...)``): the ones it runs with."""

    arguments: Any


ScopeHook = Callable[
    [str | None, str | None, Any, McpServer | None], AbstractContextManager[Any] | None
]
"""``hook(call_id, name, arguments, mcp)``: a context manager making that call's span current,
or ``None`` when the hook has no run to scope it in (the next hook is asked)."""

Wrapper = Callable[[AsyncIterator[Any]], AsyncIterator[Any]]

RunHook = Callable[[str | None], Wrapper | None]
"""``hook(name)``: a stream wrapper recording a stream as a run named ``name`` nested in the
current one, or ``None`` when the hook has no current run (the next hook is asked)."""

FrameworkHook = Callable[..., None]
"""``hook(source)``: the framework adapter ``source`` (its module's name) starts its framework
in the current context; the hook covers the run current there, if it has one.
``hook(source, conversation_id)`` when the adapter names the conversation the framework keeps
the run in (its thread or session): the run's conversation id, where it has none."""


class InnerTool(Protocol):
    """What an :data:`InnerToolHook` returns: a context manager around the inner tool's run
    that is told its result."""

    def __enter__(self) -> object: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> object: ...

    def result(self, value: Any, error: bool | BaseException) -> None:
        """What the tool returned (``error``: a failure it returned instead of raising,
        ``True`` or the exception it stands for)."""


InnerToolHook = Callable[[str | None, Any, McpServer | None], InnerTool | None]
"""``hook(name, arguments, mcp)``: the span of a tool run inside the current tool's body (no
model asked for it), or ``None`` when the hook has no run there (the next hook is asked)."""

_H = TypeVar("_H")


class _Hooks(Generic[_H]):
    """Hooks installed in order (read as one tuple, replaced whole: a reader never sees a half
    change); installing one twice does nothing, removing one never installed neither."""

    __slots__ = ("installed",)

    def __init__(self) -> None:
        self.installed: tuple[_H, ...] = ()

    def add(self, hook: _H) -> None:
        if hook not in self.installed:
            self.installed = (*self.installed, hook)

    def remove(self, hook: _H) -> None:
        self.installed = tuple(h for h in self.installed if h is not hook)


_scope_hooks: _Hooks[ScopeHook] = _Hooks()
_run_hooks: _Hooks[RunHook] = _Hooks()
_framework_hooks: _Hooks[FrameworkHook] = _Hooks()
_inner_hooks: _Hooks[InnerToolHook] = _Hooks()


_B = TypeVar("_B")


class _Block(Generic[_B]):
    """A block entered with ``with`` or ``async with`` alike (``async with`` runs the same
    entry and exit, in the awaiting task); this one does nothing."""

    __slots__ = ()

    def __enter__(self) -> _B:
        return None  # type: ignore[return-value]  # (ToolScope's; InnerCall's returns itself)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return None

    async def __aenter__(self) -> _B:
        return self.__enter__()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return self.__exit__(kind, error, traceback)


class _Hooked:
    """A hook's block, whose own failures never reach the code it wraps: entered if it can be,
    left only if it was entered; the wrapped code's exception propagates unchanged."""

    __slots__ = ("_entered", "_hooked")

    def __init__(self, hooked: AbstractContextManager[Any] | InnerTool) -> None:
        self._hooked = hooked
        self._entered = False

    def _enter(self) -> None:
        try:
            self._hooked.__enter__()
        except Exception:
            return
        self._entered = True

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._entered:
            self._entered = False
            with suppress(Exception):
                self._hooked.__exit__(kind, error, traceback)


class ToolScope(_Block[None]):
    """What :func:`tool_scope` returns: a block entered with ``with`` or ``async with`` alike
    (``async with`` runs the same entry and exit, in the awaiting task)."""

    __slots__ = ()


_NO_SCOPE = ToolScope()
"""The scope of a call no tracer claims: nothing happens."""


class _Guarded(_Hooked, ToolScope):
    """A hook's scope, whose own failures never reach the tool body."""

    __slots__ = ()

    def __enter__(self) -> None:
        self._enter()


def tool_scope(
    call_id: Any,
    name: Any = None,
    arguments: Any = None,
    *,
    mcp: McpServer | None = None,
    called_with: Any = None,
) -> ToolScope:
    """A context manager running its body under the span of tool call ``call_id``.

    ``call_id``: the ``ToolCall`` event's id (``None`` when unknown: then ``name`` and
    ``arguments``, a dict or its JSON text, pick the call, see the module docstring); ``name``:
    the tool's name; ``mcp``: the MCP server the tool runs on; ``called_with``: with a
    ``call_id``, the arguments the body runs with when they are not the call's (a framework's
    middleware or a reviewer edited them): the tracer records them as the call's. Works as
    ``with`` around sync code and around ``await``, and as ``async with``; a no-op when no
    tracer is installed or no run is current.
    """
    hooks = _scope_hooks.installed
    if not hooks:
        return _NO_SCOPE
    call_id = call_id if isinstance(call_id, str) and call_id else None
    name = name if isinstance(name, str) and name else None
    if called_with is not None and call_id is not None:
        arguments = CalledWith(called_with)
    for hook in hooks:
        try:
            scope = hook(call_id, name, arguments, mcp)
        except Exception:
            continue
        if scope is not None:
            return _Guarded(scope)
    return _NO_SCOPE


def add_scope_hook(hook: ScopeHook) -> None:
    """Install ``hook`` (once: adding it again does nothing); hooks are asked in order."""
    _scope_hooks.add(hook)


def remove_scope_hook(hook: ScopeHook) -> None:
    """Uninstall ``hook`` (not installed: nothing happens)."""
    _scope_hooks.remove(hook)


def nested_run(name: Any = None) -> Wrapper | None:
    """A wrapper recording a stream of events as a run nested in the current one (named
    ``name``), from the first installed hook that claims it; ``None``: nothing traces it."""
    name = name if isinstance(name, str) and name else None
    for hook in _run_hooks.installed:
        try:
            wrap = hook(name)
        except Exception:
            continue
        if wrap is not None:
            return wrap
    return None


def add_run_hook(hook: RunHook) -> None:
    """Install a nested-run ``hook`` (once: adding it again does nothing)."""
    _run_hooks.add(hook)


def remove_run_hook(hook: RunHook) -> None:
    """Uninstall a nested-run ``hook`` (not installed: nothing happens)."""
    _run_hooks.remove(hook)


def framework_started(source: str, conversation_id: Any = None) -> None:
    """A framework adapter (``source``: its module's ``__name__``) is about to run its
    framework in the current context: each installed hook is told (none: nothing happens).
    Called first in the adapter's stream, before the framework makes any request.
    ``conversation_id``: the conversation the framework keeps this run in, when it keeps one
    (LangGraph's ``thread_id``, a session's id): the run's ``gen_ai.conversation.id`` unless
    the caller gave the run one, also when the run makes no model call. A framework that
    resolves it only once started (pydantic-ai's run, a session ADK's adapter or Agno makes) is
    told again with it, before its first request: the run is covered once, and the first id
    it is told stands."""
    if type(source) is not str:  # a module's name, nothing else (not even a str subclass)
        return
    for hook in _framework_hooks.installed:
        with suppress(Exception):
            if conversation_id is None:
                hook(source)
            else:
                hook(source, conversation_id)


def add_framework_hook(hook: FrameworkHook) -> None:
    """Install a framework-run ``hook`` (once: adding it again does nothing)."""
    _framework_hooks.add(hook)


def remove_framework_hook(hook: FrameworkHook) -> None:
    """Uninstall a framework-run ``hook`` (not installed: nothing happens)."""
    _framework_hooks.remove(hook)


class InnerCall(_Block["InnerCall"]):
    """What :func:`inner_tool` returns: a block (``with`` or ``async with``) whose value is
    itself, told the tool's result with :meth:`result`; a no-op with no tracer."""

    __slots__ = ()

    def __enter__(self) -> InnerCall:
        return self

    def result(self, value: Any, error: bool | BaseException = False) -> None:
        """The tool returned ``value``; ``error``: a failure it returned instead of raising
        (an error message handed back to the model), ``True`` or the exception it stands for
        (a framework caught it: its class names the failure). Told once, before the block
        ends."""


_NO_INNER = InnerCall()


class _GuardedInner(_Hooked, InnerCall):
    """A hook's inner tool, whose own failures never reach the code that runs the tool."""

    __slots__ = ()

    def __enter__(self) -> InnerCall:
        self._enter()
        return self

    def result(self, value: Any, error: bool | BaseException = False) -> None:
        if self._entered:
            if error is not True and not isinstance(error, BaseException):
                error = False  # (a truthy object of the caller's is no failure)
            with suppress(Exception):
                self._hooked.result(value, error)  # type: ignore[union-attr]  # (an InnerTool)


def inner_tool(name: Any, arguments: Any = None, *, mcp: McpServer | None = None) -> InnerCall:
    """A block running tool ``name`` inside the current tool's body, a tool no model asked
    for (see the module docstring): its own tool span, child of the span current there.
    ``arguments``: what it is called with (a dict or its JSON text); ``mcp``: the MCP server
    it runs on. Tell its result with ``.result(value)`` (``error=True``: a failure it
    returned); an exception leaving the block fails it. A no-op when no tracer is installed
    or no run is current."""
    hooks = _inner_hooks.installed
    if not hooks:
        return _NO_INNER
    name = name if isinstance(name, str) and name else None
    mcp = mcp if isinstance(mcp, McpServer) else None
    for hook in hooks:
        try:
            call = hook(name, arguments, mcp)
        except Exception:
            continue
        if call is not None:
            return _GuardedInner(call)
    return _NO_INNER


def add_inner_tool_hook(hook: InnerToolHook) -> None:
    """Install an inner-tool ``hook`` (once: adding it again does nothing)."""
    _inner_hooks.add(hook)


def remove_inner_tool_hook(hook: InnerToolHook) -> None:
    """Uninstall an inner-tool ``hook`` (not installed: nothing happens)."""
    _inner_hooks.remove(hook)
