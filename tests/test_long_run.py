"""A long run with a growing history, capture on: what it exports and holds grows with its
new content, not with the square of its history (figure 17 in docs/benchmarks.md runs the
same measurement at 5,000 and 10,000 steps).

Growth is compared between two sizes of the same run (steps doubled), never timed. The
default mode, which records the whole history on every call, is measured too, so the test
is seen to tell the two growths apart.
"""

from __future__ import annotations

import pytest
from benchmarks.fig17_long_run import measure

from agent_otel import ContentCapture

pytestmark = pytest.mark.heavy  # child processes and timings: run by the heavy suite

LINEAR = 2.2  # doubling the steps doubles the new content; the square would be 4x


def test_history_once_grows_linearly_in_bytes_and_memory() -> None:
    capture = ContentCapture(history="new")
    small, large = measure(150, capture), measure(300, capture)
    assert large.spans == 2 * small.spans - 1  # one agent span, then a step and a call per step
    assert large.exported_bytes <= LINEAR * small.exported_bytes
    assert large.peak_memory <= LINEAR * small.peak_memory


def test_the_whole_history_on_every_call_grows_with_its_square() -> None:
    """Within the per-call budget, the default mode's bytes grow with the square of the
    history: the measurement above would fail it."""
    capture = ContentCapture(max_bytes=256 * 1024)
    small, large = measure(60, capture, memory=False), measure(120, capture, memory=False)
    assert large.exported_bytes > 3 * small.exported_bytes


def test_a_run_budget_bounds_the_whole_history_mode() -> None:
    """With a run budget, even the default mode's bytes stop growing with the history."""
    capture = ContentCapture(max_bytes=256 * 1024, max_run_bytes=64 * 1024)
    small, large = measure(60, capture, memory=False), measure(120, capture, memory=False)
    assert large.exported_bytes <= LINEAR * small.exported_bytes
