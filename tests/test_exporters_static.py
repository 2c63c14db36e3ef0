"""Static checks of the local observability backend (docker-compose.otel.yml + exporters/).

No container runs here: the compose file is validated against the compose-spec schema, the
Prometheus config (and every dashboard query) by promtool, and the rest by parsing each
config and checking that every name one file uses is defined where it points: pipelines and
their components, exporter endpoints against the compose services and the ports their own
configs listen on, scrape targets, Grafana datasources, dashboard datasource uids and
metric names. Each checker is a pure function returning a list of problems, so the negative
tests can feed it a mutated copy and see it complain.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
COMPOSE_FILE = REPO / "docker-compose.otel.yml"
EXPORTERS = REPO / "exporters"
PROMETHEUS_CONFIG = EXPORTERS / "prometheus" / "prometheus.yml"
SCALE_SKETCHES = EXPORTERS / "scale"

# The library's metrics (DESIGN.md "Metrics") and their units.
GENAI_METRICS: dict[str, str] = {
    "gen_ai.client.operation.duration": "s",
    "gen_ai.client.token.usage": "{token}",
    "gen_ai.client.operation.time_to_first_chunk": "s",
    "gen_ai.client.operation.time_per_output_chunk": "s",
    "gen_ai.invoke_agent.duration": "s",
    "gen_ai.execute_tool.duration": "s",
}

# Compose service name of each component, and the port its image listens on by default
# when its config does not say otherwise.
COLLECTOR, JAEGER, TEMPO, PROMETHEUS, GRAFANA = (
    "collector",
    "jaeger",
    "tempo",
    "prometheus",
    "grafana",
)
PROMETHEUS_DEFAULT_PORT = 9090
GRAFANA_DEFAULT_PORT = 3000
OTLP_PORTS = {4317, 4318}
LOOPBACK = "127.0.0.1"
LISTEN_HOSTS = {"0.0.0.0", "", "localhost", "127.0.0.1", "::", "[::]"}
PIPELINE_KINDS = ("receivers", "processors", "exporters")

Config = dict[str, Any]
# service -> port -> roles served on it ("otlp-grpc", "otlp-http", "metrics", "http-api")
Listening = dict[str, dict[int, set[str]]]


# --------------------------------------------------------------------------- loading


def load_yaml(path: Path) -> Config:
    with path.open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    assert isinstance(data, dict), f"{path}: top level is not a mapping"
    return data


@dataclass
class Stack:
    compose: Config
    configs: dict[str, Config]  # compose service -> its parsed main config
    datasources: Config
    dashboard_provider: Config
    dashboards: dict[str, Config]  # file name -> parsed dashboard JSON


def mounts(service: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """(source, target, read_only) of each volume entry, short or long syntax."""
    out: list[tuple[str, str, bool]] = []
    for vol in service.get("volumes") or []:
        if isinstance(vol, str):
            parts = vol.split(":")
            source, target = parts[0], parts[1]
            read_only = len(parts) > 2 and "ro" in parts[2].split(",")
        else:
            source, target = str(vol.get("source", "")), str(vol["target"])
            read_only = bool(vol.get("read_only", False))
        out.append((source, target, read_only))
    return out


def is_bind(source: str) -> bool:
    return source.startswith(("./", "../", "/"))


def host_path(service: Mapping[str, Any], container_path: str) -> Path | None:
    """The repo file a container path comes from, through the service's bind mounts."""
    wanted = PurePosixPath(container_path)
    for source, target, _ in mounts(service):
        if not is_bind(source):
            continue
        tgt = PurePosixPath(target)
        if wanted == tgt or tgt in wanted.parents:
            return (COMPOSE_FILE.parent / source / wanted.relative_to(tgt)).resolve()
    return None


def command_args(service: Mapping[str, Any]) -> list[str]:
    command = service.get("command") or []
    return command.split() if isinstance(command, str) else [str(c) for c in command]


def flag_value(args: list[str], *names: str) -> str | None:
    """Value of `--name=value` or `--name value` (single- or double-dash spelling)."""
    for i, arg in enumerate(args):
        for name in names:
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
            if arg == name and i + 1 < len(args):
                return args[i + 1]
    return None


