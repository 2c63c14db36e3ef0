"""``TailSampler``: a span processor that decides per run, once the run has ended.

It sits in front of an exporting processor (a ``BatchSpanProcessor``): spans that belong to
no run pass straight through; the spans of a run wait until its root ``invoke_agent`` span
ends, then the whole run goes on or is dropped, by :class:`TailSamplingPolicy`. Sub-agent
runs below a root are part of its run. A span that ends after its run was decided follows
the decision. ``on_start`` always passes through at once. Metrics never pass through here,
so they count every run.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from opentelemetry.context.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import StatusCode

from agent_otel import _attributes as A
from agent_otel._fork import in_forked_child
from agent_otel._guard import logger as _log
from agent_otel._plain import a_kind, has_methods
from agent_otel.recording._hints import keyworded_but

from ._policy import SamplerStats, TailSamplingPolicy
from ._size import span_size

_RATIO_BITS = (1 << 64) - 1
_RUN_PREFIX = A.OP_INVOKE_AGENT


class _Run:
    """The spans of one run waiting for its root to end."""

    __slots__ = ("bytes", "errored", "interrupted", "open", "overflowed", "root", "spans")

    def __init__(self, root: int) -> None:
        self.root = root
        self.open: set[int] = set()
        self.spans: list[ReadableSpan] = []
        self.bytes = 0
        self.errored = False
        self.interrupted = False
        self.overflowed = False


class _Decided:
    """Where a span still open when its run was decided goes when it ends."""

    __slots__ = ("keep",)

    def __init__(self, keep: bool) -> None:
        self.keep = keep


@keyworded_but("on_start", "on_end")  # the SDK calls them per span
class TailSampler(SpanProcessor):
    """Hold each run's spans until the run ends; pass whole runs on to ``downstream``.

    ``TailSampler(BatchSpanProcessor(exporter), TailSamplingPolicy(keep_ratio=0.05,
    slower_than_s=30))``, added to a ``TracerProvider`` in place of the batch processor, or
    ``configure(tail_sampling=TailSamplingPolicy(...))``. Thread-safe; ``downstream`` is
    called outside the lock. At shutdown, runs still going are passed on (never lost).
    """

    def __init__(self, downstream: SpanProcessor, policy: TailSamplingPolicy | None = None):
        _check(downstream, policy)
        self.downstream = downstream
        self.policy = TailSamplingPolicy() if policy is None else policy
        self._start_empty()
        in_forked_child(self._start_empty)
        policy = self.policy
        self._bounds = (
            policy.max_run_spans,
            policy.max_run_bytes,
            policy.max_spans,
            policy.max_bytes,
        )

    def _start_empty(self) -> None:
        """Nothing held, nothing counted: at construction, and in a forked child, where the
        runs held are the parent's (passed on at the child's exit, they were exported twice,
        whatever the parent's policy decided)."""
        self._lock = threading.Lock()
        self._owner: dict[int, _Run | _Decided] = {}
        self._runs: dict[int, _Run] = {}
        self._held_spans = 0
        self._held_bytes = 0
        self._counts = dict.fromkeys(
            ("runs_kept", "runs_dropped", "runs_overflowed", "spans_dropped"), 0
        )
        self._warned = False

    def stats(self) -> SamplerStats:
        with self._lock:
            return SamplerStats(
                **self._counts, held_spans=self._held_spans, held_bytes=self._held_bytes
            )

    # --- SpanProcessor -------------------------------------------------------------------------
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        span_id = span.context.span_id
        parent = span.parent
        with self._lock:
            owner = None
            if parent is not None and not parent.is_remote:
                owner = self._owner.get(parent.span_id)
            if owner is None and _is_run(span):
                owner = self._runs[span_id] = _Run(span_id)
            if owner is not None:
                self._owner[span_id] = owner
                if isinstance(owner, _Run):
                    owner.open.add(span_id)
        self.downstream.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        span_id = span.context.span_id if span.context is not None else 0
        forward: list[ReadableSpan] = []
        with self._lock:
            owner = self._owner.get(span_id)
            if owner is None:
                forward.append(span)
            elif isinstance(owner, _Decided):
                del self._owner[span_id]
                if owner.keep:
                    forward.append(span)
                else:
                    self._counts["spans_dropped"] += 1
            else:
                forward = self._add(owner, span_id, span)
        for finished in forward:
            self.downstream.on_end(finished)

    def shutdown(self) -> None:
        """Pass on every run still going (undecided is not dropped), then shut down."""
        self._flush_held()
        self.downstream.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Flush what was passed on; runs still going keep waiting for their end."""
        return self.downstream.force_flush(timeout_millis)

    # --- runs ----------------------------------------------------------------------------------
    def _add(self, run: _Run, span_id: int, span: ReadableSpan) -> list[ReadableSpan]:
        """Record ``span`` in its run (lock held); returns the spans to pass on now."""
        run.open.discard(span_id)
        if span.status.status_code is StatusCode.ERROR:
            run.errored = True
        if span.name.startswith(_RUN_PREFIX):  # an agent span: the only ones with an end reason
            attributes = span.attributes or {}
            if attributes.get(A.END_REASON) == A.END_INTERRUPTED:
                run.interrupted = True
        forward: list[ReadableSpan] = []
        if run.overflowed:
            forward.append(span)
        elif (span.attributes or {}).get(A.PENDING) is True:
            pass  # a snapshot (pending_spans): see _is_run
        else:
            size = span_size(span)
            run.spans.append(span)
            run.bytes += size
            self._held_spans += 1
            self._held_bytes += size
            run_spans, run_bytes, spans, total = self._bounds
            if (
                len(run.spans) > run_spans
                or run.bytes > run_bytes
                or self._held_spans > spans
                or self._held_bytes > total
            ):
                forward = self._overflow(run)
        if span_id == run.root:
            forward.extend(self._decide(run, span))
        else:
            del self._owner[span_id]
        return forward

    def _overflow(self, run: _Run) -> list[ReadableSpan]:
        run.overflowed = True
        self._counts["runs_overflowed"] += 1
        if not self._warned:
            self._warned = True
            bound, value = self._passed(run)
            _log.warning(
                "agent-otel: a run outgrew the tail sampler's buffer (TailSamplingPolicy(%s=%s)), "
                "so it is exported as it goes, kept whatever the policy would have decided "
                "(counted in TailSampler.stats().runs_overflowed): raise %s if runs this big "
                "should be sampled whole (docs/production.md#tail-sampling-of-whole-runs)",
                bound,
                value,
                bound,
            )
        return self._release(run)

    def _passed(self, run: _Run) -> tuple[str, int]:
        """The bound ``run`` (or all runs held) passed, as the policy's field and its value."""
        names = ("max_run_spans", "max_run_bytes", "max_spans", "max_bytes")
        held = (len(run.spans), run.bytes, self._held_spans, self._held_bytes)
        passed = [(n, b) for n, b, h in zip(names, self._bounds, held, strict=True) if h > b]
        return passed[0] if passed else (names[0], self._bounds[0])

    def _release(self, run: _Run) -> list[ReadableSpan]:
        spans, run.spans = run.spans, []
        self._held_spans -= len(spans)
        self._held_bytes -= run.bytes
        run.bytes = 0
        return spans

    def _decide(self, run: _Run, root: ReadableSpan) -> list[ReadableSpan]:
        del self._runs[run.root]
        del self._owner[run.root]
        keep = run.overflowed or self._keep(run, root)
        spans = self._release(run)
        if not run.overflowed:
            if keep:
                self._counts["runs_kept"] += 1
            else:
                self._counts["runs_dropped"] += 1
                self._counts["spans_dropped"] += len(spans)
        decided = _Decided(keep)
        for span_id in run.open:  # still open: they follow the decision when they end
            self._owner[span_id] = decided
        return spans if keep else []

    def _keep(self, run: _Run, root: ReadableSpan) -> bool:
        policy = self.policy
        if (policy.keep_errors and run.errored) or (policy.keep_interrupted and run.interrupted):
            return True
        attributes = root.attributes or {}
        slow = policy.slower_than_s
        duration = (root.end_time or 0) - (root.start_time or 0)
        if slow is not None and duration / 1e9 > slow:
            return True
        if policy.tokens_over is not None and _tokens(attributes) > policy.tokens_over:
            return True
        if policy.cost_over is not None:
            cost = attributes.get(A.COST_TOTAL)
            if isinstance(cost, (int, float)) and cost > policy.cost_over:
                return True
        trace_id = root.context.trace_id if root.context is not None else 0
        return (trace_id & _RATIO_BITS) < policy.keep_ratio * (1 << 64)

    def _flush_held(self) -> None:
        with self._lock:
            held = [span for run in self._runs.values() for span in self._release(run)]
            for run in self._runs.values():
                run.overflowed = True  # from now on, straight through
        for span in held:
            self.downstream.on_end(span)


