"""The real trace tier as processes: Jaeger and our Collector, built by ``tools/build.sh``.

Shared by figure 14 and the heavy suite (``tests/integration/_tier.py``). Each process runs a
config shipped in ``exporters/`` exactly as written, with only its addresses replaced by
``--set`` overrides on free loopback ports, so what is measured and tested is what a user
starts. Jaeger's query API (``/api/v3``, OTLP JSON) is how traces are read back.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._process import free_port, poll, port_open, serving

REPO = Path(__file__).resolve().parents[1]
TOOLS_BIN = REPO / "tools" / "bin"
JAEGER_BIN = TOOLS_BIN / "jaeger"
OTELCOL_BIN = TOOLS_BIN / "otelcol-agent-otel"
EXPORTERS = REPO / "exporters"
JAEGER_CONFIG = EXPORTERS / "jaeger" / "config.yaml"
COLLECTOR_CONFIG = EXPORTERS / "collector" / "config.yaml"
SCALE_AGENT = EXPORTERS / "scale" / "collector-agent.yaml"
SCALE_GATEWAY = EXPORTERS / "scale" / "collector-gateway.yaml"


def sets(overrides: Mapping[str, Any]) -> list[str]:
    """``--set key::path=value`` arguments; a value that is not a string goes in as YAML."""
    out = []
    for key, value in overrides.items():
        text = value if isinstance(value, str) else json.dumps(value)
        out.append(f"--set={key}={text}")
    return out


def own_metrics(port: int) -> dict[str, Any]:
    """Overrides moving a process's own metrics off the default port 8888 they all share."""
    reader = {"pull": {"exporter": {"prometheus": {"host": "127.0.0.1", "port": port}}}}
    return {"service::telemetry::metrics::readers": [reader]}


def validate(path: Path, config: Path, overrides: Mapping[str, Any] | None = None) -> str:
    """Run ``<binary> validate``; its output, asserting that it accepted the config."""
    done = subprocess.run(
        [str(path), "validate", f"--config={config}", *sets(overrides or {})],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{path.name} rejected {config.name}:\n{output}"
    return output


@contextmanager
def running(
    path: Path, config: Path, overrides: Mapping[str, Any], workdir: Path, ready_port: int
) -> Iterator[Path]:
    """Run ``path --config=config`` with ``overrides`` until the block ends; yields its log."""
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"{path.name}-{ready_port}.log"
    command = [str(path), f"--config={config}", *sets(overrides)]
    with serving(command, log=log, ready=lambda: port_open(ready_port), timeout=120):
        yield log


@dataclass(frozen=True)
class Jaeger:
    otlp_grpc: str  # host:port of its OTLP/gRPC receiver
    api: str  # base URL of the query service (UI and /api/v3)
    metrics_port: int  # its own metrics (otelcol_receiver_accepted_spans, ...)
    log: Path


@contextmanager
def jaeger(workdir: Path) -> Iterator[Jaeger]:
    """Jaeger with ``exporters/jaeger/config.yaml`` on free loopback ports."""
    grpc, http, query_grpc, metrics = free_port(), free_port(), free_port(), free_port()
    overrides = {
        "receivers::otlp::protocols::grpc::endpoint": f"127.0.0.1:{grpc}",
        "extensions::jaeger_query::http::endpoint": f"127.0.0.1:{http}",
        "extensions::jaeger_query::grpc::endpoint": f"127.0.0.1:{query_grpc}",
        **own_metrics(metrics),
    }
    with running(JAEGER_BIN, JAEGER_CONFIG, overrides, workdir, grpc) as log:
        api = f"http://127.0.0.1:{http}"
        # An empty store answers ``{}`` (proto JSON omits an empty list): any JSON is ready.
        poll(
            lambda: get_json(f"{api}/api/v3/services") is not None, timeout=60, what="Jaeger's API"
        )
        yield Jaeger(f"127.0.0.1:{grpc}", api, metrics, log)


@dataclass(frozen=True)
class Tier:
    otlp_http: str  # the Collector's OTLP/HTTP base URL, what the app is pointed at
    otlp_grpc: str  # host:port of its OTLP/gRPC receiver
    prometheus: int  # the Collector's Prometheus exporter port (the app's metrics)
    jaeger: Jaeger
    tempo: Jaeger | None  # a second Jaeger in Tempo's place, or None (traces to Jaeger only)
    log: Path
    metrics_port: int  # the Collector's own metrics (otelcol_receiver_accepted_log_records, ...)


@contextmanager
def compose_tier(workdir: Path, grpc_port: int | None = None, tempo: bool = True) -> Iterator[Tier]:
    """The compose stack's Collector in front of Jaeger, and of a second Jaeger as Tempo.

    ``tempo=False`` sends traces to Jaeger only (the benchmark's single path).
    """
    with jaeger(workdir / "jaeger") as first, _maybe_jaeger(workdir / "tempo", tempo) as second:
        grpc, http, prom, metrics = grpc_port or free_port(), free_port(), free_port(), free_port()
        overrides: dict[str, Any] = {
            "receivers::otlp::protocols::grpc::endpoint": f"127.0.0.1:{grpc}",
            "receivers::otlp::protocols::http::endpoint": f"127.0.0.1:{http}",
            "exporters::otlp/jaeger::endpoint": first.otlp_grpc,
            "exporters::otlp/tempo::endpoint": (second or first).otlp_grpc,
            "exporters::prometheus::endpoint": f"127.0.0.1:{prom}",
            "extensions::health_check::endpoint": f"127.0.0.1:{free_port()}",
            **own_metrics(metrics),
        }
        if second is None:
            overrides["service::pipelines::traces::exporters"] = ["otlp/jaeger"]
        with running(OTELCOL_BIN, COLLECTOR_CONFIG, overrides, workdir / "collector", http) as log:
            yield Tier(
                f"http://127.0.0.1:{http}", f"127.0.0.1:{grpc}", prom, first, second, log, metrics
            )


@contextmanager
def _maybe_jaeger(workdir: Path, wanted: bool) -> Iterator[Jaeger | None]:
    if not wanted:
        yield None
        return
    with jaeger(workdir) as second:
        yield second


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def counter(metrics_port: int, name: str) -> float:
    """The sum over all series of ``name`` on a process's own metrics endpoint."""
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name) and line[len(name)] in " {"
    )


