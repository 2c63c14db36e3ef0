"""``configure()``: the one call an application makes to export traces and metrics.

The middleware itself only uses the OTel API and never touches globals; this module is the
single place that builds SDK providers and (optionally) installs them globally.
"""

from __future__ import annotations

import inspect
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import (
    SpanLimits,
    SpanProcessor,
    SynchronousMultiSpanProcessor,
    TracerProvider,
)
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.sampling import DEFAULT_ON
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel._guard import warn_once
from agent_otel.exporting import _env
from agent_otel.exporting._arguments import check_arguments
from agent_otel.exporting._console import ConsoleTreeExporter
from agent_otel.exporting._evaluations import EvaluationsToConsole
from agent_otel.exporting._exporters import (
    DEFAULT_EXPORT_TIMEOUT_S,
    DEFAULT_SHUTDOWN_TIMEOUT_MILLIS,
    log_exporter,
    metric_exporter,
    quiet_retries,
    start_prometheus,
)
from agent_otel.exporting._failures import forget_cause
from agent_otel.exporting._globals import Asked, installed, set_globals
from agent_otel.exporting._live import live_runs_for
from agent_otel.exporting._loss import SpanLoss
from agent_otel.exporting._overrides import hint_overridden
from agent_otel.exporting._pipeline import BatchSettings, otlp_span_pipeline
from agent_otel.exporting._sampler import hint_sampler
from agent_otel.exporting._telemetry import Telemetry
from agent_otel.identity._processor import RunIdentityProcessor
from agent_otel.recording._hints import (
    PROVIDERS,
    configured_apart,
    hint_own_variables,
    keywords,
)
from agent_otel.recording._options import OPTION_NAMES, check_scrub
from agent_otel.recording._pages import documented
from agent_otel.recording._scope import watch_sessions
from agent_otel.recording._semconv import check_semconv, set_default_semconv
from agent_otel.sampling import TailSampler, TailSamplingPolicy
from agent_otel.scrubbing._scrubber import Scrubber, resolve_scrubber, set_default_scrub
from agent_otel.standdown._guards import guard_from_now

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricExporter
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.sdk.trace.sampling import Sampler

__all__ = [
    "DEFAULT_EXPORT_TIMEOUT_S",
    "DEFAULT_SHUTDOWN_TIMEOUT_MILLIS",
    "Telemetry",
    "configure",
    "histogram_views",
]


_BUCKETS: tuple[tuple[str, Sequence[float]], ...] = (
    *(
        pair
        for c in A.CONVENTIONS.values()  # both sets of names (the semconv option)
        for pair in (
            (c.input_tokens, A.TOKEN_BUCKETS),
            (c.output_tokens, A.TOKEN_BUCKETS),
            (c.operation_duration, A.DURATION_BUCKETS),
            (c.agent_duration, A.DURATION_BUCKETS),
            (c.time_to_first_chunk, A.TIME_TO_FIRST_CHUNK_BUCKETS),
            (c.time_per_output_chunk, A.TIME_PER_OUTPUT_CHUNK_BUCKETS),
        )
    ),
    (A.METRIC_TOOL_DURATION, A.DURATION_BUCKETS),
    (A.METRIC_AGENT_INFERENCE_CALLS, A.CALL_COUNT_BUCKETS),
    (A.METRIC_AGENT_TOOL_CALLS, A.CALL_COUNT_BUCKETS),
)


def histogram_views() -> list[View]:
    """SDK Views giving each of agent-otel's GenAI histograms the spec's bucket boundaries.

    Scoped to our meter: another library's histogram of the same name keeps its own buckets.
    """
    return [
        View(
            instrument_type=Histogram,
            instrument_name=name,
            meter_name=A.SCOPE_NAME,
            aggregation=ExplicitBucketHistogramAggregation(boundaries=buckets),
        )
        for name, buckets in dict(_BUCKETS).items()  # v1.41.1's token histogram is one name
    ]


def _where(option: str) -> str:
    """Where a run's option given to ``configure()`` belongs."""
    extra = {
        "capture_content": (
            "; for every run in the process, set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_"
            "CONTENT=true"
        ),
        **dict.fromkeys(PROVIDERS, "; configure() builds the providers, so leave it out"),
    }.get(option, "")
    return (
        f"{option!r} is an option of each run, given to otel_wrapper() or instrument(), not to "
        f"configure(){extra}"
    )


