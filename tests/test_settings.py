"""Every setting agent-otel reads, read as the OTel SDK reads it, and every typo told.

Environment variables are typed by people in deployments: an unparsable or out-of-range value
never crashes the app and never goes silent; it is named in one warning (variable, value,
the value in force) however often it is read. Arguments are code: a wrong one raises at once,
naming the parameter.
"""

from __future__ import annotations

import io
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_otel import ContentCapture, configure
from agent_otel.exporting._pipeline import BatchSettings
from agent_otel.recording.content._capture import ENV_CAPTURE, capture_from

READ = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_LOGS_EXPORTER",
    "OTEL_BSP_MAX_QUEUE_SIZE",
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
    "OTEL_BSP_SCHEDULE_DELAY",
    "OTEL_BSP_EXPORT_TIMEOUT",
    "OTEL_METRIC_EXPORT_INTERVAL",
    "OTEL_METRIC_EXPORT_TIMEOUT",
    "AGENT_OTEL_PROMETHEUS_PORT",
    ENV_CAPTURE,
]


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in READ:
        monkeypatch.delenv(var, raising=False)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "agent_otel" and r.levelno == logging.WARNING
    ]


# (variable, bad value, what the warning says is in force)
BAD = [
    ("OTEL_BSP_MAX_QUEUE_SIZE", "32k", "using 16384"),
    ("OTEL_BSP_MAX_QUEUE_SIZE", "-1", "using 16384"),
    ("OTEL_BSP_MAX_QUEUE_SIZE", "0", "using 16384"),
    ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1.5", "using 1024"),
    ("OTEL_BSP_SCHEDULE_DELAY", "1s", "using 1000"),
    ("OTEL_BSP_EXPORT_TIMEOUT", "-5", "using 30000"),
    ("OTEL_EXPORTER_OTLP_TIMEOUT", "5s", "using the default"),
    ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "nan", "using the default"),
    ("OTEL_METRIC_EXPORT_INTERVAL", "1m", "using 60000"),  # the SDK's defaults, passed
    ("OTEL_METRIC_EXPORT_TIMEOUT", "0", "using 30000"),
    ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "using http/protobuf"),
    ("OTEL_TRACES_EXPORTER", "jaeger", "accepted: agent_otel_console, console, none, otlp"),
    ("OTEL_METRICS_EXPORTER", "prometheus", "accepted: none, otlp"),
    ("AGENT_OTEL_PROMETHEUS_PORT", "99999", "no Prometheus endpoint"),
    ("AGENT_OTEL_PROMETHEUS_PORT", "nine", "no Prometheus endpoint"),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318", "such as http://localhost:4318"),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url", "such as http://localhost:4318"),
    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://c/v1/traces", "such as http://localhost:4318"),
    ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://:4318", "such as http://localhost:4318"),
    ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://c:99999", "such as http://localhost:4318"),
]
OTLP_ON = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}


@pytest.mark.parametrize(("var", "value", "in_force"), BAD, ids=[f"{v}={x}" for v, x, _ in BAD])
def test_a_bad_variable_is_named_once_with_the_value_in_force(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    var: str,
    value: str,
    in_force: str,
) -> None:
    if "ENDPOINT" not in var:  # the variable must be read: OTLP on to a dead port
        for name, url in OTLP_ON.items():
            monkeypatch.setenv(name, url)
    monkeypatch.setenv(var, value)
    for _ in range(2):  # read twice, told once
        tel = configure(set_global=False, console_stream=io.StringIO(), shutdown_timeout_millis=0)
        tel.shutdown()
    told = [m for m in _warnings(caplog) if var in m]
    assert len(told) == 1, told
    assert repr(value.strip().lower() if "EXPORTER=" in var else value) in told[0] or (
        repr(value.lower()) in told[0]
    )
    assert in_force in told[0]


def test_a_malformed_endpoint_variable_keeps_the_trace_visible(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not lost request by request: the terminal view shows the traces instead."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318")
    stream = io.StringIO()
    tel = configure(set_global=False, console_stream=stream)
    with tel.tracer_provider.get_tracer("t").start_as_current_span("invoke_agent a"):
        pass
    tel.shutdown()
    assert "invoke_agent a" in stream.getvalue()


def test_grpc_takes_host_and_port_as_its_exporter_does() -> None:
    from agent_otel.exporting import _env

    assert _env.endpoint_problem("collector:4317", "grpc") is None
    assert _env.endpoint_problem("collector:4317", "http/protobuf") is not None
    assert _env.endpoint_problem("https://collector.example.com", "http/protobuf") is None


def test_valid_variables_are_read_as_the_sdk_reads_them() -> None:
    env = {
        "OTEL_BSP_MAX_QUEUE_SIZE": "4096",
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "8192",  # more than the queue: capped
        "OTEL_BSP_SCHEDULE_DELAY": " 250 ",
    }
    resolved = BatchSettings.resolve(env=env)
    assert (resolved.max_queue_size, resolved.max_export_batch_size) == (4096, 4096)
    assert resolved.schedule_delay_millis == 250


