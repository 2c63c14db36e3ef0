"""Which finished runs the tail sampler keeps, and how much it may hold while runs go on."""

from __future__ import annotations

from dataclasses import dataclass


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
        if not 0.0 <= self.keep_ratio <= 1.0:
            raise ValueError(
                "TailSamplingPolicy(keep_ratio=...) must be between 0 and 1, "
                f"not {self.keep_ratio!r}"
            )
        for name in ("max_run_spans", "max_run_bytes", "max_spans", "max_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"TailSamplingPolicy({name}=...) must be at least 1")


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
