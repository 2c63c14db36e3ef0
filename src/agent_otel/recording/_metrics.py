"""The histograms of DESIGN.md (with the spec's bucket boundaries) and the cost counter,
created once per meter."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from opentelemetry.context.context import Context
from opentelemetry.metrics import (
    Counter,
    Histogram,
    Meter,
    MeterProvider,
    NoOpCounter,
    NoOpHistogram,
    NoOpMeter,
    get_meter,
)
from opentelemetry.util.types import Attributes

from agent_otel import _attributes as A
from agent_otel._guard import report
from agent_otel._version import __version__
from agent_otel.scrubbing import Scrub, Scrubber

from ._encodable import INT64_MAX, INT64_MIN, checked


class GuardedHistogram(Histogram):
    """A histogram whose ``record`` never raises (a failing meter must not cost a span end)
    and records only what the OTLP encoder accepts (see :mod:`._encodable`; the same values
    are counted where they are written on spans), its attributes scrubbed when ``scrub``."""

    def __init__(self, histogram: Histogram, scrub: Scrub | None = None) -> None:
        # The SDK's instrument: recorded into directly, inside their own guard, by the span
        # owners' endings with attributes :func:`~._encodable.checked` returned (one guard
        # and one check for a span's several records: figure 2).
        self.histogram = histogram
        self.scrub = scrub

    def scrubbed(self, scrub: Scrub) -> GuardedHistogram:
        """The same histogram, its attributes scrubbed by ``scrub``."""
        return GuardedHistogram(self.histogram, scrub)

    def record(
        self, amount: float, attributes: Attributes = None, context: Context | None = None
    ) -> None:
        if type(amount) is int and not INT64_MIN <= amount <= INT64_MAX:
            return  # the OTLP encoder would reject the batch (through exemplars too)
        try:
            self.histogram.record(amount, checked(attributes, scrub=self.scrub), context)
        except Exception:
            report("metric record")


class GuardedCounter(Counter):
    """A counter whose ``add`` never raises, as :class:`GuardedHistogram`."""

    def __init__(self, counter: Counter, scrub: Scrub | None = None) -> None:
        self._counter = counter
        self.scrub = scrub

    def scrubbed(self, scrub: Scrub) -> GuardedCounter:
        """The same counter, its attributes scrubbed by ``scrub``."""
        return GuardedCounter(self._counter, scrub)

    def add(
        self, amount: float, attributes: Attributes = None, context: Context | None = None
    ) -> None:
        try:
            self._counter.add(amount, checked(attributes, scrub=self.scrub), context)
        except Exception:
            report("metric record")


@dataclass(frozen=True, slots=True)
class Instruments:
    """The histograms and the cost counter one run records into, named by ``conventions``
    (``_attributes.Conventions``), and the self-metric of what scrubbing found
    (``agent_otel.scrubbed``, by detector: counts, never values)."""

    operation_duration: GuardedHistogram
    input_tokens: GuardedHistogram
    output_tokens: GuardedHistogram  # the same histogram as input_tokens under v1.41.1's names
    time_to_first_chunk: GuardedHistogram
    time_per_output_chunk: GuardedHistogram
    agent_duration: GuardedHistogram
    tool_duration: GuardedHistogram
    inference_calls: GuardedHistogram
    tool_calls: GuardedHistogram
    cost: GuardedCounter
    scrubbed: GuardedCounter
    conventions: A.Conventions = A.V1_41

    def scrub(self, scrubber: Scrubber | None) -> tuple[Instruments, Scrub | None]:
        """These instruments with their attributes scrubbed by ``scrubber`` (counted on
        ``scrubbed``), and the bound scrub for the run's other writes; as they are for None."""
        if scrubber is None:
            return self, None
        bound = Scrub(scrubber, self.count_scrubbed)
        wrapped: dict[str, Any] = {}
        for item in fields(self):
            instrument = getattr(self, item.name)
            guarded = isinstance(instrument, (GuardedHistogram, GuardedCounter))
            if guarded and item.name != "scrubbed":
                wrapped[item.name] = instrument.scrubbed(bound)
        return replace(self, **wrapped), bound

    def count_scrubbed(self, detector: str) -> None:
        """One secret ``detector`` replaced (never its value: the name is all it records)."""
        self.scrubbed.add(1, {A.SCRUB_DETECTOR: detector})

    def record_tokens(
        self,
        input_tokens: int | None,
        output_tokens: int | None,
        attributes: dict[str, Any],
        attributes_checked: bool = False,
        context: Context | None = None,
    ) -> None:
        """A call's (or run's) token counts: into ``gen_ai.client.token.usage`` by
        ``gen_ai.token.type`` (v1.41.1), or one histogram per direction (head).
        ``attributes`` is the caller's copy (the token type is written into it);
        ``attributes_checked``: :func:`~._encodable.checked` returned them (the token type is
        ours): both records go straight to the SDK, under one guard. ``context``: the
        span's, which their exemplars name. The counts are
        :class:`~._usage.Tokens`' sums: non-negative integers, over 64 bits only as sums."""
        typed = self.conventions.token_type
        if attributes_checked:
            try:
                if input_tokens is not None and input_tokens <= INT64_MAX:
                    if typed:
                        attributes[A.TOKEN_TYPE] = A.TOKEN_TYPE_INPUT
                    self.input_tokens.histogram.record(input_tokens, attributes, context)
                if output_tokens is not None and output_tokens <= INT64_MAX:
                    if typed:
                        attributes[A.TOKEN_TYPE] = A.TOKEN_TYPE_OUTPUT
                    self.output_tokens.histogram.record(output_tokens, attributes, context)
            except Exception:
                report("metric record")
            return
        if input_tokens is not None:
            if typed:
                attributes[A.TOKEN_TYPE] = A.TOKEN_TYPE_INPUT
            self.input_tokens.record(input_tokens, attributes, context)
        if output_tokens is not None:
            if typed:
                attributes[A.TOKEN_TYPE] = A.TOKEN_TYPE_OUTPUT
            self.output_tokens.record(output_tokens, attributes, context)

    @classmethod
    def create(
        cls, meter_provider: MeterProvider | None, conventions: A.Conventions = A.V1_41
    ) -> Instruments:
        """The histograms of ``meter_provider`` under ``conventions``' names; whatever of it
        raises becomes a no-op."""
        meter: Meter
        try:
            meter = get_meter(A.SCOPE_NAME, __version__, meter_provider)
        except Exception:
            report("meter provider")
            meter = NoOpMeter(A.SCOPE_NAME)
        c = conventions
        token_description = (
            "Number of input and output tokens used."
            if c.token_type
            else "Number of input tokens used per inference operation."
        )
        input_tokens = _histogram(
            meter, c.input_tokens, "{token}", token_description, A.TOKEN_BUCKETS
        )
        output_tokens = (
            input_tokens
            if c.output_tokens == c.input_tokens
            else _histogram(
                meter, c.output_tokens, "{token}",
                "Number of output tokens used per inference operation.", A.TOKEN_BUCKETS,
            )
        )  # fmt: skip
        return cls(
            operation_duration=_histogram(
                meter, c.operation_duration, "s", "GenAI operation duration.",
                A.DURATION_BUCKETS,
            ),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            time_to_first_chunk=_histogram(
                meter, c.time_to_first_chunk, "s",
                "Time to receive the first chunk of a streamed response.",
                A.TIME_TO_FIRST_CHUNK_BUCKETS,
            ),
            time_per_output_chunk=_histogram(
                meter, c.time_per_output_chunk, "s",
                "Time between consecutive chunks after the first one.",
                A.TIME_PER_OUTPUT_CHUNK_BUCKETS,
            ),
            agent_duration=_histogram(
                meter, c.agent_duration, "s", "Duration of an agent run.",
                A.DURATION_BUCKETS,
            ),
            tool_duration=_histogram(
                meter, A.METRIC_TOOL_DURATION, "s", "Duration of a tool execution.",
                A.DURATION_BUCKETS,
            ),
            inference_calls=_histogram(
                meter, A.METRIC_AGENT_INFERENCE_CALLS, "{inference_call}",
                "Model calls an agent made in one run.", A.CALL_COUNT_BUCKETS,
            ),
            tool_calls=_histogram(
                meter, A.METRIC_AGENT_TOOL_CALLS, "{tool_call}",
                "Tool calls an agent made in one run.", A.CALL_COUNT_BUCKETS,
            ),
            cost=_counter(
                meter, A.METRIC_COST, "{currency_unit}",
                "Cost of GenAI calls, in gen_ai.usage.cost.currency.",
            ),
            scrubbed=_counter(
                meter, A.METRIC_SCRUBBED, "{secret}",
                "Credentials replaced by a marker before export, by detector.",
            ),
            conventions=c,
        )  # fmt: skip


def _histogram(
    meter: Meter, name: str, unit: str, description: str, buckets: tuple[float, ...]
) -> GuardedHistogram:
    try:
        histogram = meter.create_histogram(
            name, unit=unit, description=description, explicit_bucket_boundaries_advisory=buckets
        )
    except Exception:
        report("meter create_histogram")
        histogram = NoOpHistogram(name)
    return GuardedHistogram(histogram)


def _counter(meter: Meter, name: str, unit: str, description: str) -> GuardedCounter:
    try:
        counter = meter.create_counter(name, unit=unit, description=description)
    except Exception:
        report("meter create_counter")
        counter = NoOpCounter(name)
    return GuardedCounter(counter)
