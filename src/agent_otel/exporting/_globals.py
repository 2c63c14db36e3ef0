"""Installing ``configure()``'s providers as the OTel globals, never replacing real ones."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from opentelemetry import _logs, metrics, trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from agent_otel._guard import logger as _log

__all__ = ["set_globals"]

_installed: weakref.WeakSet[object] = weakref.WeakSet()
"""The tracer providers configure() made global: another configure() finds one there."""


def set_globals(
    tracer_provider: TracerProvider, meter_provider: MeterProvider, logger_provider: LoggerProvider
) -> tuple[bool, bool, bool]:
    """Install our providers globally unless real ones are already there (then warn)."""
    from opentelemetry._logs._internal import ProxyLoggerProvider
    from opentelemetry.metrics._internal import _ProxyMeterProvider

    current = trace.get_tracer_provider()  # (anyone's: compared by identity, never hashed)
    if any(mine is current for mine in _installed):  # configure() called again: told once
        _log.warning(
            "agent-otel: configure() was already called in this process, and OpenTelemetry "
            "lets the global providers be set only once, so this call's providers are not "
            "global: call configure() once at startup and keep its handle, or pass this "
            "handle's tracer_provider=, meter_provider= and logger_provider= explicitly "
            "(set_global=False says you mean to)"
        )
        return False, False, False
    installed = (
        _set_global(
            "TracerProvider", trace.get_tracer_provider, trace.ProxyTracerProvider,
            trace.set_tracer_provider, tracer_provider,
        ),
        _set_global(
            "MeterProvider", metrics.get_meter_provider, _ProxyMeterProvider,
            metrics.set_meter_provider, meter_provider,
        ),
        _set_global(
            "LoggerProvider", _logs.get_logger_provider, ProxyLoggerProvider,
            _logs.set_logger_provider, logger_provider,
        ),
    )  # fmt: skip
    if installed[0]:
        _installed.add(tracer_provider)
    return installed


def _set_global(
    kind: str,
    current: Callable[[], object],
    proxy: type,
    install: Callable[[Any], None],
    provider: object,
) -> bool:
    """One global: set it while it is the API's proxy, else leave it with a warning."""
    found = current()
    if isinstance(found, proxy):
        install(provider)
    else:
        attribute = kind[0].lower() + kind[1:].replace("Provider", "_provider")
        _log.warning(
            "agent-otel: a global %s (%s) is already configured; configure() left it in place. "
            "Pass Telemetry.%s explicitly to use the new one.",
            kind,
            type(found).__name__,
            attribute,
        )
    return current() is provider
