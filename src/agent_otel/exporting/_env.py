"""Environment variables that decide *what* ``configure()`` builds, read as the OTel SDK reads
them, with every unparsable or out-of-range value told once.

The choices the SDK exporters cannot make for us live here: which exporter class (protocol),
whether an OTLP endpoint is configured at all (otherwise the terminal view is the default),
which exporters are switched off, the batch processor's knobs and our Prometheus port. The
values an SDK class would also read (timeouts, intervals, ``OTEL_BSP_*``) are parsed here and
passed explicitly, so that a typo is named once with the value in force instead of a
traceback, a crash (the gRPC exporter's ``float()``) or a silent default. Everything else an
exporter reads by itself (headers, compression, certificates, sampler) is left to the SDK.
"""

from __future__ import annotations

import importlib
import math
import os
import re
from collections.abc import Mapping
from typing import Final, Literal
from urllib.parse import urlsplit, urlunsplit

from agent_otel._guard import warn_once
from agent_otel._plain import shown
from agent_otel.exporting._failures import NOT_FOUND, OTHER_PROTOCOL, PLAIN_SERVER, foretold
from agent_otel.scrubbing._scrubber import DEFAULT

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
CONSOLE_EXPORTER: Final = "agent_otel_console"
"""The entry point name of the terminal tree view; ``console`` means the same to configure()."""

_PROTOCOLS: Final[frozenset[str]] = frozenset({GRPC, HTTP_PROTOBUF})

MOST_SECONDS: Final = 10**6
"""The longest duration configure() takes, about 11.6 days (as seconds; as milliseconds, a
thousand times more), argument or variable: a longer one overflowed the platform's time inside
the SDK (``OverflowError: timestamp out of range``), every export or the shutdown failing.
Forever is not a timeout."""
MOST_MILLIS: Final = MOST_SECONDS * 1000
MOST_COUNT: Final = 2**31 - 1
"""The largest queue or batch: a larger one overflowed the SDK's queue (``OverflowError``)."""


def sdk_variables() -> frozenset[str]:
    """The ``OTEL_*`` variables the OTel API and SDK (and, when installed, the
    instrumentation package and the Prometheus exporter) name, as their modules of variables
    list them: an ``OTEL_*`` variable set that is none of these nor one we read, but one or two
    letters from one, is a typo told once (``recording/_hints.py``)."""
    names: set[str] = set()
    for module in (
        "opentelemetry.environment_variables",
        "opentelemetry.sdk.environment_variables",
        "opentelemetry.instrumentation.environment_variables",
    ):
        try:
            found = vars(importlib.import_module(module))
        except ImportError:
            continue
        names.update(v for k, v in found.items() if k.startswith("OTEL_") and type(v) is str)
    return frozenset(names)


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
        value = override.strip().lower() if isinstance(override, str) else override
        if value not in _PROTOCOLS:
            raise ValueError(
                f"configure(protocol=...) takes 'grpc' or 'http/protobuf', not {override!r}"
            )
        return GRPC if value == GRPC else HTTP_PROTOBUF
    env = os.environ if env is None else env
    for var in (_signal_var(signal, "PROTOCOL"), OTEL_EXPORTER_OTLP_PROTOCOL):
        raw = env.get(var, "").strip().lower()
        if not raw:
            continue
        if raw == GRPC:
            return GRPC
        if raw != HTTP_PROTOBUF:
            warn_once(
                var, raw,
                "agent-otel: %s=%r is not supported; using http/protobuf "
                "(set it to 'http/protobuf' or 'grpc')", var, raw,
            )  # fmt: skip
        return HTTP_PROTOBUF
    return DEFAULT_PROTOCOL


def protocol_variable(signal: Signal, env: Mapping[str, str] | None = None) -> str | None:
    """The variable that sets ``signal``'s protocol (per-signal, then general), or None."""
    env = os.environ if env is None else env
    for var in (_signal_var(signal, "PROTOCOL"), OTEL_EXPORTER_OTLP_PROTOCOL):
        if env.get(var, "").strip():
            return var
    return None