@pytest.mark.parametrize(
    ("argument", "value", "error"),
    [
        ("endpoint", "localhost:4318", ValueError),
        ("endpoint", "not a url", ValueError),
        ("endpoint", 4318, TypeError),
        ("protocol", "http/json", ValueError),
        ("timeout", "5", TypeError),
        ("timeout", -1, ValueError),
        ("max_queue_size", -1, ValueError),
        ("max_queue_size", "32k", TypeError),
        ("max_queue_size", 0, ValueError),
        ("metric_export_interval_millis", 0, ValueError),
        ("prometheus_port", 70000, ValueError),
        ("shutdown_timeout_millis", -1, ValueError),
        ("console", "yes", TypeError),
        ("tail_sampling", 0.1, TypeError),
        ("service_name", 3, TypeError),
        ("headers", "a=b", TypeError),
    ],
)
def test_a_wrong_argument_raises_at_once_naming_it(
    argument: str, value: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match=argument):
        configure(set_global=False, **{argument: value})  # type: ignore[arg-type]


def test_a_malformed_endpoint_argument_says_what_a_valid_one_looks_like() -> None:
    with pytest.raises(ValueError, match=r"'http://localhost:4318'"):
        configure(endpoint="localhost:4318", set_global=False)
    with pytest.raises(ValueError, match=r"'http://localhost:4317'"):
        configure(endpoint="http://", protocol="grpc", set_global=False)


# --- content capture ---------------------------------------------------------------------------

OFF = ["false", "FALSE", "NO_CONTENT", "no_content", " false ", ""]
# every value docs/tracing.md's table names, any case
MODES_READ = {"no_content", "false", "span_only", "true", "event_only", "span_and_event"}
MODES = {
    "true": (True, False),
    "SPAN_ONLY": (True, False),
    "event_only": (False, True),
    "SPAN_AND_EVENT": (True, True),
}


@pytest.mark.parametrize("value", OFF)
def test_capture_content_strings_that_mean_off_are_off(value: str) -> None:
    assert capture_from(value) is None


@pytest.mark.parametrize(("value", "mode"), MODES.items())
def test_capture_content_strings_mean_the_variables_modes(
    value: str, mode: tuple[bool, bool]
) -> None:
    capture = capture_from(value)
    assert capture is not None
    assert (capture.spans, capture.events) == mode


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=20))
def test_a_string_argument_means_what_the_variable_means(value: str) -> None:
    """Never read by truthiness: the argument and the variable agree on every string the
    argument takes; one that is no mode (``"yes"``, a typo) raises at the call that gave it,
    where the variable's same value keeps content off (told once)."""
    import os

    if "\x00" in value:
        return
    old = os.environ.get(ENV_CAPTURE)
    os.environ[ENV_CAPTURE] = value
    try:
        if value.strip() and value.strip().lower() not in MODES_READ:
            with pytest.raises(ValueError, match=r"capture_content=\.\.\.\) takes True, False"):
                capture_from(value)
            assert capture_from(None) is None
            return
        assert capture_from(value) == capture_from(None)
    finally:
        if old is None:
            del os.environ[ENV_CAPTURE]
        else:
            os.environ[ENV_CAPTURE] = old


def test_an_unknown_capture_mode_keeps_content_off_told_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The variable's unknown value, as the SDK reads its variables: off, told once. The same
    value given as the argument is a line of code to fix: it raises where it is written
    (before, content stayed off behind a log line the caller asking for it may never see)."""
    monkeypatch.setenv(ENV_CAPTURE, "0")
    assert capture_from(None) is None
    assert capture_from(None) is None
    told = [m for m in _warnings(caplog) if ENV_CAPTURE in m]
    assert len(told) == 1 and "'0'" in told[0] and "SPAN_ONLY" in told[0]
    with pytest.raises(ValueError, match=r"capture_content=\.\.\.\) takes .*'SPAN_ONLY'.* not '0'"):
        capture_from("0")


@pytest.mark.parametrize("value", [1, 0.5, ["SPAN_ONLY"], object()])
def test_capture_content_of_another_type_raises(value: object) -> None:
    with pytest.raises(TypeError, match="capture_content"):
        capture_from(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"max_bytes": "32k"}, TypeError),
        ({"max_bytes": 32.0}, TypeError),
        ({"max_bytes": True}, TypeError),
        ({"max_bytes": 0}, ValueError),
        ({"max_bytes": -1}, ValueError),
        ({"redact": "scrub"}, TypeError),
        ({"spans": "yes"}, TypeError),
        ({"events": 1}, TypeError),
    ],
)
def test_invalid_content_capture_raises_at_construction(
    kwargs: dict[str, object], error: type[Exception]
) -> None:
    with pytest.raises(error, match="ContentCapture"):
        ContentCapture(**kwargs)  # type: ignore[arg-type]


def test_wrapper_and_instrument_take_capture_modes_as_strings() -> None:
    from agent_otel.recording._options import settings_from

    assert settings_from({"capture_content": "false"}).capture is None
    on = settings_from({"capture_content": "SPAN_AND_EVENT"}, "instrument").capture
    assert on is not None and on.events
