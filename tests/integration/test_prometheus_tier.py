"""Prometheus scrapes the token and duration metrics that went through the real Collector.

configure() -> OTLP/HTTP -> the compose stack's Collector (``exporters/collector/config.yaml``)
-> its Prometheus exporter -> a real Prometheus. The names are the ones the compose config's
comment and the Grafana dashboard use (``add_metric_suffixes``): ``gen_ai_client_token_usage``
and ``gen_ai_client_operation_duration_seconds``; ``service.name`` becomes the ``job`` label.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
from _support import CHAT_DURATIONS, TOKENS, PrometheusServer, poll, record_known_metrics
from test_jaeger_tier import compose_tier
from test_prometheus import _query

from agent_otel import _attributes as A
from agent_otel.exporting._configure import configure

pytestmark = pytest.mark.heavy
SERVICE = "agent-otel-prom-tier"
TOKEN_USAGE = "gen_ai_client_token_usage"
OPERATION_DURATION = "gen_ai_client_operation_duration_seconds"


def test_prometheus_scrapes_the_collectors_token_and_duration_series(
    tmp_path: Path,
    start_prometheus: Callable[[int], PrometheusServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
    with compose_tier(tmp_path) as tier:
        tel = configure(SERVICE, endpoint=tier.otlp_http, console=False, set_global=False)
        try:
            record_known_metrics(tel.meter_provider)
        finally:
            assert tel.shutdown(30_000)  # the final collection is exported to the Collector
        server = start_prometheus(tier.prometheus)
        label = A.TOKEN_TYPE.replace(".", "_")
        expected = {kind: float(sum(values)) for kind, values in TOKENS.items()}

        def token_sums() -> dict[str, float] | None:
            rows = _query(server, f'sum by ({label}) ({TOKEN_USAGE}_sum{{job="{SERVICE}"}})')
            sums = {r["metric"][label]: float(r["value"][1]) for r in rows}
            return sums if sums == expected else None

        poll(token_sums, timeout=60, what=f"{TOKEN_USAGE}_sum == {expected} via the Collector")

        def scalar(promql: str) -> float | None:
            rows = _query(server, promql)
            return float(rows[0]["value"][1]) if rows else None

        count = poll(
            lambda: scalar(f'sum({OPERATION_DURATION}_count{{job="{SERVICE}"}})'),
            timeout=30,
            what="the duration count",
        )
        assert count == len(CHAT_DURATIONS)
        total = scalar(f'sum({OPERATION_DURATION}_sum{{job="{SERVICE}"}})')
        assert total is not None and math.isclose(total, sum(CHAT_DURATIONS))
        # the spec's bucket boundaries survive the Collector: le="0.64" holds 0.4 and 0.05
        le = scalar(f'sum({OPERATION_DURATION}_bucket{{job="{SERVICE}",le="0.64"}})')
        assert le == 2
