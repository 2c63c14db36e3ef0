"""A real Prometheus scrapes configure()'s endpoint; its query API returns our known totals.

Exposed names (read from the scrape text of opentelemetry-exporter-prometheus): the unit
``{token}`` adds no suffix, ``s`` adds ``_seconds``:
``gen_ai_client_token_usage_{bucket,sum,count}``,
``gen_ai_client_operation_duration_seconds_{bucket,sum,count}``,
``gen_ai_invoke_agent_duration_seconds_{bucket,sum,count}``.
"""

from __future__ import annotations

import json
import math
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from _support import (
    AGENT_DURATIONS,
    CHAT_DURATIONS,
    TOKENS,
    PrometheusServer,
    poll,
    record_known_metrics,
)

from agent_otel import _attributes as A
from agent_otel.exporting._configure import configure

pytestmark = pytest.mark.heavy

TOKEN_USAGE = "gen_ai_client_token_usage"
OPERATION_DURATION = "gen_ai_client_operation_duration_seconds"
AGENT_DURATION = "gen_ai_invoke_agent_duration_seconds"


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return str(response.read().decode())


def _query(server: PrometheusServer, promql: str) -> list[dict[str, Any]]:
    url = f"{server.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    with urllib.request.urlopen(url, timeout=5) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def test_prometheus_scrapes_known_token_totals_and_duration_counts(
    start_prometheus: Callable[[int], PrometheusServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    tel = configure("agent-otel-prom", console=False, prometheus_port=0, set_global=False)
    try:
        port = tel.prometheus_port
        assert port
        record_known_metrics(tel.meter_provider)
        text = _scrape(port)
        for name in (TOKEN_USAGE, OPERATION_DURATION, AGENT_DURATION):
            for suffix in ("_bucket", "_sum", "_count"):
                assert f"\n{name}{suffix}{{" in text, f"{name}{suffix} not exposed"
        server = start_prometheus(port)

        expected_sums = {kind: float(sum(values)) for kind, values in TOKENS.items()}

        def token_sums() -> dict[str, float] | None:
            rows = _query(server, f"sum by ({A.TOKEN_TYPE.replace('.', '_')}) ({TOKEN_USAGE}_sum)")
            sums = {r["metric"][A.TOKEN_TYPE.replace(".", "_")]: float(r["value"][1]) for r in rows}
            return sums if sums == expected_sums else None

        poll(token_sums, timeout=60, what=f"{TOKEN_USAGE}_sum == {expected_sums} in Prometheus")

        def scalar(promql: str) -> float | None:
            rows = _query(server, promql)
            return float(rows[0]["value"][1]) if rows else None

        expected_count = {
            f"{TOKEN_USAGE}_count": sum(len(v) for v in TOKENS.values()),
            f"{OPERATION_DURATION}_count": len(CHAT_DURATIONS),
            f"{AGENT_DURATION}_count": len(AGENT_DURATIONS),
        }
        for series, count in expected_count.items():
            poll(lambda s=series, c=count: scalar(f"sum({s})") == c, timeout=30, what=f"{series}")
        duration_sum = poll(
            lambda: scalar(f"sum({OPERATION_DURATION}_sum)"), timeout=30, what="sum"
        )
        assert math.isclose(duration_sum, sum(CHAT_DURATIONS))
        # the spec's buckets reach Prometheus: le="0.64" holds 0.4 and 0.05 (1.3 is above)
        le = poll(
            lambda: scalar(f'sum({OPERATION_DURATION}_bucket{{le="0.64"}})'),
            timeout=30,
            what="bucket le=0.64",
        )
        assert le == 2
        # and the target is up, with the service name from configure() on target_info
        info = _query(server, 'target_info{service_name="agent-otel-prom"}')
        assert len(info) == 1
    finally:
        tel.shutdown()
