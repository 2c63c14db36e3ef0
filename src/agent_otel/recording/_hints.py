"""What a newcomer's two most common mistakes are told: a factory passed uncalled, and runs
recorded before any SDK is configured. Each message says what to do next."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from opentelemetry import trace
from opentelemetry.trace import ProxyTracer, Tracer

__all__ = ["factory", "hint_unconfigured"]

P = ParamSpec("P")
R = TypeVar("R")

_log = logging.getLogger("agent_otel")
_told: list[bool] = []


def factory(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` takes keyword options only and returns a stream wrapper. Called with a positional
    argument it was passed where its result belongs (``stream_wrapper=otel_wrapper``): say so.
    The signature seen by ``inspect`` and type checkers stays ``fn``'s."""
    name = fn.__name__

    @functools.wraps(fn)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        if args:
            raise TypeError(
                f"{name}() takes keyword options and returns the stream wrapper: pass "
                f"stream_wrapper={name}() (called, with any options), not {name} itself"
            )
        return fn(*args, **kwargs)

    return checked


def hint_unconfigured(tracer: Tracer) -> None:
    """Once per process: a run on the global tracer while no SDK provider is installed records
    nothing; say how to get it recorded."""
    if _told or type(tracer) is not ProxyTracer:
        return
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return
    _told.append(True)
    _log.warning(
        "agent-otel: no OpenTelemetry tracer provider is configured, so agent runs are not "
        "recorded. Call agent_otel.configure() once at startup (it prints each run in the "
        "terminal, or exports over OTLP), or pass tracer_provider=."
    )
