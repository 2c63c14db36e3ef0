"""In-memory tracer, meter and logger providers with deterministic ids."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import ExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import Sampler

from agent_otel._attributes import PENDING
from agent_otel._block import Block, block
from agent_otel._guard import warn_once
from agent_otel._plain import a_kind, has_methods, items_of
from agent_otel.exporting._arguments import SPAN_PROCESSOR
from agent_otel.exporting._env import flag
from agent_otel.recording._hints import bound_factory, keyworded
from agent_otel.recording._open import held as _held

from ._instrumented import check_options
from ._nesting import nesting_faults
from ._tree import span_outline, span_tree

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from agent_otel.recording._options import Options
    from agent_otel.recording._wrapper import StreamWrapper


def _is_snapshot(span: ReadableSpan) -> bool:
    return bool((span.attributes or {}).get(PENDING))


_UNPULLED = (
    "A run starts at its stream's first pull: a stream not consumed yet has recorded nothing, "
    "so iterate it (async for) or await invoke() first"
)


_DISABLED = (
    "OTEL_SDK_DISABLED=true was set when this telemetry was made, so its SDK providers record "
    "nothing: unset it for the tests, as monkeypatch.delenv('OTEL_SDK_DISABLED') "
    "(docs/testing.md)"
)


def _still_open(names: list[str]) -> str:
    """Why a run's spans are not there yet: ``span()``'s failure and the readers' warning."""
    return (
        f"the spans of a run still going are recorded as they end ({', '.join(map(repr, names))} "
        "still open): read them once the run has ended, after the async for over its stream or "
        "invoke(); a loop left by break leaves the stream, and its run, open until it is "
        "closed: await stream.aclose() first, or loop inside async with "
        "contextlib.aclosing(stream) (docs/testing.md)"
    )


_UNCALLED = (
    "telemetry.wrapper() made {} wrapper(s) here and no run came of them: an agent whose "
    "invoke never called the stream_wrapper it was given (it takes the argument and ignores "
    "it) runs untraced, as does a wrapped stream dropped unconsumed. Trace such an agent's "
    "stream yourself, telemetry.wrapper(...)(agent.stream(messages)), or instrument(agent, "
    "**telemetry.providers()) (docs/testing.md)"
)


class _Open(SpanProcessor):
    """The spans started and not yet ended (an exporter sees only ended ones)."""

    def __init__(self) -> None:
        self.open: dict[int, Span] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if span.context is not None:
            self.open[span.context.span_id] = span

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is not None:
            self.open.pop(span.context.span_id, None)


class SequentialIdGenerator(IdGenerator):
    """Trace ids 1, 2, 3, ... and span ids 1, 2, 3, ...: stable across test runs."""

    def __init__(self) -> None:
        self._trace = 0
        self._span = 0

    def generate_trace_id(self) -> int:
        self._trace += 1
        return self._trace

    def generate_span_id(self) -> int:
        self._span += 1
        return self._span


