"""``otel_wrapper()``: the template that owns iteration of one run.

``traced()`` pulls each event from the agent with the run's innermost span current, restores
the consumer's context before yielding the very same object, and finishes the recorder exactly
once on every exit path: exhaustion, an agent exception (re-raised as the same object), the
consumer closing or abandoning the stream (the agent's stream is closed too), cancellation.
Instrumentation errors stop at :mod:`agent_otel._guard`; the agent's and the consumer's always
win.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from contextlib import suppress
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry._logs import LoggerProvider
from opentelemetry.context.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel._guard import report
from agent_otel.cost import BUNDLED_PRICES, PriceTable

from ._content import ContentCapture
from ._context import activate, deactivate
from ._read import Handler, resolve
from ._recorder import RunRecorder
from ._resolve import make_settings
from ._settings import RunSettings

StreamWrapper = Callable[[AsyncIterator[Any]], AsyncIterator[Any]]
INTERRUPTED_ERROR = "AgentInterruptedError"
"""Class name of the Agent contract's "run paused on an interrupt" error: not a failure."""


def otel_wrapper(
    *,
    agent_name: str | None = None,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    logger_provider: LoggerProvider | None = None,
    capture_content: bool | ContentCapture | None = None,
    conversation_id: str | None = None,
    session_id: str | None = None,
    user_id: str | None = None,
    prices: PriceTable | None = BUNDLED_PRICES,
    stand_down_providers: bool = True,
    attributes: Mapping[str, AttributeValue] | None = None,
    step_spans: bool = True,
    chunk_metric: bool = False,
    provider: str | None = None,
    activate_context: bool = True,
) -> StreamWrapper:
    """A ``stream_wrapper`` that traces each stream it wraps as one agent run.

    ``agent.invoke(messages, stream_wrapper=otel_wrapper())`` or
    ``otel_wrapper()(agent.stream(messages))``. Each wrapped stream becomes one
    ``invoke_agent`` span, a child of the context current when iteration starts, with step,
    chat and tool spans below it and the GenAI metrics recorded. Providers default to the
    global ones; nothing global is set. ``capture_content`` turns on prompt/tool content
    (default: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``); content events go to
    ``logger_provider`` (see :class:`ContentCapture`); ``chunk_metric`` records
    ``gen_ai.client.operation.time_per_output_chunk`` per chunk (a histogram record per token,
    so off by default: the chat span carries the chunk count and mean interval instead);
    ``provider`` names the ``gen_ai.provider.name`` for calls whose events do not;
    ``activate_context=False`` skips making the run's innermost span current while the agent
    computes each event (it then sees the consumer's context; the spans are the same).
    ``session_id``, ``user_id`` and ``conversation_id`` go on every span of the run and of runs
    started below it (never on metrics); ``prices`` prices calls whose provider reports no cost
    (default: the bundled dated table; None turns costing off). While a chat span of the run
    covers a model call, provider instrumentations (openai-v2, OpenInference, OpenLLMetry)
    stand down so the call has one chat span and its tokens count once; HTTP spans stay.
    ``stand_down_providers=False`` keeps their spans too.
    """
    settings = make_settings(
        agent_name=agent_name,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
        capture_content=capture_content,
        conversation_id=conversation_id,
        session_id=session_id,
        user_id=user_id,
        prices=prices,
        stand_down_providers=stand_down_providers,
        attributes=attributes,
        step_spans=step_spans,
        chunk_metric=chunk_metric,
        provider=provider,
        activate_context=activate_context,
    )

    def wrap(stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
        return traced(stream, settings)

    return wrap


def _start(settings: RunSettings, parent: Context | None) -> RunRecorder | None:
    try:
        return RunRecorder(settings, otel_context.get_current() if parent is None else parent)
    except Exception:
        report("run start")
        return None


def _finish(recorder: RunRecorder | None, end_reason: str, error: BaseException | None) -> None:
    if recorder is None:
        return
    try:
        recorder.finish(end_reason, error)
    except Exception:
        report("run finish")


_DONE: Any = object()


async def _answer(
    iterator: AsyncIterator[Any], thrown: BaseException, recorder: RunRecorder | None, on: bool
) -> Any:
    """The agent's answer to a consumer's ``athrow``, as a bare async generator would give it:
    its next event, ``_DONE`` if it returned, else what it raised (usually ``thrown``)."""
    athrow = getattr(iterator, "athrow", None)
    if athrow is None:
        raise thrown
    token = activate(recorder.context) if recorder is not None and on else None
    try:
        return await athrow(thrown)
    except StopAsyncIteration:
        return _DONE
    finally:
        if token is not None:
            with suppress(ValueError):
                deactivate(token)


def _record(recorder: RunRecorder | None, handlers: dict[type, Handler], event: Any) -> None:
    if recorder is not None and event is not _DONE:
        try:
            (handlers.get(event.__class__) or resolve(event, handlers))(recorder, event)
        except Exception:
            report("event")


async def traced(
    stream: AsyncIterable[Any], settings: RunSettings, parent: Context | None = None
) -> AsyncIterator[Any]:
    """Yield every event of ``stream`` unchanged while recording the run (see module doc)."""
    if not hasattr(stream, "__aiter__"):
        raise TypeError("otel_wrapper() wraps an async iterator of agent events")
    iterator = stream.__aiter__()
    recorder = _start(settings, parent)
    handlers: dict[type, Handler] = {}
    on = settings.activate_context
    end_reason: str = A.END_EXHAUSTED
    error: BaseException | None = None
    thrown: BaseException | None = None  # what the consumer threw in (athrow)
    try:
        if recorder is None or not on:  # untraced (the run could not start), or no activation
            handler_for = handlers.get
            async for event in iterator:
                if recorder is not None:
                    try:
                        (handler_for(event.__class__) or resolve(event, handlers))(recorder, event)
                    except Exception:
                        report("event")
                while True:  # a consumer's athrow goes to the agent; its answer is yielded
                    try:
                        yield event
                        break
                    except GeneratorExit:
                        raise
                    except BaseException as exc:
                        thrown = exc
                        event = await _answer(iterator, exc, recorder, on)
                        if event is _DONE:
                            return
                        _record(recorder, handlers, event)
        else:
            pull, handler_for = iterator.__anext__, handlers.get
            while True:
                token = activate(recorder.context)
                try:
                    event = await pull()
                except StopAsyncIteration:
                    break
                finally:
                    try:  # noqa: SIM105 (contextlib.suppress costs more than the reset)
                        deactivate(token)
                    except ValueError:  # resumed in another context: nothing to undo here
                        pass
                try:
                    (handler_for(event.__class__) or resolve(event, handlers))(recorder, event)
                except Exception:
                    report("event")
                while True:  # as above (two loops, not one: `async for` is ~40 ns faster)
                    try:
                        yield event
                        break
                    except GeneratorExit:
                        raise
                    except BaseException as exc:
                        thrown = exc
                        event = await _answer(iterator, exc, recorder, on)
                        if event is _DONE:
                            return
                        _record(recorder, handlers, event)
    except GeneratorExit:
        end_reason = A.END_CLOSED_EARLY
        raise
    except asyncio.CancelledError as exc:
        end_reason, error = (A.END_CLOSED_EARLY, None) if exc is thrown else (A.END_CANCELLED, exc)
        raise
    except BaseException as exc:
        # An AgentInterruptedError (recognised by class name, like events) is a pause.
        interrupted = type(exc).__name__ == INTERRUPTED_ERROR
        end_reason, error = (A.END_INTERRUPTED if interrupted else A.END_ERROR), exc
        if exc is thrown:  # the consumer's own exception, back from the agent (or from us)
            end_reason, error = A.END_CLOSED_EARLY, None
        raise
    finally:
        if thrown is not None and end_reason == A.END_EXHAUSTED:
            end_reason = A.END_CLOSED_EARLY
        try:
            if end_reason != A.END_EXHAUSTED:  # stopped early: close the agent's stream too
                aclose = getattr(iterator, "aclose", None)
                if aclose is not None:
                    await aclose()
        finally:
            _finish(recorder, end_reason, error)
