"""``configure()``'s arguments checked at once: a wrong type or range is a programming error,
raised with the parameter's name and what it accepts (environment variables, typed by people
in deployments, are told in a warning instead: see :mod:`._env`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from agent_otel.exporting import _env

__all__ = ["check_arguments"]


def _positive(name: str, value: Any, *, integer: bool = False, zero: bool = False) -> None:
    if value is None:
        return
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        what = "an int" if integer else "a number"
        raise TypeError(f"configure({name}=...) must be {what}, not {value!r}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        bound = ">= 0" if zero else "> 0"
        raise ValueError(f"configure({name}=...) must be {bound}, not {value!r}")


def _optional(name: str, value: Any, kind: type | tuple[type, ...], what: str) -> None:
    if value is not None and not isinstance(value, kind):
        raise TypeError(f"configure({name}=...) must be {what}, not {type(value).__name__}")


def check_arguments(
    *,
    service_name: Any,
    endpoint: Any,
    protocol: Any,
    headers: Any,
    timeout: Any,
    console: Any,
    prometheus_port: Any,
    metric_export_interval_millis: Any,
    max_queue_size: Any,
    tail_sampling: Any,
    set_global: Any,
    shutdown_timeout_millis: Any,
) -> None:
    """Raise ``TypeError`` / ``ValueError`` naming the first argument that cannot work."""
    from agent_otel.sampling import TailSamplingPolicy

    _optional("service_name", service_name, str, "a str")
    if protocol is not None:
        _env.resolve_protocol("traces", protocol)
    if endpoint is not None:
        _env.check_endpoint_argument(endpoint, protocol)
    _optional("headers", headers, Mapping, "a mapping of header names to values")
    _positive("timeout", timeout)
    _optional("console", console, bool, "True, False or None")
    _env.prometheus_port(prometheus_port, env={})
    _positive("metric_export_interval_millis", metric_export_interval_millis)
    _positive("max_queue_size", max_queue_size, integer=True)
    _optional("tail_sampling", tail_sampling, TailSamplingPolicy, "a TailSamplingPolicy")
    _optional("set_global", set_global, bool, "True or False")
    _positive("shutdown_timeout_millis", shutdown_timeout_millis, zero=True)