@keywords({option: _where(option) for option in OPTION_NAMES})
def configure(
    service_name: str | None = None,
    *,
    endpoint: str | None = None,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    sampler: Sampler | None = None,
    resource_attributes: Mapping[str, AttributeValue] | None = None,
    console: bool | None = None,
    console_stream: TextIO | None = None,
    prometheus_port: int | None = None,
    prometheus_host: str = "127.0.0.1",
    metric_export_interval_millis: float | None = None,
    max_queue_size: int | None = None,
    span_processors: Sequence[SpanProcessor] = (),
    tail_sampling: TailSamplingPolicy | None = None,
    metric_readers: Sequence[MetricReader] = (),
    log_processors: Sequence[LogRecordProcessor] = (),
    set_global: bool = True,
    shutdown_timeout_millis: int = DEFAULT_SHUTDOWN_TIMEOUT_MILLIS,
    semconv: str | None = None,
    scrub: bool | Scrubber | None = None,
) -> Telemetry:
    """Build SDK tracer, meter and logger providers, wire exporters, and return their handle.

    Where data goes:

    * OTLP when ``endpoint=`` is given or ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
      ``OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT`` is set (or ``OTEL_TRACES_EXPORTER`` /
      ``OTEL_METRICS_EXPORTER`` say ``otlp``; ``none`` switches a signal off, ``endpoint=``
      included). A malformed ``endpoint=`` raises; a malformed endpoint variable is told once
      and counts as unset. ``protocol=``
      or ``OTEL_EXPORTER_OTLP[_TRACES|_METRICS]_PROTOCOL`` picks ``http/protobuf`` (default)
      or ``grpc`` (needs ``agent-otel[grpc]``). ``endpoint=`` is the base URL
      (``http://host:4318``; ``/v1/traces`` and ``/v1/metrics`` are appended for HTTP) or
      the gRPC target (``http://host:4317``). Everything else (headers, TLS, compression,
      per-signal URLs) the SDK exporters read from the standard ``OTEL_*`` variables
      themselves; ``headers=`` adds to or replaces them. Spans go through a bounded
      ``BatchSpanProcessor`` (``max_queue_size=``, else ``OTEL_BSP_*``, else 16,384 spans, a 1 s
      schedule delay); every span it loses is counted by cause (``Telemetry.spans_lost``, the
      SDK's ``otel.sdk.processor.span.*`` / ``otel.sdk.exporter.span.*`` metrics), warned about
      while it happens and totalled at shutdown (see docs/export.md).
    * GenAI log events (content events, evaluation results) go to OTLP as logs under the same
      rules (``OTEL_EXPORTER_OTLP_LOGS_*``, ``OTEL_LOGS_EXPORTER``), and to ``log_processors``.
    * The terminal tree (``console=True``, ``OTEL_TRACES_EXPORTER=console``, or by default
      when no OTLP endpoint is configured): each finished trace printed to
      ``console_stream`` (stderr), a token summary per model at shutdown.
    * A Prometheus scrape endpoint when ``prometheus_port=`` or ``AGENT_OTEL_PROMETHEUS_PORT``
      is set (needs ``agent-otel[prometheus]``), bound to ``prometheus_host`` (loopback by
      default); port 0 picks a free port, reported as ``Telemetry.prometheus_port``.

    ``service.name``: the argument, else ``OTEL_SERVICE_NAME``, else ``service.name`` in
    ``OTEL_RESOURCE_ATTRIBUTES``, else ``unknown_service:<executable>``. The sampler: the
    argument, else ``OTEL_TRACES_SAMPLER`` (+ ``_ARG``) as read by the SDK.

    Globals: with ``set_global=True`` the providers become the global ones, unless a real
    (non-proxy) global provider is already installed: then it is left in place with a
    warning, because the OTel API only lets a global be set once and silently swapping it
    would split an app's telemetry. There is deliberately no ``replace_global``. Use the
    returned handle's providers explicitly instead; ``set_global=False`` never touches
    globals. Shutdown runs at exit (bounded by ``shutdown_timeout_millis``) or through
    ``Telemetry.shutdown()``.

    ``semconv=`` (``"v1.41"`` or ``"head"``) chooses the GenAI names of every wrapper and
    instrumented agent created after this call that does not choose its own (``semconv=``
    option; else ``AGENT_OTEL_SEMCONV``, else ``"v1.41"``): docs/conformance.md. A process
    setting, whatever ``set_global`` says; an unknown value raises ``ValueError``.

    ``tail_sampling=TailSamplingPolicy(...)`` puts one :class:`~agent_otel.sampling.TailSampler`
    in front of the exporters built here (OTLP and the terminal view; not ``span_processors``):
    whole runs are kept or dropped when they end; metrics are unaffected.

    ``scrub=`` (``True``, ``False`` or a :class:`~agent_otel.Scrubber`) scrubs what this call
    builds and prints (the resource, every string the terminal view shows, the run ids its
    identity processor puts on other instrumentations' spans) and, as ``semconv=`` does, is the
    default of every wrapper, ``instrument()`` and ``record_evaluation()`` made after the call
    that does not choose its own (docs/scrubbing.md). Not given: the default scrubber, or an
    earlier call's choice.
    """
    with documented("configure"):
        checked = check_arguments(
            service_name=service_name, endpoint=endpoint, protocol=protocol, headers=headers,
            timeout=timeout, console=console, console_stream=console_stream, sampler=sampler,
            resource_attributes=resource_attributes, prometheus_port=prometheus_port,
            prometheus_host=prometheus_host,
            metric_export_interval_millis=metric_export_interval_millis,
            max_queue_size=max_queue_size, span_processors=span_processors,
            tail_sampling=tail_sampling, metric_readers=metric_readers,
            log_processors=log_processors, set_global=set_global,
            shutdown_timeout_millis=shutdown_timeout_millis,
        )  # fmt: skip
    # From here on, each as the plain value it is (none of its own methods runs again).
    service_name, endpoint, protocol = (
        checked[k] for k in ("service_name", "endpoint", "protocol")
    )
    headers, timeout, resource_attributes = (
        checked[k] for k in ("headers", "timeout", "resource_attributes")
    )
    prometheus_port, prometheus_host = checked["prometheus_port"], checked["prometheus_host"]
    metric_export_interval_millis = checked["metric_export_interval_millis"]
    max_queue_size, shutdown_timeout_millis = (
        checked["max_queue_size"], checked["shutdown_timeout_millis"],
    )  # fmt: skip
    span_processors, metric_readers, log_processors = (
        checked[k] for k in ("span_processors", "metric_readers", "log_processors")
    )
    with documented("configure"):
        check_scrub("configure", scrub)
    if scrub is not None:
        set_default_scrub(scrub)
    scrubber = resolve_scrubber(scrub)
    if semconv is not None:
        with documented("configure"):
            set_default_semconv(check_semconv(semconv, "configure"))
    asked = ({**checked, "semconv": semconv, "scrub": scrub}, _env.settings())
    again = _again(asked) if set_global else None
    if again is not None:  # a request handler's, a notebook cell's run again: nothing built
        warn_once(
            "configure", "again",
            "agent-otel: configure() was called again with the same arguments and environment: "
            "it returns the handle the first call made (whose providers are the global ones) "
            "instead of building another pipeline of exporters and threads; call configure() "
            "once at startup and keep its handle (docs/configure.md)",
        )  # fmt: skip
        return again
    hint_own_variables(again=True, otel=_env.sdk_variables())
    hint_overridden(checked)
    _env.hint_flags()
    _env.hint_headers()
    quiet_retries()
    forget_cause()
    resource = _resource(service_name, resource_attributes, scrubber)
    timeout_s = timeout
    trace_names = _env.exporter_names("traces")
    metric_names = _env.exporter_names("metrics")
    otlp_traces = _wants_otlp("traces", trace_names, endpoint, protocol)
    otlp_metrics = _wants_otlp("metrics", metric_names, endpoint, protocol)
    if console is None:
        console = "console" in trace_names if trace_names is not None else not otlp_traces

    readers: list[MetricReader] = list(metric_readers)
    metric_exporters: list[MetricExporter] = []
    if otlp_metrics:
        otlp_metric_exporter = metric_exporter(
            protocol, _export_to("metrics", endpoint, protocol), headers, timeout_s
        )
        metric_exporters.append(otlp_metric_exporter)
        readers.append(
            PeriodicExportingMetricReader(
                otlp_metric_exporter,
                export_interval_millis=metric_export_interval_millis
                or _env.millis_var("OTEL_METRIC_EXPORT_INTERVAL", 60_000),  # the SDK's defaults
                export_timeout_millis=_env.millis_var("OTEL_METRIC_EXPORT_TIMEOUT", 30_000),
            )
        )
    prometheus = start_prometheus(
        _env.prometheus_port(prometheus_port),
        prometheus_host,
        "prometheus_port" if prometheus_port is not None else _env.AGENT_OTEL_PROMETHEUS_PORT,
    )
    if prometheus is not None:
        readers.append(prometheus[0])
    meter_provider = MeterProvider(
        metric_readers=readers, resource=resource, views=histogram_views(), shutdown_on_exit=False
    )

    span_exporters: list[SpanExporter] = []
    processors: list[SpanProcessor] = []
    loss: SpanLoss | None = None
    console_exporter: ConsoleTreeExporter | None = None
    if otlp_traces:
        otlp_span_exporter, batch = otlp_span_pipeline(
            protocol,
            _export_to("traces", endpoint, protocol),
            headers,
            timeout_s,
            max_queue_size,
            meter_provider,
        )
        span_exporters.append(otlp_span_exporter)
        processors.append(batch)
        loss = batch.loss
    if console:
        console_exporter = ConsoleTreeExporter(console_stream, scrub=scrub)
        processors.append(SimpleSpanProcessor(console_exporter))
    if tail_sampling is not None and processors:
        processors = [TailSampler(_fan_out(processors), tail_sampling)]
    if console_exporter is not None:  # on a terminal: open runs update in place
        console_exporter.live = live_runs_for(console_stream, scrub)
        if console_exporter.live is not None:  # first: a run leaves it before its tree prints
            processors.insert(0, console_exporter.live)
    processors.extend(span_processors)

    logger_provider = _logger_provider(resource)
    log_exporters = []
    if _wants_otlp("logs", _env.exporter_names("logs"), endpoint, protocol):
        log_exporters.append(
            log_exporter(protocol, _export_to("logs", endpoint, protocol), headers, timeout_s)
        )
        logs_batch = BatchSettings.logs()  # OTEL_BLRP_*, each told once if it cannot work
        logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(
                log_exporters[0],
                schedule_delay_millis=logs_batch.schedule_delay_millis,
                max_export_batch_size=logs_batch.max_export_batch_size,
                export_timeout_millis=logs_batch.export_timeout_millis,
                max_queue_size=logs_batch.max_queue_size,
            )
        )
    if console_exporter is not None:  # evaluations under the run they judge
        logger_provider.add_log_record_processor(EvaluationsToConsole(console_exporter))
    for log_processor in log_processors:
        logger_provider.add_log_record_processor(log_processor)

    given_sampler = sampler is not None
    if sampler is None and _env.sampler_unknown():
        sampler = DEFAULT_ON  # what the SDK falls back to, now told naming the variable
    span_limits = _env.limit_overrides(_env.SPAN_LIMITS)
    tracer_provider = TracerProvider(
        sampler=sampler,
        resource=resource,
        shutdown_on_exit=False,
        span_limits=SpanLimits(**span_limits) if span_limits else None,
    )
    hint_sampler(tracer_provider.sampler, given_sampler)
    if processors:  # run ids on the spans other instrumentations start inside a run
        tracer_provider.add_span_processor(RunIdentityProcessor(scrub))
    for processor in processors:
        tracer_provider.add_span_processor(processor)
    handle = Telemetry(
        tracer_provider,
        meter_provider,
        console=console_exporter,
        loss=loss,
        exporters=(*span_exporters, *metric_exporters, *log_exporters),
        logger_provider=logger_provider,
        prometheus_server=prometheus[1] if prometheus else None,
        shutdown_timeout_millis=shutdown_timeout_millis,
    )
    if set_global:
        (
            handle.global_tracer_provider,
            handle.global_meter_provider,
            handle.global_logger_provider,
        ) = set_globals(
            tracer_provider, meter_provider, logger_provider, asked=asked, handle=handle
        )
        if not handle.global_tracer_provider and _globals_are_configures():
            _replace_spare(handle)
    if not handle.global_tracer_provider:
        configured_apart()  # a run on the global providers is told to pass these
    guard_from_now()  # provider instrumentations, before the application's first model call
    watch_sessions()  # the MCP SDK 1.x's requests carry the trace (recording/_mcp), loaded or not
    return handle


