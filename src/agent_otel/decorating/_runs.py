"""One ``invoke_agent`` span per run, whichever entry point the caller used.

The four entry points call each other: ``invoke`` consumes ``stream``; a streaming Agent's
``run`` drains its ``astream``; a non-streaming Agent's default ``astream`` awaits ``run``.
The outer call traces the run and leaves a *claim* in a ContextVar: "the next ``stream``
(or ``run``) call of THIS agent belongs to my run". The inner call takes the claim once and
passes through untraced. Any later call (a sub-agent started from a tool, even the same
instance) finds the claim taken, or belonging to another agent, and traces its own run: the
wrapper has made that tool's span current, so the new span nests under it.

``invoke`` traces through the ``stream_wrapper`` it hands the agent (ours innermost, over the
raw events, then the caller's). An ``invoke`` that consumes its ``stream`` more than once (a
retry after a connection error) gets one ``invoke_agent`` span per attempt, siblings under the
caller's context, each attempt's tokens counted once: the claim is re-armed when an attempt's
run ends, so the next ``stream`` call is again the untraced inner half. A streaming agent's
``run`` passes through: its ``astream`` traces. A non-streaming agent's ``run`` is traced as a
one-event stream.

Every wrapper first asks ``lookup(self)`` for the original bound method and the options in
force (None: pass through). Instrumentation errors fall back to the plain call.

``invoke`` and ``run`` are ``async def`` in both contracts. One an agent wrote as a plain
function (``def run(self, **kwargs) -> str``) keeps it: wrapped in a coroutine, its callers got
a coroutine for the value, and awaiting it raised. Such a method is called as it is (chosen
when the method is wrapped, :func:`entry`), and what it returned decides: a coroutine (``def
run(self, **kw): return self._arun(**kw)``, an async method in all but name) is the run, traced
as an ``async def``'s when the caller awaits it, the very coroutine it made awaited inside;
anything else is returned as it is. A ``run``'s value, or its Task or Future (work already
under way, in a context copied before the run's span existed), is recorded as a run from the
call to its return or the work's end (its duration, its value, its exception; recorded after
the fact, the spans it starts cannot nest under it). An ``invoke``'s Task is traced through the
``stream_wrapper`` it applies (told once it is done, if it never did); any other ``invoke``
value, an awaitable of no kind followed, or a ``run``'s generator or async iterable (work that
runs only as its caller iterates it: no value of a run that is done), goes untraced, and why is
told once.
"""

from __future__ import annotations

import copy
import inspect
from asyncio import isfuture
from collections.abc import AsyncIterator, Callable, Mapping, MutableMapping
from concurrent.futures import Future as ConcurrentFuture
from contextlib import suppress
from functools import partial
from types import AsyncGeneratorType, GeneratorType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.context.context import Context

from agent_otel import _clock
from agent_otel._guard import report
from agent_otel._plain import get
from agent_otel.recording._hints import a_kind, hint_untraced
from agent_otel.recording._wrapper import defer, traced, traced_future, traced_return

from ._adapted import PAGE, adapter_of
from ._base import (
    CLAIM,
    DELEGATES,
    ORIGINAL,
    OTEL_CONTEXT,
    Bound,
    Claim,
    EntryPoint,
    Lookup,
    Pull,
    read,
    take,
)
from ._params import AgentSetup, agent_settings, event_settings
from ._propagation import agent_context_value, parent_from


def _is_default_astream(cls: type) -> bool:
    """Whether ``cls`` streams through the Agent contract's default ``astream`` (awaits run)."""
    for klass in cls.__mro__:
        fn = klass.__dict__.get("astream")
        if fn is None:
            continue
        if isinstance(fn, EntryPoint):  # ours (a Mock answers any name: read ours alone)
            if read(fn, DELEGATES, False):
                continue  # a wrapper of ours that looks further up the MRO
            fn = read(fn, ORIGINAL, fn)
        return bool(read(fn, "__qualname__", "") == "Agent.astream")
    return True  # no astream at all: run is the only entry point