def service_config_path(compose: Config, name: str) -> Path:
    service = compose["services"][name]
    path = flag_value(command_args(service), "--config", "-config.file", "--config.file")
    assert path, f"service {name}: no config flag in its command"
    resolved = host_path(service, path)
    assert resolved is not None, f"service {name}: config {path} is not bind-mounted"
    return resolved


def load_stack() -> Stack:
    compose = load_yaml(COMPOSE_FILE)
    configs = {
        name: load_yaml(service_config_path(compose, name))
        for name in (COLLECTOR, JAEGER, TEMPO, PROMETHEUS)
    }
    grafana = compose["services"][GRAFANA]
    ds_dir = host_path(grafana, "/etc/grafana/provisioning/datasources")
    db_dir = host_path(grafana, "/etc/grafana/provisioning/dashboards")
    assert ds_dir, "grafana: datasource provisioning directory is not mounted"
    assert db_dir, "grafana: dashboard provisioning directory is not mounted"
    datasources = load_yaml(next(iter(sorted(ds_dir.glob("*.y*ml")))))
    provider = load_yaml(next(iter(sorted(db_dir.glob("*.y*ml")))))
    dashboards: dict[str, Config] = {}
    for prov in provider.get("providers") or []:
        folder = host_path(grafana, prov["options"]["path"])
        assert folder is not None, f"dashboard provider path {prov['options']['path']} unmounted"
        for file in sorted(folder.glob("*.json")):
            dashboards[file.name] = json.loads(file.read_text(encoding="utf-8"))
    return Stack(compose, configs, datasources, provider, dashboards)


@pytest.fixture(scope="module")
def stack() -> Stack:
    return load_stack()


# --------------------------------------------------------------------------- checkers


def check_pipelines(cfg: Mapping[str, Any]) -> list[str]:
    """Collector-style config: pipelines name defined components, defined ones are used."""
    errors: list[str] = []
    service = cfg.get("service") or {}
    pipelines = service.get("pipelines") or {}
    if not pipelines:
        errors.append("service.pipelines is empty")
    connectors = set(cfg.get("connectors") or {})
    used: dict[str, set[str]] = {kind: set() for kind in (*PIPELINE_KINDS, "connectors")}
    for pname, pipeline in pipelines.items():
        if pname.split("/")[0] not in {"traces", "metrics", "logs"}:
            errors.append(f"pipeline {pname}: unknown signal type")
        for kind in PIPELINE_KINDS:
            defined = set(cfg.get(kind) or {})
            for comp in pipeline.get(kind) or []:
                if kind != "processors" and comp in connectors:
                    used["connectors"].add(comp)
                elif comp not in defined:
                    errors.append(f"pipeline {pname}: {kind[:-1]} {comp!r} is not defined")
                else:
                    used[kind].add(comp)
        for kind in ("receivers", "exporters"):
            if not pipeline.get(kind):
                errors.append(f"pipeline {pname}: no {kind}")
    for kind in (*PIPELINE_KINDS, "connectors"):
        for comp in set(cfg.get(kind) or {}) - used[kind]:
            errors.append(f"{kind[:-1]} {comp!r} is defined but used by no pipeline")
    extensions = set(cfg.get("extensions") or {})
    enabled = list(service.get("extensions") or [])
    errors += [
        f"extension {e!r} is enabled but not defined" for e in enabled if e not in extensions
    ]
    errors += [f"extension {e!r} is defined but not enabled" for e in extensions - set(enabled)]
    return errors


def split_endpoint(endpoint: str) -> tuple[str, int | None]:
    """host and port of `host:port`, `scheme://host:port/path`."""
    rest = endpoint.split("://", 1)[-1].split("/", 1)[0]
    host, _, port = rest.rpartition(":")
    if not host:
        return rest, None
    return host, int(port) if port.isdigit() else None


def otlp_receiver_ports(receivers: Mapping[str, Any]) -> dict[int, set[str]]:
    ports: dict[int, set[str]] = {}
    for name, rcv in (receivers or {}).items():
        if name.split("/")[0] != "otlp":
            continue
        protocols = (rcv or {}).get("protocols") or {}
        for proto, default in (("grpc", 4317), ("http", 4318)):
            if proto in protocols:
                endpoint = (protocols[proto] or {}).get("endpoint")
                port = split_endpoint(endpoint)[1] if endpoint else default
                if port is not None:
                    ports.setdefault(port, set()).add(f"otlp-{proto}")
    return ports


