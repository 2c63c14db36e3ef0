"""The exporters ``configure()`` wires: OTLP over HTTP or gRPC, and the Prometheus endpoint.

The exporter class is chosen by protocol; the SDK exporters read their own ``OTEL_*``
variables (URLs, headers, TLS, compression, timeout). We only pass what the caller gave
explicitly, plus a default timeout when none is configured anywhere.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Mapping
from typing import Any

from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk._logs.export import LogRecordExporter as LogExporter
from opentelemetry.sdk.metrics.export import MetricExporter, MetricReader
from opentelemetry.sdk.trace.export import SpanExporter

from agent_otel._guard import logger as _log
from agent_otel._guard import scrub_logs
from agent_otel.exporting import _env
from agent_otel.exporting._failures import tell_cause
from agent_otel.exporting._session import ForkSafeSession
from agent_otel.exporting._split import AnswerMeterProvider, SizeBoundLogExporter
from agent_otel.exporting._tally import internal_metrics_on

DEFAULT_EXPORT_TIMEOUT_S = 5.0
"""Per-request OTLP timeout when neither ``timeout=`` nor ``OTEL_EXPORTER_OTLP_*TIMEOUT`` is set:
shorter than the SDK's 10 s so a dead collector cannot stall flush for long."""
DEFAULT_SHUTDOWN_TIMEOUT_MILLIS = 1_000
"""The bound on shutdown (at exit too): a dead collector costs the exit about a second, not the
export timeout and its retries; what could not be sent in it is counted and told. A collector
that answers drains a full queue within it (docs/export.md)."""


def _otlp_args(
    signal: _env.Signal,
    protocol: _env.Protocol,
    endpoint: str | None,
    headers: Mapping[str, str] | None,
    timeout: float | None,
) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if endpoint is None:  # the variable, stripped as every check of it read it
        endpoint = _env.padded_endpoint(signal, protocol)
    if endpoint is not None:
        args["endpoint"] = endpoint
    if headers is not None:
        args["headers"] = dict(headers)
    if timeout is None:  # the variable as the SDK reads it; an invalid one is told once
        timeout = _env.export_timeout(signal)
    args["timeout"] = DEFAULT_EXPORT_TIMEOUT_S if timeout is None else timeout
    return args


def _http_session(signal: _env.Signal) -> dict[str, Any]:
    """``session=`` for an OTLP/HTTP exporter: one whose connections a forked child does not
    share (:mod:`._session`); none where a credential provider variable names the session
    the SDK loads, which is the application's own, left as it is."""
    providers = (
        "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
        f"OTEL_PYTHON_EXPORTER_OTLP_HTTP_{signal.upper()}_CREDENTIAL_PROVIDER",
    )
    if any(os.environ.get(name) for name in providers):
        return {}
    return {"session": ForkSafeSession()}


_SDK_EXPORTER_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.http._log_exporter",
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.util.re",  # a malformed OTEL_EXPORTER_OTLP_HEADERS entry, quoted whole
)


SHUTDOWN_THREAD = "agent-otel-shutdown"
"""The thread ``Telemetry.shutdown()`` stops the providers in (``_telemetry``)."""
_SHUT_TWICE = "Exporter already shutdown, ignoring call"


def shut_down(exporter: object) -> bool:
    """Whether an exporter ``configure()`` built is shut down already (the SDK's OTLP exporters
    keep the flag; ours wrap one as ``inner``): shut down again, the SDK warns."""
    return getattr(getattr(exporter, "inner", exporter), "_shutdown", False) is True


