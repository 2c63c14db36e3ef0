"""``otel_wrapper()``: the template that owns iteration of one run.

``traced()`` pulls each event from the agent with the run's innermost span current, restores
the consumer's context before yielding the very same object (a consumer's ``asend`` value and
``athrow`` exception go on to the agent's stream, its answer comes back), and ends the
run exactly once on every exit path: exhaustion, an agent exception (re-raised as the
same object), the consumer closing or abandoning the stream (the agent's stream is closed
too), cancellation.
Instrumentation errors stop at :mod:`agent_otel._guard`; the agent's and the consumer's always
win.
"""

from __future__ import annotations

import asyncio
import weakref
from asyncio import current_task
from collections.abc import AsyncIterable, AsyncIterator, Callable, Coroutine
from contextlib import suppress
from contextvars import ContextVar
from dataclasses import replace
from types import AsyncGeneratorType, FunctionType
from typing import TYPE_CHECKING, Any, cast

from opentelemetry import context as otel_context
from opentelemetry.context.context import Context
from opentelemetry.trace import SpanContext

from agent_otel import _attributes as A
from agent_otel._guard import reads_values, report
from agent_otel._plain import text_of
from agent_otel.standdown._context import suppressed_here
from agent_otel.standdown._frameworks import framework_run

from ._activation import activate, deactivate
from ._hints import a_kind, factory, hint_unconfigured, keyworded
from ._open import claim, ended, opened
from ._options import Options, settings_from
from ._read import handler_for
from ._recorder import Handler, RunRecorder
from ._scope import in_body
from ._settings import RunSettings

if TYPE_CHECKING:
    from typing_extensions import Unpack

reads_values(__name__, frozenset({"_with_invoke_input"}))  # the messages of an invoke

StreamWrapper = Callable[[AsyncIterator[Any]], AsyncIterator[Any]]
_NO_STREAM: Any = object()
_NO_STREAM_GIVEN = (
    "the stream wrapper otel_wrapper() returned was called with no stream: pass it as "
    "stream_wrapper=otel_wrapper() (called once, not twice), or wrap a stream, as in "
    "otel_wrapper()(agent.stream(messages)) (docs/options.md)"
)
INTERRUPTED_ERROR = "AgentInterruptedError"
"""Class name of the Agent contract's "run paused on an interrupt" error: not a failure."""


@factory
def otel_wrapper(**options: Unpack[Options]) -> StreamWrapper:
    """A ``stream_wrapper`` that traces each stream it wraps as one agent run.

    ``agent.invoke(messages, stream_wrapper=otel_wrapper())`` or
    ``otel_wrapper()(agent.stream(messages))``. Each wrapped stream becomes one
    ``invoke_agent`` span, a child of the context current when iteration starts, with step,
    chat and tool spans below it and the GenAI metrics recorded. The options (providers,
    content capture, ids, prices, ...) are :class:`~agent_otel.recording._options.Options`,
    the same for ``instrument()``; providers default to the global ones and nothing global
    is set.
    """
    settings = settings_from(options)

    def wrap(stream: AsyncIterator[Any] = _NO_STREAM) -> AsyncIterator[Any]:
        if stream is _NO_STREAM:  # otel_wrapper()(): the wrapper called where it belongs
            raise TypeError(_NO_STREAM_GIVEN)
        if not hasattr(stream, "__aiter__"):  # before anything names or defers its run
            raise TypeError(_not_a_stream(stream))
        defer(stream)
        try:
            task = current_task()
        except RuntimeError:  # no event loop running in this thread
            task = None
        layer = _Layer(me, None if task is None else weakref.ref(task))
        _NAMED.set(layer)  # what run_context(wrap) names in this context from now on
        run = _traced(stream, _with_invoke_input(settings), None, None, layer)  # checked above
        _LAYERS[run] = layer
        return run

    me = weakref.ref(wrap)
    return wrap


