"""A deterministic clock for runs: each reading advances by a fixed step."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from agent_otel import _clock
from agent_otel._block import block
from agent_otel._plain import int_of, shown
from agent_otel.recording._hints import keyworded


def _nanoseconds(name: str, value: object) -> int:
    number = int_of(value)
    if number is None or number < 0:
        error = TypeError if number is None else ValueError
        raise error(
            f"FakeClock({name}=...) takes an int number of nanoseconds >= 0 (1 ms is "
            f"1_000_000), not {shown(value)}"
        )
    return number


@keyworded
class FakeClock:
    """Epoch nanoseconds starting at ``start``, ``step`` further on each reading.

    ``advance(seconds)`` jumps ahead (say, to stand for a slow model). Install it with
    :meth:`installed` so that every run started meanwhile reads it.
    """

    def __init__(self, start: int = 1_700_000_000_000_000_000, step: int = 1_000_000) -> None:
        """``start`` and ``step`` are int nanoseconds (``step`` >= 0), checked here: another
        type failed inside each run, reported as an internal error of agent-otel's."""
        self.now = _nanoseconds("start", start)
        self.step = _nanoseconds("step", step)

    def __call__(self) -> int:
        self.now += self.step
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += int(seconds * 1e9)

    @block
    def installed(self) -> Iterator[FakeClock]:
        previous: Callable[[], int] = _clock.now_ns
        _clock.now_ns = self
        try:
            yield self
        finally:
            _clock.now_ns = previous