_spare: list[Telemetry] = []
"""The pipeline of the last call whose providers could not become global because an earlier
call's are: the next such call shuts it down."""


def _globals_are_configures() -> bool:
    """Whether the global tracer provider is the one an earlier call of this process made."""
    first = installed()
    return first is not None and trace.get_tracer_provider() is first.handle.tracer_provider


def _replace_spare(handle: Telemetry) -> None:
    """``configure()`` called again with other arguments (a request handler passing its own
    values, a notebook cell edited) while an earlier call's providers are the globals: its
    providers cannot become global, and each such call built a pipeline (four exporter threads
    and exit hooks) kept until the process ended, a leak growing per call. The previous such
    pipeline is shut down (in a thread of its own: a dead collector costs its bound there, not
    the caller), so these calls keep one at most beside the global one. ``set_global=False``
    pipelines are their owner's, never touched."""
    previous = _spare[0] if _spare and _spare[0] is not handle else None
    _spare[:] = [handle]
    if previous is None or previous.is_shutdown:
        return
    try:
        threading.Thread(
            target=previous.shutdown, name="agent-otel-shutdown-replaced", daemon=True
        ).start()
    except RuntimeError:  # no thread can start (interpreter exit): inline, bounded
        previous.shutdown()


def _again(asked: Asked) -> Telemetry | None:
    """The handle of the call that made the global providers, when this call asks for the very
    same (arguments, ``OTEL_*`` and ``AGENT_OTEL_*`` variables) in the same process and that
    handle still runs with its providers global: what a second identical call would build is
    a copy nobody uses, its exporters' threads and exit hooks kept until the process ends."""
    first = installed()
    if first is None or first.handle.is_shutdown:
        return None
    handle, before = first.handle, first.asked
    if trace.get_tracer_provider() is not handle.tracer_provider:
        return None
    try:
        return handle if bool(before == asked) else None
    except Exception:  # a value whose == raises: not the same
        return None