def _synchronous(fn: Any) -> bool:
    """Whether ``fn`` is no coroutine function (nor one a decorator made with
    ``functools.wraps`` over one): a plain function, or a callable object or ``partial`` whose
    call is one (awaiting what it returned raised). What cannot be read (a hostile attribute)
    is taken for the contract's ``async def``."""
    try:
        return _read_synchronous(fn)
    except Exception:
        return False


def _read_synchronous(fn: Any) -> bool:
    fn = read(fn, "__func__", fn)
    while isinstance(fn, EntryPoint):  # ours, over what a base class holds: read that
        fn = read(fn.__wrapped__, "__func__", fn.__wrapped__)
    if inspect.iscoroutinefunction(fn):
        return False
    if not inspect.isfunction(fn):
        with suppress(Exception):  # a callable read as it is: its class's __call__
            call = fn.func if isinstance(fn, partial) else type(fn).__call__
            return not inspect.iscoroutinefunction(inspect.unwrap(call))
        return False
    with suppress(Exception):  # a wraps chain that loops or raises: read as it is
        return not inspect.iscoroutinefunction(inspect.unwrap(fn))
    return True


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _takes_stream_wrapper(fn: Any) -> bool:
    """Whether ``fn``, an ``invoke``, can be called as the event contract's is, ``invoke(messages,
    stream_wrapper, config)``: three by position after ``self`` (or ``*args``), the second no
    ``config`` (a LangChain runnable's, LangGraph's ``invoke(input, config)``). What cannot be
    read is taken for the contract's."""
    try:
        fn = read(fn, "__func__", fn)
        while isinstance(fn, EntryPoint):  # ours, over what a base class holds: read that
            fn = read(fn.__wrapped__, "__func__", fn.__wrapped__)
        if not inspect.isfunction(fn):
            return True
        parameters = list(inspect.signature(fn).parameters.values())[1:]  # after self
    except Exception:
        return True
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return True
    named = [p.name for p in parameters if p.kind in _POSITIONAL]
    return len(named) >= 3 and named[1] != "config"


def _foreign_invoke(lookup: Lookup, synchronous: bool) -> Bound:
    """An ``invoke`` that takes no ``stream_wrapper`` (a framework's own): called with its
    caller's arguments as they are, never ours (handed its config, it raised), and told once
    per class that it is not traced, and what traces it."""

    def told(agent: Any) -> Any:
        original, options = lookup(agent)
        if options is not None:
            adapter = adapter_of(type(agent))
            hint_untraced(
                agent,
                "invoke",
                "takes no stream_wrapper, as the event contract's invoke(messages, "
                "stream_wrapper, config) does (a framework's own, as LangGraph's invoke(input, "
                "config))",
                f"trace it through its adapter, otel_wrapper(...)({adapter}) ({PAGE})"
                if adapter
                else f"a framework's agent through its adapter ({PAGE}); an agent of your own "
                "by the contract's invoke (docs/contract.md)",
            )
        return original

    if synchronous:

        def invoke(self: Any, *args: Any, **kwargs: Any) -> Any:
            return told(self)(*args, **kwargs)

        return invoke

    async def ainvoke(self: Any, *args: Any, **kwargs: Any) -> Any:
        return await told(self)(*args, **kwargs)

    return ainvoke


def _passed_through(name: str, lookup: Lookup) -> Bound:
    """A synchronous ``name`` (``run``/``invoke``, async in the contracts) called as it is; the
    coroutine it returns traced as an ``async def``'s run, anything else told untraced."""
    if name == "invoke":
        return _plain_invoke(lookup)

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        original, options = lookup(self)
        if options is None:
            return original(*args, **kwargs)
        start = _clock.now_ns()
        try:
            value = original(*args, **kwargs)
        except BaseException as error:  # the run failed as it was called: recorded, re-raised
            run = _recorded_run(self, options, kwargs)
            if run is not None:
                traced_return(start, None, error, *run, _RunResult)
            raise
        if inspect.iscoroutine(value):  # the run itself, not yet started: await it traced
            made: Lookup = lambda _: (lambda *_a, **_k: value, options)  # noqa: E731
            return ENTRY_POINTS[name](made)(self, *args, **kwargs)
        if (inspect.isawaitable(value) and not _is_future(value)) or _lazy(value):
            # an awaitable of no kind we can follow, or a stream whose work has not run yet
            hint_untraced(
                self, name, f"is a plain function, not async def (it returned {a_kind(value)})"
            )
            return value
        run = _recorded_run(self, options, kwargs)
        if run is None:
            return value
        if _is_future(value):  # the run, already under way: recorded to its end
            traced_future(value, *run, _RunResult)
        else:  # the run, done: recorded from the call to its return
            traced_return(start, value, None, *run, _RunResult)
        return value

    return call


