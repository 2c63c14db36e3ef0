"""An argument of ``configure()`` that overrides a variable set to something else, told once.

The OTel SDK's rule, and ours: an argument wins over its ``OTEL_*`` variable. A quickstart's
``configure(endpoint="http://localhost:4318")`` deployed where the platform sets
``OTEL_EXPORTER_OTLP_ENDPOINT`` (the OpenTelemetry Operator injects it, with
``OTEL_SERVICE_NAME``) sends every span to the developer's laptop address without a word, and
a header the deployment adds (an API key) is dropped when ``headers=`` is given. Named, never
quoted: a variable's value may hold a credential.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Final

from agent_otel._guard import warn_once

_SIGNALS: Final = ("TRACES", "METRICS", "LOGS")


def _otlp(suffix: str) -> tuple[str, ...]:
    """The general OTLP exporter variable and each signal's: ``OTEL_EXPORTER_OTLP_<suffix>``."""
    signals = (f"OTEL_EXPORTER_OTLP_{signal}_{suffix}" for signal in _SIGNALS)
    return (f"OTEL_EXPORTER_OTLP_{suffix}", *signals)


def _same_endpoint(given: object, value: str, variable: str) -> bool:
    """The endpoint a variable names is the argument's (a signal's, with its path)."""
    base = str(given).strip().rstrip("/")
    value = value.strip().rstrip("/")
    signal = variable.removeprefix("OTEL_EXPORTER_OTLP_").removesuffix("_ENDPOINT")
    return value in (base, f"{base}/v1/{signal.lower()}")


def _header_names(value: str) -> set[str]:
    """The header names of a ``name=value,name=value`` variable, lowercase."""
    return {entry.partition("=")[0].strip().lower() for entry in value.split(",") if "=" in entry}


def _same_headers(given: object, value: str, variable: str) -> bool:
    """Every header the variable sets is one the argument sets too: none is dropped."""
    names = {str(name).lower() for name in given} if isinstance(given, Mapping) else set()
    return _header_names(value) <= names


def _same_number(given: object, value: str, variable: str) -> bool:
    try:
        return float(value) == float(str(given))
    except ValueError:  # a variable that does not parse is told as such elsewhere
        return True


def _same_text(given: object, value: str, variable: str) -> bool:
    return value.strip().lower() == str(given).strip().lower()


_OVERRIDDEN: Final[dict[str, tuple[tuple[str, ...], Callable[[object, str, str], bool]]]] = {
    "endpoint": (_otlp("ENDPOINT"), _same_endpoint),
    "protocol": (_otlp("PROTOCOL"), _same_text),
    "headers": (_otlp("HEADERS"), _same_headers),
    "service_name": (("OTEL_SERVICE_NAME",), _same_text),
    "max_queue_size": (("OTEL_BSP_MAX_QUEUE_SIZE",), _same_number),
    "metric_export_interval_millis": (("OTEL_METRIC_EXPORT_INTERVAL",), _same_number),
}
"""Each argument, the variables it wins over, and whether a variable says what it says."""


def hint_overridden(given: Mapping[str, object], env: Mapping[str, str] | None = None) -> None:
    """Tell once each variable set to another value than the argument that wins over it."""
    names = os.environ if env is None else env
    for option, (variables, same) in _OVERRIDDEN.items():
        value = given.get(option)
        if value is None:
            continue
        for variable in variables:
            set_to = names.get(variable, "").strip()
            if not set_to or same(value, set_to, variable):
                continue
            warn_once(
                "overridden", variable,
                "agent-otel: configure(%s=...) wins over %s, which is set to something else "
                "and so is ignored%s: leave %s= out for the variable to decide (a deployment's "
                "own setting), or unset it (docs/configure.md)",
                option, variable,
                " (the headers it sets are not sent)" if option == "headers" else "", option,
            )  # fmt: skip