def _check(downstream: object, policy: object) -> None:
    """``TailSampler``'s arguments, checked where it is built (before, anything was taken and
    failed at the first span, or at every one): read by their types, so none of their own
    methods runs."""
    if policy is not None and not issubclass(type(policy), TailSamplingPolicy):
        raise TypeError(
            f"TailSampler(policy=...) takes a TailSamplingPolicy or None, not {a_kind(policy)}: "
            "pass TailSamplingPolicy(keep_ratio=...)"
        )
    if not has_methods(downstream, ("on_start", "on_end", "shutdown", "force_flush")):
        raise TypeError(
            f"TailSampler(downstream=...) takes a span processor (on_start, on_end, shutdown, "
            f"force_flush), not {a_kind(downstream)}: pass the exporting one, as in "
            "TailSampler(BatchSpanProcessor(exporter), policy)"
        )


def _is_run(span: Span) -> bool:
    """An ``invoke_agent`` span (by its name first: this runs for every span), not a snapshot
    of one.

    Snapshots (``pending_spans``, docs/live.md) are not held: held, they would only arrive
    with the run's final spans, which supersede them, while counting against the bounds (a
    run open long enough outgrew ``max_run_spans`` on snapshots alone, and was exported as it
    went whatever the policy would have decided). A run exported as it goes passes them on.
    """
    if not span.name.startswith(_RUN_PREFIX):
        return False
    attributes = span.attributes
    return (
        attributes is not None
        and attributes.get(A.OPERATION_NAME) == A.OP_INVOKE_AGENT
        and attributes.get(A.PENDING) is not True
    )


def _tokens(attributes: Mapping[str, object]) -> int:
    """The run's token total: ``agent_otel.usage.total_tokens``, else input plus output."""
    total = attributes.get(A.USAGE_TOTAL_TOTAL)
    if isinstance(total, int):
        return total
    parts = (attributes.get(A.USAGE_INPUT_TOTAL), attributes.get(A.USAGE_OUTPUT_TOTAL))
    return sum(p for p in parts if isinstance(p, int))