_GENERATORS = (GeneratorType, AsyncGeneratorType)


def _lazy(value: object) -> bool:
    """Whether ``value`` is work that runs only as it is iterated (a generator, an async
    generator or another async iterable): no run's value, nor work under way, so no run to
    record from it. Read by its type alone."""
    if type(value) in _GENERATORS:
        return True
    try:
        return hasattr(type(value), "__aiter__")
    except Exception:  # a hostile metaclass: a value, as any other
        return False


def _is_future(value: object) -> bool:
    """Whether ``value`` is work already under way: an ``asyncio`` Task or Future (or one of
    its kind), or a ``concurrent.futures.Future``."""
    return isfuture(value) or isinstance(value, ConcurrentFuture)


def _recorded_run(
    self: Any, options: AgentSetup, kwargs: dict[str, Any]
) -> tuple[Any, Context | None] | None:
    """The settings and parent of the run a plain ``run`` made, recorded from its outcome;
    ``None`` when the call is the inner half of a traced run (the default ``astream`` awaiting
    it) or a streaming agent's ``astream`` traces its runs."""
    try:
        if take(self, "run") or not _is_default_astream(type(self)):
            return None
        settings, parent, _ = _agent_run(self, options, kwargs)
    except Exception:
        report("instrument run")
        return None
    return settings, parent


def entry(name: str, lookup: Lookup, wrapped: Any) -> Bound:
    """The wrapper of entry point ``name`` for ``wrapped``, the method it stands in for."""
    if name == "invoke" and not _takes_stream_wrapper(wrapped):
        return _foreign_invoke(lookup, _synchronous(wrapped))
    if name in ("invoke", "run") and _synchronous(wrapped):
        return _passed_through(name, lookup)
    return ENTRY_POINTS[name](lookup)


# --- event contract ---------------------------------------------------------------------------
def with_key(config: Any, key: str, value: Any) -> Any:
    """``config`` with ``key`` set, as the caller's own type (a copy: theirs is untouched).

    ``None`` becomes a plain dict; a config that is not a mapping passes as it is.
    """
    if config is None:
        return {key: value}
    if not isinstance(config, Mapping):
        return config
    with suppress(Exception):  # a type copy cannot make is rebuilt below
        ours = copy.copy(config)
        if ours is not config and isinstance(ours, MutableMapping):
            ours[key] = value
            return ours
    # A dict's entries by dict's own items (a subclass's own items or keys may raise).
    merged = dict(dict.items(config)) if isinstance(config, dict) else {**config}
    merged[key] = value
    try:
        rebuilt: Any = type(config)
        return rebuilt(merged)
    except Exception:
        return merged


def _event_run(
    self: Any, options: AgentSetup, messages: Any, config: Any
) -> tuple[Any, Any, Context | None, Callable[[Context], None]]:
    settings = event_settings(options, self, messages, config)
    caller = get(config, OTEL_CONTEXT) if isinstance(config, Mapping) else None
    parent = parent_from(caller)
    ours = with_key(config, OTEL_CONTEXT, agent_context_value(caller, parent))

    def started(run_context: Context) -> None:
        if isinstance(ours, MutableMapping):
            ours[OTEL_CONTEXT] = agent_context_value(caller, run_context)

    return settings, ours, parent, started


def stream_entry(lookup: Lookup) -> Bound:
    def stream(self: Any, messages: Any, config: Any = None, *more: Any, **extra: Any) -> Any:
        original, options = lookup(self)
        if options is None or take(self, "stream"):
            return original(messages, config, *more, **extra)
        try:
            settings, ours, parent, started = _event_run(self, options, messages, config)
        except Exception:
            report("instrument stream")
            return original(messages, config, *more, **extra)
        raw = original(messages, ours, *more, **extra)
        if not hasattr(raw, "__aiter__"):
            hint_untraced(self, "stream", f"returned {a_kind(raw)}, not an async iterator")
            return raw
        defer(raw)  # the agent traces its own stream: this run records it
        return traced(Pull(lambda: raw, started), settings, parent)

    return stream


