"""``SpanLoss``: every span ``configure()``'s export pipeline loses, counted by cause and told.

Causes: ``queue_full`` (the batch queue overflowed), ``export_failed`` (the exporter gave up on
a batch: collector down, rejected, timed out) and ``shutdown`` (ended after shutdown, or still
queued or in flight when shutdown finished or gave up). The first two come from the SDK's own
processor and exporter metrics (see ``_tally``); the third is what is left over at shutdown:
spans that entered the processor and neither reached the exporter nor were dropped. An
export that outlives the shutdown changes nothing: its spans were counted then.
While loss happens a warning with running totals is logged at most every ``log_interval_s``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from agent_otel._guard import logger as _log
from agent_otel.exporting._failures import why_exports_fail

QUEUE_FULL = "queue_full"
EXPORT_FAILED = "export_failed"
SHUTDOWN = "shutdown"
ALREADY_SHUTDOWN = "already_shutdown"  # the SDK processor's error.type for spans ended after it
CAUSES = (QUEUE_FULL, EXPORT_FAILED, SHUTDOWN)

_HINTS = {
    QUEUE_FULL: "spans end faster than they export: raise max_queue_size / OTEL_BSP_MAX_QUEUE_SIZE",
    SHUTDOWN: "shutdown ended before the queue drained: raise shutdown_timeout_millis",
    ALREADY_SHUTDOWN: "spans ended after shutdown() (a run started or still going after it, "
    "from an exit hook registered before configure()?): end them before shutting down",
}


class SpanLoss:
    """Thread-safe running totals of the pipeline's spans, and the rate-limited warning."""

    def __init__(
        self, log_interval_s: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._lock = threading.Lock()
        self._interval = log_interval_s
        self._clock = clock
        self._last_log: float | None = None
        self.entered = 0  # sampled spans handed to the batch processor
        self.submitted = 0  # spans the processor handed to the exporter
        self.exported = 0  # spans the exporter delivered
        self._lost = dict.fromkeys(CAUSES, 0)
        self._settled = False
        self.on_stranded: Callable[[int], None] | None = None  # records them as a metric
        self.queue_length: Callable[[], int] | None = None  # the SDK processor's queue size
        # told once a span is queued, which a signal's default action would lose: the process
        # hooks of the telemetry it serves (``_process.ProcessHooks.span_queued``)
        self.on_queued: Callable[[], object] | None = None

    def reset_in_child(self) -> None:
        """In a forked child: count only the child's own spans, with a lock nobody holds (the
        parent's export thread may have held the copied one at the fork)."""
        self._lock = threading.Lock()
        self._last_log = None
        self.entered = self.submitted = self.exported = 0
        self._lost = dict.fromkeys(CAUSES, 0)
        self._settled = False

    def lost(self) -> dict[str, int]:
        """Spans lost so far, by cause."""
        with self._lock:
            return dict(self._lost)

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self._lost.values())

    def enter(self) -> None:
        with self._lock:
            self.entered += 1

    def processed(self, count: int, error_type: object) -> None:
        """The SDK processor's ``otel.sdk.processor.span.processed`` measurement."""
        if error_type is None:
            with self._lock:
                self.submitted += count
            return
        if error_type == ALREADY_SHUTDOWN:
            self._lose(SHUTDOWN, count, ALREADY_SHUTDOWN)
        else:
            self._lose(QUEUE_FULL, count)

    def exported_batch(self, count: int, error_type: object) -> None:
        """The SDK exporter's ``otel.sdk.exporter.span.exported`` measurement.

        Once settled, ignored: every span without an export result then was counted lost at
        shutdown (in flight, or still queued), so the result of an export that outlived the
        shutdown (a silent collector's request timing out, a gRPC call cancelled as its channel
        closes) would count it a second time, after the total was told."""
        if self._settled:
            return
        if error_type is None:
            with self._lock:
                self.exported += count
            return
        self._lose(EXPORT_FAILED, count)

    def unsent(self) -> int:
        """Spans that entered and were neither exported nor counted lost: queued or in flight."""
        with self._lock:
            return max(self.entered - self.exported - sum(self._lost.values()), 0)

    def settle(self) -> int:
        """At shutdown: count what never reached an end as lost at shutdown; the new count.

        Idempotent. Spans are conserved: each one that entered was submitted to the exporter,
        dropped, or is still queued; each one submitted was exported, failed, or is in flight.
        So the queue-full count is made exact here from the other counts (the SDK's own count
        can be a few too high under a flood: it checks for a full queue and appends without a
        lock, so its export thread can make room in between).
        """
        queued = self.queue_length() if self.queue_length is not None else None
        with self._lock:
            if self._settled:
                return 0
            self._settled = True
            lost = self._lost
            if queued is None:  # no queue size from the SDK: trust its queue-full count
                queued = max(self.entered - self.submitted - lost[QUEUE_FULL] - lost[SHUTDOWN], 0)
            else:
                lost[QUEUE_FULL] = max(self.entered - self.submitted - lost[SHUTDOWN] - queued, 0)
            in_flight = max(self.submitted - self.exported - lost[EXPORT_FAILED], 0)
            stranded = queued + in_flight
            lost[SHUTDOWN] += stranded
        if stranded and self.on_stranded is not None:
            self.on_stranded(stranded)
        return stranded

    def summary(self) -> str | None:
        """One line stating the total lost by cause, or None when nothing was lost."""
        lost = self.lost()
        total = sum(lost.values())
        if not total:
            return None
        parts = ", ".join(f"{n:,} {cause.replace('_', ' ')}" for cause, n in lost.items() if n)
        return f"agent-otel: {total:,} spans lost ({parts})"

    def _lose(self, cause: str, count: int, why: str | None = None) -> None:
        now = self._clock()
        with self._lock:
            self._lost[cause] += count
            due = self._last_log is None or now - self._last_log >= self._interval
            if due:
                self._last_log = now
                lost = dict(self._lost)
        if due:
            self._tell(lost, why or cause)

    def _tell(self, lost: dict[str, int], cause: str) -> None:
        parts = ", ".join(f"{cause} {n:,}" for cause, n in lost.items())
        _log.warning(
            "agent-otel: %s spans lost so far (%s); %s",
            f"{sum(lost.values()):,}",
            parts,
            why_exports_fail() if cause == EXPORT_FAILED else _HINTS[cause],
        )