def _fan_out(processors: list[SpanProcessor]) -> SpanProcessor:
    if len(processors) == 1:
        return processors[0]
    fan_out = SynchronousMultiSpanProcessor()  # type: ignore[no-untyped-call]
    for processor in processors:
        fan_out.add_span_processor(processor)
    return fan_out


def _export_to(signal: _env.Signal, endpoint: str | None, protocol: str | None) -> str | None:
    """``endpoint=``, else the base URL when the general endpoint variable was given a
    signal's path (told once), else None: the exporter reads the environment itself."""
    return endpoint if endpoint is not None else _env.base_endpoint(signal, protocol)


def _wants_otlp(
    signal: _env.Signal, names: frozenset[str] | None, endpoint: str | None, protocol: str | None
) -> bool:
    """OTLP for ``signal``: ``OTEL_<SIGNAL>_EXPORTER=none`` switches it off whatever else says
    otherwise (``endpoint=`` included); then ``endpoint=``, the variable naming ``otlp``, or
    a (valid) OTLP endpoint in the environment switch it on."""
    if names is not None and "none" in names:
        return False
    if endpoint is not None:
        return True
    resolved = _env.resolve_protocol(signal, protocol)
    if names is None:
        return _env.endpoint_configured(signal, protocol=resolved)
    if "otlp" not in names:
        return False
    return not _env.endpoint_set(signal) or _env.endpoint_configured(signal, protocol=resolved)