@keyworded
class InMemoryTelemetry(Block["InMemoryTelemetry"]):
    """Tracer, meter and logger providers whose output stays in memory.

    ``with InMemoryTelemetry() as telemetry:`` (or ``async with``) shuts it down on leaving,
    as :meth:`shutdown` does; without ``with`` it lives until then. A telemetry shut down (the
    ``otel_telemetry`` fixture's, after its test) records nothing: asking it for a wrapper or
    its providers is a ``ValueError`` saying so (its runs' spans were dropped in silence, and
    :meth:`span` said the runs were given other providers); what it recorded stays readable.

    :meth:`wrapper` is ``otel_wrapper()`` writing here (``instrument(agent,
    **telemetry.providers())`` for ``instrument()``); read back with
    :meth:`tree` (the structural assertion: a run's span tree as plain dicts), :meth:`outline`
    (the same tree by names alone), :meth:`spans`,
    :meth:`span` / :meth:`by_name`, :meth:`pending`, :meth:`open_spans`, :meth:`histograms`
    and :meth:`logs` (the GenAI log events).

    With the option ``pending_spans`` a run also exports snapshots of its open spans: spans
    with the same names, marked ``agent_otel.pending``. :meth:`spans` and :meth:`tree` show
    everything exported, snapshots included; :meth:`span` and :meth:`by_name` read the final
    spans only (a snapshot is a view of a span, not a second one); :meth:`pending` lists the
    snapshots.
    """

    def __init__(
        self,
        *,
        sampler: Sampler | None = None,
        ids: IdGenerator | None = None,
        processors: Iterable[SpanProcessor] = (),
        export_through: Callable[[SpanProcessor], SpanProcessor] | None = None,
        exemplar_filter: ExemplarFilter | None = None,
    ) -> None:
        """``sampler`` and ``ids`` go to the tracer provider (ids: sequential by default).
        ``processors`` run before the one exporting to memory, in order (a processor under
        test, such as ``RunIdentityProcessor()``); ``export_through`` wraps the exporting one
        (a processor that decides what is exported, such as
        ``lambda export: TailSampler(export, policy)``); ``exemplar_filter`` goes to the meter
        provider (``AlwaysOnExemplarFilter()``: an exemplar on every point). Nothing is hooked
        to the interpreter's exit (all of it is in memory), so a property test may build one
        per example; :meth:`shutdown` ends it. An argument of another kind is a ``TypeError``
        here, naming it (it failed at the first span, inside the SDK)."""
        processors = _checked(sampler, ids, processors, export_through, exemplar_filter)
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider(
            sampler=sampler, id_generator=ids or SequentialIdGenerator(), shutdown_on_exit=False
        )
        self._open = _Open()
        self.tracer_provider.add_span_processor(self._open)
        for processor in processors:
            self.tracer_provider.add_span_processor(processor)
        export: SpanProcessor = SimpleSpanProcessor(self.exporter)
        self.tracer_provider.add_span_processor(
            export_through(export) if export_through else export
        )
        self.metric_reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(
            metric_readers=[self.metric_reader],
            exemplar_filter=exemplar_filter,
            shutdown_on_exit=False,
        )
        self.log_exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
        self.logger_provider = LoggerProvider(shutdown_on_exit=False)
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.log_exporter))
        self._ended = False
        self._disabled = flag("OTEL_SDK_DISABLED")  # read by the SDK's providers just now
        self._wrappers = 0  # made by wrapper(): told when nothing was recorded (span())

    def __enter__(self) -> InMemoryTelemetry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def _live(self, call: str) -> None:
        """Raise at ``call`` when this telemetry was shut down: what it is asked for would
        record nothing."""
        if self._ended:
            raise ValueError(
                f"InMemoryTelemetry.{call} on a telemetry already shut down (by shutdown(), "
                "the end of its with block, or the otel_telemetry fixture after its test), "
                "which records nothing: make a new InMemoryTelemetry(), or ask for this before "
                "it ends"
            )

    @bound_factory("telemetry.wrapper")
    def wrapper(self, **options: Unpack[Options]) -> StreamWrapper:
        """``otel_wrapper(**options)`` with this telemetry's three providers (unless given)."""
        from agent_otel.recording._wrapper import otel_wrapper

        self._live("wrapper()")
        self._wrappers += 1
        options.setdefault("tracer_provider", self.tracer_provider)
        options.setdefault("meter_provider", self.meter_provider)
        options.setdefault("logger_provider", self.logger_provider)
        return otel_wrapper(**options)

    def providers(self) -> Options:
        """The three providers as options: ``instrument(agent, **telemetry.providers())``, or
        for any other call that takes them (the instrumentor, ``otel_wrapper()``)."""
        self._live("providers()")
        return {
            "tracer_provider": self.tracer_provider,
            "meter_provider": self.meter_provider,
            "logger_provider": self.logger_provider,
        }

    @block
    def instrumented(self, *instrumentors: Any, **options: Any) -> Iterator[InMemoryTelemetry]:
        """Another library's OpenTelemetry instrumentors (``BaseInstrumentor``: openai-v2,
        OpenInference's, OpenLLMetry's, botocore's...) instrumented into this telemetry's
        providers, with ``options`` (``skip_dep_check=True``...; checked against what each
        takes where its signature says), and uninstrumented on leaving, in reverse order: to
        test agent-otel's spans beside theirs."""
        self._live("instrumented()")
        for instrumentor in instrumentors:  # all checked before any is instrumented
            if not has_methods(instrumentor, ("instrument", "uninstrument")):
                raise TypeError(
                    "InMemoryTelemetry.instrumented() takes instrumentors (objects with "
                    "instrument() and uninstrument(), as OpenAIInstrumentor()), not "
                    f"{a_kind(instrumentor)}"
                    + (": pass an instance" if issubclass(type(instrumentor), type) else "")
                )
        check_options(instrumentors, options)
        done: list[Any] = []
        try:
            for instrumentor in instrumentors:
                instrumentor.instrument(**self.providers(), **options)
                done.append(instrumentor)
            yield self
        finally:
            for instrumentor in reversed(done):
                instrumentor.uninstrument()

    def spans(self) -> list[ReadableSpan]:
        """Finished spans, in the order they ended. Read while a run is open and none has
        ended, the answer is ``[]``, and a warning says why (once)."""
        finished = self._finished()
        if all(_is_snapshot(span) for span in finished):  # none ended (or none at all)
            held_open = self.open_spans()
            if held_open:  # asked inside the run: an empty answer is not "nothing recorded"
                warn_once("InMemoryTelemetry", "read while open",
                          "agent-otel: no span has ended in this InMemoryTelemetry yet: %s",
                          _still_open(held_open))  # fmt: skip
            elif self._unpulled():  # asked before the run: it has not started
                warn_once("InMemoryTelemetry", "read before pulled",
                          "agent-otel: no span has ended in this InMemoryTelemetry yet: a "
                          "stream traced on its providers has not been pulled. %s "
                          "(docs/testing.md)", _UNPULLED)  # fmt: skip
            elif self._disabled:  # its providers record nothing
                warn_once("InMemoryTelemetry", "sdk disabled",
                          "agent-otel: no span was recorded in this InMemoryTelemetry: %s",
                          _DISABLED)  # fmt: skip
        return finished

    def _unpulled(self) -> bool:
        """Whether a stream traced on this telemetry's tracer provider waits for its first
        pull (a test that made nothing, or whose runs ended unsampled, expects nothing)."""
        from agent_otel.recording._options import tracer_for
        from agent_otel.recording._wrapper import unpulled

        return unpulled(tracer_for(self.tracer_provider))

    def _finished(self) -> list[ReadableSpan]:
        """Finished spans, for a reader that tells what is open itself (``span()``)."""
        return list(self.exporter.get_finished_spans())

    def open_spans(self) -> list[str]:
        """The names of the spans started and not yet ended, in start order: after a run
        ends, however it ends (exhausted, broken off, cancelled, raising), none. A span whose
        run told its end (a chat span after ``LLMCallEnd``, a step after its boundary) is not
        open, though the run may hold it a while for what may still come (late usage, the
        tool calls its model asked for); it is exported when that is over."""
        held = _held()
        return [span.name for span in list(self._open.open.values()) if id(span) not in held]

    def nesting_faults(self) -> list[str]:
        """Each span of agent-otel's here that does not lie within its parent of ours (started
        before it, ended after it, or still open after it ended), as :func:`nesting_faults`
        says it: ``[]`` when every run nested its spans as backends expect to draw them."""
        return nesting_faults(self._finished(), list(self._open.open.values()))

    def pending(self) -> list[ReadableSpan]:
        """The snapshots option ``pending_spans`` exported (``agent_otel.pending``), in order."""
        return [s for s in self._finished() if _is_snapshot(s)]

    def by_name(self) -> dict[str, list[ReadableSpan]]:
        """Finished spans by name, each list in the order they ended; snapshots left out."""
        return _by_name(self.spans())

    def span(self, name: str) -> ReadableSpan:
        """The one finished span named ``name``, snapshots left out (``AssertionError`` unless
        exactly one)."""
        spans = _by_name(self._finished())
        found = spans.get(name, [])
        if not spans and self._ended:
            raise AssertionError(
                f"no span named {name!r}: no span was recorded in this telemetry, which was "
                "shut down (runs after that record nothing): make a new InMemoryTelemetry()"
            )
        held_open = [] if found else self.open_spans()
        if held_open:  # asked inside the run (the consumer's loop): its spans end with it
            raise AssertionError(f"no span named {name!r} has ended: {_still_open(held_open)}")
        if not spans and self._disabled:
            raise AssertionError(f"no span named {name!r}: {_DISABLED}")
        if not spans and self._wrappers and not self._unpulled():  # wrappers made, unused
            raise AssertionError(
                f"no span named {name!r}: no span was recorded in this telemetry. "
                + _UNCALLED.format(self._wrappers)
            )
        if not spans:  # nothing recorded here at all: not run yet, or run on other providers
            raise AssertionError(
                f"no span named {name!r}: no span was recorded in this telemetry. "
                f"{_UNPULLED}; and give the runs its "
                "providers: telemetry.wrapper(...) for otel_wrapper(...), "
                "instrument(agent, **telemetry.providers()) (docs/testing.md)"
            )
        assert len(found) == 1, f"{len(found)} spans named {name!r}; names: {sorted(spans)}"
        return found[0]

    def logs(self) -> list[ReadableLogRecord]:
        """Emitted log records (GenAI events), in the order they were emitted."""
        return list(self.log_exporter.get_finished_logs())

    def tree(
        self, *, attributes: bool | Collection[str] = True, events: bool = True
    ) -> list[dict[str, Any]]:
        """The finished spans as nested plain dicts (see :func:`span_tree`); with
        ``attributes=KEYS`` it reads like the spec it checks."""
        return span_tree(self.spans(), attributes=attributes, events=events)

    def outline(self) -> list[Any]:
        """The finished spans' tree by names alone (see :func:`span_outline`):
        ``[["invoke_agent a", [["step 0", ["chat m", "execute_tool t"]]]]]``."""
        return span_outline(self.spans())

    def histograms(self) -> dict[str, list[HistogramDataPoint]]:
        """Every histogram data point collected so far, by metric name."""
        out: dict[str, list[HistogramDataPoint]] = {}
        data = self.metric_reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    points = out.setdefault(metric.name, [])
                    for point in metric.data.data_points:
                        if isinstance(point, HistogramDataPoint):
                            points.append(point)
        return out

    def clear(self) -> None:
        """Forget the spans and log records recorded so far (a test's second phase reads only
        its own); the metrics stay, cumulative as the SDK's reader keeps them."""
        self.exporter.clear()
        self.log_exporter.clear()

    def shutdown(self) -> None:
        """End the three providers (once: again does nothing); what they recorded stays."""
        if self._ended:
            return
        self._ended = True
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
        self.logger_provider.shutdown()