def listen_ok(endpoint: str | None, where: str) -> list[str]:
    """Inside a container, a server must bind all interfaces or its peers cannot reach it."""
    if endpoint is None:
        return [f"{where}: no endpoint set (component defaults bind localhost)"]
    host = split_endpoint(endpoint)[0]
    if host not in {"0.0.0.0", "", "::", "[::]"}:
        return [f"{where}: listens on {host!r}, unreachable from other containers"]
    return []


def add(ports: dict[int, set[str]], port: int | None, role: str) -> None:
    if port is not None:
        ports.setdefault(port, set()).add(role)


def listening_ports(stack: Stack) -> tuple[Listening, list[str]]:
    """What each service listens on, read from its own config; plus bind-address problems."""
    errors: list[str] = []
    listening: Listening = {}

    col = stack.configs[COLLECTOR]
    ports = otlp_receiver_ports(col.get("receivers") or {})
    for name, rcv in (col.get("receivers") or {}).items():
        for proto, spec in ((rcv or {}).get("protocols") or {}).items():
            errors += listen_ok((spec or {}).get("endpoint"), f"collector receiver {name}/{proto}")
    for name, exp in (col.get("exporters") or {}).items():
        if name.split("/")[0] == "prometheus":
            errors += listen_ok(exp.get("endpoint"), f"collector exporter {name}")
            add(ports, split_endpoint(exp.get("endpoint") or "")[1], "metrics")
    for name, ext in (col.get("extensions") or {}).items():
        if ext and "endpoint" in ext:
            add(ports, split_endpoint(ext["endpoint"])[1], f"extension:{name}")
    telemetry = ((col.get("service") or {}).get("telemetry") or {}).get("metrics") or {}
    for reader in telemetry.get("readers") or []:
        prom = ((reader.get("pull") or {}).get("exporter") or {}).get("prometheus") or {}
        if prom:
            if prom.get("host") not in {"0.0.0.0", "::"}:
                errors.append("collector telemetry: prometheus reader not bound to all interfaces")
            add(ports, prom.get("port"), "metrics")
    listening[COLLECTOR] = ports

    jae = stack.configs[JAEGER]
    ports = otlp_receiver_ports(jae.get("receivers") or {})
    for proto, spec in (
        ((jae.get("receivers") or {}).get("otlp") or {}).get("protocols") or {}
    ).items():
        errors += listen_ok((spec or {}).get("endpoint"), f"jaeger receiver otlp/{proto}")
    query = (jae.get("extensions") or {}).get("jaeger_query") or {}
    http_endpoint = (query.get("http") or {}).get("endpoint")
    errors += listen_ok(http_endpoint, "jaeger_query http")
    add(ports, split_endpoint(http_endpoint or "")[1], "http-api")
    listening[JAEGER] = ports

    tem = stack.configs[TEMPO]
    receivers = (tem.get("distributor") or {}).get("receivers") or {}
    ports = otlp_receiver_ports(receivers)
    for proto, spec in (((receivers.get("otlp") or {}).get("protocols")) or {}).items():
        errors += listen_ok((spec or {}).get("endpoint"), f"tempo receiver otlp/{proto}")
    add(ports, (tem.get("server") or {}).get("http_listen_port", 3200), "http-api")
    listening[TEMPO] = ports

    services = stack.compose["services"]
    address = flag_value(command_args(services[PROMETHEUS]), "--web.listen-address")
    prom_port = split_endpoint(address)[1] if address else PROMETHEUS_DEFAULT_PORT
    listening[PROMETHEUS] = {prom_port or PROMETHEUS_DEFAULT_PORT: {"http-api"}}

    env = services[GRAFANA].get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    listening[GRAFANA] = {int(env.get("GF_SERVER_HTTP_PORT", GRAFANA_DEFAULT_PORT)): {"http"}}
    return listening, errors