def _with_invoke_input(settings: RunSettings) -> RunSettings:
    """``settings`` with the input of the ``invoke`` whose ``stream_wrapper`` this is, when
    content capture is on (off: the messages are not even looked at)."""
    if settings.capture is None or settings.input_messages is not None:
        return settings
    try:
        from agent_contract.invoke import invoke_messages  # only with capture on: import cost

        messages = invoke_messages()
        if messages is None:
            return settings
        return replace(settings, input_messages=list(messages))
    except Exception:
        report("invoke input")
        return settings


def _start(
    settings: RunSettings,
    parent: Context | None,
    stream: object,
    layer: _Layer,
    began: int | None = None,
) -> RunRecorder | None:
    try:
        current = otel_context.get_current()
        if suppressed_here(current):
            return None  # the caller turned instrumentation off: the run passes through
        hint_unconfigured(settings.tracer)
        context = current if parent is None else parent
        if settings.stand_down_providers:
            context = framework_run(context, stream)
        recorder = RunRecorder(settings, context, began)
    except Exception:
        report("run start")
        return None
    opened(recorder)  # a shutdown meanwhile ends it (._open)
    try:  # (a failure here must not leave the started run unended)
        layer.span = recorder.run.span.raw.get_span_context()  # run_context() names the run
    except Exception:
        report("run context")
    return recorder


def _end(recorder: RunRecorder | None, end_reason: str, error: BaseException | None) -> None:
    if recorder is None or not claim(recorder):  # not claimed: a shutdown already ended it
        return
    try:
        recorder.end(end_reason, error)
    except Exception:
        report("run finish")
    ended(recorder)  # told if dropped (a provider already shut down); flushed if draining


_DONE: Any = object()
_EXHAUSTED = A.END_EXHAUSTED  # (one global read on every run's path, not two)


async def _answer(
    iterator: AsyncIterator[Any], thrown: BaseException, active: RunRecorder | None
) -> Any:
    """The agent's answer to a consumer's ``athrow``, as a bare async generator would give it:
    its next event, ``_DONE`` if it returned, else what it raised (usually ``thrown``)."""
    athrow = getattr(iterator, "athrow", None)
    if athrow is None:
        raise thrown
    return await _resume(active, athrow, thrown)


async def _forward(iterator: AsyncIterator[Any], sent: Any, active: RunRecorder | None) -> Any:
    """The agent's answer to a consumer's ``asend(value)``: its next event, or ``_DONE``.

    An agent stream without ``asend`` (a plain async iterator) gets a plain pull: the value
    has nowhere to go, as ``async for`` over it would also drop it.
    """
    asend = getattr(iterator, "asend", None)
    if asend is None:
        return await _resume(active, iterator.__anext__)
    return await _resume(active, asend, sent)


async def _resume(active: RunRecorder | None, step: Callable[..., Any], *given: Any) -> Any:
    """``step(*given)`` awaited as the agent's pulls are, with the run's innermost span
    current (``active``; None: untraced, or activation off): the agent's next event, or
    ``_DONE`` if it returned."""
    token = activate(active.context) if active is not None else None
    try:
        return await step(*given)
    except StopAsyncIteration:
        return _DONE
    finally:
        if token is not None:
            with suppress(ValueError):
                deactivate(token)