class _RetryOnce(logging.Filter):
    """Lets an SDK exporter's "Transient error ..., retrying" through once per exporter: a dead
    collector's reason is told once, not at every back-off step (the losses it causes are
    counted and told by agent-otel's own warnings). And a shutdown that gave up (told once,
    with its reason) shuts the stuck exporters down to break their export off; the provider's
    own shutdown, still under way in :data:`SHUTDOWN_THREAD`, then shuts one down again once
    its export ends, and the SDK's warning about that second call says nothing new. Each
    failure line is read first for a cause a newcomer can fix (:mod:`._failures`)."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        tell_cause(record)
        template = str(record.msg)
        if template == _SHUT_TWICE and record.threadName == SHUTDOWN_THREAD:
            return False
        if not template.startswith("Transient error"):
            return True
        if template in self._seen:
            return False
        self._seen.add(template)
        return True


def quiet_retries() -> None:
    """Install the once-only filter on the SDK exporters' loggers, then the scrubbing one
    (their lines quote the endpoint, with any ``user:token@`` in it, and a failed request's
    response body, where a proxy may echo the Authorization header). Idempotent."""
    for name in _SDK_EXPORTER_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RetryOnce) for f in logger.filters):
            logger.addFilter(_RetryOnce())  # first: it reads the record's template
        scrub_logs(name)


def _http_url(endpoint: str, path: str) -> str:
    base = endpoint.rstrip("/")
    for known in ("/v1/traces", "/v1/metrics", "/v1/logs"):
        base = base.removesuffix(known)
    return f"{base}/{path}"


_GRPC_MODULES = {"traces": "trace_exporter", "metrics": "metric_exporter", "logs": "_log_exporter"}


def _grpc_module(signal: _env.Signal, protocol: str | None) -> Any:
    """The SDK's gRPC exporter module for ``signal``; missing, the error names what asked for
    gRPC (``protocol=`` or the variable) and how to use OTLP/HTTP instead."""
    name = _GRPC_MODULES[signal]
    try:
        return importlib.import_module(f"opentelemetry.exporter.otlp.proto.grpc.{name}")
    except ImportError as exc:
        var = None if protocol is not None else _env.protocol_variable(signal)
        asked, http = (
            (f"{var}=grpc", f"{var}=http/protobuf")
            if var is not None
            else ("protocol='grpc'", "protocol='http/protobuf'")
        )
        raise ImportError(
            f"agent-otel: OTLP over gRPC ({asked}) needs the optional gRPC exporter; install "
            f"it with: pip install 'agent-otel[grpc]', or use OTLP/HTTP: {http} and a "
            "Collector's port 4318"
        ) from exc


def span_exporter(
    protocol: str | None,
    endpoint: str | None,
    headers: Mapping[str, str] | None,
    timeout: float | None,
    *,
    meter_provider: MeterProvider | None = None,
) -> SpanExporter:
    """The OTLP span exporter; its own metrics (when enabled) go to ``meter_provider``."""
    resolved = _env.resolve_protocol("traces", protocol)
    args = _otlp_args("traces", resolved, endpoint, headers, timeout)
    args["meter_provider"] = meter_provider
    if resolved == _env.GRPC:
        exporter: SpanExporter = _grpc_module("traces", protocol).OTLPSpanExporter(**args)
        return exporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    if endpoint is not None:
        args["endpoint"] = _http_url(endpoint, "v1/traces")
    return OTLPSpanExporter(**args, **_http_session("traces"))


def metric_exporter(
    protocol: str | None,
    endpoint: str | None,
    headers: Mapping[str, str] | None,
    timeout: float | None,
) -> MetricExporter:
    resolved = _env.resolve_protocol("metrics", protocol)
    if resolved == _env.GRPC:
        exporter: MetricExporter = _grpc_module("metrics", protocol).OTLPMetricExporter(
            **_otlp_args("metrics", resolved, endpoint, headers, timeout)
        )
        return exporter
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    url = _http_url(endpoint, "v1/metrics") if endpoint is not None else None
    return OTLPMetricExporter(
        **_otlp_args("metrics", resolved, url, headers, timeout), **_http_session("metrics")
    )


def log_exporter(
    protocol: str | None,
    endpoint: str | None,
    headers: Mapping[str, str] | None,
    timeout: float | None,
) -> LogExporter:
    """The OTLP exporter for GenAI log events (content events, evaluation results), in
    requests under a collector's message limit (:mod:`._split`). Its own metrics are read
    for each request's status only (a refusal as too large), never exported."""
    resolved = _env.resolve_protocol("logs", protocol)
    args = _otlp_args("logs", resolved, endpoint, headers, timeout)
    args["meter_provider"] = AnswerMeterProvider()
    with internal_metrics_on():  # the SDK records them only when this is on at construction
        if resolved == _env.GRPC:
            exporter: LogExporter = _grpc_module("logs", protocol).OTLPLogExporter(**args)
            return SizeBoundLogExporter(exporter)
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

        if endpoint is not None:
            args["endpoint"] = _http_url(endpoint, "v1/logs")
        return SizeBoundLogExporter(OTLPLogExporter(**args, **_http_session("logs")))


def start_prometheus(
    port: int | None, host: str, asked: str = "prometheus_port"
) -> tuple[MetricReader, Any] | None:
    """A PrometheusMetricReader on its own registry, served over HTTP; None when off/failed.
    ``asked``: what asked for it (the argument or the variable), named when the extra is
    missing."""
    if port is None:
        return None
    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import CollectorRegistry, start_http_server
    except ImportError as exc:
        raise ImportError(
            f"agent-otel: the Prometheus endpoint ({asked}={port}) needs the prometheus extra: "
            "pip install 'agent-otel[prometheus]'"
        ) from exc
    registry = CollectorRegistry(auto_describe=True)
    reader = PrometheusMetricReader(registry=registry)
    try:
        server, _thread = start_http_server(port, addr=host, registry=registry)
    except OSError:
        _log.error(
            "agent-otel: cannot serve Prometheus metrics on %s:%s", host, port, exc_info=True
        )
        reader.shutdown()
        return None
    return reader, server