def check_target(
    listening: Listening, where: str, endpoint: str, role: str | None = None
) -> list[str]:
    host, port = split_endpoint(endpoint)
    if host not in listening:
        return [f"{where}: {endpoint!r} names no compose service (have {sorted(listening)})"]
    if port is None or port not in listening[host]:
        return [
            f"{where}: {host} does not listen on {port} (it listens on {sorted(listening[host])})"
        ]
    if role is not None and role not in listening[host][port]:
        return [f"{where}: {host}:{port} serves {sorted(listening[host][port])}, not {role}"]
    return []


EXPORTER_ROLE = {"otlp": "otlp-grpc", "otlphttp": "otlp-http"}


def check_collector_exporters(collector: Config, listening: Listening) -> list[str]:
    """Exporters that send somewhere name a compose service on a port it serves."""
    errors: list[str] = []
    for name, exp in (collector.get("exporters") or {}).items():
        kind = name.split("/")[0]
        endpoint = (exp or {}).get("endpoint")
        if kind == "prometheus" or not endpoint:
            continue
        if split_endpoint(endpoint)[0] in LISTEN_HOSTS:
            errors.append(f"collector exporter {name}: sends to {endpoint}, its own container")
            continue
        errors += check_target(
            listening, f"collector exporter {name}", endpoint, EXPORTER_ROLE.get(kind)
        )
    return errors


def check_prometheus_targets(prom: Config, listening: Listening) -> list[str]:
    errors: list[str] = []
    jobs = prom.get("scrape_configs") or []
    if not jobs:
        errors.append("prometheus: no scrape_configs")
    for job in jobs:
        targets = [t for sc in job.get("static_configs") or [] for t in sc.get("targets") or []]
        if not targets:
            errors.append(f"prometheus job {job.get('job_name')}: no static targets")
        for target in targets:
            errors += check_target(
                listening, f"prometheus job {job.get('job_name')}", target, "metrics"
            )
    return errors


def check_datasources(datasources: Config, listening: Listening) -> list[str]:
    errors: list[str] = []
    seen: set[str] = set()
    for ds in datasources.get("datasources") or []:
        uid = ds.get("uid")
        if not uid:
            errors.append(f"datasource {ds.get('name')}: no fixed uid")
        elif uid in seen:
            errors.append(f"datasource uid {uid!r} is provisioned twice")
        seen.add(uid or "")
        errors += check_target(
            listening, f"datasource {ds.get('name')}", ds.get("url", ""), "http-api"
        )
        for dest in (ds.get("jsonData") or {}).get("exemplarTraceIdDestinations") or []:
            if dest.get("datasourceUid") not in {d.get("uid") for d in datasources["datasources"]}:
                errors.append(
                    f"datasource {uid}: exemplar link to unknown uid {dest.get('datasourceUid')}"
                )
    types = {ds.get("type") for ds in datasources.get("datasources") or []}
    errors += [f"no {t} datasource" for t in ("prometheus", "tempo", "jaeger") if t not in types]
    return errors


