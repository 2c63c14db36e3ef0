"""Figure 2's workloads counted in machine instructions, for a machine too loaded to time.

One side per process (``hand``, ``lib`` or ``bare``), one workload (``llm``, ``llm5``,
``tool``, ``run``), K units, run under callgrind with collection only inside the measured
region (the one place this script calls ``functools.reduce``)::

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \\
        --callgrind-out-file=/dev/null python -m benchmarks.instructions llm5 lib 200

``Collected`` divided by K is the instructions per unit. Instruction counts do not depend on
the other processes on the machine (CPU time here moved by 2x between runs), so the ratio of
two sides is exact and repeatable; it leaves out what the cache and the branch predictor add,
which is why figure 2's timed ratio remains the goal's measure.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from typing import Any

from .fig2_sdk_parity import (
    Sides,
    agent_run_script,
    consume,
    consume_runs,
    llm_script,
    replay,
    tool_script,
)


def _script(kind: str, k: int) -> list[Any]:
    if kind == "run":
        return agent_run_script()
    if kind == "tool":
        return tool_script(k)
    return llm_script(k, 5 if kind == "llm5" else 10)


def main(kind: str, side: str, k: int) -> None:
    sides = Sides()
    make = {"hand": sides.manual, "lib": sides.wrap, "bare": lambda s: s}[side]

    async def once(n: int) -> None:
        sides.clear()
        if kind == "run":
            await consume_runs(make, _script(kind, 0), n)
        else:
            await consume(make(replay(_script(kind, n))), n)

    loop = asyncio.new_event_loop()
    for _ in range(2):  # warm every cache
        loop.run_until_complete(once(20))
    functools.reduce(lambda _, __: loop.run_until_complete(once(k)), [0], None)  # measured
    loop.close()
    sides.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 200)