class _Invocation:
    """One traced ``invoke``: the ``stream_wrapper`` handed to the agent (ours, then the
    caller's) and the claim that makes its ``stream()`` call the untraced inner half."""

    __slots__ = (
        "agent",
        "caller_wrapper",
        "claim",
        "config",
        "parent",
        "settings",
        "started",
        "wrapped",
    )

    def __init__(
        self, agent: Any, options: AgentSetup, stream_wrapper: Any, messages: Any, config: Any
    ) -> None:
        self.agent = agent
        self.settings, self.config, self.parent, self.started = _event_run(
            agent, options, messages, config
        )
        self.caller_wrapper = stream_wrapper
        self.claim = Claim(agent, "stream")
        self.wrapped = False  # whether the agent's invoke applied the wrapper

    def wrapper(self, events: Any) -> Any:
        self.wrapped = True
        self.claim.taken = True
        defer(events)  # the agent traces its own stream: this run records it
        run = traced(Pull(lambda: events, self.started), self.settings, self.parent, self.rearm)
        return self.caller_wrapper(run) if self.caller_wrapper is not None else run

    def rearm(self) -> None:  # a retry's stream() call is the inner half of its own attempt
        self.claim.taken = False

    def call(
        self, original: Any, messages: Any, more: tuple[Any, ...], extra: Mapping[str, Any]
    ) -> Any:
        token = CLAIM.set(self.claim)
        try:
            return original(messages, self.wrapper, self.config, *more, **extra)
        finally:
            CLAIM.reset(token)

    async def result(self, awaitable: Any) -> Any:
        token = CLAIM.set(self.claim)
        try:
            value = await awaitable
        finally:
            CLAIM.reset(token)
        self.check()
        return value

    def check_wrapped(self, done: Any) -> None:
        """The work a plain ``invoke`` returned (a Task) is ``done``: told if it never passed
        its stream through the ``stream_wrapper`` (the task's own ``stream()`` call wraps it,
        as an ``async def``'s)."""
        if not self.wrapped:
            hint_untraced(
                self.agent,
                "invoke",
                f"returned {a_kind(done)} that never passed its stream through stream_wrapper",
            )

    def check(self) -> None:
        if self.claim.taken and not self.wrapped:  # it called its stream(), never the wrapper
            hint_untraced(self.agent, "invoke", "did not pass its stream through stream_wrapper")


def _begin(
    lookup: Lookup, agent: Any, stream_wrapper: Any, messages: Any, config: Any
) -> tuple[Bound, _Invocation | None]:
    """The agent's own ``invoke`` and the traced invocation of this call: None when the agent
    is not instrumented, or when starting the run failed (reported: the call runs untraced)."""
    original, options = lookup(agent)
    if options is None:
        return original, None
    try:
        return original, _Invocation(agent, options, stream_wrapper, messages, config)
    except Exception:
        report("instrument invoke")
        return original, None


def invoke_entry(lookup: Lookup) -> Bound:
    async def invoke(
        self: Any,
        messages: Any,
        stream_wrapper: Any = None,
        config: Any = None,
        *more: Any,
        **extra: Any,
    ) -> Any:
        original, invocation = _begin(lookup, self, stream_wrapper, messages, config)
        if invocation is None:
            return await original(messages, stream_wrapper, config, *more, **extra)
        return await invocation.result(invocation.call(original, messages, more, extra))

    return invoke


