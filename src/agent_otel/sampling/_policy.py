"""Which finished runs the tail sampler keeps, and how much it may hold while runs go on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from agent_otel._plain import at_least_zero, int_of, number_of, shown
from agent_otel.recording._hints import keyworded

_N = TypeVar("_N", int, float)


@keyworded
@dataclass(frozen=True, slots=True)
class TailSamplingPolicy:
    """Keep a whole run when it matters, a ratio of the others; bound what waits.

    A run (its root ``invoke_agent`` span and every span below it, sub-agent runs included)
    is kept when any of its spans ended in error (``keep_errors``), any of its agent spans
    ended interrupted (``keep_interrupted``), its root took longer than ``slower_than_s``, its
    token total is over ``tokens_over`` or its cost total over ``cost_over`` (a limit of
    None is off). Other runs are kept when their trace id falls in ``keep_ratio``, the way
    ``TraceIdRatioBased`` decides, so every process of one trace picks the same runs.

    While a run goes on its spans wait in memory: at most ``max_run_spans`` spans and
    ``max_run_bytes`` (estimated) per run, ``max_spans`` and ``max_bytes`` in all. A run
    that would pass a bound is exported as it goes from then on (its waiting spans first):
    never dropped, and counted in :class:`SamplerStats`.
    """

    keep_ratio: float = 0.1
    keep_errors: bool = True
    keep_interrupted: bool = True
    slower_than_s: float | None = None
    tokens_over: int | None = None
    cost_over: float | None = None
    max_run_spans: int = 4096
    max_run_bytes: int = 8 * 1024 * 1024
    max_spans: int = 65536
    max_bytes: int = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        """Each field checked here, where the policy is built, and kept as the plain value it
        is: a wrong type raises ``TypeError``, a value out of range ``ValueError``, each naming
        the field (before, ``keep_errors="no"`` kept every error, ``slower_than_s="3"`` failed
        at every run's end, and a NaN limit kept nothing)."""
        for name in ("keep_errors", "keep_interrupted"):
            if type(getattr(self, name)) is not bool:
                raise TypeError(
                    f"TailSamplingPolicy({name}=...) must be True or False, "
                    f"not {shown(getattr(self, name))}"
                )
        ratio = number_of(self.keep_ratio)
        if ratio is None:
            raise TypeError(
                f"TailSamplingPolicy(keep_ratio=...) must be a number, not {shown(self.keep_ratio)}"
            )
        if not 0.0 <= ratio <= 1.0:
            raise ValueError(
                f"TailSamplingPolicy(keep_ratio=...) must be between 0 and 1, "
                f"not {shown(self.keep_ratio)}"
            )
        object.__setattr__(self, "keep_ratio", ratio)
        for name in ("slower_than_s", "cost_over"):
            given = getattr(self, name)
            if given is not None:
                object.__setattr__(self, name, _limit(name, given, number_of(given), "a number"))
        if self.tokens_over is not None:
            tokens = _limit("tokens_over", self.tokens_over, int_of(self.tokens_over), "an int")
            object.__setattr__(self, "tokens_over", tokens)
        for name in ("max_run_spans", "max_run_bytes", "max_spans", "max_bytes"):
            given = getattr(self, name)
            bound = int_of(given)
            if bound is None:
                raise TypeError(
                    f"TailSamplingPolicy({name}=...) must be an int, not {shown(given)}"
                )
            if bound < 1:
                raise ValueError(f"TailSamplingPolicy({name}=...) must be at least 1")
            object.__setattr__(self, name, bound)


def _limit(name: str, given: object, number: _N | None, what: str) -> _N:
    """A keep-limit: ``number`` (``given`` read plain) when it is finite and >= 0."""
    return at_least_zero(f"TailSamplingPolicy({name}=...)", given, number, f"{what} or None")


@keyworded
@dataclass(frozen=True, slots=True)
class SamplerStats:
    """What a :class:`TailSampler` decided so far, and what it holds now."""

    runs_kept: int = 0
    runs_dropped: int = 0
    runs_overflowed: int = 0
    """Runs too large to hold: exported as they went, whatever the policy said."""
    spans_dropped: int = 0
    held_spans: int = 0
    held_bytes: int = 0
