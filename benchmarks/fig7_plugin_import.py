"""Figure 7: what the pytest plugin costs a test run that never uses it.

pytest imports ``agent_otel.testing.plugin`` in every run of a project that has agent-otel
installed. Each measurement is a fresh interpreter (imports are cached per process): after
``import pytest`` (the reference, measured in the same probe), the CPU time of importing the
plugin module, against importing what its fixtures load on first use (the OTel SDK, the
in-memory telemetry and the recording modules: what the plugin imported eagerly before it was
made lazy).
"""

from __future__ import annotations

import os
import subprocess
import sys

from ._harness import Row, Stat, interleave, ratio

PROBE = """
import time
t0 = time.process_time_ns()
import pytest
t1 = time.process_time_ns()
{imports}
t2 = time.process_time_ns()
print((t1 - t0) / 1e6, (t2 - t1) / 1e6)
"""
PLUGIN = "import agent_otel.testing.plugin"
FIXTURES = (
    "import agent_otel.testing.plugin, agent_otel.testing._telemetry, agent_otel.testing._clock\n"
    "from agent_otel import otel_wrapper, instrument"
)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}


def import_ms(imports: str, pytest_ms: list[float]) -> float:
    """CPU milliseconds of ``imports`` in a fresh interpreter that already imported pytest."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(imports=imports)],
        capture_output=True,
        text=True,
        check=True,
        env=_env(),
    )
    base, added = (float(x) for x in done.stdout.split())
    pytest_ms.append(base)
    return added


async def run(quick: bool) -> list[Row]:
    rounds = 3 if quick else 15
    pytest_ms: list[float] = []  # the plugin probes' own `import pytest`, one per probe
    results = await interleave(
        {
            "plugin": lambda: import_ms(PLUGIN, pytest_ms),
            "fixtures": lambda: import_ms(FIXTURES, []),
        },
        rounds,
    )
    results["pytest"] = pytest_ms[-rounds:]  # after the warm-up probe
    figure = "7 pytest plugin"
    percent = [100 * p / b for p, b in zip(results["plugin"], results["pytest"], strict=True)]
    return [
        Row(figure, "import pytest (reference), CPU", Stat.of(results["pytest"]), "ms"),
        Row(figure, "then import agent_otel.testing.plugin, CPU", Stat.of(results["plugin"]), "ms"),
        Row(
            figure,
            "then what the fixtures load on first use (the plugin's import before), CPU",
            Stat.of(results["fixtures"]),
            "ms",
            note="the OTel SDK, InMemoryTelemetry, FakeClock, otel_wrapper, instrument",
        ),
        Row(figure, "plugin import / pytest's own import", Stat.of(percent), "%"),
        Row(figure, "fixtures' imports / plugin import", ratio(results, "fixtures", "plugin"), "x"),
    ]