def endpoint_problem(value: str, protocol: Protocol) -> str | None:
    """Why ``value`` is not an OTLP endpoint, or None when it is one.

    OTLP/HTTP needs an ``http://`` or ``https://`` URL with a host (the SDK appends
    ``/v1/traces``); OTLP/gRPC also takes a bare ``host:port`` as the SDK's gRPC exporter does.
    """
    text = value.strip()
    if protocol == GRPC and "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        port = parts.port  # raises on a port that is not a number in range
    except ValueError as exc:
        return str(exc)
    if parts.scheme not in ("http", "https"):
        return "it needs a scheme, http:// or https://"
    if not parts.hostname or any(c.isspace() for c in text):
        return "it names no host"
    del port
    return None


def endpoint_example(protocol: Protocol) -> str:
    return "http://localhost:4317" if protocol == GRPC else "http://localhost:4318"


_MISTAKES: Final = "docs/configure.md#mistakes-are-told"


def endpoint_fix(value: str, protocol: Protocol) -> str:
    """The URL to name for ``value``, which is no OTLP endpoint: ``value`` itself with the
    scheme it lacks (``otel-collector:4318`` is ``http://otel-collector:4318``: another host's
    example sent the spans where nothing listens) and, where it names no port or the other
    protocol's, a Collector's port for ``protocol``; else the local Collector's URL."""
    text = value.strip()
    fixed = "http://" + text
    if "://" in text or endpoint_problem(fixed, protocol) is not None:
        return endpoint_example(protocol)
    parts = urlsplit(fixed)  # parsed above: no error left
    port = _PORTS[protocol]
    if parts.port is None or parts.port == _PORTS[_other(protocol)]:
        host = parts.netloc.rsplit(":", 1)[0] if parts.port is not None else parts.netloc
        fixed = urlunsplit(("http", f"{host}:{port}", parts.path, parts.query, parts.fragment))
    return fixed


_PORTS: Final = {GRPC: 4317, HTTP_PROTOBUF: 4318}
"""The ports a Collector's OTLP receivers listen on by default, per protocol."""


def hint_port(setting: str, value: str, protocol: Protocol, switch: str) -> None:
    """Tell once an endpoint on the other protocol's default port (4317 is OTLP/gRPC, 4318
    OTLP/HTTP): every export would fail on a protocol error. Only told: a Collector may listen
    on any port. ``switch`` is how to change the protocol where the endpoint was set."""
    text = value.strip()
    try:
        port = urlsplit(text if "://" in text else "http://" + text).port
    except ValueError:
        return
    other = HTTP_PROTOBUF if protocol == GRPC else GRPC
    if port != _PORTS[other]:
        return
    fixed = text.replace(f":{port}", f":{_PORTS[protocol]}", 1)
    if other == GRPC:
        switch += " (it needs agent-otel[grpc])"
    foretold(OTHER_PROTOCOL)
    warn_once(
        setting, text,
        "agent-otel: %s=%r is port %d, where a Collector listens for OTLP over %s, but the "
        "protocol is %s (port %d), so every export would fail: use %r, or %s",
        setting, text, port, other, protocol, _PORTS[protocol], fixed, switch,
    )  # fmt: skip


_LOOPBACK: Final = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


def hint_grpc_tls(setting: str, value: str, protocol: Protocol, signal: Signal = "traces") -> None:
    """Tell once a gRPC endpoint with no scheme (``localhost:4317``) on a Collector's own
    address: the SDK's gRPC exporter then connects with TLS, as the OTLP exporter spec has it
    while ``OTEL_EXPORTER_OTLP_INSECURE`` is unset, and a Collector's receiver, plain by
    default, fails every handshake (``WRONG_VERSION_NUMBER``), a message that names neither
    the endpoint nor the fix. Only told: a target with TLS is a valid one (a hosted backend's
    ``api.example.com:443``), so only the local host and the Collector's port 4317 are."""
    text = value.strip()
    if protocol != GRPC or "://" in text:
        return
    if any(
        os.environ.get(var, "").strip()
        for var in (_signal_var(signal, "INSECURE"), "OTEL_EXPORTER_OTLP_INSECURE")
    ):
        return  # TLS or not, chosen
    try:
        parts = urlsplit("http://" + text)
        port = parts.port
    except ValueError:
        return
    if parts.hostname not in _LOOPBACK and port != _PORTS[GRPC]:
        return
    foretold(PLAIN_SERVER)
    target = parts.netloc  # a path (OTLP/HTTP's /v1/traces) means nothing to gRPC: left out
    path = " (OTLP/gRPC takes no path)" if parts.path not in ("", "/") else ""
    warn_once(
        setting, f"tls:{text}",
        "agent-otel: %s=%r has no scheme, so OTLP/gRPC connects to it with TLS (as "
        "OTEL_EXPORTER_OTLP_INSECURE is unset), which a Collector's receiver, plain by default, "
        "refuses at every export: use %r for a Collector without TLS, or %r with it%s",
        setting, text, f"http://{target}", f"https://{target}", path,
    )  # fmt: skip


