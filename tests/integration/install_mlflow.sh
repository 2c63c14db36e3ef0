#!/usr/bin/env bash
# Install MLflow, the second test-only trace backend of the heavy suite, into its own virtual
# environment at <repo>/.mlflow-venv. `mlflow server` accepts OTLP/HTTP traces at /v1/traces;
# MLflow is never a runtime or dev dependency of agent-otel, only a receiver our tests export to.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
TOOL_PYTHON="${MLFLOW_PYTHON:-python3}" \
  exec bash "$HERE/install_venv.sh" "$HERE/../../.mlflow-venv" mlflow 3.17.2 mlflow.server
