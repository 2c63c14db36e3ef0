"""Figure 13: what cost, run identity and the provider stand-down add per run. The same runs of
4 spans (an LLM call with 5 chunks and usage, a tool call) through ``otel_wrapper`` with each
feature off (``prices=None``, no ids, ``stand_down_providers=False``), then with each one on
alone, and all on (the default plus three ids); CPU per run in interleaved rounds, the figure
the difference against the all-off baseline of the same round.
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from agent_otel import otel_wrapper
from agent_otel.cost import BUNDLED_PRICES

from ._harness import Row, Stat, diff, interleave, ratio, run_scripts
from .fig4_memory import _run_script

IDS = {"session_id": "session-4f1c", "user_id": "user-91", "conversation_id": "conv-7a"}
OFF = {"prices": None, "stand_down_providers": False}


def _measure(options: dict[str, Any], runs: int) -> Any:
    tracer_provider = TracerProvider()  # no processor: the recording's own cost
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    wrap = otel_wrapper(
        agent_name="bench", tracer_provider=tracer_provider, meter_provider=meter_provider,
        **options,
    )  # fmt: skip
    scripts = [_run_script(i) for i in range(runs)]

    async def once() -> float:
        cpu = time.process_time_ns()
        await run_scripts(wrap, scripts)
        return (time.process_time_ns() - cpu) / runs

    return once


async def run(quick: bool) -> list[Row]:
    runs, rounds = (100, 3) if quick else (2_000, 15)
    configs = {
        "off": {**OFF},
        "cost": {**OFF, "prices": BUNDLED_PRICES},
        "identity": {**OFF, **IDS},
        "stand_down": {**OFF, "stand_down_providers": True},
        "all": {**IDS},
    }
    res = await interleave({name: _measure(o, runs) for name, o in configs.items()}, rounds)
    fig = "13 run control"
    return [
        Row(fig, "all off: CPU per run (4 spans)", Stat.of(res["off"]), "ns"),
        Row(fig, "cost (bundled table): added CPU per run (one priced call)",
            diff(res, "cost", "off"), "ns"),
        Row(fig, "identity (3 ids on every span): added CPU per run", diff(res, "identity", "off"),
            "ns"),
        Row(fig, "provider stand-down: added CPU per run (one chat span)",
            diff(res, "stand_down", "off"), "ns"),
        Row(fig, "all on / all off, CPU per run", ratio(res, "all", "off"), "x"),
    ]  # fmt: skip
