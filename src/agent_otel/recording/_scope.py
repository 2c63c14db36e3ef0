"""Tool scopes: a tool body runs under its own ``execute_tool`` span, in any task or thread.

The wrapper makes the run's innermost span current only while it pulls the next event; a
framework that runs tools in tasks or threads of its own never sees that. The contract's
``agent_contract.scope.tool_scope(call_id, name)`` is the door adapters (and agents) call
around a tool body; :func:`install` puts our hook behind it once, at the first run.

The hook finds the run from the OTel context the body runs in: every context a run activates
carries the run's :class:`ToolScopes` (:meth:`ToolScopes.mark` on the run's parent), and the
frameworks create their tasks and threads in a copy of one of those. So no run current, or
another run current, is a cheap ``None``, and a sub-agent's run inside a tool scopes its own
tools.

A run started inside a tool body is an inner run of the run whose scopes that context carries
(:meth:`ToolScopes.mark`): a call not found among a run's own is looked for among its inner
runs, at any depth, since a framework runs a nested agent's tools in the context of the tool
that runs the agent, which carries the outer run.

Which span: the open tool call with that id; with no id, the oldest open call of that name
whose body has not started (with equal arguments, when several are open). A body that starts
before the wrapper has read its ``ToolCall`` event (the framework ran ahead of the consumer)
opens the span early, under the open step; the event adopts it (:meth:`ToolScopes.adopt`), so
the span starts when the tool did. A body running inside another tool's body whose agent is
recorded as an inner run (an agent the tool runs, its items pushed to a nested run) opens early
in that inner run, under its step; one that starts before that run does (the agent ran ahead of
the consumer) opens under this run's step, and the inner run's event adopts it from here. A
call that already ended is not reopened: a body scoped after its result (a framework's
after-hook, a retry told as the same call) opens nothing. A call whose body raised that is
scoped again before its result (a retry of the same call: LangGraph's ``RetryPolicy``) ends
that attempt failed with what it raised, and the retry is a span of its own. The ids it
remembers for that are the calls ended since the last model call started, at most
``MAX_ENDED`` (the newest): a long run holds what its current turn ended, not every call it
made, and an id a later turn reuses ("call_0" again) is that turn's new call.

The body's context is the run's parent as the run made it (the run's ids, inside a run: what
the body calls inherits them, and a run started there is nested) with the call's span, keeping
the W3C baggage of the context the body runs in.

The hook may run on any thread while the recorder runs on the consumer's: the finding, the
early opening and the recorder's own creation and removal of tool calls are one critical
section (:attr:`ToolScopes.lock`, of the run the call is in: a call an inner run tells is
looked for again and opened early under that run's lock, which its recorder takes too);
nothing on the event hot path takes it.

The same context gives ``agent_contract.scope.nested_run`` its run: an agent a framework runs
inside a tool body, streamed by the adapter, is recorded with the run's settings (its own
agent's name) under the span current there, the tool's.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager
from functools import partial
from inspect import CO_ASYNC_GENERATOR, CO_COROUTINE, currentframe
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.context.context import Context
from opentelemetry.trace import SpanKind

from agent_contract.scope import CalledWith
from agent_otel import _attributes as A
from agent_otel._guard import report
from agent_otel.standdown._context import tool_body
from agent_otel.standdown._imports import guard_on_import

from ._activation import activate, deactivate
from ._children import add_child
from ._errors import LEAVES_LOOP, error_type_of
from ._mcp import MODULES as MCP_MODULES
from ._mcp import watch
from ._open import claim, ended
from ._tool import ToolCall

if TYPE_CHECKING:
    from ._children import HasSpan
    from ._settings import RunSettings

_RUN = otel_context.create_key("agent_otel.tool_scopes")
_TOOL = otel_context.create_key("agent_otel.tool_call")  # the call whose body runs
_IN_BODY = otel_context.create_key("agent_otel.runs_in_the_body")
"""In the parent of a run started in a tool body whose work runs in that body's own contexts,
not in the run's (a framework's sub-agent told through ``nested_run`` from the items the
framework ran in the body, the work an agent's plain ``def run`` did or left in a task): a
model call made in the body's context while it is open may be that run's
(:meth:`ToolScopes.tells`). A framework adapter's own stream recorded so, which starts its
framework in that run's pull (``framework_started``, heard by :func:`_framework`), makes it
a run apart from then on, as any stream our wrapper pulls."""


def watch_sessions() -> None:
    """The MCP SDK's sessions watched already, if it is loaded, when a wrapper or an
    instrumented agent is made or ``configure()`` returns (not only once the first traced tool
    body runs), and, if it is not, as it loads: the requests a session sends before its first
    traced call are counted in flight too, and the MCP SDK 1.x's carry the trace they are sent
    in (an application's own span, a run's) however late the SDK is imported. Never raises."""
    watch(_TOOL, load=False)
    try:
        guard_on_import(MCP_MODULES, _watch_loaded)
    except Exception:
        report("mcp result watch")


def _watch_loaded() -> None:
    """:func:`watch` what has loaded (an MCP module has just loaded)."""
    watch(_TOOL, load=False)


class Runner(Protocol):
    """The recorder of a run, as its scopes reach it (from a tool body's thread too)."""

    def open_early(self, call_id: str | None, name: str | None) -> ToolCall:
        """Open the span of a call whose body started before its event (under the lock)."""

    def nested_parent(self, current: Context) -> Context:
        """Where a run started in ``current`` nests (``_nested``)."""

    def inner_tool(self, parent: Context, name: str | None) -> ToolCall:
        """The span of a tool no model asked for, run in a tool body (under the lock)."""

    def owner_of(self, context: Context) -> HasSpan | None:
        """The step or run whose span is current in ``context``, if any (under the lock)."""

    now: Callable[[], int]
    """The run's clock (ns)."""

    def end(self, end_reason: str, error: BaseException | None = None) -> None:
        """End the run's every span."""

    def ended_by_shutdown(self) -> None:
        """What the run's stream still yields passes unrecorded."""

    def at_work(self) -> bool:
        """Whether a model call or tool call of the run is open."""


_DEPTH = 64
"""How many runs out from a call's own run :meth:`ToolScopes.tells` looks for the run asked
about (agents nested in tools, at any real depth)."""
MAX_ENDED = 256
"""How many ended call ids a run remembers at most (the newest), so that a body scoped after
its call ended opens nothing."""
_EARLY = object()
"""In a run's ended ids: a body opened its span early since the last model call started."""


class ToolScopes:
    """The tool calls of one run that a tool body can run under (see the module doc)."""

    __slots__ = (
        "_ended",
        "_tools",
        "agents",
        "apart",
        "early",
        "framework",
        "inner",
        "live",
        "lock",
        "outer",
        "parent",
        "runner",
        "settings",
    )
    agents: list[tuple[ToolCall, ToolScopes]]
    """The calls whose body started a run of ours, each with that run's scopes (:meth:`mark`);
    unset until one did."""
    apart: bool
    """Set in a run started in a tool body (:meth:`mark`): True when the run's work runs in its
    own contexts (a stream it pulls: the model calls it tells are made there; a framework
    adapter's stream told through ``nested_run`` once it starts its framework there), False
    when it runs in the body's (:data:`_IN_BODY`); unset in a run started in none."""

    def __init__(
        self,
        tools: dict[object, ToolCall],
        runner: Runner,
        settings: RunSettings,
    ) -> None:
        self.settings = settings  # what a run nested in this one is recorded with
        self.lock = threading.Lock()
        self.live = True
        self._tools = tools  # the recorder's open tool calls, by key (read under the lock)
        self.runner = runner  # the run's recorder
        # Opened by a body, not yet adopted by their event (the recorder reads whether any
        # are before it asks: a Python call less per tool call).
        self.early: list[ToolCall] = []
        # The ids ended since the last model call started, oldest first (an ordered set); and
        # _EARLY once a body opened early since then (so new_turn looks at the early ones).
        self._ended: dict[object, None] = {}
        self.parent: Context | None = None
        self.inner: list[ToolScopes] = []  # the runs started inside this one's tool bodies
        self.outer: ToolScopes | None = None  # the run this one started inside, if any
        # The recorder's, told a framework adapter's stream started in the run's own stream.
        self.framework: Callable[[str, Context, object], None] | None = None

    def mark(self, parent: Context) -> Context:
        """``parent`` carrying this run's scopes: every context of the run derives from it.
        A run started inside another's tool body (``parent`` carries that run's scopes) is
        one of its inner runs, whose calls its scopes find too. The run then sets
        :attr:`parent` to its own parent, derived from this one (its ids, inside a run):
        what a tool body's context is made of."""
        outer = otel_context.get_value(_RUN, parent)
        if isinstance(outer, ToolScopes) and outer is not self:
            tool = otel_context.get_value(_TOOL, parent)
            with outer.lock:
                outer.inner = [s for s in outer.inner if s.live]
                outer.inner.append(self)
                if isinstance(tool, ToolCall):  # (set at the first: a plain run pays nothing)
                    outer.agents = [*getattr(outer, "agents", ()), (tool, self)]
                    add_child(tool, self, self._cut)  # it ends first, if still open
            self.outer = outer
            self.apart = otel_context.get_value(_IN_BODY, parent) is None
            if not self.apart:  # the runs started in its own tool bodies decide for themselves
                parent = otel_context.set_value(_IN_BODY, None, parent)
        self.parent = otel_context.set_value(_RUN, self, parent)
        return self.parent

    def _cut(self, at: int) -> None:
        """The tool span this run started in ends while the run is open (a framework that
        tells its agent's end after the tool's result, a tool cut short by its own run's end
        while the agent it awaits goes on): the run ends first, at that time, so no span of it
        outlives the tool's: ``cancelled`` when a model call or tool of it was still at work
        (cut short with its caller), else ``exhausted`` (its work was done, its end not yet
        told); what its stream still yields passes unrecorded."""
        runner = self.runner
        if not claim(runner):  # it ended meanwhile (or a shutdown ended it)
            return
        runner.now = lambda: at
        cancelled = runner.at_work()
        try:
            runner.end(A.END_CANCELLED if cancelled else A.END_EXHAUSTED)
        except Exception:
            report("run finish")
        runner.ended_by_shutdown()
        ended(runner)

    # --- the tool body's side (any thread) ------------------------------------------------------
    def context_for(
        self,
        call_id: str | None,
        name: str | None,
        arguments: Any,
        mcp: Any = None,
        body: Context | None = None,
    ) -> Context | None:
        """The context making the call's span current; ``None``: not a call of this run.
        ``mcp``: the contract's ``McpServer`` the tool runs on, recorded on its span. The
        context is the run's parent (the run's ids, inside a run) with the call's span, and
        the baggage of ``body``, the context the body runs in (its own entries kept)."""
        # An MCP tool's answer is read, and the MCP SDK 1.x's request carries the trace, as
        # the body sends it (the SDK imported for an MCP tool, else only once it is loaded;
        # outside the lock: a first import takes a while)
        watch(_TOOL, load=mcp is not None)
        called = None
        if type(arguments) is CalledWith:  # the body runs with other arguments: found by id
            called, arguments = arguments.arguments, None
        with self.lock:
            if not self.live or self.parent is None:
                return None
            found: tuple[ToolScopes, ToolCall | None] | None
            found = self.locate(call_id, name, arguments)
            if found is None:
                if call_id is not None and call_id in self._ended:
                    return None
                runs = self.body_run(otel_context.get_value(_TOOL))
                found = runs.claim(call_id, name, arguments) if runs is not None else None
                if found is None:
                    found = (self, self.open_early(call_id, name, arguments))
            owner, tool = found
            if tool is None:  # it ended in the run the tool's body started
                return None
            if tool.body_error is not None:  # its body raised, and it runs again: a retry
                if owner is self:
                    tool = self.retried(tool)
                else:
                    with owner.lock:
                        tool = owner.retried(tool)
            parent = owner.parent or self.parent
            if called is not None and (
                tool.arguments is None or _parsed(called) != _parsed(tool.arguments)
            ):
                tool.called_with(called)
            if mcp is not None:
                tool.on_mcp_server(
                    getattr(mcp, "name", None),
                    getattr(mcp, "session_id", None),
                    getattr(mcp, "protocol_version", None),
                )
            context = otel_context.set_value(
                _TOOL, tool, trace.set_span_in_context(tool.span.raw, parent)
            )
            # the body's own model calls are traced by the providers, an agent's it runs not
            context = tool_body(context, partial(owner.runs_in, tool))
        if body is not None:
            entries = baggage.get_all(body)
            if entries != baggage.get_all(context):  # the body's baggage, as it is there
                context = baggage.clear(context)
                for key, value in entries.items():
                    context = baggage.set_baggage(key, value, context)
        return context

    def locate(
        self, call_id: str | None, name: str | None, arguments: Any
    ) -> tuple[ToolScopes, ToolCall] | None:
        """The call among this run's, else among its inner runs' (at any depth): a framework
        runs a nested agent's tools in the context of the tool that runs the agent, which
        carries the outer run (under ``self.lock``; each inner run's taken in turn)."""
        tool = self._find(call_id, name, arguments)
        if tool is not None:
            tool.scoped = True
            return self, tool
        for inner in self.inner:
            if inner is self or not inner.live:
                continue
            with inner.lock:
                if not inner.live or inner.parent is None:
                    continue
                found = inner.locate(call_id, name, arguments)
            if found is not None:
                return found
        return None

    def runs_in(
        self, tool: ToolCall, at: int | None = None, context: Context | None = None
    ) -> bool:
        """Whether a run of ours started in ``tool``'s body is open (an agent the tool runs,
        recorded as an inner run of this one) that tells a model call made in ``context``
        (default: current; :meth:`tells`): its model calls are its chat spans, so the
        providers stand down for them. Asked by a provider's request from that body, on any
        thread, without the lock (:meth:`mark` replaces the list of inner runs; a run's
        ``live`` and ``parent`` are single reads). ``at``: was open at that time (ns), for a
        call logged after it ended (LiteLLM's callback), made then: an agent's, whose run may
        have ended since, or the body's own, made before or after any agent it ran."""
        here = otel_context.get_value(_RUN, context)
        if at is not None:
            return any(
                t is tool and inner.open_at(at) and inner.tells(here)
                for t, inner in getattr(self, "agents", ())
            )
        for inner in self.inner:
            if (
                inner.live
                and otel_context.get_value(_TOOL, inner.parent) is tool
                and inner.tells(here)
            ):
                return True
        return False

    def tells(self, here: object) -> bool:
        """Whether a model call made in a context of the run whose scopes are ``here`` may be
        one this run (started in a tool body) tells. A run whose work runs in its own contexts
        (:attr:`apart`) tells only the calls made there, or in a run started inside it: a call
        made in the body's own context while it is open (the body asking the model beside the
        agent it runs, on another thread or task) is the body's, which no chat span of ours
        tells. A run whose work runs in the body's contexts may tell any call made there: the
        two cannot be told apart, and the call stands down as the run's."""
        if not getattr(self, "apart", False):
            return True
        for _ in range(_DEPTH):
            if here is self:
                return True
            if not isinstance(here, ToolScopes):
                return False
            here = here.outer
        return False

    def open_at(self, at: int) -> bool:
        """Whether this run was open at ``at`` (ns), by its span's times; a run whose span
        keeps none (not sampled) is taken as open."""
        raw = getattr(getattr(getattr(self.runner, "run", None), "span", None), "raw", None)
        start, end = getattr(raw, "start_time", None), getattr(raw, "end_time", None)
        if type(start) is not int:
            return True
        return start <= at and (type(end) is not int or at <= end)

    def claim(
        self, call_id: str | None, name: str | None, arguments: Any
    ) -> tuple[ToolScopes, ToolCall | None] | None:
        """The call in this inner run, else its span opened early here, looked for again and
        opened in one hold of this run's lock: its recorder, on the consumer's thread, may tell
        the call between the outer run's search and this opening, and the call then has one
        span, not a second one left open. ``(self, None)``: the call ended here (it is not
        reopened); ``None``: the run has ended (the caller's lock held; this one's taken)."""
        with self.lock:
            if not self.live or self.parent is None:
                return None
            tool = self._find(call_id, name, arguments)
            if tool is not None:
                tool.scoped = True
                return self, tool
            if call_id is not None and call_id in self._ended:
                return self, None
            return self, self.open_early(call_id, name, arguments)

    def retried(self, tool: ToolCall) -> ToolCall:
        """The open call ``tool``, whose body raised, run again before its result came (a retry
        of the same call: LangGraph's ``RetryPolicy`` running the tool node again): the attempt
        that failed ends failed with what it raised, and the retry is a span of its own, opened
        now as a body's early span, which the call's result ends (under the lock)."""
        key = next((k for k, t in self._tools.items() if t is tool), None)
        if key is not None:
            del self._tools[key]
        elif tool in self.early:
            self.early.remove(tool)
        else:  # (not this run's to end)
            return tool
        raised, tool.body_error = tool.body_error, None
        retry = self.open_early(tool.call_id, tool.name, tool.arguments)
        if raised is not None:
            now = retry.start
            try:
                tool.fail(raised, error_type_of(raised), now)
            except Exception:
                report("tool retry")
            tool.end(now)  # never raises
        return retry

    def open_early(self, call_id: str | None, name: str | None, arguments: Any) -> ToolCall:
        """Open the span of a call whose body started before its event (under the lock)."""
        tool = self.runner.open_early(call_id, name)
        tool.arguments = arguments
        tool.scoped = True
        self.early.append(tool)
        self._ended[_EARLY] = None  # the next model call checks when it began (new_turn)
        return tool

    def body_run(self, tool: Any) -> ToolScopes | None:
        """The innermost of this run's inner runs started in ``tool``'s body (an agent the
        tool runs, recorded as a nested run while it goes on): a call of that agent whose
        body starts before the nested run read its ``ToolCall`` opens early there, not
        under this run's step (under ``self.lock``; each inner run's taken in turn)."""
        if not isinstance(tool, ToolCall):
            return None
        for inner in reversed(self.inner):
            if inner is self or not inner.live:
                continue
            with inner.lock:
                if not inner.live or inner.parent is None:
                    continue
                if otel_context.get_value(_TOOL, inner.parent) is tool:
                    return inner
                found = inner.body_run(tool)
            if found is not None:
                return found
        return None

    def _find(self, call_id: str | None, name: str | None, arguments: Any) -> ToolCall | None:
        if call_id is not None:
            tool = self._tools.get(call_id)
            if tool is not None:
                return tool
            return next((t for t in self.early if t.call_id == call_id), None)
        if name is None:
            return None
        waiting = [t for t in self._tools.values() if t.name == name and not t.scoped]
        if len(waiting) > 1 and arguments is not None:
            wanted = _parsed(arguments)
            return next((t for t in waiting if _parsed(t.arguments) == wanted), waiting[0])
        return waiting[0] if waiting else None

    # --- the recorder's side (under the lock) ---------------------------------------------------
    def adopt(self, call_id: str | None, name: Any, arguments: Any) -> ToolCall | None:
        """The early span of the call the recorder is starting, taken out of the early ones:
        the one with its id, else one opened by name (with equal arguments, if several)."""
        early = self.early
        if not early:
            return None
        if call_id is not None:
            found = self.take(call_id)
            if found is not None:
                return found
        named = [t for t in early if t.call_id is None and t.name == name]
        if len(named) > 1:
            wanted = _parsed(arguments)
            found = next((t for t in named if _parsed(t.arguments) == wanted), named[0])
        elif named:
            found = named[0]
        else:
            return None
        early.remove(found)
        return found

    def adopt_outer(self, call_id: str | None) -> ToolCall | None:
        """The early span of call ``call_id`` of this run that a body opened in the run this
        one started inside, before this run existed (an agent a tool ran on a thread, ahead
        of the consumer): taken from there, so the call has one span (under the outer step).
        Called without this run's lock (the outer's is taken)."""
        outer = self.outer
        if call_id is None or outer is None or not outer.early:
            return None
        with outer.lock:
            return outer.take(call_id)

    def take(self, call_id: str | None) -> ToolCall | None:
        """The early span of call ``call_id``, taken out of the early ones (under the lock):
        for its event, or for its result when its ``ToolCall`` event never came."""
        found = next((t for t in self.early if t.call_id == call_id), None)
        if found is not None:
            self.early.remove(found)
        return found

    def ended(self, call_id: str | None) -> None:
        """The call ended (under the lock): a body scoped with its id now opens nothing."""
        if call_id is not None:
            ended = self._ended
            ended[call_id] = None
            if len(ended) > MAX_ENDED:
                del ended[next(iter(ended))]

    def new_turn(self, now: int) -> int:
        """A model call started, told ``now``: the calls ended before are done with, and an id
        told from now on is a new call's, even one an earlier turn used. When the call began:
        ``now``, or when the first body still waiting for its ``ToolCall`` started, if earlier.
        Such a body is one this call asked for (a call's ``ToolCall`` events are told before the
        next call), told late: the framework ran ahead of the reader (a graph a tool runs on
        a thread), so the call began before the tools it asked for, as it did."""
        if self._ended:
            with self.lock:
                self._ended.clear()
                began = min((tool.start for tool in self.early), default=now)
            if began < now:
                return began
        return now

    def close(self) -> list[ToolCall]:
        """The run is ending: no more scopes; the early spans left, to end."""
        with self.lock:
            self.live = False
            early, self.early = self.early, []
            return early


def _parsed(arguments: Any) -> Any:
    """Arguments as a value to compare: a JSON text parsed, anything else as it is."""
    if isinstance(arguments, (str, bytes)):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


class _Activation:
    """Makes one context current for a tool body; restores the previous one after.

    An exception leaving the body (an ``Exception``, or a ``CancelledError`` the body raised
    while its task was not being cancelled: a cancel of its task is a body cut short, not
    failing, ``_failed``) is noted on its call (``ToolCall.body_error``): a result the
    framework made of it that names no class is named by it, and a run that ends while the call
    is open marks the call failed with it (``RunRecorder.end``). A body entered again (a
    retry of the same call) starts with nothing noted (nor an MCP server's failed answer, nor
    a request lost)."""

    __slots__ = ("_context", "_token", "_tool")

    def __init__(self, context: Context) -> None:
        self._context = context
        self._token: Any = None
        tool = otel_context.get_value(_TOOL, context)
        self._tool = tool if isinstance(tool, ToolCall) else None

    def __enter__(self) -> None:
        if self._tool is not None:
            self._tool.body_error = None
            mcp = self._tool.mcp
            if mcp is not None:
                mcp.error = mcp.lost = False
        self._token = activate(self._context)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        tool = self._tool  # type(): the error's __class__ is never read
        if (
            tool is not None
            and error is not None
            and _failed(type(error))
            and not carries(error, tool.body_error)
        ):
            tool.body_error = error
        token, self._token = self._token, None
        if token is not None:
            try:  # noqa: SIM105
                deactivate(token)
            except ValueError:  # exited in another context (a generator resumed elsewhere)
                pass


def carries(error: BaseException, cause: BaseException | None) -> bool:
    """Whether ``error``, leaving a tool body (or the run), is an exception group that holds
    ``cause``, what the body's MCP request was lost with (``ToolCall.on_mcp_lost``): the SDK's
    task group, closed in the body (a session opened for the call), raises the transport's
    failure so. The cause names the call's failure (and the run's), not the group that carried
    it."""
    if cause is None or not any(c.__name__ == "BaseExceptionGroup" for c in type(error).__mro__):
        return False  # (by name: Python 3.10's is the ``exceptiongroup`` backport's)
    members = getattr(error, "exceptions", ())
    if type(members) is not tuple:
        return False
    return any(member is cause or carries(member, cause) for member in members[:MAX_MEMBERS])


MAX_MEMBERS = 64
"""How many members of an exception group (at each level) are looked through for a cause."""


def _failed(kind: type[BaseException]) -> bool:
    """An exception of class ``kind`` leaving a tool body is the body failing: an ``Exception``,
    an exit (``sys.exit()``, ``KeyboardInterrupt``: ``LEAVES_LOOP``), or a ``CancelledError``
    the body raised itself (what it awaited was cancelled under it) while its task is not
    being cancelled. A cancel of its task (the run stopped, a sibling failed) cuts it short
    instead, as does any cancellation outside a task (a thread) or where a task cannot tell
    (Python 3.10)."""
    if issubclass(kind, (Exception, *LEAVES_LOOP)):
        return True
    if not issubclass(kind, asyncio.CancelledError):
        return False
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop: a thread
        return False
    cancelling = getattr(task, "cancelling", None)  # Python 3.11+ (3.10: cut short)
    return callable(cancelling) and cancelling() == 0


def _hook(
    call_id: str | None, name: str | None, arguments: Any, mcp: Any = None
) -> AbstractContextManager[None] | None:
    """``agent_contract.scope``'s hook: the current run's scope for the call, if any."""
    body = otel_context.get_current()
    scopes = otel_context.get_value(_RUN, body)
    if not isinstance(scopes, ToolScopes):
        return None
    try:
        context = scopes.context_for(call_id, name, arguments, mcp, body)
    except Exception:
        report("tool scope")
        return None
    return _Activation(context) if context is not None else None


def _nested(name: str | None) -> Callable[[AsyncIterator[Any]], AsyncIterator[Any]] | None:
    """``agent_contract.scope.nested_run``'s hook: a wrapper recording a stream as a run
    nested under the span current now (a tool's, in its scope; where that is a model call's,
    the framework preparing the request runs the agent: beside that call, in its step, as a
    chat span tells one request), with the current run's settings
    but its own agent (name, no id, description or attributes of the outer one) and input.
    The run starts as the stream is wrapped, not at its first pull: an agent on a thread of its
    own (a graph a sync tool runs) may run its tools before the consumer pulls, and each must
    find the run, and open its step, there."""
    scopes = otel_context.get_value(_RUN)
    if not isinstance(scopes, ToolScopes) or not scopes.live:
        return None
    from dataclasses import replace

    from ._wrapper import defer, traced  # the wrapper imports the recorder, which imports this

    settings = replace(
        scopes.settings,
        agent_name=name,
        agent_id=None,
        agent_description=None,
        agent_attributes={},
        input_messages=None,
        system_instructions=None,
    )

    current = otel_context.get_current()

    def wrap(stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
        # the run nests where it was asked for, wherever it is pulled from (beside a model
        # call current there), found once it is wrapped: a step it opens is opened by a run,
        # not by an adapter asking whether one would be traced
        # the framework's work, before and beside this run, runs in the body's contexts
        # (until an adapter's stream says it starts its framework in the run's: _framework)
        parent = in_body(scopes.runner.nested_parent(current))
        defer(stream)
        return traced(stream, settings, parent, eager=True)

    return wrap


def in_body(context: Context) -> Context:
    """``context``, the parent of a run whose work runs in the contexts of the tool body it
    starts in (if any: a context carrying no run's scopes is returned as it is), marked so
    (:data:`_IN_BODY`)."""
    if otel_context.get_value(_RUN, context) is None:
        return context
    return otel_context.set_value(_IN_BODY, True, context)


def _framework(source: str, conversation_id: object = None) -> None:
    """``agent_contract.scope.framework_started``'s hook: a framework adapter's stream starts
    in the current context. When that is a pull of a run's own stream (the caller's generator
    or agent class around the adapter; also where that generator pulls it inside a tool's
    scope of its own, the tool's work being the adapter's run), the run is told, to cover
    itself as a framework run. An agent a tool body runs is no pull of the run's stream: a
    body draining it keeps its events, and one streaming it through ``nested_run`` feeds that
    nested run, which is the one told, with the conversation the adapter names, if any."""
    current = otel_context.get_current()
    scopes = otel_context.get_value(_RUN, current)
    if not isinstance(scopes, ToolScopes) or not scopes.live or scopes.framework is None:
        return
    try:
        if _fed_to_a_run(currentframe(), source):
            if getattr(scopes, "apart", None) is False:  # nested: its framework starts in its
                scopes.apart = True  # own pulls, its calls in its contexts, not the body's
            scopes.framework(source, current, conversation_id)
    except Exception:
        report("framework run")


_WRAPPER = "agent_otel.recording._wrapper"
_OURS = "agent_otel."
_PASSING = frozenset({"__anext__", "asend", "athrow"})
"""The async iterator protocol's methods: written as coroutines, they hand the next event up."""
_STACK_READ = 32
"""How many frames above the adapter's a run's pull is looked for (each generator layer of the
caller's is one, and ours a few)."""


def _fed_to_a_run(frame: FrameType | None, source: str) -> bool:
    """Whether the adapter ``source``, whose body called the hook above ``frame``, hands its
    events to a run's pull: each frame from the adapter's up to our wrapper's is an async
    generator of the caller's (a filter, an agent's ``stream()``), an async iterator's
    ``__anext__`` (or ``asend``/``athrow``) written as a coroutine (a filter class: it hands
    each event up as its value), or one of ours (the decorator's pulls). Any other coroutine
    between (an agent's ``run()`` draining the adapter, a ``collect()`` of the caller's) keeps
    the events: no chat span of ours tells those calls, so the provider instrumentations'
    spans stay."""
    while frame is not None and frame.f_globals.get("__name__") != source:
        frame = frame.f_back  # up to the adapter's own frame
    for _ in range(_STACK_READ):
        if frame is None:
            return False
        frame = frame.f_back
        if frame is None:
            return False
        name = frame.f_globals.get("__name__")
        if name == _WRAPPER:
            return True
        if isinstance(name, str) and name.startswith(_OURS):
            continue
        code = frame.f_code
        if not code.co_flags & CO_ASYNC_GENERATOR and not (
            code.co_flags & CO_COROUTINE and code.co_name in _PASSING
        ):
            return False
    return False


def mcp_request_started(kind: SpanKind, attributes: Any, parent: Context | None) -> None:
    """Another library's span started in ``parent``: when it is an MCP ``tools/call`` request
    (the MCP SDK's CLIENT span: ``mcp.method.name``, ``jsonrpc.request.id``) sent from a tool
    body, its request id goes to that tool's span (``RunIdentityProcessor`` calls this)."""
    if kind is not SpanKind.CLIENT or not attributes:
        return
    if attributes.get(A.MCP_METHOD_NAME) != A.MCP_METHOD_TOOLS_CALL:
        return
    tool = otel_context.get_value(_TOOL, parent)
    if isinstance(tool, ToolCall):
        tool.on_mcp_request(attributes.get(A.JSONRPC_REQUEST_ID))


_installed = False


def install() -> None:
    """Put the hook behind ``agent_contract.scope.tool_scope`` (once per process)."""
    global _installed
    if _installed:
        return
    _installed = True
    try:
        from agent_contract.scope import add_framework_hook, add_run_hook, add_scope_hook
    except ImportError:  # pragma: no cover - the contract ships in the same distribution
        return
    from agent_contract.scope import add_inner_tool_hook

    from ._inner import inner_hook  # (it imports this module)

    add_scope_hook(_hook)
    add_run_hook(_nested)
    add_inner_tool_hook(inner_hook)
    add_framework_hook(_framework)