def _by_name(spans: list[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    """``spans`` by name, each list in the order they ended; snapshots left out."""
    out: defaultdict[str, list[ReadableSpan]] = defaultdict(list)
    for span in spans:
        if not _is_snapshot(span):
            out[span.name].append(span)
    return dict(out)


def _checked(
    sampler: object, ids: object, processors: object, export_through: object, exemplars: object
) -> list[SpanProcessor]:
    """``InMemoryTelemetry``'s arguments, each of the kind it takes (read by its type alone),
    else ``TypeError`` naming it; ``processors`` as a plain list."""

    def told(name: str, value: object, what: str) -> TypeError:
        also = ": pass an instance" if issubclass(type(value), type) else ""
        return TypeError(f"InMemoryTelemetry({name}=...) takes {what}, not {a_kind(value)}{also}")

    if sampler is not None and not has_methods(sampler, ("should_sample", "get_description")):
        raise told("sampler", sampler, "a Sampler (as ALWAYS_OFF) or None")
    if ids is not None and not has_methods(ids, ("generate_trace_id", "generate_span_id")):
        raise told("ids", ids, "an IdGenerator (as RandomIdGenerator()) or None")
    if export_through is not None and not callable(export_through):
        raise told("export_through", export_through, "a function of the exporting processor")
    if exemplars is not None and not has_methods(exemplars, ("should_sample",)):
        raise told("exemplar_filter", exemplars, "an ExemplarFilter or None")
    given: Any = processors
    if issubclass(type(given), (str, bytes)) or not has_methods(given, ("__iter__",)):
        raise told("processors", given, "a list of span processors")
    listed = items_of(given) if issubclass(type(given), (list, tuple)) else list(given)
    for processor in listed:
        if not has_methods(processor, SPAN_PROCESSOR):
            raise told("processors", processor, "span processors (as RunIdentityProcessor())")
    return listed
