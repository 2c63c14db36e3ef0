"""configure(): env parsing, exporter choice, bucket views, globals, shutdown.

Nothing here sets an OTel global in the test process: every configure() call passes
set_global=False, and the global-provider behaviour runs in subprocesses.
"""

from __future__ import annotations

import http.server
import inspect
import io
import logging
import math
import subprocess
import sys
import textwrap
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased

from agent_otel import _attributes as A
from agent_otel.exporting import _env
from agent_otel.exporting._configure import configure, histogram_views
from agent_otel.exporting._exporters import metric_exporter, span_exporter
from agent_otel.exporting._telemetry import Telemetry
from hostile_types import LyingClass, LyingDict, LyingFloat, LyingInt, LyingKey, LyingStr, NoStr
from otlp_receiver import POLL

OTEL_VARS = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_TRACES_SAMPLER",
    "OTEL_TRACES_SAMPLER_ARG",
    *(f"OTEL_{kind}_LIMIT" for kind in ("ATTRIBUTE_COUNT", "ATTRIBUTE_VALUE_LENGTH")),
    *(f"OTEL_{of}_ATTRIBUTE_COUNT_LIMIT" for of in ("EVENT", "LINK", "LOGRECORD")),
    *(f"OTEL_{of}_ATTRIBUTE_VALUE_LENGTH_LIMIT" for of in ("SPAN", "LOGRECORD")),
    "OTEL_SPAN_EVENT_COUNT_LIMIT",
    "OTEL_SPAN_LINK_COUNT_LIMIT",
    "AGENT_OTEL_PROMETHEUS_PORT",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in OTEL_VARS:
        monkeypatch.delenv(var, raising=False)


# --- env parsing -------------------------------------------------------------------------------


