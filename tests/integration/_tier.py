"""The real trace tier of the heavy suite: Jaeger and our Collector, run as processes.

``tools/build.sh`` builds both from the Go module proxy into ``tools/bin/`` (``.ci/run`` runs
it before this suite, which has no network). The process handling lives in
``benchmarks._tier`` (figure 14 uses it too); here each entry point first checks that the
binaries are built: without them the tests skip locally and fail under CI.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks import _tier as tier
from benchmarks._tier import (
    COLLECTOR_CONFIG,
    EXPORTERS,
    JAEGER_BIN,
    JAEGER_CONFIG,
    OTELCOL_BIN,
    SCALE_AGENT,
    SCALE_GATEWAY,
    Jaeger,
    Tier,
    attrs,
    counter,
    find_traces,
    get_json,
    own_metrics,
    running,
    trace_spans,
    validate,
)

from conftest import _missing

__all__ = [
    "COLLECTOR_CONFIG",
    "EXPORTERS",
    "JAEGER_BIN",
    "JAEGER_CONFIG",
    "OTELCOL_BIN",
    "SCALE_AGENT",
    "SCALE_GATEWAY",
    "Jaeger",
    "Tier",
    "attrs",
    "binary",
    "compose_tier",
    "counter",
    "find_traces",
    "get_json",
    "jaeger",
    "own_metrics",
    "running",
    "trace_spans",
    "validate",
]


def binary(path: Path) -> Path:
    """``path`` if ``tools/build.sh`` built it; else skip locally, fail in CI."""
    if not path.exists():
        _missing(f"{path.name} (bash tools/build.sh)")
    return path


@contextmanager
def jaeger(workdir: Path) -> Iterator[Jaeger]:
    binary(JAEGER_BIN)
    with tier.jaeger(workdir) as running_jaeger:
        yield running_jaeger


@contextmanager
def compose_tier(workdir: Path, grpc_port: int | None = None) -> Iterator[Tier]:
    """Jaeger, a second Jaeger as Tempo, and the compose stack's Collector in front."""
    binary(JAEGER_BIN)
    binary(OTELCOL_BIN)
    with tier.compose_tier(workdir, grpc_port) as running_tier:
        yield running_tier