def trace_spans(jaeger: Jaeger, trace_id: str) -> list[dict[str, Any]]:
    """Every span Jaeger holds for one trace, each with its ``service`` added; [] if none."""
    try:
        body = get_json(f"{jaeger.api}/api/v3/traces/{trace_id}")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return []
        raise
    return _spans(body)


def find_traces(jaeger: Jaeger, service: str, operation: str | None = None) -> dict[str, list[Any]]:
    """Jaeger's search (the UI's): trace id -> spans, for a service and optional operation."""
    now = datetime.datetime.now(datetime.timezone.utc)
    params = {
        "query.service_name": service,
        "query.start_time_min": (now - datetime.timedelta(hours=1)).isoformat(),
        "query.start_time_max": (now + datetime.timedelta(minutes=5)).isoformat(),
        "query.num_traces": "1000",
    }
    if operation is not None:
        params["query.operation_name"] = operation
    try:
        body = get_json(f"{jaeger.api}/api/v3/traces?{urllib.parse.urlencode(params)}")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:  # Jaeger answers a search that found nothing with 404
            return {}
        raise
    found: dict[str, list[Any]] = {}
    for span in _spans(body):
        found.setdefault(span["traceId"], []).append(span)
    return found


def _spans(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    spans = []
    for resource in body.get("result", {}).get("resourceSpans", []):
        attributes = attrs(resource.get("resource", {}).get("attributes", []))
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                spans.append({**span, "service": attributes.get("service.name")})
    return spans


def attrs(items: list[dict[str, Any]]) -> dict[str, Any]:
    """OTLP JSON key/values as a dict of Python values."""
    return {item["key"]: value(item.get("value", {})) for item in items}


def value(any_value: Mapping[str, Any]) -> Any:
    if "stringValue" in any_value:
        return any_value["stringValue"]
    if "intValue" in any_value:
        return int(any_value["intValue"])
    if "doubleValue" in any_value:
        return float(any_value["doubleValue"])
    if "boolValue" in any_value:
        return bool(any_value["boolValue"])
    if "arrayValue" in any_value:
        return [value(v) for v in any_value["arrayValue"].get("values", [])]
    return None