def hint_signal_path(var: str, value: str, signal: Signal) -> None:
    """Tell once a signal's own OTLP/HTTP endpoint variable that names no path
    (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://localhost:4318``): unlike the general one, it
    is the full URL the signal is posted to, as it is (the OTLP exporter spec), so the spans
    went to ``/``, a Collector answered 404 to every batch, and the only words were "is the
    collector reachable?". Only told: a backend may take a signal at its root."""
    text = value.strip()
    try:
        path = urlsplit(text).path
    except ValueError:
        return
    if path not in ("", "/"):
        return
    base = text.removesuffix("/")
    foretold(NOT_FOUND)
    warn_once(
        var, f"path:{text}",
        "agent-otel: %s=%r names no path, but it is the full URL %s are posted to, as it is, "
        "and a Collector takes them at /v1/%s: set it to %r, or set %s=%r instead (the base "
        "each signal's path is appended to)",
        var, text, signal, signal, f"{base}/v1/{signal}", OTEL_EXPORTER_OTLP_ENDPOINT, base,
    )  # fmt: skip


_SIGNAL_PATHS: Final = ("/v1/traces", "/v1/metrics", "/v1/logs")


def base_endpoint(
    signal: Signal, protocol: str | None = None, env: Mapping[str, str] | None = None
) -> str | None:
    """The base URL to export ``signal`` to when ``OTEL_EXPORTER_OTLP_ENDPOINT`` ends in a
    signal's path (``http://host:4318/v1/traces``) under OTLP/HTTP, told once; else None (the
    exporter reads the environment itself). The general variable is a base every signal's path
    is appended to, so the SDK would post to ``/v1/traces/v1/traces``; a per-signal variable
    set for ``signal`` is a full URL and wins, as in the SDK."""
    env = os.environ if env is None else env
    if env.get(_signal_var(signal, "ENDPOINT"), "").strip():
        return None
    raw = env.get(OTEL_EXPORTER_OTLP_ENDPOINT, "").strip()
    if resolve_protocol(signal, protocol, env) != HTTP_PROTOBUF or endpoint_problem(
        raw, HTTP_PROTOBUF
    ):
        return None
    path = next((p for p in _SIGNAL_PATHS if raw.rstrip("/").endswith(p)), None)
    if path is None:
        return None
    base = raw.rstrip("/").removesuffix(path)
    warn_once(
        OTEL_EXPORTER_OTLP_ENDPOINT, raw,
        "agent-otel: %s=%r ends in %s, but it is the base URL each signal's path (/v1/traces, "
        "/v1/metrics, /v1/logs) is appended to; exporting to %r. Set it to %r, or set a "
        "signal's full URL in %s",
        OTEL_EXPORTER_OTLP_ENDPOINT, raw, path, base, base, _signal_var("traces", "ENDPOINT"),
    )  # fmt: skip
    return base


def padded_endpoint(
    signal: Signal, protocol: Protocol, env: Mapping[str, str] | None = None
) -> str | None:
    """The URL (gRPC: the target) the endpoint variable in force for ``signal`` names, when
    its value has whitespace around it (a ``.env`` file's or a YAML block's trailing space);
    else None, and the exporter reads the variable itself. Every check here reads the value
    stripped, but the SDK's exporters read it as it is: a space after the port raised out of
    ``configure()`` (the port is no number), one after a path posted to ``/otlp%20/v1/...``.
    As in the SDK, the per-signal variable is the signal's full URL and the general one the
    base the signal's path is appended to (a base ending in a signal's path is
    :func:`base_endpoint`'s)."""
    env = os.environ if env is None else env
    per_signal, general = _endpoint_vars(signal)
    for var in (per_signal, general):
        raw = env.get(var, "")
        text = raw.strip()
        if not text:
            continue
        if text == raw:
            return None
        if var == general and protocol == HTTP_PROTOBUF:
            return f"{text.removesuffix('/')}/v1/{signal}"
        return text
    return None


