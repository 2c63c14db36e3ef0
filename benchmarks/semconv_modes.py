"""What the ``semconv`` switch costs: the same runs under v1.41.1's names and the head's.

``python -m benchmarks.semconv_modes``: figure 2's agent-run workload (one call of 10 chunks
and two tools per run) and its LLM-call workload (200 calls of 10 chunks in one run), each
through ``otel_wrapper(semconv="v1.41")`` and ``otel_wrapper(semconv="head")`` on SDKs of
their own, in interleaved rounds (CPU, ``process_time``), beside the bare stream. Prints the
median CPU per unit of each and the per-round ratio head / v1.41 of what each adds over the
bare stream. The names are resolved when the wrapper is made, so the ratio should be 1.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from agent_otel import otel_wrapper

from ._harness import Stat, added_ratio, consume, interleave, replay
from ._setup import Sdk
from .fig2_sdk_parity import agent_run_script, consume_runs, llm_script

K, ROUNDS = 200, 21


async def _measure(script: list[Any], runs: bool) -> dict[str, list[float]]:
    sdks = {mode: Sdk() for mode in ("v1.41", "head")}
    wraps = {
        mode: otel_wrapper(
            agent_name="bench",
            tracer_provider=sdk.tracer_provider,
            meter_provider=sdk.meter_provider,
            semconv=mode,  # type: ignore[typeddict-item]
        )
        for mode, sdk in sdks.items()
    }

    def measure(make: Callable[[AsyncIterator[Any]], AsyncIterator[Any]]) -> Callable[[], Any]:
        def once() -> Any:
            for sdk in sdks.values():
                sdk.clear()
            return consume_runs(make, script, K) if runs else consume(make(replay(script)), K)

        return once

    results = await interleave(
        {
            "bare": measure(lambda s: s),
            "v1.41": measure(wraps["v1.41"]),
            "head": measure(wraps["head"]),
        },
        ROUNDS,
    )
    for sdk in sdks.values():
        sdk.shutdown()
    return results


async def main() -> None:
    for label, script, runs in (
        ("agent run (1 call of 10 chunks, 2 tools)", agent_run_script(), True),
        ("LLM call of 10 chunks", llm_script(K), False),
    ):
        res = await _measure(script, runs)
        us = {name: Stat.of([v / 1000 for v in values]).median for name, values in res.items()}
        over = added_ratio(res, "head", "v1.41", "bare")
        print(
            f"per {label}: bare {us['bare']:.1f} us, v1.41 {us['v1.41']:.1f} us, "
            f"head {us['head']:.1f} us; added over bare, head / v1.41: median "
            f"{over.median:.2f} (min {over.lo:.2f}, max {over.hi:.2f})"
        )


if __name__ == "__main__":
    asyncio.run(main())