def _plain_invoke(lookup: Lookup) -> Bound:
    """A plain-function ``invoke``: called at once with our ``stream_wrapper``; the coroutine it
    returns is awaited with the claim set, as an ``async def``'s; any other value is its own."""

    def invoke(
        self: Any,
        messages: Any,
        stream_wrapper: Any = None,
        config: Any = None,
        *more: Any,
        **extra: Any,
    ) -> Any:
        original, invocation = _begin(lookup, self, stream_wrapper, messages, config)
        if invocation is None:
            return original(messages, stream_wrapper, config, *more, **extra)
        value = invocation.call(original, messages, more, extra)
        if inspect.iscoroutine(value):
            return invocation.result(value)
        if _is_future(value) and not invocation.wrapped:  # its stream may be wrapped later,
            with suppress(Exception):  # in the task: told then if it never was
                value.add_done_callback(lambda done: invocation.check_wrapped(done))
                return value
        if not invocation.wrapped:
            hint_untraced(
                self, "invoke", f"is a plain function, not async def (it returned {a_kind(value)})"
            )
        return value

    return invoke


# --- Agent contract ---------------------------------------------------------------------------
def _agent_run(
    self: Any, options: AgentSetup, kwargs: dict[str, Any]
) -> tuple[Any, Context | None, Callable[[Context | None], dict[str, Any]]]:
    settings = agent_settings(options, self, kwargs)
    if OTEL_CONTEXT not in kwargs:
        return settings, None, lambda _: kwargs
    caller = kwargs[OTEL_CONTEXT]
    parent = parent_from(caller)

    def call_kwargs(run_context: Context | None) -> dict[str, Any]:
        return {**kwargs, OTEL_CONTEXT: agent_context_value(caller, run_context or parent)}

    return settings, parent, call_kwargs


def astream_entry(lookup: Lookup) -> Bound:
    # The contract's astream takes keywords; an agent's own may take positional ones.
    def astream(self: Any, *args: Any, **kwargs: Any) -> Any:
        original, options = lookup(self)
        if options is None:
            return original(*args, **kwargs)
        try:
            settings, parent, call_kwargs = _agent_run(self, options, kwargs)
            claim = Claim(self, "run") if _is_default_astream(type(self)) else None
            deferred = OTEL_CONTEXT in kwargs and inspect.isasyncgenfunction(
                inspect.unwrap(original)
            )
        except Exception:
            report("instrument astream")
            return original(*args, **kwargs)
        if deferred:  # build the stream at the first pull, with the run's context to hand over
            holder: list[Context] = []
            pull = Pull(
                lambda: original(*args, **call_kwargs(holder[0] if holder else None)),
                holder.append,
                claim,
            )
        else:
            raw = original(*args, **call_kwargs(None))
            if not hasattr(raw, "__aiter__"):
                hint_untraced(self, "astream", f"returned {a_kind(raw)}, not an async iterator")
                return raw
            defer(raw)  # the agent traces its own stream: this run records it
            pull = Pull(lambda: raw, None, claim)
        return traced(pull, settings, parent)

    return astream


class _RunResult:
    """``run``'s value as the terminal event the default ``astream`` would have made of it."""

    __slots__ = ("data", "text", "type")
    final = True  # terminal, as the default astream's MessageFinal / StructuredFinal

    def __init__(self, value: Any) -> None:
        text = isinstance(value, str)
        self.type = "message_final" if text else "structured_final"
        self.text: Any = value if text else None
        self.data: Any = None if text else value


def run_entry(lookup: Lookup) -> Bound:
    # The contract's run takes keywords; an agent's own may take its prompt positionally.
    async def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        original, options = lookup(self)
        if options is None or take(self, "run"):
            return await original(*args, **kwargs)
        try:
            # A streaming agent's run drains its astream, which traces the run.
            run = _agent_run(self, options, kwargs) if _is_default_astream(type(self)) else None
        except Exception:
            report("instrument run")
            run = None
        if run is None:
            return await original(*args, **kwargs)
        settings, parent, call_kwargs = run
        values: list[Any] = []

        async def once() -> AsyncIterator[_RunResult]:
            value = await original(*args, **call_kwargs(otel_context.get_current()))
            values.append(value)
            yield _RunResult(value)

        async for _ in traced(once(), settings, parent):
            pass
        return values[0]

    return run


ENTRY_POINTS: dict[str, Callable[[Lookup], Bound]] = {
    "stream": stream_entry,
    "invoke": invoke_entry,
    "astream": astream_entry,
    "run": run_entry,
}