def _endpoint_vars(signal: Signal) -> tuple[str, str]:
    return _signal_var(signal, "ENDPOINT"), OTEL_EXPORTER_OTLP_ENDPOINT


def endpoint_set(signal: Signal, env: Mapping[str, str] | None = None) -> bool:
    """True when an OTLP endpoint variable for ``signal`` is set at all (valid or not)."""
    env = os.environ if env is None else env
    return any(env.get(var, "").strip() for var in _endpoint_vars(signal))


def endpoint_configured(
    signal: Signal, env: Mapping[str, str] | None = None, protocol: Protocol | None = None
) -> bool:
    """True when the environment names a valid OTLP endpoint for ``signal``.

    The per-signal variable wins over the general one, as in the SDK. A malformed value is
    told once (the variable, the value, what a valid one looks like) and counts as unset, so
    the data goes to the terminal view instead of being lost request by request.
    """
    env = os.environ if env is None else env
    protocol = protocol or resolve_protocol(signal, env=env)
    for var in _endpoint_vars(signal):
        raw = env.get(var, "").strip()
        if not raw:
            continue
        problem = endpoint_problem(raw, protocol)
        if problem is None:
            hint_port(var, raw, protocol, f"{OTEL_EXPORTER_OTLP_PROTOCOL}={_other(protocol)}")
            hint_grpc_tls(var, raw, protocol, signal)
            if protocol == HTTP_PROTOBUF and var != OTEL_EXPORTER_OTLP_ENDPOINT:
                hint_signal_path(var, raw, signal)
            return True
        warn_once(
            var, raw,
            "agent-otel: %s=%r is not an OTLP endpoint (%s); %s are not exported over OTLP. "
            "Set it to a URL such as %s (%s)",
            var, raw, problem, signal, endpoint_fix(raw, protocol), _MISTAKES,
        )  # fmt: skip
        return False
    return False


def check_endpoint_argument(endpoint: str, protocol: str | None) -> None:
    """``configure(endpoint=...)``: a malformed value is a programming error, raised at once."""
    if not isinstance(endpoint, str):
        raise TypeError(f"endpoint must be a str URL, not {type(endpoint).__name__}")
    resolved = resolve_protocol("traces", protocol)
    problem = endpoint_problem(endpoint, resolved)
    if problem is not None:
        shown = DEFAULT.text(endpoint)  # the message may be logged: no user:token@ in it
        raise ValueError(
            f"configure(endpoint={shown!r}) is not an OTLP endpoint ({problem}); "
            f"pass a URL such as {DEFAULT.text(endpoint_fix(endpoint, resolved))!r} "
            f"({_MISTAKES})"
        )
    hint_port("endpoint", endpoint, resolved, f"protocol={_other(resolved)!r}")
    hint_grpc_tls("endpoint", endpoint, resolved)


def _other(protocol: Protocol) -> Protocol:
    return HTTP_PROTOBUF if protocol == GRPC else GRPC


def export_timeout(signal: Signal, env: Mapping[str, str] | None = None) -> float | None:
    """The OTLP export timeout in seconds from the environment (per signal, then general), as
    the Python SDK reads it; None when unset. A value that is not a positive number is told
    once and None is returned (then our default is in force)."""
    env = os.environ if env is None else env
    for var in (_signal_var(signal, "TIMEOUT"), OTEL_EXPORTER_OTLP_TIMEOUT):
        raw = env.get(var, "").strip()
        if not raw:
            continue
        value = _number(raw)
        if value is not None and 0 < value <= MOST_SECONDS:
            return value
        warn_once(var, raw, "agent-otel: %s=%r is not a positive number of seconds (at most %d); "
                  "using the default", var, raw, MOST_SECONDS)  # fmt: skip
        return None
    return None


