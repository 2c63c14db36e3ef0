"""Resolving a wrapper's options once: the tracer and instruments of its providers (cached
per provider), content capture and its logger, and the :class:`RunSettings` every run of it
starts from."""

from __future__ import annotations

import weakref
from collections.abc import Mapping

from opentelemetry._logs import Logger, LoggerProvider, get_logger
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import NoOpTracer, Tracer, TracerProvider, get_tracer
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel._guard import guarded, report
from agent_otel._version import __version__
from agent_otel.cost import BUNDLED_PRICES, PriceTable

from ._content import ContentCapture, resolve_capture
from ._metrics import Instruments
from ._settings import RunSettings

__all__ = ["make_settings"]

_tracers: weakref.WeakKeyDictionary[TracerProvider, Tracer] = weakref.WeakKeyDictionary()
_instruments: weakref.WeakKeyDictionary[MeterProvider, Instruments] = weakref.WeakKeyDictionary()


def _tracer(provider: TracerProvider | None) -> Tracer:
    """The run's tracer; a provider that raises (or cannot be cached) gives a no-op one."""
    try:
        if provider is None:  # the global provider (a proxy until one is set)
            return get_tracer(A.SCOPE_NAME, __version__)
        tracer = _tracers.get(provider)
        if tracer is None:
            tracer = get_tracer(A.SCOPE_NAME, __version__, provider)
            with guarded("tracer cache"):
                _tracers[provider] = tracer
        return tracer
    except Exception:
        report("tracer provider")
        return NoOpTracer()


def _logger(provider: LoggerProvider | None, capture: ContentCapture | None) -> Logger | None:
    """The logger for content events: only when they are on (the global provider by default)."""
    if capture is None or not capture.events:
        return None
    try:
        return get_logger(A.SCOPE_NAME, __version__, provider)
    except Exception:  # a provider that raises: no events, the run is still traced
        report("logger provider")
        return None


def _instruments_for(provider: MeterProvider | None) -> Instruments:
    if provider is None:
        return Instruments.create(None)
    try:
        instruments = _instruments.get(provider)
    except Exception:  # unhashable or not weakly referenceable: not cached
        return Instruments.create(provider)
    if instruments is None:
        instruments = Instruments.create(provider)
        with guarded("meter cache"):
            _instruments[provider] = instruments
    return instruments


def make_settings(
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
) -> RunSettings:
    """Resolve the wrapper's options once: tracer, instruments, content capture, logger."""
    capture = resolve_capture(capture_content)
    return RunSettings(
        tracer=_tracer(tracer_provider),
        instruments=_instruments_for(meter_provider),
        logger=_logger(logger_provider, capture),
        agent_name=agent_name,
        provider=provider,
        conversation_id=conversation_id,
        session_id=session_id,
        user_id=user_id,
        prices=prices,
        stand_down_providers=stand_down_providers,
        agent_attributes=dict(attributes or {}),
        capture=capture,
        step_spans=step_spans,
        chunk_metric=chunk_metric,
        activate_context=activate_context,
    )