def _closing_every_generator() -> bool:
    """Whether the running loop is closing every async generator it ran, all at once
    (``shutdown_asyncgens``: ``asyncio.run()`` ending with the stream open). The agent's own
    generators are among them, closed by asyncio as they would be untraced: closing the agent's
    stream from ours as well made one of the two closes fail, logged by asyncio ("aclose():
    asynchronous generator is already running") whenever the agent's cleanup awaits. A stream
    of another kind is closed by nobody there, as untraced. Read where asyncio keeps it (no
    public API says it); a loop without it (another implementation's) is read as not closing."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no asyncio loop: nothing closes the agent's stream but us
        return False
    return getattr(loop, "_asyncgens_shutdown_called", False) is True


def _not_a_stream(given: object) -> str:
    """What wrapping ``given``, which is no async iterator (a list, the agent, ``agent.stream``
    uncalled, a coroutine), is told: at the call that wraps it, not at the first pull of a
    run that was never going to start. A coroutine is most likely
    ``agent.invoke(...)``: it is closed (it never ran, so nothing of the agent's is lost, and
    Python does not warn it was never awaited) and the message shows where the wrapper goes."""
    if issubclass(type(given), Coroutine):  # (type() never reads a hostile __class__)
        with suppress(Exception):
            cast("Coroutine[Any, Any, Any]", given).close()
        return (
            "otel_wrapper() wraps an async iterator of agent events, not a coroutine: "
            "await agent.invoke(messages, stream_wrapper=otel_wrapper()), or wrap the stream, "
            "as in otel_wrapper()(agent.stream(messages)) (docs/options.md)"
        )
    return (
        f"otel_wrapper() wraps an async iterator of agent events, not "
        f"{a_kind(given)}: wrap the stream, as in "
        "otel_wrapper()(agent.stream(messages)) (a synchronous generator: see docs/faq.md)"
    )


class _Layer:
    """What a layer outside one traced stream may learn of it: whether it has started, and
    whether the outer layer records its run instead (``deferred``: see :func:`defer`); and
    what :func:`run_context` tells of it: the run's span context once it started (``None``:
    not yet, or the run passes through), and the ``otel_wrapper()`` that wrapped the
    stream, if one did, with the task it did it in (both weakly: the task's context holds
    this layer, which must not hold the task, its result or its traceback in a cycle). Never
    the recorder: nothing here keeps a run's spans alive after it ended."""

    __slots__ = ("deferred", "span", "started", "task", "wrapper")

    def __init__(
        self,
        wrapper: weakref.ref[Any] | None = None,
        task: weakref.ref[asyncio.Task[Any]] | None = None,
    ) -> None:
        self.deferred = self.started = False
        self.span: SpanContext | None = None  # the run's, once it started
        self.wrapper = wrapper
        self.task = task


_LAYERS: weakref.WeakKeyDictionary[AsyncIterator[Any], _Layer] = weakref.WeakKeyDictionary()


def unpulled(tracer: object) -> bool:
    """Whether a stream traced with ``tracer`` is alive and not pulled yet: its run starts at
    its first pull, so it has recorded nothing (what the test kit tells a test that reads
    spans before it consumed its stream). Its tracer is read off the stream's own frame, whose
    arguments are bound before that pull, so that nothing on a run's path stores it; no method
    of the agent's stream runs."""
    for run, layer in list(_LAYERS.items()):
        frame = None if layer.started else getattr(run, "ag_frame", None)
        settings = frame.f_locals.get("settings") if frame is not None else None
        if settings is not None and getattr(settings, "tracer", None) is tracer:
            return True
    return False


# Per context (so per task and thread), the run an otel_wrapper() last wrapped the stream
# of, or last saw end, there: run_context(wrapper) names it if that wrapper traced it, in
# the task that wrapped it (a task started from here inherits the slot: it names none of
# the runs before it). Set when the stream is wrapped (in the caller's context: never an
# earlier run, even when the agent drives its stream from another task), and again where
# the run ends, so that a run nested in it (a sub-agent's, from a tool) does not keep the
# name once the enclosing run ended. One slot: it never holds more than one run's few ids.
_NAMED: ContextVar[_Layer | None] = ContextVar("agent_otel_named", default=None)