def walk(node: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(node, Mapping):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def check_dashboard_uids(dashboard: Config, datasources: Config) -> list[str]:
    by_uid = {ds["uid"]: ds["type"] for ds in datasources.get("datasources") or [] if ds.get("uid")}
    errors: list[str] = []
    refs = [n["datasource"] for n in walk(dashboard) if isinstance(n.get("datasource"), Mapping)]
    if not refs:
        errors.append("dashboard references no datasource by uid")
    for ref in refs:
        uid, kind = ref.get("uid"), ref.get("type")
        if uid not in by_uid:
            errors.append(f"dashboard: datasource uid {uid!r} is not provisioned")
        elif kind and kind != by_uid[uid]:
            errors.append(f"dashboard: uid {uid!r} is a {by_uid[uid]}, not a {kind}")
    return errors


def prometheus_name(otel_name: str, unit: str, add_suffixes: bool) -> str:
    """The OTLP->Prometheus name the Collector's prometheus exporter gives a histogram.

    Dots become underscores; with add_metric_suffixes the unit is appended in Prometheus
    words ("s" -> "_seconds"), and annotation units in braces ("{token}") add nothing.
    """
    name = otel_name.replace(".", "_")
    suffix = {"s": "seconds", "ms": "milliseconds", "By": "bytes"}.get(unit, "")
    if add_suffixes and suffix and not name.endswith("_" + suffix):
        name += "_" + suffix
    return name


HISTOGRAM_SERIES = re.compile(r"\b([a-z_:][a-z0-9_:]*?)_(?:bucket|sum|count)\b")


def dashboard_exprs(dashboard: Config) -> list[str]:
    exprs = [n["expr"] for n in walk(dashboard) if isinstance(n.get("expr"), str)]
    for var in (dashboard.get("templating") or {}).get("list") or []:
        query = var.get("query")
        query = query.get("query") if isinstance(query, Mapping) else query
        if isinstance(query, str):
            exprs.append(query)
    return exprs


def check_dashboard_metrics(dashboard: Config, collector: Config) -> list[str]:
    exporter = next(
        (
            e
            for n, e in (collector.get("exporters") or {}).items()
            if n.split("/")[0] == "prometheus"
        ),
        None,
    )
    if exporter is None:
        return ["collector has no prometheus exporter for the dashboard to read"]
    suffixes = bool(exporter.get("add_metric_suffixes", True))
    namespace = exporter.get("namespace")
    expected = {
        (f"{namespace}_" if namespace else "") + prometheus_name(name, unit, suffixes)
        for name, unit in GENAI_METRICS.items()
    }
    used = {m for expr in dashboard_exprs(dashboard) for m in HISTOGRAM_SERIES.findall(expr)}
    errors = [
        f"dashboard queries {m!r}, which the Collector never exposes" for m in used - expected
    ]
    errors += [f"dashboard has no panel for {m!r}" for m in sorted(expected - used)]
    return errors


IMAGE_PIN = re.compile(r"^[a-z0-9][a-z0-9._/-]*:v?\d+\.\d+\.\d+$")


def published_ports(service: Mapping[str, Any]) -> list[tuple[str | None, str, int]]:
    """(host_ip, host_port, container_port) for each published port."""
    out: list[tuple[str | None, str, int]] = []
    for entry in service.get("ports") or []:
        if isinstance(entry, Mapping):
            out.append(
                (entry.get("host_ip"), str(entry.get("published", "")), int(entry["target"]))
            )
            continue
        parts = str(entry).split("/")[0].split(":")
        ip = parts[0] if len(parts) == 3 else None
        host = parts[-2] if len(parts) >= 2 else ""
        out.append((ip, host, int(parts[-1])))
    return out


def check_compose(compose: Config) -> list[str]:
    errors: list[str] = []
    services = compose.get("services") or {}
    for needed in (COLLECTOR, JAEGER, TEMPO, PROMETHEUS, GRAFANA):
        if needed not in services:
            errors.append(f"compose: no service {needed!r}")
    for name, svc in services.items():
        image = str(svc.get("image", ""))
        if not IMAGE_PIN.match(image) or image.endswith(":latest"):
            errors.append(f"service {name}: image {image!r} is not pinned to an x.y.z tag")
        for ip, host_port, container_port in published_ports(svc):
            if ip != LOOPBACK:
                errors.append(
                    f"service {name}: port {host_port}:{container_port} is not bound to {LOOPBACK}"
                )
            if name != COLLECTOR and (
                container_port in OTLP_PORTS or host_port in {"4317", "4318"}
            ):
                errors.append(
                    f"service {name}: publishes OTLP port {container_port}; only the collector may"
                )
        for source, target, read_only in mounts(svc):
            if not is_bind(source):
                if source not in (compose.get("volumes") or {}):
                    errors.append(f"service {name}: named volume {source!r} is not declared")
                continue
            if not (COMPOSE_FILE.parent / source).exists():
                errors.append(f"service {name}: mounted {source} does not exist in the repo")
            if not read_only:
                errors.append(f"service {name}: config mount {source} -> {target} is not read-only")
        for dep in svc.get("depends_on") or []:
            if dep not in services:
                errors.append(f"service {name}: depends on unknown service {dep!r}")
    collector_ports = {t for _, _, t in published_ports(services.get(COLLECTOR) or {})}
    if not collector_ports >= OTLP_PORTS:
        errors.append("collector: must publish both 4317 (gRPC) and 4318 (HTTP)")
    return errors


def check_jaeger_storage(jaeger: Config) -> list[str]:
    backends = set(
        (((jaeger.get("extensions") or {}).get("jaeger_storage") or {}).get("backends")) or {}
    )
    errors = [] if backends else ["jaeger: no jaeger_storage backends"]
    query = ((jaeger.get("extensions") or {}).get("jaeger_query") or {}).get("storage") or {}
    if query.get("traces") not in backends:
        errors.append(f"jaeger_query reads unknown storage {query.get('traces')!r}")
    for name, exp in (jaeger.get("exporters") or {}).items():
        if (
            name.startswith("jaeger_storage_exporter")
            and (exp or {}).get("trace_storage") not in backends
        ):
            errors.append(
                f"jaeger exporter {name} writes unknown storage {exp.get('trace_storage')!r}"
            )
    return errors


# --------------------------------------------------------------------------- tools


def tool(name: str) -> str:
    """Path to an external tool; skipped locally when missing, a failure under CI."""
    found = shutil.which(name)
    if found is None:
        reason = f"{name} is not on PATH (Debian package 'prometheus'; .ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return found


def venv_tool(name: str) -> str:
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    assert found, f"{name} is neither beside {sys.executable} nor on PATH"
    return found


# --------------------------------------------------------------------------- tests


def test_compose_matches_compose_spec_schema() -> None:
    # The schema ships inside check-jsonschema (vendor.compose-spec): no network needed.
    result = subprocess.run(
        [
            venv_tool("check-jsonschema"),
            "--builtin-schema",
            "vendor.compose-spec",
            str(COMPOSE_FILE),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_accepts_prometheus_config() -> None:
    result = subprocess.run(
        [tool("promtool"), "check", "config", str(PROMETHEUS_CONFIG)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dashboard_queries_are_valid_promql(stack: Stack, tmp_path: Path) -> None:
    # promtool parses rule expressions; Grafana's variables are replaced by plain values.
    substitutions = {"$__rate_interval": "1m", "$__range": "1h", "$__interval": "1m"}
    rules = []
    for file, dashboard in stack.dashboards.items():
        for i, expr in enumerate(dashboard_exprs(dashboard)):
            if expr.startswith("label_values("):
                continue
            for var, value in substitutions.items():
                expr = expr.replace(var, value)
            expr = re.sub(r"\$\w+", ".*", expr)
            rules.append(
                {"record": f"dashboard:{Path(file).stem.replace('-', '_')}:{i}", "expr": expr}
            )
    assert rules, "no PromQL in the dashboards"
    rule_file = tmp_path / "dashboard_rules.yml"
    rule_file.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = subprocess.run(
        [tool("promtool"), "check", "rules", str(rule_file)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_services_images_ports_and_mounts(stack: Stack) -> None:
    assert check_compose(stack.compose) == []


@pytest.mark.parametrize("service", [COLLECTOR, JAEGER])
def test_collector_style_pipelines_are_wired(stack: Stack, service: str) -> None:
    assert check_pipelines(stack.configs[service]) == []


@pytest.mark.parametrize("sketch", ["collector-agent.yaml", "collector-gateway.yaml"])
def test_scale_sketches_are_wired(sketch: str) -> None:
    cfg = load_yaml(SCALE_SKETCHES / sketch)
    assert check_pipelines(cfg) == []


def test_scale_sketches_route_by_trace_and_tail_sample() -> None:
    agent = load_yaml(SCALE_SKETCHES / "collector-agent.yaml")
    gateway = load_yaml(SCALE_SKETCHES / "collector-gateway.yaml")
    lb = agent["exporters"]["loadbalancing"]
    assert lb["routing_key"] == "traceID"
    assert agent["service"]["pipelines"]["traces"]["exporters"] == ["loadbalancing"]
    assert "tail_sampling" in gateway["service"]["pipelines"]["traces"]["processors"]
    assert split_endpoint(f"x:{lb['resolver']['dns']['port']}")[1] in otlp_receiver_ports(
        gateway["receivers"]
    )
    tempo = load_yaml(SCALE_SKETCHES / "tempo-object-storage.yaml")
    assert tempo["storage"]["trace"]["backend"] in {"s3", "gcs", "azure"}


def test_services_listen_on_all_interfaces(stack: Stack) -> None:
    assert listening_ports(stack)[1] == []


def test_collector_exporters_reach_jaeger_and_tempo_over_otlp(stack: Stack) -> None:
    listening, _ = listening_ports(stack)
    collector = stack.configs[COLLECTOR]
    assert check_collector_exporters(collector, listening) == []
    traces = collector["service"]["pipelines"]["traces"]["exporters"]
    hosts = {split_endpoint(collector["exporters"][e]["endpoint"])[0] for e in traces}
    assert {JAEGER, TEMPO} <= hosts, f"traces go to {hosts}, not to both trace stores"
    metrics = collector["service"]["pipelines"]["metrics"]["exporters"]
    assert any(e.split("/")[0] == "prometheus" for e in metrics)


def test_prometheus_scrapes_existing_services(stack: Stack) -> None:
    listening, _ = listening_ports(stack)
    prom = stack.configs[PROMETHEUS]
    assert check_prometheus_targets(prom, listening) == []
    # The app's metrics (the collector's prometheus exporter) are among the targets.
    exporter_port = next(
        split_endpoint(e["endpoint"])[1]
        for n, e in stack.configs[COLLECTOR]["exporters"].items()
        if n.split("/")[0] == "prometheus"
    )
    targets = {
        t for job in prom["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]
    }
    assert f"{COLLECTOR}:{exporter_port}" in targets


def test_jaeger_storage_names_resolve(stack: Stack) -> None:
    assert check_jaeger_storage(stack.configs[JAEGER]) == []


def test_tempo_keeps_traces_locally(stack: Stack) -> None:
    tempo = stack.configs[TEMPO]
    assert tempo["storage"]["trace"]["backend"] == "local"
    assert "metrics_generator" not in tempo, "metrics-generator would need remote write"


def test_grafana_datasources_point_at_services(stack: Stack) -> None:
    listening, _ = listening_ports(stack)
    assert check_datasources(stack.datasources, listening) == []


def test_dashboards_are_provisioned_and_reference_known_uids(stack: Stack) -> None:
    assert stack.dashboards, "no dashboard JSON under the provisioned path"
    for file, dashboard in stack.dashboards.items():
        assert dashboard.get("uid"), f"{file}: no fixed dashboard uid"
        assert check_dashboard_uids(dashboard, stack.datasources) == [], file


def test_grafana_home_dashboard_is_a_mounted_file(stack: Stack) -> None:
    grafana = stack.compose["services"][GRAFANA]
    home = (grafana.get("environment") or {}).get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
    if home is None:
        pytest.skip("no home dashboard configured")
    resolved = host_path(grafana, home)
    assert resolved is not None, f"{home} is not under a bind mount"
    assert resolved.is_file(), resolved


def test_dashboard_metric_names_match_collector_naming(stack: Stack) -> None:
    for file, dashboard in stack.dashboards.items():
        assert check_dashboard_metrics(dashboard, stack.configs[COLLECTOR]) == [], file


def test_dashboard_covers_the_issue_panels(stack: Stack) -> None:
    exprs = "\n".join(e for d in stack.dashboards.values() for e in dashboard_exprs(d))
    for needle in (
        "gen_ai_token_type",  # token usage by token type
        "gen_ai_request_model",  # ... and by model
        "histogram_quantile(0.5,",
        "histogram_quantile(0.95,",
        "gen_ai_execute_tool_duration_seconds_count",
        'error_type!=""',  # tool errors
    ):
        assert needle in exprs, needle


def test_prometheus_name_translation() -> None:
    assert (
        prometheus_name("gen_ai.client.token.usage", "{token}", True) == "gen_ai_client_token_usage"
    )
    assert (
        prometheus_name("gen_ai.client.operation.duration", "s", True)
        == "gen_ai_client_operation_duration_seconds"
    )
    assert prometheus_name("gen_ai.client.operation.duration", "s", False) == (
        "gen_ai_client_operation_duration"
    )


# --------------------------------------------------------------------------- negative


Mutation = Callable[[Stack], None]


def _undefined_exporter(s: Stack) -> None:
    s.configs[COLLECTOR]["service"]["pipelines"]["traces"]["exporters"].append("otlp/nowhere")


def _unused_processor(s: Stack) -> None:
    s.configs[COLLECTOR]["processors"]["attributes/unused"] = {"actions": []}


def _wrong_jaeger_port(s: Stack) -> None:
    s.configs[COLLECTOR]["exporters"]["otlp/jaeger"]["endpoint"] = "jaeger:4318"


def _jaeger_ui_port_for_otlp(s: Stack) -> None:
    s.configs[COLLECTOR]["exporters"]["otlp/jaeger"]["endpoint"] = "jaeger:16686"


def _unknown_service(s: Stack) -> None:
    s.configs[COLLECTOR]["exporters"]["otlp/tempo"]["endpoint"] = "tempo-typo:4317"


def _scrape_missing_port(s: Stack) -> None:
    s.configs[PROMETHEUS]["scrape_configs"][0]["static_configs"][0]["targets"] = ["collector:9999"]


def _datasource_wrong_port(s: Stack) -> None:
    s.datasources["datasources"][0]["url"] = "http://prometheus:9091"


def _dashboard_unknown_uid(s: Stack) -> None:
    dashboard = next(iter(s.dashboards.values()))
    dashboard["panels"][1]["datasource"] = {"type": "prometheus", "uid": "not-provisioned"}


def _dashboard_unsuffixed_name(s: Stack) -> None:
    s.configs[COLLECTOR]["exporters"]["prometheus"]["add_metric_suffixes"] = False


def _latest_image(s: Stack) -> None:
    s.compose["services"][TEMPO]["image"] = "grafana/tempo:latest"


def _public_port(s: Stack) -> None:
    s.compose["services"][GRAFANA]["ports"] = ["3000:3000"]


def _otlp_on_jaeger(s: Stack) -> None:
    s.compose["services"][JAEGER]["ports"].append("127.0.0.1:14317:4317")


def _missing_mount(s: Stack) -> None:
    s.compose["services"][TEMPO]["volumes"][0] = (
        "./exporters/tempo/missing.yaml:/etc/tempo/tempo.yaml:ro"
    )


def _jaeger_localhost(s: Stack) -> None:
    s.configs[JAEGER]["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"] = "localhost:4317"


def all_problems(s: Stack) -> list[str]:
    listening, bind_errors = listening_ports(s)
    errors = bind_errors + check_compose(s.compose)
    errors += check_pipelines(s.configs[COLLECTOR]) + check_pipelines(s.configs[JAEGER])
    errors += check_collector_exporters(s.configs[COLLECTOR], listening)
    errors += check_prometheus_targets(s.configs[PROMETHEUS], listening)
    errors += check_datasources(s.datasources, listening)
    errors += check_jaeger_storage(s.configs[JAEGER])
    for dashboard in s.dashboards.values():
        errors += check_dashboard_uids(dashboard, s.datasources)
        errors += check_dashboard_metrics(dashboard, s.configs[COLLECTOR])
    return errors


def test_the_real_stack_has_no_problems(stack: Stack) -> None:
    assert all_problems(stack) == []


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_undefined_exporter, "exporter 'otlp/nowhere' is not defined"),
        (_unused_processor, "processor 'attributes/unused' is defined but used by no pipeline"),
        (_wrong_jaeger_port, "jaeger does not listen on 4318"),
        (_jaeger_ui_port_for_otlp, "serves ['http-api'], not otlp-grpc"),
        (_unknown_service, "names no compose service"),
        (_scrape_missing_port, "collector does not listen on 9999"),
        (_datasource_wrong_port, "prometheus does not listen on 9091"),
        (_dashboard_unknown_uid, "uid 'not-provisioned' is not provisioned"),
        (_dashboard_unsuffixed_name, "which the Collector never exposes"),
        (_latest_image, "is not pinned"),
        (_public_port, "is not bound to 127.0.0.1"),
        (_otlp_on_jaeger, "only the collector may"),
        (_missing_mount, "does not exist in the repo"),
        (_jaeger_localhost, "unreachable from other containers"),
    ],
)
def test_checkers_catch_a_broken_copy(stack: Stack, mutate: Mutation, expected: str) -> None:
    broken = copy.deepcopy(stack)
    mutate(broken)
    problems = all_problems(broken)
    assert any(expected in p for p in problems), problems
