"""The clock every timestamp of a run comes from (epoch nanoseconds).

Each run reads :func:`run_clock` once when it starts. By default that is the wall clock read
once, at the run's start, plus the monotonic clock's progress since: a wall clock stepped
mid-run (NTP, a VM resumed) moves no timestamp of the run, so no span ends before it starts
and no duration is negative; the next run starts from the corrected wall clock. ``now_ns`` is
the patch point: ``agent_otel.testing.FakeClock`` swaps in a deterministic clock, read as is.
"""

from __future__ import annotations

import time
from collections.abc import Callable

now_ns: Callable[[], int] = time.time_ns
SECONDS_PER_NS = 1e-9
"""A clock reading's nanoseconds to the seconds a duration is recorded in."""


def run_clock() -> Callable[[], int]:
    """The clock one run reads: ``now_ns`` if replaced, else wall-anchored monotonic time."""
    clock = now_ns
    if clock is not time.time_ns:
        return clock
    offset = time.time_ns() - time.monotonic_ns()
    monotonic = time.monotonic_ns

    def anchored() -> int:
        return offset + monotonic()

    return anchored
