"""Every Collector-style config we ship, as the real programs read it (``validate``).

The compose stack's Collector config and every Collector config in ``exporters/scale/`` go
through our Collector build (core and contrib v0.161.0); the compose stack's Jaeger config
through Jaeger v2.13.0. ``validate`` builds every component from the file, so an unknown key,
a wrong type or a component missing from the distribution fails here. Then each Collector
config is started as written (only its listening addresses moved to free loopback ports): a
component that builds but cannot start (an exporter whose queue or batching it refuses at
start, a resolver that fails hard) fails here too. (Tempo and Grafana
configs have no reachable build: ``tests/test_exporters_static.py`` checks them.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from _tier import (
    COLLECTOR_CONFIG,
    EXPORTERS,
    JAEGER_BIN,
    JAEGER_CONFIG,
    OTELCOL_BIN,
    binary,
    counter,
    own_metrics,
    running,
    validate,
)
from benchmarks._process import free_port, poll

pytestmark = pytest.mark.heavy

COLLECTOR_CONFIGS = [COLLECTOR_CONFIG, *sorted((EXPORTERS / "scale").glob("collector-*.yaml"))]


def test_the_scale_folder_has_the_collector_configs_we_expect() -> None:
    assert [p.name for p in COLLECTOR_CONFIGS[1:]] == [
        "collector-agent.yaml",
        "collector-gateway.yaml",
    ]


@pytest.mark.parametrize("config", COLLECTOR_CONFIGS, ids=lambda p: str(p.relative_to(EXPORTERS)))
def test_our_collector_accepts_every_shipped_collector_config(config: Path) -> None:
    validate(binary(OTELCOL_BIN), config)


def _listening_on_loopback(config: Path) -> dict[str, Any]:
    """Overrides moving every address the config listens on to a free loopback port."""
    text = yaml.safe_load(config.read_text())
    moved: dict[str, Any] = {}
    for protocol in text["receivers"]["otlp"]["protocols"]:
        moved[f"receivers::otlp::protocols::{protocol}::endpoint"] = f"127.0.0.1:{free_port()}"
    if "prometheus" in text["exporters"]:
        moved["exporters::prometheus::endpoint"] = f"127.0.0.1:{free_port()}"
    if "health_check" in (text.get("extensions") or {}):
        moved["extensions::health_check::endpoint"] = f"127.0.0.1:{free_port()}"
    return moved


@pytest.mark.parametrize("config", COLLECTOR_CONFIGS, ids=lambda p: str(p.relative_to(EXPORTERS)))
def test_our_collector_starts_every_shipped_collector_config(config: Path, tmp_path: Path) -> None:
    """Started, every pipeline up (its own metrics served, which the Collector starts last),
    and no error logged at start; its exporters' far ends (Jaeger, gateways, Tempo) are absent,
    as they may be when a Collector starts."""
    moved = _listening_on_loopback(config)
    grpc = int(moved["receivers::otlp::protocols::grpc::endpoint"].rsplit(":", 1)[1])
    metrics = free_port()
    with running(
        binary(OTELCOL_BIN), config, {**moved, **own_metrics(metrics)}, tmp_path, grpc
    ) as log:
        poll(lambda: counter(metrics, "otelcol_process_uptime") > 0, timeout=60, what="its metrics")
        errors = [line for line in log.read_text().splitlines() if "\terror\t" in line]
    assert "Everything is ready" in log.read_text()
    assert not errors, errors


def test_jaeger_accepts_the_compose_config() -> None:
    validate(binary(JAEGER_BIN), JAEGER_CONFIG)


def test_validate_rejects_what_the_real_collector_would_refuse(tmp_path: Path) -> None:
    """The check can fail: a misspelt key and a component outside the build are refused."""
    text = COLLECTOR_CONFIG.read_text()
    for broken in (
        text.replace("send_batch_size:", "send_batch_sise:"),
        text.replace("otlp/tempo:\n", "zipkin/tempo:\n").replace("otlp/tempo]", "zipkin/tempo]"),
    ):
        assert broken != text
        config = tmp_path / "broken.yaml"
        config.write_text(broken)
        with pytest.raises(AssertionError, match="rejected"):
            validate(binary(OTELCOL_BIN), config)
