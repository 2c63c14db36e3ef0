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
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support import (
    REPO,
    MLflow,
    Phoenix,
    PrometheusServer,
    free_port,
    only_loopback,
    poll,
    port_open,
)

PHOENIX_BIN = REPO / ".phoenix-venv" / "bin" / "phoenix"
MLFLOW_BIN = REPO / ".mlflow-venv" / "bin" / "mlflow"


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing in CI; .ci/run must install it")
    pytest.skip(f"{what} is not installed")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _log_tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as response:
        return bool(response.status == 200)


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
    log = workdir / "phoenix.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(PHOENIX_BIN), "serve"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            start_new_session=True,
        )
    try:

        def ready() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"phoenix exited ({process.returncode}):\n{_log_tail(log)}")
            return _http_ok(f"http://127.0.0.1:{http_port}/healthz") and port_open(grpc_port)

        try:
            poll(ready, timeout=180, what="Phoenix to become ready")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{_log_tail(log)}") from None
        yield Phoenix(f"http://127.0.0.1:{http_port}", f"http://127.0.0.1:{grpc_port}")
    finally:
        _stop(process)


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
    log = workdir / "mlflow.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=workdir,
            start_new_session=True,
        )  # fmt: skip
    try:

        def ready() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"mlflow exited ({process.returncode}):\n{_log_tail(log)}")
            return _http_ok(f"http://127.0.0.1:{port}/health")

        try:
            poll(ready, timeout=240, what="MLflow to become ready")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{_log_tail(log)}") from None
        yield MLflow(f"http://127.0.0.1:{port}")
    finally:
        _stop(process)


@pytest.fixture
def start_prometheus(tmp_path: Path) -> Iterator[object]:
    """A factory: start Prometheus scraping 127.0.0.1:<port> every second."""
    binary = shutil.which("prometheus")
    if binary is None:
        _missing("prometheus (apt-get install prometheus)")
    processes: list[subprocess.Popen[bytes]] = []

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
        log = tmp_path / "prometheus.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    str(binary),
                    f"--config.file={config}",
                    f"--storage.tsdb.path={tmp_path / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=tmp_path,
                start_new_session=True,
            )
        processes.append(process)
        url = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"prometheus exited ({process.returncode}):\n{_log_tail(log)}")
            return _http_ok(f"{url}/-/ready")

        poll(ready, timeout=60, what="Prometheus to become ready")
        return PrometheusServer(url)

    yield start
    for process in processes:
        _stop(process)
