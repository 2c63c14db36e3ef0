"""``configure()``'s arguments checked at once: a wrong type or range is a programming error,
raised with the parameter's name and what it accepts (environment variables, typed by people
in deployments, are told in a warning instead: see :mod:`._env`).

Each is read as the plain value it is (:mod:`agent_otel._plain`: a ``str`` enum, an
``IntEnum``, a ``dict`` subclass whose own methods raise), and what configure() goes on with
is that plain value: none of an argument's own methods runs, here or in the SDK later (a
sampler, processor or reader of the wrong kind failed at the first span, metric or shutdown).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from agent_otel._plain import (
    a_kind,
    has_methods,
    int_of,
    items_of,
    number_of,
    plain,
    plain_value,
    shown,
)
from agent_otel.exporting import _env

__all__ = ["check_arguments"]

_SCALARS = (str, bool, int, float)
SPAN_PROCESSOR = ("on_start", "on_end", "shutdown", "force_flush")
_LOG_PROCESSOR = ("on_emit", "shutdown", "force_flush")
_SAMPLER = ("should_sample", "get_description")


def _positive(
    name: str, value: Any, most: float, *, integer: bool = False, zero: bool = False
) -> int | float | None:
    if value is None:
        return None
    number: int | float | None = int_of(value) if integer else number_of(value)
    if number is None:
        what = "an int" if integer else "a number"
        raise TypeError(f"configure({name}=...) must be {what}, not {shown(value)}")
    finite = type(number) is not float or math.isfinite(number)
    if not finite or number < 0 or (number == 0 and not zero) or number > most:
        bound = ">= 0" if zero else "> 0"
        raise ValueError(
            f"configure({name}=...) must be {bound} and at most {most:_}, not {shown(value)}"
        )
    if not integer and issubclass(type(value), int):
        return int_of(value)  # an int stays the int it is
    return number


def _optional(name: str, value: Any, kind: type | tuple[type, ...], what: str) -> None:
    if value is not None and not issubclass(type(value), kind):  # (never its own __class__)
        raise TypeError(f"configure({name}=...) must be {what}, not {shown(value)}")


def _instance_of(name: str, value: Any, methods: tuple[str, ...], what: str, fix: str) -> None:
    """``value`` is an instance (not a class) whose type has each of ``methods``."""
    if not has_methods(value, methods):
        also = ": pass an instance" if issubclass(type(value), type) else f": {fix}"
        raise TypeError(f"configure({name}=...) takes {what}, not {a_kind(value)}{also}")


def _listed(name: str, value: Any, check: Any) -> list[Any]:
    """A list or tuple of what ``check`` accepts, as a plain list."""
    if not issubclass(type(value), (list, tuple)):
        raise TypeError(
            f"configure({name}=...) takes a list, not {a_kind(value)}: pass {name}=[...]"
        )
    items = items_of(value)
    for item in items:
        check(item)
    return items


def _listed_instances(
    name: str, value: Any, methods: tuple[str, ...], what: str, fix: str
) -> list[Any]:
    """A list or tuple of instances whose types have each of ``methods``, as a plain list."""
    return _listed(name, value, lambda item: _instance_of(name, item, methods, what, fix))


def _resource_attributes(value: Any) -> dict[str, Any] | None:
    """``resource_attributes=``: a mapping of str names to attribute values (a scalar or a
    list of scalars of one type), as a plain dict; a None value is left out."""
    if value is None:
        return None
    if not issubclass(type(value), Mapping):
        raise TypeError(
            "configure(resource_attributes=...) takes a mapping of attribute names to values, "
            f"not {shown(value)}"
        )
    pairs = dict.items(value) if issubclass(type(value), dict) else value.items()
    out: dict[str, Any] = {}
    for key, item in pairs:
        if not issubclass(type(key), str):
            raise TypeError(
                f"configure(resource_attributes=...): a name must be a str, not {shown(key)}"
            )
        name = str.__str__(key)
        if item is None:
            continue
        given = plain_value(item)
        kinds = {type(v) for v in given} if type(given) is list else {type(given)}
        if not kinds <= set(_SCALARS) or (type(given) is list and len(kinds) > 1):
            raise TypeError(
                f"configure(resource_attributes=...): the value of {shown(name)} must be a str, "
                f"bool, int, float or a list of one of them, not {shown(item)}"
            )
        out[name] = given
    return out


def _headers(value: Any) -> dict[str, str] | None:
    """``headers=``: a mapping of str names to str values, as a plain dict."""
    _optional("headers", value, Mapping, "a mapping of header names to values")
    if value is None:
        return None
    pairs = dict.items(value) if issubclass(type(value), dict) else value.items()
    out: dict[str, str] = {}
    for key, item in pairs:
        if not issubclass(type(key), str) or not issubclass(type(item), str):
            bad = key if not issubclass(type(key), str) else item
            raise TypeError(f"configure(headers=...) takes str names and values, not {shown(bad)}")
        out[str.__str__(key)] = str.__str__(item)
    return out


def check_arguments(**given: Any) -> dict[str, Any]:
    """Raise ``TypeError`` / ``ValueError`` naming the first argument that cannot work; return
    the arguments as the plain values configure() goes on with."""
    from opentelemetry.sdk.metrics.export import MetricReader

    from agent_otel.sampling import TailSamplingPolicy

    out = dict(given)
    for name in ("service_name", "endpoint", "protocol", "prometheus_host"):
        out[name] = plain(given[name])
    _optional("service_name", out["service_name"], str, "a str")
    if out["protocol"] is not None:
        _optional("protocol", out["protocol"], str, "'grpc' or 'http/protobuf'")
        _env.resolve_protocol("traces", out["protocol"])
    if out["endpoint"] is not None:
        _optional("endpoint", out["endpoint"], str, "a str URL")
        _env.check_endpoint_argument(out["endpoint"], out["protocol"])
        out["endpoint"] = out["endpoint"].strip()  # as checked: the SDK reads it as it is
    out["headers"] = _headers(given["headers"])
    out["timeout"] = _positive("timeout", given["timeout"], _env.MOST_SECONDS)
    _optional("console", given["console"], bool, "True, False or None")
    if given["console_stream"] is not None:
        _instance_of(
            "console_stream", given["console_stream"], ("write", "flush"),
            "a text stream (with write() and flush())", "pass sys.stdout, or an io.StringIO()",
        )  # fmt: skip
    port = given["prometheus_port"]
    if port is not None and int_of(port) is None:
        raise TypeError(f"configure(prometheus_port=...) must be an int, not {shown(port)}")
    out["prometheus_port"] = int_of(port) if port is not None else None
    _env.prometheus_port(out["prometheus_port"], env={})
    _optional("prometheus_host", out["prometheus_host"], str, "a str host name or address")
    out["metric_export_interval_millis"] = _positive(
        "metric_export_interval_millis", given["metric_export_interval_millis"], _env.MOST_MILLIS
    )
    out["max_queue_size"] = _positive(
        "max_queue_size", given["max_queue_size"], _env.MOST_COUNT, integer=True
    )
    if given["sampler"] is not None:
        _instance_of(
            "sampler", given["sampler"], _SAMPLER, "an OpenTelemetry Sampler",
            "pass one, as ParentBased(TraceIdRatioBased(0.1)) (opentelemetry.sdk.trace."
            "sampling), or set OTEL_TRACES_SAMPLER",
        )  # fmt: skip
    out["resource_attributes"] = _resource_attributes(given["resource_attributes"])
    out["span_processors"] = _listed_instances(
        "span_processors", given["span_processors"], SPAN_PROCESSOR, "span processors",
        "pass SpanProcessor instances, as BatchSpanProcessor(exporter)",
    )  # fmt: skip

    def reader(item: Any) -> None:
        if not issubclass(type(item), MetricReader):
            raise TypeError(
                "configure(metric_readers=...) takes MetricReader instances, as "
                f"PeriodicExportingMetricReader(exporter), not {a_kind(item)}"
            )

    out["metric_readers"] = _listed("metric_readers", given["metric_readers"], reader)
    out["log_processors"] = _listed_instances(
        "log_processors", given["log_processors"], _LOG_PROCESSOR, "log record processors",
        "pass LogRecordProcessor instances, as BatchLogRecordProcessor(exporter)",
    )  # fmt: skip
    _optional("tail_sampling", given["tail_sampling"], TailSamplingPolicy, "a TailSamplingPolicy")
    _optional("set_global", given["set_global"], bool, "True or False")
    out["shutdown_timeout_millis"] = _positive(
        "shutdown_timeout_millis", given["shutdown_timeout_millis"], _env.MOST_MILLIS, zero=True
    )
    return out