def test_protocol_resolution_order(caplog: pytest.LogCaptureFixture) -> None:
    assert _env.resolve_protocol("traces", env={}) == "http/protobuf"
    general = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    assert _env.resolve_protocol("traces", env=general) == "grpc"
    per_signal = {**general, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/protobuf"}
    assert _env.resolve_protocol("metrics", env=per_signal) == "http/protobuf"
    assert _env.resolve_protocol("traces", env=per_signal) == "grpc"
    assert _env.resolve_protocol("traces", "GRPC", env={}) == "grpc"  # argument wins
    assert _env.resolve_protocol("traces", "http/protobuf", env=general) == "http/protobuf"
    with pytest.raises(ValueError, match=r"protocol=\.\.\.\) takes"):
        _env.resolve_protocol("traces", "http/json")
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        assert _env.resolve_protocol(
            "traces", env={"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
        ) == ("http/protobuf")
    assert "not supported" in caplog.text


def test_endpoint_exporters_and_prometheus_port_from_env(caplog: pytest.LogCaptureFixture) -> None:
    assert not _env.endpoint_configured("traces", env={})
    assert _env.endpoint_configured("traces", env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})
    only_metrics = {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c:4318/v1/metrics"}
    assert _env.endpoint_configured("metrics", env=only_metrics)
    assert not _env.endpoint_configured("traces", env=only_metrics)
    assert _env.exporter_names("traces", env={}) is None
    assert _env.exporter_names("traces", env={"OTEL_TRACES_EXPORTER": "otlp, console"}) == {
        "otlp",
        "console",
    }
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        # ignored, as the warning says: the variable counts as unset (it switched metrics off)
        assert _env.exporter_names("metrics", env={"OTEL_METRICS_EXPORTER": "zipkin"}) is None
    assert _env.prometheus_port(env={"AGENT_OTEL_PROMETHEUS_PORT": "9464"}) == 9464
    assert _env.prometheus_port(9000, env={"AGENT_OTEL_PROMETHEUS_PORT": "9464"}) == 9000
    assert _env.prometheus_port(env={"AGENT_OTEL_PROMETHEUS_PORT": "nope"}) is None
    assert _env.prometheus_port(env={}) is None


def test_exporter_class_follows_protocol_and_http_paths_are_appended() -> None:
    http = span_exporter("http/protobuf", "http://collector:4318/", None, None)
    assert type(http).__module__.startswith("opentelemetry.exporter.otlp.proto.http")
    assert http._endpoint == "http://collector:4318/v1/traces"
    http_metrics = metric_exporter(None, "http://collector:4318/v1/traces", None, None)
    assert http_metrics._endpoint == "http://collector:4318/v1/metrics"
    grpc = span_exporter("grpc", "http://collector:4317", {"k": "v"}, 2.0)
    assert type(grpc).__module__.startswith("opentelemetry.exporter.otlp.proto.grpc")
    assert grpc._endpoint == "collector:4317"
    assert grpc._headers == (("k", "v"),)
    assert grpc._timeout == 2.0
    grpc.shutdown()
    http.shutdown()
    http_metrics.shutdown()


def test_grpc_missing_gives_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.grpc.trace_exporter", None)
    with pytest.raises(ImportError, match=r"agent-otel\[grpc\]"):
        span_exporter("grpc", "http://c:4317", None, None)


class _Capture(http.server.BaseHTTPRequestHandler):
    requests: list[tuple[str, dict[str, str]]] = []  # noqa: RUF012

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        _Capture.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def capture_server() -> Iterator[str]:
    _Capture.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Capture)
    thread = threading.Thread(target=server.serve_forever, kwargs=POLL, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def _export_a_span_and_a_point(tel: Telemetry) -> None:
    """A span and a metric point through ``tel``, flushed: what its exporters send."""
    with tel.tracer_provider.get_tracer("t").start_as_current_span("invoke_agent a"):
        pass
    tel.meter_provider.get_meter("t").create_counter("c").add(1)
    assert tel.force_flush(5_000)


def _export_through_configure_from_the_environment() -> None:
    """``configure()`` with its exporters from the environment alone: a span and a point
    sent, then shut down (which must not give up)."""
    tel = configure("svc", set_global=False, console=False)
    try:
        _export_a_span_and_a_point(tel)
    finally:
        assert tel.shutdown()


def test_otlp_http_sends_to_endpoint_with_env_and_argument_headers(
    capture_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", capture_server)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-from-env=1")
    tel = configure("svc", headers={"x-api-key": "secret"}, set_global=False)
    try:
        assert tel.console is None  # an endpoint is configured: no terminal view
        _export_a_span_and_a_point(tel)
    finally:
        assert tel.shutdown()
    paths = {path for path, _ in _Capture.requests}
    assert paths == {"/v1/traces", "/v1/metrics"}
    for _, headers in _Capture.requests:
        assert headers["x-api-key"] == "secret"
        assert headers["x-from-env"] == "1"


def test_a_signals_path_on_the_base_endpoint_variable_is_told_and_dropped(
    capture_server: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """OTEL_EXPORTER_OTLP_ENDPOINT=http://host:4318/v1/traces, a newcomer's usual mistake, used
    to send every span to /v1/traces/v1/traces (a 404 each batch): the base is used, told once."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", capture_server + "/v1/traces/")
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        tel = configure("svc", set_global=False)
    try:
        _export_a_span_and_a_point(tel)
    finally:
        assert tel.shutdown()
    assert {path for path, _ in _Capture.requests} == {"/v1/traces", "/v1/metrics"}
    assert caplog.text.count("ends in /v1/traces, but it is the base URL") == 1
    assert "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" in caplog.text


@pytest.mark.parametrize(
    ("variables", "argument", "paths"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "{url} "}, None, {"/v1/traces", "/v1/metrics"}),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "{url}/otlp\n"},
            None,
            {"/otlp/v1/traces", "/otlp/v1/metrics"},
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "\t{url}/custom/traces ",
                "OTEL_METRICS_EXPORTER": "none",
            },
            None,
            {"/custom/traces"},
        ),
        ({}, "{url}/otlp ", {"/otlp/v1/traces", "/otlp/v1/metrics"}),
    ],
    ids=["base-variable", "base-variable-with-path", "signal-variable", "argument"],
)
def test_an_endpoint_with_whitespace_around_it_is_the_endpoint_it_names(
    capture_server: str,
    monkeypatch: pytest.MonkeyPatch,
    variables: dict[str, str],
    argument: str | None,
    paths: set[str],
) -> None:
    """A trailing space or newline (a .env file's, a YAML block's) is no part of a URL: every
    check read the endpoint stripped, but the SDK's exporters got it as it was, so a space after
    the port raised out of configure() (``Port could not be cast to integer``) and one after a
    path posted to ``/otlp%20/v1/traces``. The OTLP exporter spec's URL is the value without it."""
    for name, value in variables.items():
        monkeypatch.setenv(name, value.format(url=capture_server))
    endpoint = None if argument is None else argument.format(url=capture_server)
    tel = configure("svc", endpoint=endpoint, set_global=False)
    try:
        assert tel.console is None
        _export_a_span_and_a_point(tel)
    finally:
        assert tel.shutdown()
    assert {path for path, _ in _Capture.requests} == paths


def test_a_grpc_endpoint_variable_with_whitespace_around_it_is_the_target_it_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317 ")
    grpc = span_exporter("grpc", None, None, None)
    try:
        assert grpc._endpoint == "collector:4317"  # type: ignore[attr-defined]
    finally:
        grpc.shutdown()


@pytest.mark.parametrize("signal", ["traces", "metrics"])
def test_a_signals_endpoint_variable_naming_no_path_is_told_its_path(
    capture_server: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    signal: str,
) -> None:
    """``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://localhost:4318`` is, by the OTLP exporter
    spec, the full URL the spans are posted to, as it is: they went to ``/``, a Collector's 404,
    told only as "is the collector reachable?". Still posted as it is (a backend may take a
    signal at its root), and told once with the URL meant."""
    other = "metrics" if signal == "traces" else "traces"
    monkeypatch.setenv(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", capture_server + "/")
    monkeypatch.setenv(f"OTEL_{other.upper()}_EXPORTER", "none")
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        _export_through_configure_from_the_environment()
    assert {path for path, _ in _Capture.requests} == {"/"}
    told = [r.getMessage() for r in caplog.records if "names no path" in r.getMessage()]
    assert told == [
        f"agent-otel: OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT={capture_server + '/'!r} names "
        f"no path, but it is the full URL {signal} are posted to, as it is, and a Collector "
        f"takes them at /v1/{signal}: set it to {capture_server + '/v1/' + signal!r}, or set "
        f"OTEL_EXPORTER_OTLP_ENDPOINT={capture_server!r} instead (the base each signal's path "
        "is appended to)"
    ]


def test_a_signals_endpoint_variable_with_a_path_is_told_nothing(
    capture_server: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", capture_server + "/v1/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", capture_server)  # the base: no path
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        _export_through_configure_from_the_environment()
    assert {path for path, _ in _Capture.requests} == {"/v1/traces", "/v1/metrics"}
    assert "names no path" not in caplog.text


def test_console_is_the_default_without_endpoint() -> None:
    stream = io.StringIO()
    tel = configure("svc", console_stream=stream, set_global=False)
    try:
        assert tel.console is not None
        processors = tel.tracer_provider._active_span_processor._span_processors
        assert not any(isinstance(p, BatchSpanProcessor) for p in processors)
        with tel.tracer_provider.get_tracer("t").start_as_current_span("invoke_agent a"):
            pass
        assert "invoke_agent a" in stream.getvalue()
    finally:
        tel.shutdown()


def test_configure_off_the_main_thread_says_signals_will_not_flush(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the main thread may install signal handlers: configure() called from another
    (an app factory run on a worker thread) leaves SIGTERM and SIGHUP unflushed, and says so,
    once (it was told at every call)."""
    built = []
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        for name in ("svc", "svc-again"):  # a thread pool's handlers: told once, not per call
            worker = threading.Thread(
                target=lambda name=name: built.append(
                    configure(name, console_stream=io.StringIO(), set_global=False)
                )
            )
            worker.start()
            worker.join()
    for handle in built:
        handle.shutdown()
    assert caplog.text.count("configure() ran outside the main thread, so SIGTERM and SIGHUP") == 1


def test_exporter_env_switches(monkeypatch: pytest.MonkeyPatch, capture_server: str) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    tel = configure(set_global=False)
    assert tel.console is None
    assert tel.tracer_provider._active_span_processor._span_processors == ()
    tel.shutdown()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console,otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", capture_server + "/v1/traces")
    tel = configure(set_global=False, console_stream=io.StringIO())
    processors = tel.tracer_provider._active_span_processor._span_processors
    assert tel.console is not None
    assert any(isinstance(p, BatchSpanProcessor) for p in processors)
    _export_a_span_and_a_point(tel)
    tel.shutdown()
    assert {path for path, _ in _Capture.requests} == {"/v1/traces"}  # no metrics endpoint


@pytest.mark.parametrize(
    ("off", "sent"),
    [
        ("OTEL_METRICS_EXPORTER", {"/v1/traces", "/v1/logs"}),
        ("OTEL_LOGS_EXPORTER", {"/v1/traces", "/v1/metrics"}),
        ("OTEL_TRACES_EXPORTER", {"/v1/metrics", "/v1/logs"}),
    ],
)
def test_a_signal_switched_off_stays_off_with_endpoint_argument(
    monkeypatch: pytest.MonkeyPatch, capture_server: str, off: str, sent: set[str]
) -> None:
    """``OTEL_<SIGNAL>_EXPORTER=none`` wins over ``endpoint=``: a traces-only backend gets no
    metrics or logs requests it would answer with 404/405."""
    monkeypatch.setenv(off, "none")
    tel = configure(endpoint=capture_server, set_global=False, console_stream=io.StringIO())
    try:
        with tel.tracer_provider.get_tracer("t").start_as_current_span("invoke_agent a"):
            pass
        tel.meter_provider.get_meter("t").create_counter("c").add(1)
        from opentelemetry._logs import LogRecord

        tel.logger_provider.get_logger("t").emit(LogRecord(body="hi", event_name="e"))
        assert tel.force_flush(5_000)
    finally:
        tel.shutdown()
    assert {path for path, _ in _Capture.requests} == sent


def test_resource_service_name_order(monkeypatch: pytest.MonkeyPatch) -> None:
    def name(**kwargs: object) -> object:
        tel = configure(console=False, set_global=False, **kwargs)  # type: ignore[arg-type]
        tel.shutdown()
        return tel.tracer_provider.resource.attributes["service.name"]

    assert str(name()).startswith("unknown_service:")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,team=ai")
    assert name() == "from-attrs"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
    assert name() == "from-env"
    assert name(service_name="from-arg") == "from-arg"


def test_the_resource_is_exported_without_the_credentials_it_was_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The resource goes out with every batch: a credential in OTEL_RESOURCE_ATTRIBUTES or
    the argument (a connection string, a deploy token) is scrubbed as any exported string,
    by its format and by its key's name; the rest of the resource is as given."""
    password, token = "Tr0ub4dor3x", "ghp_" + "aB3" * 12
    monkeypatch.setenv(
        "OTEL_RESOURCE_ATTRIBUTES", f"db.url=postgres://app:{password}@db/prod,team=ai"
    )
    tel = configure(
        "svc",
        console=False,
        set_global=False,
        resource_attributes={"deploy.note": f"by {token}", "deploy.api_key": "k-19x7", "n": 3},
    )
    tel.shutdown()
    for resource in (tel.tracer_provider.resource, tel.logger_provider.resource):
        attributes = dict(resource.attributes)
        text = repr(attributes)
        assert password not in text and token not in text and "k-19x7" not in text
        assert attributes["db.url"] == "postgres://[REDACTED:url_credentials len=15]@db/prod"
        assert attributes["deploy.api_key"] == "[REDACTED:key_name len=6]"
        assert attributes["team"] == "ai" and attributes["n"] == 3
        assert attributes["service.name"] == "svc"


def test_sampler_from_env_and_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON

    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    tel = configure(console=False, set_global=False)
    assert not tel.tracer_provider.get_tracer("t").start_span("x").is_recording()
    tel.shutdown()
    tel = configure(console=False, sampler=ALWAYS_ON, set_global=False)
    assert tel.tracer_provider.get_tracer("t").start_span("x").is_recording()
    tel.shutdown()


def _bounds(reader: InMemoryMetricReader) -> dict[tuple[str, str], tuple[float, ...]]:
    data = reader.get_metrics_data()
    assert data is not None
    bounds = {}
    for scope in data.resource_metrics[0].scope_metrics:
        for metric in scope.metrics:
            point = metric.data.data_points[0]
            assert isinstance(point, HistogramDataPoint)
            bounds[scope.scope.name, metric.name] = tuple(point.explicit_bounds)
    return bounds


def test_views_give_the_spec_buckets_to_our_meter_only() -> None:
    reader = InMemoryMetricReader()
    tel = configure(console=False, metric_readers=[reader], set_global=False)
    ours = tel.meter_provider.get_meter(A.SCOPE_NAME)
    other = tel.meter_provider.get_meter("another.library")
    expected = {
        A.METRIC_TOKEN_USAGE: A.TOKEN_BUCKETS,
        A.METRIC_OPERATION_DURATION: A.DURATION_BUCKETS,
        A.METRIC_AGENT_DURATION: A.DURATION_BUCKETS,
        A.METRIC_TOOL_DURATION: A.DURATION_BUCKETS,
        A.METRIC_TIME_TO_FIRST_CHUNK: A.TIME_TO_FIRST_CHUNK_BUCKETS,
        A.METRIC_TIME_PER_OUTPUT_CHUNK: A.TIME_PER_OUTPUT_CHUNK_BUCKETS,
        # the head's names (semconv="head") get the same buckets
        A.METRIC_INFERENCE_INPUT_TOKENS: A.TOKEN_BUCKETS,
        A.METRIC_INFERENCE_OUTPUT_TOKENS: A.TOKEN_BUCKETS,
        A.METRIC_INFERENCE_DURATION: A.DURATION_BUCKETS,
        A.METRIC_INVOCATION_DURATION: A.DURATION_BUCKETS,
        A.METRIC_INFERENCE_TIME_TO_FIRST_CHUNK: A.TIME_TO_FIRST_CHUNK_BUCKETS,
        A.METRIC_INFERENCE_TIME_PER_OUTPUT_CHUNK: A.TIME_PER_OUTPUT_CHUNK_BUCKETS,
        # the calls per run, both modes
        A.METRIC_AGENT_INFERENCE_CALLS: A.CALL_COUNT_BUCKETS,
        A.METRIC_AGENT_TOOL_CALLS: A.CALL_COUNT_BUCKETS,
    }
    assert len(histogram_views()) == len(expected)
    for name in expected:
        ours.create_histogram(name).record(1)
        # Another library's histogram of the same name, with buckets of its own choosing.
        other.create_histogram(name, explicit_bucket_boundaries_advisory=[0.5, 7.0]).record(1)
    bounds = _bounds(reader)
    for name, buckets in expected.items():
        assert bounds[A.SCOPE_NAME, name] == tuple(float(b) for b in buckets), name
        assert bounds["another.library", name] == (0.5, 7.0), name
    tel.shutdown()


def test_shutdown_is_idempotent_and_flush_after_is_false() -> None:
    tel = configure(console_stream=io.StringIO(), set_global=False)
    assert tel.force_flush()
    assert tel.shutdown()
    assert tel.shutdown()
    assert tel.is_shutdown
    assert not tel.force_flush()


def test_providers_adopted_by_hand_get_configures_shutdown_bound() -> None:
    """``Telemetry(tracer_provider, meter_provider)`` gives hand-wired providers what
    ``configure()``'s get: its exit against a dead collector was bounded by 10 s there and by
    1 s here, two defaults for one documented bound."""
    bound = "shutdown_timeout_millis"
    by_hand = inspect.signature(Telemetry).parameters[bound].default
    assert by_hand == inspect.signature(configure).parameters[bound].default == 1_000


def test_prometheus_endpoint_serves_our_metrics_on_loopback() -> None:
    tel = configure(console=False, prometheus_port=0, set_global=False)
    try:
        port = tel.prometheus_port
        assert port
        histogram = tel.meter_provider.get_meter("t").create_histogram(
            A.METRIC_TOKEN_USAGE, unit="{token}"
        )
        histogram.record(100, {A.TOKEN_TYPE: A.TOKEN_TYPE_INPUT})
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
        assert 'gen_ai_client_token_usage_bucket{gen_ai_token_type="input"' in text
    finally:
        tel.shutdown()
    with pytest.raises(OSError):  # the server is closed by shutdown
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_existing_global_provider_is_kept_with_a_warning() -> None:
    result = _run(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from agent_otel.exporting._configure import configure
        mine = TracerProvider()
        trace.set_tracer_provider(mine)
        tel = configure("svc", console=False)
        assert trace.get_tracer_provider() is mine
        assert tel.global_tracer_provider is False
        assert tel.global_meter_provider is True
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stdout
    assert "a global TracerProvider (TracerProvider) is already configured" in result.stderr


def test_globals_are_set_when_free_and_never_with_set_global_false() -> None:
    result = _run(
        """
        from opentelemetry import metrics, trace
        from agent_otel.exporting._configure import configure
        off = configure("svc", console=False, set_global=False)
        assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
        tel = configure("svc", console=False)
        assert trace.get_tracer_provider() is tel.tracer_provider
        assert metrics.get_meter_provider() is tel.meter_provider
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stdout
    assert "already configured" not in result.stderr


def test_exit_prints_pending_tree_and_token_summary() -> None:
    result = _run(
        """
        import sys
        from agent_otel.exporting._configure import configure
        tel = configure("svc", console_stream=sys.stdout)
        tracer = tel.tracer_provider.get_tracer("t")
        with tracer.start_as_current_span("invoke_agent a"):
            with tracer.start_as_current_span(
                "chat m", attributes={"gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 9}
            ):
                pass
        # no shutdown(): the atexit hook prints the summary
        """
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].startswith("invoke_agent a")
    assert lines[2].startswith("└─ chat m  in=9")
    assert lines[-2:] == ["token usage  calls  input  output", "  m              1      9       0"]


# --- arguments and variables that cannot work --------------------------------------------------


NOT_WORKING: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"sampler": "always_on"}, TypeError, "takes an OpenTelemetry Sampler, not a str"),
    ({"sampler": TraceIdRatioBased}, TypeError, "not the class .*: pass an instance"),
    ({"resource_attributes": "team=ai"}, TypeError, "takes a mapping"),
    ({"resource_attributes": {1: "x"}}, TypeError, ": a name must be a str, not 1"),
    ({"resource_attributes": {"a": NoStr()}}, TypeError, "'a' must be a str, bool, int, float"),
    ({"resource_attributes": {"a": [1, "x"]}}, TypeError, "the value of 'a' must be"),
    ({"resource_attributes": LyingDict(a=NoStr())}, TypeError, "the value of 'a' must be"),
    ({"span_processors": [5]}, TypeError, "takes span processors, not an int"),
    (
        {"span_processors": BatchSpanProcessor(ConsoleSpanExporter())},
        TypeError,
        r"takes a list, not a BatchSpanProcessor: pass span_processors=\[\.\.\.\]",
    ),
    ({"span_processors": [BatchSpanProcessor]}, TypeError, "pass an instance"),
    ({"metric_readers": ["prometheus"]}, TypeError, "takes MetricReader instances"),
    ({"log_processors": [LyingClass()]}, TypeError, "takes log record .*, not a LyingClass"),
    ({"console_stream": 5}, TypeError, "takes a text stream"),
    ({"timeout": -1}, ValueError, "must be > 0 and at most 1_000_000, not -1"),
    ({"timeout": math.nan}, ValueError, "must be > 0 .*, not nan"),
    ({"timeout": 1e300}, ValueError, "at most 1_000_000, not 1e"),
    ({"shutdown_timeout_millis": 10**30}, ValueError, "must be >= 0 and at most 1_000_000_000"),
    ({"metric_export_interval_millis": 1e300}, ValueError, "at most 1_000_000_000"),
    ({"max_queue_size": 2**63}, ValueError, "at most 2_147_483_647, not 9223372036854775808"),
    ({"timeout": "3"}, TypeError, "must be a number, not '3'"),
    ({"timeout": LyingFloat(-2.0)}, ValueError, r"must be > 0 .*, not -2\.0"),
    ({"shutdown_timeout_millis": NoStr()}, TypeError, "must be a number"),
    ({"max_queue_size": LyingInt(0)}, ValueError, "must be > 0"),
    ({"service_name": 5}, TypeError, "must be a str, not 5"),
    ({"service_name": NoStr()}, TypeError, "must be a str, not a NoStr"),
    ({"prometheus_port": LyingStr("9464")}, TypeError, "must be an int"),
    ({"prometheus_port": 10**400}, ValueError, "must be 0..65535, not 1000"),
    ({"prometheus_host": 5}, TypeError, "must be a str"),
    ({"headers": {"x-key": 5}}, TypeError, "takes str names and values, not 5"),
    ({"protocol": NoStr()}, TypeError, "must be 'grpc' or 'http/protobuf'"),
    ({"endpoint": 4318}, TypeError, "must be a str URL"),
    ({"tail_sampling": LyingClass()}, TypeError, "must be a TailSamplingPolicy"),
]


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [pytest.param(*case, id=f"{next(iter(case[0]))}-{i}") for i, case in enumerate(NOT_WORKING)],
)
def test_an_argument_that_cannot_work_is_told_at_configure_naming_it(
    arguments: dict[str, Any], error: type[Exception], message: str
) -> None:
    """Before: a sampler, processor or reader of the wrong kind was taken and failed at the
    first span (``'str' object has no attribute 'should_sample'``, raised into the app's own
    ``start_span``), at the first metric or at shutdown; a single processor for the list was
    iterated; a resource value of no attribute type, or a subclass whose methods raise, gave
    ``RuntimeError``; a header value of another type failed every export; a duration or queue
    size past what the platform holds raised ``OverflowError`` at the first export or at
    shutdown."""
    [name] = arguments
    told = rf"configure\({name}=\.\.\.\).*" + message
    with pytest.raises(error, match=told) as raised:
        configure(set_global=False, **({"console_stream": io.StringIO()} | arguments))
    assert len(str(raised.value)) < 300


def test_configure_reads_its_arguments_as_the_plain_values_they_are() -> None:
    """A str enum service name, an IntEnum queue size, a dict subclass of resource attributes
    or headers whose own methods raise: each is read by its base type, none of its own
    methods run (before, ``RuntimeError`` out of configure())."""
    stream = io.StringIO()
    tel = configure(
        LyingStr("svc"),
        console_stream=stream,
        set_global=False,
        timeout=LyingFloat(2.0),
        max_queue_size=LyingInt(64),
        resource_attributes=LyingDict({LyingKey("team"): LyingStr("ai"), "gone": None}),
        headers=LyingDict({LyingKey("x-key"): LyingStr("v")}),
        span_processors=(BatchSpanProcessor(ConsoleSpanExporter(out=io.StringIO())),),
    )
    with tel.tracer_provider.get_tracer("t").start_as_current_span("invoke_agent a"):
        pass
    tel.shutdown()
    attributes = tel.tracer_provider.resource.attributes
    assert (attributes["service.name"], attributes["team"]) == ("svc", "ai")
    assert "gone" not in attributes
    assert {type(attributes["service.name"]), type(attributes["team"])} == {str}
    assert "invoke_agent a" in stream.getvalue()


def test_a_malformed_limit_variable_is_told_and_its_default_used(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: ``ValueError: OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT must be a non-negative integer``
    from deep inside the SDK's providers, out of configure(): a typo in a deployment stopped
    the app. Now it is told once, naming the variable, and the limit in force is the one in
    force when it is unset (a specific limit falls back to the general one, as the SDK's)."""
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "4k")
    monkeypatch.setenv("OTEL_ATTRIBUTE_COUNT_LIMIT", "2")
    monkeypatch.setenv("OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", "-3")
    monkeypatch.setenv("OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT", "many")
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        tel = configure(console_stream=io.StringIO(), set_global=False)
    span = tel.tracer_provider.get_tracer("t").start_span("s")
    span.add_event("e", {f"k{i}": "v" * 5000 for i in range(5)})
    span.end()
    tel.shutdown()
    [event] = span.events  # type: ignore[attr-defined]
    assert len(event.attributes) == 2  # the general limit, the event's own unusable
    assert {len(v) for v in event.attributes.values()} == {5000}  # no length limit, as unset
    for told in (
        "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT='4k' is not an integer >= 0; using no limit",
        "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT='-3' is not an integer >= 0; using 2",
        "OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT='many' is not an integer >= 0; using 2",
    ):
        assert told in caplog.text


def test_an_unknown_sampler_variable_is_told_naming_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Before, the SDK's line said ``Couldn't recognize sampler parentbased_ratio.``: neither
    the variable nor the sampler then in force. Set empty, the variable is unset."""
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_ratio")
    with caplog.at_level(logging.WARNING):
        tel = configure(console=False, set_global=False)
    tel.shutdown()
    assert "OTEL_TRACES_SAMPLER='parentbased_ratio' is not a sampler" in caplog.text
    assert "using parentbased_always_on" in caplog.text
    assert "Couldn't recognize" not in caplog.text
    assert tel.tracer_provider.sampler.get_description().startswith("ParentBased{root:AlwaysOn")
    caplog.clear()
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "")
    with caplog.at_level(logging.WARNING):
        configure(console=False, set_global=False).shutdown()
    assert "sampler" not in caplog.text


@pytest.mark.parametrize(
    ("variable", "value", "told"),
    [
        ("OTEL_BSP_MAX_QUEUE_SIZE", "1e30", "is not an integer from 1 to 2147483647; using 16384"),
        ("OTEL_BSP_SCHEDULE_DELAY", "1e300", "is not an integer from 1 to 1000000000; using"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "1e300", "is not a positive number of seconds (at most"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "1e300", "is not a positive number of milliseconds (at"),
    ],
)
def test_a_duration_or_size_variable_past_what_the_platform_holds_is_told(
    variable: str,
    value: str,
    told: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capture_server: str,
) -> None:
    """Before: ``OTEL_BSP_MAX_QUEUE_SIZE=1e30`` raised ``OverflowError`` out of configure(),
    leaving its threads running; a timeout or interval of ``1e300`` failed every export or
    the shutdown (``timestamp out of range for platform time_t``). Each is told once and the
    default used: the run's span is delivered."""
    monkeypatch.setenv(variable, value)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", capture_server)
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        tel = configure(console=False, set_global=False)
        with tel.tracer_provider.get_tracer("t").start_as_current_span("delivered"):
            pass
        assert tel.shutdown()
    assert f"{variable}={value!r} {told}" in caplog.text
    assert any(path == "/v1/traces" for path, _ in _Capture.requests)


@pytest.mark.parametrize(
    ("variable", "value", "told"),
    [
        ("OTEL_BLRP_MAX_QUEUE_SIZE", "0", "is not an integer from 1 to 2147483647; using 2048"),
        ("OTEL_BLRP_SCHEDULE_DELAY", "-5", "is not an integer from 1 to 1000000000; using 1000"),
        ("OTEL_BLRP_EXPORT_TIMEOUT", "5s", "is not an integer from 1 to 1000000000; using 30000"),
        ("OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", "99999", None),  # past the queue: the queue's
    ],
)
def test_a_log_batch_variable_that_cannot_work_is_told_and_the_logs_still_go(
    variable: str,
    value: str,
    told: str | None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capture_server: str,
) -> None:
    """The ``OTEL_BLRP_*`` variables (the SDK's log record batch processor, which carries the
    GenAI log events) were left to the SDK: one out of its range raised ``ValueError`` out of
    configure() (``max_queue_size must be a positive integer``, no variable named), one that
    does not parse logged a traceback. As ``OTEL_BSP_*``: told once, the SDK's default used."""
    from opentelemetry.trace import SpanContext

    from agent_otel import record_evaluation

    monkeypatch.setenv(variable, value)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", capture_server)
    with caplog.at_level(logging.WARNING):
        tel = configure(console=False, set_global=False)
        run = SpanContext(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, is_remote=True)
        record_evaluation("correctness", score=1.0, span_context=run,
                          logger_provider=tel.logger_provider)  # fmt: skip
        assert tel.shutdown()
    if told is not None:
        assert f"{variable}={value!r} {told}" in caplog.text
    assert "Traceback" not in caplog.text
    assert any(path == "/v1/logs" for path, _ in _Capture.requests)


async def test_sdk_disabled_records_and_prints_nothing_and_the_agent_runs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``OTEL_SDK_DISABLED=true`` (docs/configure.md): the providers configure() builds record
    nothing, so the terminal view prints nothing, and the agent's events pass as ever. That
    was silent: an application that asked for telemetry got none with no word of why (a
    variable left over from a test run, an inherited environment); it is told once."""
    from agent_contract.examples import ScriptedAgent
    from agent_contract.protocol import LLMCallEnd, LLMCallStart, Message, TextDelta
    from agent_otel import otel_wrapper

    monkeypatch.setenv("OTEL_SDK_DISABLED", "True")
    out = io.StringIO()
    with caplog.at_level(logging.WARNING, logger="agent_otel"):
        configure("svc", set_global=False, console_stream=io.StringIO()).shutdown()
        telemetry = configure("svc", set_global=False, console_stream=out)
    assert caplog.text.count("OTEL_SDK_DISABLED='True', so the providers configure()") == 1
    assert "record nothing" in caplog.text and "Unset it to record" in caplog.text
    agent = ScriptedAgent([LLMCallStart(model="m"), TextDelta(text="hi"), LLMCallEnd()])
    wrapper = otel_wrapper(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    result = await agent.invoke([Message(role="user", content="x")], stream_wrapper=wrapper)
    telemetry.shutdown()
    assert result.text == "hi"
    assert out.getvalue() == ""
