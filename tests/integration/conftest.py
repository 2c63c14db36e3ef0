"""Fixtures of the heavy suite: real receivers started as subprocesses on loopback ports.

Phoenix and MLflow (trace backends, test tools only) come from ``install_phoenix.sh``'s and
``install_mlflow.sh``'s own venvs;
Prometheus is Debian's ``prometheus`` binary. Each waits for readiness by polling, never
by a fixed sleep, and is stopped at the end. Without the receiver installed the tests skip
locally and fail under CI (``CI=true``), so CI can never pass by skipping them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from functools import partial
from pathlib import Path

import pytest
from _support import REPO, MLflow, Phoenix, PrometheusServer, free_port, only_loopback
from benchmarks._process import http_ok, port_open, serving

PHOENIX_BIN = REPO / ".phoenix-venv" / "bin" / "phoenix"
MLFLOW_BIN = REPO / ".mlflow-venv" / "bin" / "mlflow"


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing in CI; .ci/run must install it")
    pytest.skip(f"{what} is not installed")


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    """A Phoenix server on loopback ports, telemetry and external resources off."""
    isolated, interfaces = only_loopback()
    if not isolated:
        # Phoenix's gRPC receiver listens on every interface: only run where there are none.
        pytest.skip(
            f"needs a private network namespace with only lo (found {interfaces}); "
            "run under `unshare -n` as .ci/run does"
        )
    if not PHOENIX_BIN.exists():
        _missing("Phoenix (bash tests/integration/install_phoenix.sh)")
    workdir = tmp_path_factory.mktemp("phoenix")
    http_port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(http_port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
        "PHOENIX_ENABLE_MCP_SERVER": "false",
    }
    for var in [v for v in env if v.startswith("OTEL_")]:
        del env[var]  # Phoenix must not pick up the exporter settings of the test process
    command = [str(PHOENIX_BIN), "serve"]

    def ready() -> bool:
        return http_ok(f"http://127.0.0.1:{http_port}/healthz") and port_open(grpc_port)

    with serving(command, log=workdir / "phoenix.log", ready=ready, timeout=180, env=env):
        yield Phoenix(f"http://127.0.0.1:{http_port}", f"http://127.0.0.1:{grpc_port}")


@pytest.fixture(scope="session")
def mlflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MLflow]:
    """``mlflow server`` on a loopback port, a SQLite store in a temporary folder."""
    isolated, interfaces = only_loopback()
    if not isolated:
        pytest.skip(f"needs a private network namespace with only lo (found {interfaces})")
    if not MLFLOW_BIN.exists():
        _missing("MLflow (bash tests/integration/install_mlflow.sh)")
    workdir = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MLFLOW_"))}
    env.update({"MLFLOW_ENABLE_TELEMETRY": "false", "DO_NOT_TRACK": "true"})
    command = [
        str(MLFLOW_BIN),
        "server",
        "--host=127.0.0.1",
        f"--port={port}",
        "--workers=1",
        f"--backend-store-uri=sqlite:///{workdir / 'mlflow.db'}",
        f"--default-artifact-root={workdir / 'artifacts'}",
    ]
    ready = partial(http_ok, f"http://127.0.0.1:{port}/health")
    with serving(command, log=workdir / "mlflow.log", ready=ready, timeout=240, env=env):
        yield MLflow(f"http://127.0.0.1:{port}")


@pytest.fixture
def start_prometheus(tmp_path: Path) -> Iterator[object]:
    """A factory: start Prometheus scraping 127.0.0.1:<port> every second."""
    binary = shutil.which("prometheus")
    if binary is None:
        _missing("prometheus (apt-get install prometheus)")

    def start(target_port: int) -> PrometheusServer:
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: agent-otel\n    scrape_interval: 1s\n"
            # as exporters/prometheus/prometheus.yml: the job is the app's service.name
            "    honor_labels: true\n"
            f"    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n"
        )
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        command = [
            str(binary),
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ]
        ready = partial(http_ok, f"{url}/-/ready")
        servers.enter_context(
            serving(command, log=tmp_path / "prometheus.log", ready=ready, timeout=60)
        )
        return PrometheusServer(url)

    with ExitStack() as servers:
        yield start
