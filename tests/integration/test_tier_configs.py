"""Every Collector-style config we ship, as the real programs read it (``validate``).

The compose stack's Collector config and every Collector config in ``exporters/scale/`` go
through our Collector build (core and contrib v0.161.0); the compose stack's Jaeger config
through Jaeger v2.13.0. ``validate`` builds every component from the file, so an unknown key,
a wrong type or a component missing from the distribution fails here. (Tempo and Grafana
configs have no reachable build: ``tests/test_exporters_static.py`` checks them.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _tier import (
    COLLECTOR_CONFIG,
    EXPORTERS,
    JAEGER_BIN,
    JAEGER_CONFIG,
    OTELCOL_BIN,
    binary,
    validate,
)

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
