"""Where figure 2's gap goes, per function: ``python -m benchmarks.profile_fig2 [llm|tool]``.

Runs figure 2's workload (200 LLM calls of 10 chunks, or 200 tool calls) through agent-otel
and through the hand-written SDK calls under ``cProfile``, and prints, per function, the calls
per unit and the profiled time per unit of each side, largest difference first. Call counts
are exact and repeatable; profiled times are inflated by the profiler and by the machine's
load, so read them as shares, not as figures (figure 2 has the unprofiled ratio).
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

from .fig2_sdk_parity import Sides, llm_script, replay, tool_script

K = 200
RUNS = 5


def _profile(
    make: Callable[[AsyncIterator[Any]], AsyncIterator[Any]], script: list[Any], sides: Sides
) -> dict[str, tuple[float, float]]:
    async def go(n: int) -> None:
        for _ in range(n):
            sides.clear()
            async for _ in make(replay(script)):
                pass

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
        out[key] = (n + calls / RUNS / K, t + tottime / RUNS / K * 1e6)
    return out


def main(kind: str) -> None:
    script = llm_script(K) if kind == "llm" else tool_script(K)
    sides = Sides()
    hand = _profile(sides.manual, script, sides)
    lib = _profile(sides.wrap, script, sides)
    sides.shutdown()
    total = {
        name: sum(n for n, _ in side.values()) for name, side in (("hand", hand), ("lib", lib))
    }
    hand_calls, lib_calls = total["hand"], total["lib"]
    print(
        f"per {kind} call: Python calls, hand-written {hand_calls:.0f}, agent-otel {lib_calls:.0f}"
    )
    print(f"{'calls lib':>9} {'hand':>6} {'us lib':>7} {'hand':>6}  function")
    rows = []
    for key in set(hand) | set(lib):
        (ln, lt), (hn, ht) = lib.get(key, (0.0, 0.0)), hand.get(key, (0.0, 0.0))
        rows.append((lt - ht, ln, hn, lt, ht, key))
    for diff, ln, hn, lt, ht, key in sorted(rows, reverse=True)[:25]:
        if abs(diff) >= 0.5 or abs(ln - hn) >= 0.5:
            print(f"{ln:9.1f} {hn:6.1f} {lt:7.1f} {ht:6.1f}  {key}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "llm")
