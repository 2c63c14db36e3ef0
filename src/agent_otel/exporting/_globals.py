"""Installing ``configure()``'s providers as the OTel globals, never replacing real ones."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opentelemetry import _logs, metrics, trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from agent_otel._guard import logger as _log
from agent_otel._guard import warn_once

if TYPE_CHECKING:
    from agent_otel.exporting._telemetry import Telemetry

__all__ = ["Installed", "installed", "set_globals"]

Asked = tuple[dict[str, object], dict[str, str]]
"""A configure() call's arguments, and the ``OTEL_*`` and ``AGENT_OTEL_*`` variables it read."""


@dataclass(frozen=True)
class Installed:
    """The call whose providers configure() made global: its process, what it was asked, its
    handle, and which of the three providers became global."""

    pid: int
    asked: Asked
    handle: Telemetry
    providers: tuple[object | None, object | None, object | None]  # tracer, meter, logger


_installed: Installed | None = None
"""What configure() last made global: another configure() finds it there."""


def installed() -> Installed | None:
    """The call of this process whose providers configure() made global (not a parent's, in a
    forked child), if any."""
    record = _installed
    return record if record is not None and record.pid == os.getpid() else None


# Where the OTel API keeps each global and its set-once guard: (module, provider, guard).
_API_GLOBALS = (
    ("opentelemetry.trace", "_TRACER_PROVIDER", "_TRACER_PROVIDER_SET_ONCE"),
    ("opentelemetry.metrics._internal", "_METER_PROVIDER", "_METER_PROVIDER_SET_ONCE"),
    ("opentelemetry._logs._internal", "_LOGGER_PROVIDER", "_LOGGER_PROVIDER_SET_ONCE"),
)


def set_globals(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    logger_provider: LoggerProvider,
    *,
    asked: Asked,
    handle: Telemetry,
) -> tuple[bool, bool, bool]:
    """Install our providers globally unless real ones are already there (then warn).

    In a forked child of the process whose configure() made them global (a pre-forking
    server's worker configuring itself in ``post_fork``, a ``multiprocessing`` initializer),
    the inherited ones give way: this call's providers become the globals, without a warning
    (the call that set them was the parent's). The inherited telemetry is left running for
    what was bound to it before the fork (a tracer taken then, a wrapper made then: their
    spans still leave, once, from the child) and shut down at the child's exit as before.

    Once the handle of the call that made them global was shut down (a FastAPI
    lifespan's shutdown step, run again by the next test's client; a notebook that shut its
    pipeline down to start another). Nothing can export through those providers any more, and
    they stayed the globals: every run recorded from then on was dropped. They give way too.
    """
    global _installed
    from opentelemetry._logs._internal import ProxyLoggerProvider
    from opentelemetry.metrics._internal import _ProxyMeterProvider

    current = trace.get_tracer_provider()  # (anyone's: compared by identity, never hashed)
    mine = _installed is not None and _installed.providers[0] is current
    if (
        mine
        and _installed is not None
        and (_installed.pid != os.getpid() or _installed.handle.is_shutdown)
    ):
        mine = not _give_way(_installed)  # a fork's child configuring itself, or a restart
    if mine:  # configure() called again in this process: told once
        warn_once(
            "configure()",
            "again",
            "agent-otel: configure() was already called in this process, and OpenTelemetry "
            "lets the global providers be set only once, so this call's providers are not "
            "global, and the next call like it shuts this one's pipeline down (one such "
            "pipeline at most, not one per call): call configure() once at startup and keep "
            "its handle, or pass this "
            "handle's tracer_provider=, meter_provider= and logger_provider= explicitly "
            "(set_global=False says you mean to)",
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
        _, meter, logger = installed
        _installed = Installed(
            os.getpid(),
            asked,
            handle,
            (
                tracer_provider,
                meter_provider if meter else None,
                logger_provider if logger else None,
            ),
        )
    return installed


def _give_way(inherited: Installed) -> bool:
    """In a forked child, or once they were shut down: clear each global configure() set (and
    the API's set-once guard, whose lock a parent's thread may have held at the fork), so this
    process's configure() can set its own. False, changing nothing, on an OTel API laid out
    otherwise than this one."""
    import importlib

    from opentelemetry.util._once import Once

    try:
        modules = [importlib.import_module(name) for name, _, _ in _API_GLOBALS]
        laid_out = zip(modules, _API_GLOBALS, strict=True)
        if not all(hasattr(m, v) and hasattr(m, o) for m, (_, v, o) in laid_out):
            return False
        for module, (_, variable, once), provider in zip(
            modules, _API_GLOBALS, inherited.providers, strict=True
        ):
            if provider is not None and getattr(module, variable) is provider:
                setattr(module, variable, None)
                setattr(module, once, Once())
    except Exception:
        _log.debug("agent-otel: the inherited globals could not give way", exc_info=True)
        return False
    return True


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
            "agent-otel: a global %s (%s) is already configured; configure() left it in place "
            "(OpenTelemetry sets a global once), so runs on the global one record there, not "
            "through what configure() built. Pass the handle's, as otel_wrapper(%s=telemetry."
            "%s) (instrument() takes the same), or call configure() before what set it "
            "(docs/configure.md)",
            kind,
            type(found).__name__,
            attribute,
            attribute,
        )
    return current() is provider
