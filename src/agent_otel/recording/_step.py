"""The step span: one step of the agent loop, as ``collect()`` counts steps.

:class:`Step` writes every attribute and the ending of a ``step {index}`` span. Which events
make a step, and when it is held open past its boundary, is the recorder's routing.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.context.context import Context
from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AttributeValue

from agent_otel import _attributes as A
from agent_otel._guard import ending, guarded

from ._costs import cost_attributes, plus
from ._encodable import Count, checked, in_range
from ._errors import fail_span, record_error
from ._settings import RunSettings
from ._span import known_start, start_span
from ._usage import Tokens


class Step:
    """One step and its ``step {index}`` span (kind INTERNAL, a child of the agent span).

    ============================================  ======================================
    attribute                                     written
    ============================================  ======================================
    ``agent_otel.step.index``                     at start (the run's count), and at the
                                                  boundary when it names its own index
    ``openinference.span.kind`` (``CHAIN``)       at start: no gen_ai operation fits a
                                                  step; this is the kind Phoenix and
                                                  MLflow show
    ``session.id``, ``user.id``,                  at start (the run's identity)
    ``gen_ai.conversation.id``                    (a conversation id also when the run
                                                  learns one later: ``identify``)
    ``agent_otel.phase``                          at start, the run's phase then (its
                                                  latest ``PhaseMarker``: a team member,
                                                  a handoff's agent, a graph node)
    ``agent_otel.usage.*`` token totals           at the end (what its segments reported)
    ``agent_otel.usage.cost.*`` totals            at the end, when something was priced
    ``error.type`` (+ ERROR status), and an       on an ``Error`` event of the step
    ``agent_otel.error`` event
    ============================================  ======================================

    A step ends at its boundary's time, but only when the next step opens or the run ends:
    usage and errors that arrive after the boundary, before more step content, are its own (an
    error so taken ends it at the error's time: no span event lies outside its span).
    """

    __slots__ = ("context", "cost", "end_time", "settings", "span", "usage")

    def __init__(
        self,
        settings: RunSettings,
        count: Count,
        run: Context,
        parent: Context,
        identity: dict[str, AttributeValue],
        index: int,
        start: int,
        phase: str | None = None,
    ) -> None:
        self.settings = settings
        scrub = settings.scrub
        key = (A.STEP_SPAN_NAME, index)  # the recorder's own count: an int
        known = settings.starts.get(key)
        if known is None:
            attributes: dict[str, AttributeValue] = {
                A.STEP_INDEX: index,
                A.OI_SPAN_KIND: A.OI_KIND_CHAIN,
            }
            name = f"{A.STEP_SPAN_NAME} {index}"
            known = known_start(settings.starts, key, name, attributes, count, scrub)
        name, attributes = known
        if phase is not None:
            identity = {**identity, A.PHASE: phase}
        self.span = start_span(
            settings.tracer, count, scrub, name, run, SpanKind.INTERNAL,
            {**attributes, **checked(identity, count, scrub)}, start,
        )  # fmt: skip
        self.context = trace.set_span_in_context(self.span.raw, parent)
        self.usage = Tokens()
        self.cost: float | None = None
        self.end_time = start

    def identify(self, ids: dict[str, AttributeValue]) -> None:
        """Ids of the run learnt after this step began (checked: the conversation its run
        continues), on its span too."""
        self.span.set_checked(ids)

    def record_error(self, kind: str, description: str | None, fatal: bool, time: int) -> None:
        """An ``Error`` event of this step; one told after its boundary (bookkeeping it took)
        ends the step at that time instead, so that its event lies within the span."""
        record_error(self.span, kind, description, fatal, time)
        if time > self.end_time:
            self.end_time = time

    def fail(self, error: BaseException, error_type: str, now: int) -> None:
        """The run failed during this step: the exception and ERROR status on its span."""
        fail_span(self.span, error, error_type, now)

    def hold(self, now: int, index: Any, usage: Tokens, cost: float | None) -> None:
        """The step's boundary: it will end at ``now``; ``index`` is the boundary's own count
        (kept when it is a usable integer); ``usage`` and ``cost`` are its segment's."""
        self.end_time = now
        self.usage, self.cost = usage, cost
        with guarded("step end"):
            if self.span.recording and type(index) is int and in_range(index):
                self.span.set_attribute(A.STEP_INDEX, index)
                self.span.update_name(f"{A.STEP_SPAN_NAME} {index}")

    def add(self, usage: Tokens, cost: float | None) -> None:
        """Bookkeeping after the boundary, before more step content: it is this step's."""
        self.usage.add(usage)
        self.cost = plus(self.cost, cost)

    def end(self) -> None:
        """Write the totals and end the span at its boundary's time."""
        with ending(self.span, self.end_time, "step end"):
            if self.span.recording:
                out = self.usage.total_attributes()
                if self.cost is not None:
                    out.update(cost_attributes(self.cost, self.settings.currency))
                self.span.set_attributes(out)
