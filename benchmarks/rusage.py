"""What figure 2's workloads ask of the system, per unit:
``python -m benchmarks.rusage [llm|llm5|tool|run] [REPEATS]``.

Runs figure 2's workload (200 LLM calls of 10 chunks or of 5, 200 tool calls, or 20 agent
runs) through the hand-written SDK calls and through agent-otel, REPEATS times each (50 unless
given), the two sides alternating, after one warm-up run of each. It prints, per unit, the
``resource.getrusage(RUSAGE_SELF)`` deltas across the measurements: user and system CPU time,
minor and major page faults, and voluntary and involuntary context switches. Each count is also
shown as its total over all the side's units. This is the check that nothing outside the
process (system calls that block, page faults, the kernel's own time) explains figure 2's gap.

Each measurement runs on one event loop, kept for the whole process, after a full
``gc.collect()``, as figure 2's are. Linux divides CPU time between user and system by
sampling at the scheduler's tick. So system time well under a tick per measurement reads as
zero or a sliver, and a tick that lands in the kernel shows as a few milliseconds at once.
Page faults are counted exactly. A voluntary context switch is the process blocking (a system
call that waits); an involuntary one is the scheduler preempting it, which follows the
machine's load, not the workload. getrusage does not count system calls that return without
blocking; count those with ``strace -c -f`` over the same command.
"""

from __future__ import annotations

import asyncio
import gc
import resource
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

from .fig2_sdk_parity import Sides, drive, workload

KINDS = ("llm", "llm5", "tool", "run")
REPEATS = 50
FIELDS = (
    ("user CPU, us", "ru_utime"),
    ("system CPU, us", "ru_stime"),
    ("minor page faults", "ru_minflt"),
    ("major page faults", "ru_majflt"),
    ("voluntary context switches", "ru_nvcsw"),
    ("involuntary context switches", "ru_nivcsw"),
)
"""The rows printed: label, and the ``struct rusage`` field they read."""


def _usage(
    loop: asyncio.AbstractEventLoop,
    make: Callable[[AsyncIterator[Any]], AsyncIterator[Any]],
    work: tuple[list[Any], int, bool],
    sides: Sides,
) -> dict[str, float]:
    """One measurement: the getrusage deltas around one pass of the workload."""
    sides.clear()
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF)
    loop.run_until_complete(drive(make, work))
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {field: float(getattr(after, field) - getattr(before, field)) for _, field in FIELDS}


def main(kind: str, repeats: int = REPEATS) -> None:
    work = workload(kind)
    sides = Sides()
    makes = {"hand-written": sides.manual, "agent-otel": sides.wrap}
    loop = asyncio.new_event_loop()
    for make in makes.values():  # warm every cache, and the heap
        _usage(loop, make, work, sides)
    totals = {side: dict.fromkeys((f for _, f in FIELDS), 0.0) for side in makes}
    for _ in range(repeats):
        for side, make in makes.items():
            for field, value in _usage(loop, make, work, sides).items():
                totals[side][field] += value
    loop.close()
    sides.shutdown()
    units = work[1] * repeats
    hand, lib = (totals[side]["ru_utime"] for side in makes)
    print(
        f"per {kind}: getrusage(RUSAGE_SELF) deltas over {units:,} units per side"
        f" ({repeats} measurements, alternating); user CPU agent-otel / hand-written"
        f" {lib / hand:.3f}x"
    )
    print(f"{'':37} {'hand-written':>22} {'agent-otel':>22}")
    for label, field in FIELDS:
        cells = []
        for side in makes:
            total = totals[side][field]
            if field in ("ru_utime", "ru_stime"):  # seconds: per unit in us, total in ms
                cells.append(f"{total / units * 1e6:10.2f} ({total * 1e3:,.1f} ms)")
            else:
                cells.append(f"{total / units:10.4f} ({total:,.0f} in all)")
        print(f"{label + ' per unit':37} {cells[0]:>22} {cells[1]:>22}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) > 2 or (args and args[0] not in KINDS):
        raise SystemExit(f"usage: python -m benchmarks.rusage [{'|'.join(KINDS)}] [REPEATS]")
    main(args[0] if args else "llm", int(args[1]) if len(args) > 1 else REPEATS)
