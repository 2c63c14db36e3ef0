"""Environment variables that decide *what* ``configure()`` builds.

Only the choices the SDK exporters cannot make for us live here: which exporter class
(protocol), whether an OTLP endpoint is configured at all (otherwise the terminal view is
the default), which exporters are switched off, and our Prometheus port. Everything an
exporter reads by itself (endpoint URLs, headers, timeouts, compression, certificates,
sampler) is left to the SDK.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Final, Literal

_log = logging.getLogger("agent_otel")

Protocol = Literal["grpc", "http/protobuf"]
Signal = Literal["traces", "metrics", "logs"]

GRPC: Final = "grpc"
HTTP_PROTOBUF: Final = "http/protobuf"
DEFAULT_PROTOCOL: Final = HTTP_PROTOBUF  # gRPC is an optional extra; HTTP ships with us

OTEL_EXPORTER_OTLP_ENDPOINT: Final = "OTEL_EXPORTER_OTLP_ENDPOINT"
OTEL_EXPORTER_OTLP_PROTOCOL: Final = "OTEL_EXPORTER_OTLP_PROTOCOL"
OTEL_EXPORTER_OTLP_TIMEOUT: Final = "OTEL_EXPORTER_OTLP_TIMEOUT"
OTEL_TRACES_EXPORTER: Final = "OTEL_TRACES_EXPORTER"
OTEL_METRICS_EXPORTER: Final = "OTEL_METRICS_EXPORTER"
OTEL_LOGS_EXPORTER: Final = "OTEL_LOGS_EXPORTER"
_EXPORTER_VARS: Final = {
    "traces": OTEL_TRACES_EXPORTER,
    "metrics": OTEL_METRICS_EXPORTER,
    "logs": OTEL_LOGS_EXPORTER,
}
AGENT_OTEL_PROMETHEUS_PORT: Final = "AGENT_OTEL_PROMETHEUS_PORT"

_PROTOCOLS: Final[frozenset[str]] = frozenset({GRPC, HTTP_PROTOBUF})


def _signal_var(signal: Signal, suffix: str) -> str:
    return f"OTEL_EXPORTER_OTLP_{signal.upper()}_{suffix}"


def resolve_protocol(
    signal: Signal, override: str | None = None, env: Mapping[str, str] | None = None
) -> Protocol:
    """The OTLP protocol for one signal: argument, then per-signal and general env variables.

    An unknown value in the environment falls back to http/protobuf with a warning (a typo in
    a deployment must not crash the app); an unknown argument is a programming error.
    """
    if override is not None:
        value = override.strip().lower()
        if value not in _PROTOCOLS:
            raise ValueError(f"protocol must be 'grpc' or 'http/protobuf', not {override!r}")
        return GRPC if value == GRPC else HTTP_PROTOBUF
    env = os.environ if env is None else env
    for var in (_signal_var(signal, "PROTOCOL"), OTEL_EXPORTER_OTLP_PROTOCOL):
        raw = env.get(var, "").strip().lower()
        if not raw:
            continue
        if raw == GRPC:
            return GRPC
        if raw != HTTP_PROTOBUF:
            _log.warning("agent-otel: %s=%r is not supported; using http/protobuf", var, raw)
        return HTTP_PROTOBUF
    return DEFAULT_PROTOCOL


def endpoint_configured(signal: Signal, env: Mapping[str, str] | None = None) -> bool:
    """True when the environment names an OTLP endpoint for ``signal``."""
    env = os.environ if env is None else env
    return bool(
        env.get(_signal_var(signal, "ENDPOINT"), "").strip()
        or env.get(OTEL_EXPORTER_OTLP_ENDPOINT, "").strip()
    )


def timeout_configured(signal: Signal, env: Mapping[str, str] | None = None) -> bool:
    """True when the environment sets an OTLP export timeout (then the SDK reads it)."""
    env = os.environ if env is None else env
    return bool(
        env.get(_signal_var(signal, "TIMEOUT"), "").strip()
        or env.get(OTEL_EXPORTER_OTLP_TIMEOUT, "").strip()
    )


def exporter_names(signal: Signal, env: Mapping[str, str] | None = None) -> frozenset[str] | None:
    """``OTEL_{TRACES,METRICS,LOGS}_EXPORTER`` as a set, or None when unset.

    We honour ``otlp``, ``console`` (traces: the terminal tree) and ``none``; other values
    are ignored with a warning.
    """
    env = os.environ if env is None else env
    var = _EXPORTER_VARS[signal]
    raw = env.get(var, "").strip().lower()
    if not raw:
        return None
    names = frozenset(part.strip() for part in raw.split(",") if part.strip())
    known = {"otlp", "none"} | ({"console"} if signal == "traces" else set())
    for unknown in sorted(names - known):
        _log.warning("agent-otel: %s value %r is not supported; ignored", var, unknown)
    return names & known


def prometheus_port(
    override: int | None = None, env: Mapping[str, str] | None = None
) -> int | None:
    """The Prometheus scrape port: argument, then ``AGENT_OTEL_PROMETHEUS_PORT``, else None.

    Port 0 asks the OS for a free port (the handle reports the one bound).
    """
    if override is not None:
        return override
    env = os.environ if env is None else env
    raw = env.get(AGENT_OTEL_PROMETHEUS_PORT, "").strip()
    if not raw:
        return None
    try:
        port = int(raw)
    except ValueError:
        _log.warning(
            "agent-otel: %s=%r is not a port number; ignored", AGENT_OTEL_PROMETHEUS_PORT, raw
        )
        return None
    if not 0 <= port <= 65535:
        _log.warning("agent-otel: %s=%r is out of range; ignored", AGENT_OTEL_PROMETHEUS_PORT, raw)
        return None
    return port


def int_var(name: str, default: int, env: Mapping[str, str] | None = None) -> int:
    """A positive integer variable, or ``default`` when unset or invalid."""
    env = os.environ if env is None else env
    try:
        value = int(env.get(name, "").strip() or default)
    except ValueError:
        return default
    return value if value > 0 else default