@keyworded
def run_context(stream: object) -> SpanContext | None:
    """The span context of the run ``stream`` traces, for ``record_evaluation(...,
    span_context=)``, a span link or a backend's link: from the run's start (its first pull)
    on, and after it ended.

    ``stream`` is what ``otel_wrapper()`` returned for a stream, or what an instrumented
    agent's ``stream``/``astream`` returned; or the wrapper ``otel_wrapper()`` returned
    itself: then its latest run in this context (this task or thread, never another's), as
    in ``await agent.invoke(messages, stream_wrapper=wrapper)`` followed by
    ``run_context(wrapper)``: the run of the stream an otel_wrapper() wrapped last here, or
    once runs ended, the one that ended last (a sub-agent's run nested in it, from a tool,
    ends first); ``None`` when that was another wrapper's, or the wrapper ran in another
    task (an agent that wraps its stream in a task of its own; a task started from this
    one does not name the runs before it). ``None`` when agent-otel does not trace it,
    the run has not started, or it passes through: instrumentation suppressed, no SDK
    configured, or an inner layer whose run the stream wrapping it records (ask that one).
    A run its sampler dropped keeps its ids: the context says ``sampled`` false, and no
    exported span carries them. Never raises; no method of ``stream`` runs.
    """
    try:
        kind = type(stream)  # (type() never reads a hostile __class__)
        if kind is AsyncGeneratorType:
            layer = _LAYERS.get(cast("AsyncIterator[Any]", stream))
        elif kind is FunctionType:
            layer = _NAMED.get()
            if layer is None or layer.wrapper is None or layer.wrapper() is not stream:
                return None
            try:
                task = current_task()
            except RuntimeError:  # no event loop running in this thread
                task = None
            if layer.task != (None if task is None else weakref.ref(task)):
                return None  # inherited from the task that started this one (or ended)
        else:
            return None
        span = layer.span if layer is not None else None
        return span if span is not None and span.is_valid else None
    except Exception:
        report("run context")
        return None


def traced(
    stream: AsyncIterable[Any],
    settings: RunSettings,
    parent: Context | None = None,
    on_end: Callable[[], None] | None = None,
    eager: bool = False,
) -> AsyncIterator[Any]:
    """Every event of ``stream``, unchanged, while the run is recorded (see module doc);
    ``on_end`` is called once the run has finished, on every exit path.
    ``eager``: the run starts now, not at the first pull (a nested run claimed on a thread
    that runs ahead of its consumer, whose tool bodies must find it open); one never pulled
    ends ``closed_early`` when the stream returned here is dropped."""
    if not hasattr(stream, "__aiter__"):
        raise TypeError(_not_a_stream(stream))
    layer = _Layer()
    started = None
    if eager:
        started = _start(settings, parent, stream, layer)
        layer.deferred = started is None  # it could not start: its events pass through
    run = _traced(stream, settings, parent, on_end, layer, started)
    _LAYERS[run] = layer
    if started is not None:  # never pulled: it ends once the stream is dropped
        try:
            weakref.finalize(run, _end, started, A.END_CLOSED_EARLY, None)
        except Exception:
            report("run start")
    return run


def traced_future(
    future: Any, settings: RunSettings, parent: Context | None, result: Callable[[Any], Any]
) -> None:
    """Record the run ``future`` stands for (an ``asyncio.Task`` or ``Future``, or a
    ``concurrent.futures.Future``, that an agent's plain ``def run`` returned), from now, as
    the call returned it, until it is done: its duration, and its outcome as an awaited run's
    (``result(value)``, the terminal event its value makes; its exception, the same object;
    its cancellation). The run's span is never current where the work runs: a task is made
    in a copy of its creator's context, before this span existed, so the spans it starts are
    the run's siblings, not its children. Nothing of ``future`` changes: an exception nobody
    retrieves is still logged by asyncio as one never retrieved."""
    recorder = _start(settings, _work_in_body(parent), future, _Layer())
    if recorder is None:
        return

    def done(finished: Any) -> None:
        try:
            end_reason, error, value = _outcome(finished)
        except Exception:
            report("run future")
            end_reason, error, value = A.END_EXHAUSTED, None, _DONE
        _end_with_result(recorder, settings, end_reason, error, value, result)

    try:
        future.add_done_callback(done)
    except Exception:  # a future that takes no callback: the run ends now, unfinished
        report("run future")
        _end(recorder, A.END_EXHAUSTED, None)