def exporter_names(signal: Signal, env: Mapping[str, str] | None = None) -> frozenset[str] | None:
    """``OTEL_{TRACES,METRICS,LOGS}_EXPORTER`` as a set, or None when unset.

    We honour ``otlp``, ``none`` (alone: the signal is off, whatever else is configured) and,
    for traces, ``console`` / ``agent_otel_console`` (the terminal tree, returned as
    ``console``); other values are ignored with a warning naming the accepted ones, and a
    variable of ignored values only counts as unset (``zipkin``, or ``otlp_proto_http`` as
    ``opentelemetry-instrument`` takes it: it switched the signal off, the endpoint set
    beside it included, where the warning said "ignored").
    """
    env = os.environ if env is None else env
    var = _EXPORTER_VARS[signal]
    raw = env.get(var, "").strip().lower()
    if not raw:
        return None
    names = {part.strip() for part in raw.split(",") if part.strip()}
    if CONSOLE_EXPORTER in names and signal == "traces":
        names = (names - {CONSOLE_EXPORTER}) | {"console"}
    known = {"otlp", "none"} | ({"console"} if signal == "traces" else set())
    for unknown in sorted(names - known):
        accepted = ", ".join(sorted(known | ({CONSOLE_EXPORTER} if signal == "traces" else set())))
        warn_once(
            var, unknown,
            "agent-otel: %s value %r is not supported by configure(); ignored (accepted: %s)",
            var, unknown, accepted,
        )  # fmt: skip
    names &= known
    if not names:
        return None
    if "none" in names and len(names) > 1:  # as the SDK: none beside others means nothing
        names.discard("none")
    return frozenset(names)


def prometheus_port(
    override: int | None = None, env: Mapping[str, str] | None = None
) -> int | None:
    """The Prometheus scrape port: argument, then ``AGENT_OTEL_PROMETHEUS_PORT``, else None.

    Port 0 asks the OS for a free port (the handle reports the one bound).
    """
    if override is not None:
        if isinstance(override, bool) or not isinstance(override, int):
            told = f"must be an int, not {shown(override)}"
            raise TypeError(f"configure(prometheus_port=...) {told}")
        if not 0 <= override <= 65535:
            told = f"must be 0..65535, not {shown(override)}"
            raise ValueError(f"configure(prometheus_port=...) {told}")
        return override
    env = os.environ if env is None else env
    raw = env.get(AGENT_OTEL_PROMETHEUS_PORT, "").strip()
    if not raw:
        return None
    try:
        port = int(raw)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        warn_once(
            AGENT_OTEL_PROMETHEUS_PORT, raw,
            "agent-otel: %s=%r is not a port number (0..65535); no Prometheus endpoint is served",
            AGENT_OTEL_PROMETHEUS_PORT, raw,
        )  # fmt: skip
        return None
    return port


def _number(raw: str) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def int_var(
    name: str,
    default: int,
    env: Mapping[str, str] | None = None,
    minimum: int = 1,
    maximum: int = MOST_COUNT,
) -> int:
    """An integer variable from ``minimum`` to ``maximum``, or ``default`` when unset.

    An unparsable or out-of-range value is told once, naming the variable, the value and the
    default then in force. ``"2048.0"`` is read as 2048 (a whole number); ``"32k"`` is not.
    """
    env = os.environ if env is None else env
    raw = env.get(name, "").strip()
    if not raw:
        return default
    number = _number(raw)
    if number is not None and number == int(number) and minimum <= int(number) <= maximum:
        return int(number)
    warn_once(name, raw, "agent-otel: %s=%r is not an integer from %d to %d; using %d", name,
              raw, minimum, maximum, default)  # fmt: skip
    return default


def millis_var(name: str, default: float, env: Mapping[str, str] | None = None) -> float | None:
    """A positive number of milliseconds, or None when unset (the SDK reads its default). An
    invalid one is told once and ``default`` (the SDK's) returned: passed explicitly, so the
    SDK never reads the variable itself (it took ``1e300`` and overflowed in its thread)."""
    env = os.environ if env is None else env
    raw = env.get(name, "").strip()
    if not raw:
        return None
    number = _number(raw)
    if number is not None and 0 < number <= MOST_MILLIS:
        return number
    warn_once(name, raw, "agent-otel: %s=%r is not a positive number of milliseconds (at most "
              "%d); using %d", name, raw, MOST_MILLIS, default)  # fmt: skip
    return default