def _resource(
    service_name: str | None,
    extra: Mapping[str, AttributeValue] | None,
    scrubber: Scrubber | None,
) -> Resource:
    attributes: dict[str, AttributeValue] = dict(extra or {})
    if service_name:
        attributes[SERVICE_NAME] = service_name
    resource = Resource.create(attributes)  # merges OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME
    if resource.attributes.get(SERVICE_NAME) in (None, "", "unknown_service"):
        program = os.path.basename(sys.argv[0] if sys.argv and sys.argv[0] else sys.executable)
        resource = resource.merge(
            Resource({SERVICE_NAME: f"unknown_service:{program or 'python'}"})
        )
    # Exported with every batch: a credential in OTEL_RESOURCE_ATTRIBUTES, the argument or a
    # detector's value (a command line) is scrubbed as every other string, by key name too.
    if scrubber is None:
        return resource
    attributes = dict(resource.attributes)
    scrubbed = scrubber.value(attributes)
    return resource if scrubbed is attributes else Resource(scrubbed, resource.schema_url)


def _logger_provider(resource: Resource) -> LoggerProvider:
    """The logger provider, with the log record limits a malformed variable made us choose.

    Only an SDK whose ``LoggerProvider`` takes ``log_record_limits`` (1.45 on) reads those
    variables itself, and only it is given them: an older one (Google ADK pins 1.44) is
    built as before, and has no limit variable to fail on.
    """
    limits = _env.limit_overrides(_env.LOG_LIMITS)
    if limits and "log_record_limits" in inspect.signature(LoggerProvider).parameters:
        from opentelemetry.sdk._logs import LogRecordLimits  # (1.45 on, as the argument)

        return LoggerProvider(
            resource=resource, shutdown_on_exit=False, log_record_limits=LogRecordLimits(**limits)
        )
    return LoggerProvider(resource=resource, shutdown_on_exit=False)