def traced_return(
    began: int,
    value: Any,
    error: BaseException | None,
    settings: RunSettings,
    parent: Context | None,
    result: Callable[[Any], Any],
) -> None:
    """Record the run a plain ``def run`` made, once it returned ``value`` (or raised
    ``error``), from ``began`` (read as it was called) to now, as an awaited run's. It is
    recorded after the fact (until it returned, the call could have been an ``async def``'s
    in all but name, handing back its coroutine): the spans it started are the run's
    siblings, not its children."""
    recorder = _start(settings, _work_in_body(parent), None, _Layer(), began)
    if recorder is None:
        return
    if error is None:
        _end_with_result(recorder, settings, A.END_EXHAUSTED, None, value, result)
        return
    _end_with_result(recorder, settings, _raised(error), error, _DONE, result)


def _work_in_body(parent: Context | None) -> Context:
    """The parent of a run whose work ran (or runs) before and beside its span, in the
    contexts it was called in (``parent``, default: the current one): in a tool body, a model
    call made there while it is open may be its (``_scope.in_body``)."""
    return in_body(parent if parent is not None else otel_context.get_current())


def _end_with_result(
    recorder: RunRecorder,
    settings: RunSettings,
    end_reason: str,
    error: BaseException | None,
    value: Any,
    result: Callable[[Any], Any],
) -> None:
    """End a run recorded from its outcome: ``result(value)`` told first (``_DONE``: none)."""
    if value is not _DONE:
        try:
            event = result(value)
            handler = handler_for(event, recorder.handlers, settings.handlers)
            if handler is not None:
                handler(recorder, event)
        except Exception:
            report("event", recorder.anomaly)
    _end(recorder, end_reason, error)


def _outcome(future: Any) -> tuple[str, BaseException | None, Any]:
    """How a done future ended: end reason, error, value (``_DONE``: none)."""
    if future.cancelled():
        return A.END_CANCELLED, asyncio.CancelledError(), _DONE
    if isinstance(future, asyncio.Future):
        # Read where asyncio keeps it: exception() would mark it retrieved, and asyncio
        # then no longer logs a failure the application never looked at.
        error = getattr(future, "_exception", None)
        if error is None and not hasattr(future, "_exception"):
            error = future.exception()
    else:
        error = future.exception()
    if error is None:
        return A.END_EXHAUSTED, None, future.result()
    return _raised(error), error, _DONE


def _raised(error: BaseException) -> str:
    """The end reason of a run its agent raised ``error`` in: an ``AgentInterruptedError``
    (recognised by class name, like events) is a pause; Ctrl-C raised in the agent's code
    (``KeyboardInterrupt``) stopped it from outside, as inside ``asyncio.run()``, which turns
    it into the task's cancellation; anything else a failure (``SystemExit`` too: an agent's
    or tool's own ``sys.exit(1)`` cannot be told from a signal handler's)."""
    if isinstance(error, KeyboardInterrupt):
        return A.END_CANCELLED
    interrupted = text_of(type(error).__name__) == INTERRUPTED_ERROR
    return A.END_INTERRUPTED if interrupted else A.END_ERROR


class _Pulled:
    """An async iterator that has only ``__anext__`` (``unittest.mock``'s ``AsyncMock`` and
    ``MagicMock`` iterators, a hand-written one's), which ``async for`` over its iterable
    accepts: pulled as ``async for`` pulls it; its other methods (``asend``, ``aclose``) its
    own."""

    __slots__ = ("_iterator",)

    def __init__(self, iterator: Any) -> None:
        self._iterator = iterator

    def __aiter__(self) -> _Pulled:
        return self

    def __anext__(self) -> Any:
        return type(self._iterator).__anext__(self._iterator)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._iterator, name)


def defer(stream: object) -> None:
    """A layer is about to trace ``stream``: if agent-otel already traces it (a :func:`traced`
    stream that has not started), this outer layer records the run and the inner one passes
    its events through, so the run is recorded once.

    That is an instrumented agent invoked with ``stream_wrapper=otel_wrapper()``, a stream
    wrapped twice, an agent that traces its own stream and is instrumented too, or one that
    ``run_script`` streams into a test kit: the outermost layer, the one nearest the caller,
    records the run with its options and providers (its chat spans and tokens counted once).
    Only our own generator is recognised (its exact type, then our registry): no method of
    the stream runs."""
    if type(stream) is AsyncGeneratorType:
        layer = _LAYERS.get(stream)
        if layer is not None and not layer.started:
            layer.deferred = True