UNSET_LIMIT: Final = -1
"""The SDK's ``SpanLimits.UNSET`` / ``LogRecordLimits.UNSET``: no limit (the env not read)."""
_COUNT_DEFAULT: Final = 128  # every count limit's default in the SDK
_GLOBAL_COUNT: Final = "OTEL_ATTRIBUTE_COUNT_LIMIT"
_GLOBAL_LENGTH: Final = "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"
# parameter -> (its variable, the global variable it falls back to, or None)
SPAN_LIMITS: Final[dict[str, tuple[str, str | None]]] = {
    "max_attributes": (_GLOBAL_COUNT, None),
    "max_attribute_length": (_GLOBAL_LENGTH, None),
    "max_events": ("OTEL_SPAN_EVENT_COUNT_LIMIT", None),
    "max_links": ("OTEL_SPAN_LINK_COUNT_LIMIT", None),
    "max_span_attributes": ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", _GLOBAL_COUNT),
    "max_event_attributes": ("OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", _GLOBAL_COUNT),
    "max_link_attributes": ("OTEL_LINK_ATTRIBUTE_COUNT_LIMIT", _GLOBAL_COUNT),
    "max_span_attribute_length": ("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", _GLOBAL_LENGTH),
}
LOG_LIMITS: Final[dict[str, tuple[str, str | None]]] = {
    "max_attributes": (_GLOBAL_COUNT, None),
    "max_attribute_length": (_GLOBAL_LENGTH, None),
    "max_log_record_attributes": ("OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT", _GLOBAL_COUNT),
    "max_log_record_attribute_length": (
        "OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT",
        _GLOBAL_LENGTH,
    ),
}


def _limit(name: str, env: Mapping[str, str]) -> tuple[bool, int | None]:
    """(whether ``name`` is usable as the SDK reads it, its value: None when unset)."""
    raw = env.get(name, "").strip().lower()
    if not raw or raw == "unset":
        return True, None
    try:
        value = int(raw)
    except ValueError:
        return False, None
    return value >= 0, value if value >= 0 else None


def limit_overrides(
    params: Mapping[str, tuple[str, str | None]], env: Mapping[str, str] | None = None
) -> dict[str, int]:
    """The limits to pass the SDK explicitly: for each limit variable that is not an integer
    >= 0 (the SDK raised ``ValueError`` out of configure() for one), what is in force when it
    is unset, told once; the others are left for the SDK to read. Empty when all are fine."""
    env = os.environ if env is None else env
    out: dict[str, int] = {}
    for param, (name, fallback) in params.items():
        usable, _ = _limit(name, env)
        if usable:
            continue
        length = "LENGTH" in name
        in_force: int = UNSET_LIMIT if length else _COUNT_DEFAULT
        if fallback is not None:
            usable_fallback, value = _limit(fallback, env)
            if usable_fallback and value is not None:
                in_force = value
        elif name == _GLOBAL_COUNT:
            in_force = UNSET_LIMIT  # unset: each limit's own default
        out[param] = in_force
        raw = env.get(name, "")
        told = "no limit" if in_force == UNSET_LIMIT and length else (
            "the default" if in_force in (UNSET_LIMIT, _COUNT_DEFAULT) else str(in_force)
        )  # fmt: skip
        warn_once(name, raw, "agent-otel: %s=%r is not an integer >= 0; using %s", name, raw,
                  told)  # fmt: skip
    return out


_SAMPLERS: Final = frozenset(
    {"always_on", "always_off", "parentbased_always_on", "parentbased_always_off",
     "traceidratio", "parentbased_traceidratio"}
)  # fmt: skip
"""The ``OTEL_TRACES_SAMPLER`` values the Python SDK knows."""


