"""Where figure 2's gap goes, per function:
``python -m benchmarks.profile_fig2 [llm|llm5|tool|run] [--opcodes]``.

Runs figure 2's workload (200 LLM calls of 10 chunks or of 5, 200 tool calls, or 20 agent
runs) through agent-otel and through the hand-written SDK calls under ``cProfile``, and prints,
per function, the calls per unit and the profiled time per unit of each side, largest
difference first. Call counts are exact and repeatable; profiled times are inflated by the
profiler and by the machine's load, so read them as shares, not as figures (figure 2 has the
unprofiled ratio). ``--opcodes`` counts the Python bytecodes each function executes per unit
instead (``sys.settrace`` opcode events): exact, independent of the machine's load, blind to
time spent in C. Their ratio, agent-otel / hand-written, is the load-free figure that follows
figure 2's timed medians (within about 0.05 here); callgrind's instruction ratio
(``benchmarks.instructions``) falls well below them: agent-otel's extra bytecodes are small
(fewer machine instructions each than the SDK's), but each pays the interpreter's dispatch.
It also prints what agent-otel's own modules run per unit, and what the workload's goal leaves
them: the goal times the hand-written total, less everything else agent-otel's side runs (the
SDK, the event loop, the replayed stream).
"""

from __future__ import annotations

import asyncio
import cProfile
import os
import pstats
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable
from types import CodeType, FrameType
from typing import Any

from .fig2_sdk_parity import GOALS, Sides, drive, workload

RUNS = 5


def _opcodes(
    make: Callable[[AsyncIterator[Any]], AsyncIterator[Any]], kind: str, sides: Sides
) -> dict[str, tuple[float, float]]:
    """Bytecodes per unit, by function (as ``(count, count)``: the table's two columns)."""
    work = workload(kind)
    units = work[1]

    async def go() -> None:
        sides.clear()
        await drive(make, work)

    asyncio.run(go())  # warm every cache
    counts: Counter[str] = Counter()

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            counts[_where(frame.f_code)] += 1
        return trace

    sys.settrace(trace)
    try:
        asyncio.run(go())
    finally:
        sys.settrace(None)
    return {key: (n / units, n / units) for key, n in counts.items()}


def _where(code: CodeType) -> str:
    """A function's row: ``agent_otel/<module path>:<name>`` for agent-otel's own code (what
    the goals leave it is reported apart), ``<file name>:<name>`` for the rest."""
    head, own, rest = code.co_filename.partition(f"{os.sep}agent_otel{os.sep}")
    where = f"agent_otel/{rest}" if own else head.rsplit(os.sep, 1)[-1]
    return f"{where}:{code.co_name}"


def _profile(
    make: Callable[[AsyncIterator[Any]], AsyncIterator[Any]], kind: str, sides: Sides
) -> dict[str, tuple[float, float]]:
    work = workload(kind)
    units = work[1]

    async def go(n: int) -> None:
        for _ in range(n):
            sides.clear()
            await drive(make, work)

    asyncio.run(go(1))  # warm every cache
    profile = cProfile.Profile()
    profile.enable()
    asyncio.run(go(RUNS))
    profile.disable()
    out: dict[str, tuple[float, float]] = {}
    stats: Any = pstats.Stats(profile)
    for (path, _line, function), (_cc, calls, tottime, _ct, _callers) in stats.stats.items():
        key = f"{path.rsplit('/', 1)[-1]}:{function}"
        n, t = out.get(key, (0.0, 0.0))
        out[key] = (n + calls / RUNS / units, t + tottime / RUNS / units * 1e6)
    return out


def main(kind: str, opcodes: bool = False) -> None:
    sides = Sides()
    measure = _opcodes if opcodes else _profile
    hand = measure(sides.manual, kind, sides)
    lib = measure(sides.wrap, kind, sides)
    sides.shutdown()
    total = {
        name: sum(n for n, _ in side.values()) for name, side in (("hand", hand), ("lib", lib))
    }
    unit = "bytecodes" if opcodes else "Python calls"
    print(
        f"per {kind}: {unit}, hand-written {total['hand']:.0f}, agent-otel {total['lib']:.0f}"
        f" ({total['lib'] / total['hand']:.3f}x)"
    )
    if opcodes:
        own = sum(n for key, (n, _) in lib.items() if key.startswith("agent_otel/"))
        goal = GOALS[kind]
        allowed = goal * total["hand"] - (total["lib"] - own)  # the rest: the SDK's and the loop's
        script = hand.get("_manual.py:manual", (0.0, 0.0))[0]  # the rest: the SDK's
        print(
            f"agent-otel's own modules run {own:.0f}; the goal, <= {goal:.2f}x, leaves them "
            f"{allowed:.0f} (the hand-written script itself runs {script:.0f})"
        )
        print(f"{'lib':>9} {'hand':>6}  function (agent-otel minus hand-written, largest first)")
    else:
        print(f"{'calls lib':>9} {'hand':>6} {'us lib':>7} {'hand':>6}  function")
    rows = []
    for key in set(hand) | set(lib):
        (ln, lt), (hn, ht) = lib.get(key, (0.0, 0.0)), hand.get(key, (0.0, 0.0))
        rows.append((lt - ht, ln, hn, lt, ht, key))
    for diff, ln, hn, lt, ht, key in sorted(rows, reverse=True)[:30]:
        if opcodes and abs(diff) >= 5:
            print(f"{ln:9.0f} {hn:6.0f}  {key}")
        elif not opcodes and (abs(diff) >= 0.5 or abs(ln - hn) >= 0.5):
            print(f"{ln:9.1f} {hn:6.1f} {lt:7.1f} {ht:6.1f}  {key}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(args[0] if args else "llm", "--opcodes" in sys.argv)