async def _traced(
    stream: AsyncIterable[Any],
    settings: RunSettings,
    parent: Context | None,
    on_end: Callable[[], None] | None,
    layer: _Layer,
    started: RunRecorder | None = None,
) -> AsyncIterator[Any]:
    layer.started = True
    iterator = stream.__aiter__()
    if not hasattr(type(iterator), "__aiter__"):  # only __anext__: as `async for` takes it
        iterator = _Pulled(iterator)
    recorder = started or (  # else started eagerly (``traced(eager=True)``)
        None if layer.deferred else _start(settings, parent, stream, layer)
    )
    handlers: dict[type, Handler | None] = recorder.handlers if recorder is not None else {}
    # The recorder whose context is current while the agent computes (None: untraced, or
    # activation off): from the loop's next pull included until the event is in
    # (`async for` pulls faster than awaiting __anext__: figure 1).
    active = recorder if settings.activate_context else None
    end_reason: str = _EXHAUSTED
    error: BaseException | None = None
    thrown: BaseException | None = None  # what the consumer threw in (athrow)
    token = None
    try:
        if active is None:  # untraced (the run could not start), or activation off
            async for event in iterator:
                while True:  # the event, then the agent's answer to a consumer's asend/athrow
                    if recorder is not None:
                        try:
                            try:
                                handler = handlers[event.__class__]
                            except KeyError:
                                handler = handler_for(event, handlers, settings.handlers)
                            if handler is not None:  # None: nothing to do for now
                                handler(recorder, event)
                        except Exception:
                            report("event", recorder.anomaly)
                    try:
                        sent = yield event
                    except GeneratorExit:
                        raise
                    except BaseException as exc:
                        thrown = exc
                        event = await _answer(iterator, exc, None)
                    else:
                        if sent is None:
                            break
                        event = await _forward(iterator, sent, None)
                    if event is _DONE:
                        return
        else:  # the same loop with activation (twice, not once: no test per event for it)
            token = activate(active.context)
            async for event in iterator:
                try:  # noqa: SIM105 (contextlib.suppress costs more than the reset)
                    deactivate(token)
                except ValueError:  # resumed in another context: nothing to undo here
                    pass
                token = None
                while True:
                    try:
                        try:
                            handler = handlers[event.__class__]
                        except KeyError:
                            handler = handler_for(event, handlers, settings.handlers)
                        if handler is not None:
                            handler(active, event)
                    except Exception:
                        report("event", active.anomaly)
                    try:
                        sent = yield event
                    except GeneratorExit:
                        raise
                    except BaseException as exc:
                        thrown = exc
                        event = await _answer(iterator, exc, active)
                    else:
                        if sent is None:
                            break
                        event = await _forward(iterator, sent, active)
                    if event is _DONE:
                        return
                token = activate(active.context)
    except GeneratorExit:
        end_reason = A.END_CLOSED_EARLY
        raise
    except asyncio.CancelledError as exc:
        end_reason, error = (A.END_CLOSED_EARLY, None) if exc is thrown else (A.END_CANCELLED, exc)
        raise
    except BaseException as exc:
        end_reason, error = _raised(exc), exc
        if exc is thrown:  # the consumer's own exception, back from the agent (or from us)
            end_reason, error = A.END_CLOSED_EARLY, None
        raise
    finally:
        if token is not None:  # the agent raised or ended during a pull
            try:  # noqa: SIM105
                deactivate(token)
            except ValueError:
                pass
        try:
            if end_reason != _EXHAUSTED:  # stopped early: close the agent's stream too
                aclose = getattr(iterator, "aclose", None)
                if aclose is not None and not _closing_every_generator():
                    await aclose()
        finally:
            if layer.wrapper is not None:  # the wrapper's run that ended last here: this one
                _NAMED.set(layer)
            _end(recorder, end_reason, error)
            if on_end is not None:
                try:
                    on_end()
                except Exception:
                    report("run end hook")