def sampler_unknown(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``OTEL_TRACES_SAMPLER`` is set and names no sampler the SDK knows: told once,
    naming the variable and the default then in force (the SDK's own line named neither);
    set empty, it is unset, silently."""
    env = os.environ if env is None else env
    raw = env.get("OTEL_TRACES_SAMPLER")
    if raw is None or raw.lower() in _SAMPLERS:  # (the SDK's own test: no strip)
        return False
    if not raw.strip():  # set empty: unset, as the specification reads an empty variable
        return True
    warn_once("OTEL_TRACES_SAMPLER", raw, "agent-otel: OTEL_TRACES_SAMPLER=%r is not a sampler "
              "this SDK knows (%s); using parentbased_always_on", raw,
              ", ".join(sorted(_SAMPLERS)))  # fmt: skip
    return True


_FLAGS: Final = {
    "OTEL_SDK_DISABLED": True,
    "OTEL_EXPORTER_OTLP_INSECURE": False,
    "OTEL_EXPORTER_OTLP_TRACES_INSECURE": False,
    "OTEL_EXPORTER_OTLP_METRICS_INSECURE": False,
    "OTEL_EXPORTER_OTLP_LOGS_INSECURE": False,
}
"""The boolean variables the SDK and its OTLP exporters read for what ``configure()`` builds,
each with whether its reader strips the value first (the SDK's providers do, the gRPC
exporters do not)."""


def flag(name: str, env: Mapping[str, str] | None = None) -> bool:
    """Boolean variable ``name`` (of :data:`_FLAGS`) as the SDK reads it: true only as
    ``true`` in any case, anything else false."""
    raw = (os.environ if env is None else env).get(name, "")
    return (raw.strip() if _FLAGS[name] else raw).lower() == "true"


def hint_flags(env: Mapping[str, str] | None = None) -> None:
    """Tell, once per variable and value, a boolean variable of :data:`_FLAGS` set to what is
    neither ``true`` nor ``false`` (``OTEL_SDK_DISABLED=1``, ``..._INSECURE=yes``): the SDK
    reads it as false without a word (the specification asks for a warning), so the
    setting meant was not in force; and ``OTEL_SDK_DISABLED`` true, which leaves every provider
    ``configure()`` builds recording nothing: asked for telemetry, the application got none,
    not even the terminal view, with no word of why."""
    env = os.environ if env is None else env
    for name in _FLAGS:
        raw = env.get(name)
        if raw is None or raw.strip().lower() in ("", "false") or flag(name, env):
            continue
        warn_once(
            name, raw,
            "agent-otel: %s=%r is read as false: OpenTelemetry reads a boolean variable as "
            "true only when it is 'true' (any case). Set %s=true, or unset it "
            "(docs/configure.md)",
            name, raw, name,
        )  # fmt: skip
    if flag("OTEL_SDK_DISABLED", env):
        value = env["OTEL_SDK_DISABLED"]
        warn_once(
            "OTEL_SDK_DISABLED", "true",
            "agent-otel: OTEL_SDK_DISABLED=%s, so the providers configure() builds record "
            "nothing: no run is exported or shown in the terminal (the agents run as ever). "
            "Unset it to record (docs/configure.md)",
            shown(value),
        )  # fmt: skip


_HEADER_ENTRY: Final = re.compile(r"[ \t]*[!#-'*+\-.0-9A-Z^-z|~]+[ \t]*=.*", re.DOTALL)
"""A ``name=value`` entry of an ``OTEL_EXPORTER_OTLP_*HEADERS`` variable, as the SDK's
exporters read one (its name a W3C baggage key's characters; the value URL-encoded or not)."""


def hint_headers(env: Mapping[str, str] | None = None) -> None:
    """Tell, once per variable and value, an ``OTEL_EXPORTER_OTLP_*HEADERS`` entry the SDK's
    exporters drop: written as an HTTP header (``Authorization: Bearer ...``) rather than
    ``name=value``, it is left out of every request, and a collector that needs it refuses
    them all (401), while the SDK's own warning names no variable. The entry is quoted
    scrubbed (it holds the credential)."""
    env = os.environ if env is None else env
    for suffix in ("", "TRACES_", "METRICS_", "LOGS_"):
        var = f"OTEL_EXPORTER_OTLP_{suffix}HEADERS"
        raw = env.get(var, "")
        for entry in raw.split(","):
            if entry.strip() and not _HEADER_ENTRY.fullmatch(entry):
                warn_once(
                    var, raw,
                    "agent-otel: %s has an entry that is not name=value (%s), so the "
                    "exporters send every request without it (a collector that needs it "
                    "refuses them all): write each header as name=value, comma-separated, its "
                    "value URL-encoded (a space as %%20)",
                    var, DEFAULT.text(entry.strip()),
                )  # fmt: skip
                break


def settings(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables a ``configure()`` reads (``OTEL_*``, ``AGENT_OTEL_*``), as they are now."""
    names = os.environ if env is None else env
    return {k: v for k, v in names.items() if k.startswith(("OTEL_", "AGENT_OTEL_"))}
