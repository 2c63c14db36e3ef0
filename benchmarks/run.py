"""Run the benchmark suite: ``python -m benchmarks.run [--quick] [--only 1,3] [--out PATH]``.

Prints the results table and writes it, with the machine, Python and package versions, to
``benchmarks/results/latest.md`` (and the raw rows to ``latest.json`` beside it). ``--quick``
runs every figure at a tiny N (the CI smoke run; its figures are not meaningful).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import importlib
import importlib.metadata
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python benchmarks/run.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "benchmarks"

from benchmarks._harness import Row, fmt

FIGURES = {
    "1": "fig1_passthrough",
    "2": "fig2_sdk_parity",
    "3": "fig3_peers",
    "4": "fig4_memory",  # figures 4 and 6
    "5": "fig5_dead_collector",
    "7": "fig7_plugin_import",
    "8": "fig8_capture",
    "10": "fig10_export_ceiling",
    "11": "fig11_open_runs",
    "12": "fig12_tail_sampling",
    "13": "fig13_run_control",
    "14": "fig14_scrubbing",
    "15": "fig15_frameworks",
    "16": "fig16_tier",
    "17": "fig17_long_run",
}
PACKAGES = (
    "agent-otel",
    "opentelemetry-api",
    "opentelemetry-sdk",
    "opentelemetry-exporter-otlp-proto-http",
    "openai",
    "httpx2",
    "opentelemetry-instrumentation-openai-v2",
    "opentelemetry-util-genai",
    "openinference-instrumentation-openai",
    "openinference-instrumentation",
    "opentelemetry-instrumentation-openai",
    "logfire",
)
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "latest.md"


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def environment() -> dict[str, Any]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {
        "machine": f"{_cpu()}, {os.cpu_count()} logical CPUs, {platform.machine()}",
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": versions,
    }


def table(rows: list[Row]) -> str:
    lines = [
        "| Figure | Measure | Median | Min | Max | Unit | Target | Met | Notes |",
        "| --- | --- | ---: | ---: | ---: | --- | --- | --- | --- |",
    ]
    for r in rows:
        s = r.stat
        cells = (fmt(s.median), fmt(s.lo), fmt(s.hi)) if s else ("", "", "")
        met = {True: "yes", False: "**no**", None: ""}[r.met]
        lines.append(
            f"| {r.figure} | {r.measure} | {' | '.join(cells)} | {r.unit} | {r.target} | {met} "
            f"| {r.note} |"
        )
    return "\n".join(lines)


def report(rows: list[Row], env: dict[str, Any], mode: str, seconds: float) -> str:
    packages = ", ".join(f"{k} {v}" for k, v in env["packages"].items())
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join(
        [
            f"# agent-otel benchmark results ({mode})",
            "",
            f"- Run: {when}, {seconds:.0f} s, `python -m benchmarks.run"
            f"{' --quick' if mode == 'quick' else ''}`",
            f"- Machine: {env['machine']}; {env['os']} (shared, noisy: interleaved rounds)",
            f"- Python: {env['python']}",
            f"- Packages: {packages}",
            "",
            "Median, min and max over interleaved rounds of per-round differences or ratios "
            "against a baseline measured in the same run (memory figures: single measurements).",
            "",
            table(rows),
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny N: a smoke run")
    parser.add_argument("--only", default="", help="figures, comma-separated (4 also runs 6)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results markdown file")
    args = parser.parse_args(argv)
    chosen = [f.strip() for f in args.only.split(",") if f.strip()] or list(FIGURES)
    unknown = [key for key in chosen if key not in FIGURES]
    if unknown:  # before any figure runs: a typo must not cost the minutes of those before it
        known = ", ".join(f"{key} (also 6)" if key == "4" else key for key in FIGURES)
        parser.error(f"--only: no figure {', '.join(unknown)}; the figures: {known}")
    env = environment()
    rows: list[Row] = []
    started = time.perf_counter()
    for key in chosen:
        module = importlib.import_module(f"benchmarks.{FIGURES[key]}")
        t0 = time.perf_counter()
        gc.collect()
        rows += asyncio.run(module.run(args.quick))
        print(f"figure {key}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started
    mode = "quick" if args.quick else "full"
    text = report(rows, env, mode, seconds)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    raw = {
        "mode": mode,
        "seconds": seconds,
        "environment": env,
        "rows": [
            {
                "figure": r.figure,
                "measure": r.measure,
                "median": r.stat.median if r.stat else None,
                "min": r.stat.lo if r.stat else None,
                "max": r.stat.hi if r.stat else None,
                "rounds": r.stat.n if r.stat else None,
                "unit": r.unit,
                "target": r.target,
                "met": r.met,
                "note": r.note,
                "extra": r.extra,
            }
            for r in rows
        ],
    }
    args.out.with_suffix(".json").write_text(json.dumps(raw, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
