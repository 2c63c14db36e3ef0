#!/usr/bin/env bash
# Install MLflow, the second test-only trace backend of the heavy suite, into its own virtual
# environment at <repo>/.mlflow-venv. `mlflow server` accepts OTLP/HTTP traces at /v1/traces;
# MLflow is never a runtime or dev dependency of agent-otel, only a receiver our tests export to.
# Idempotent: does nothing when the venv already holds the pinned version.
set -euo pipefail
MLFLOW_VERSION="3.17.2"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="$ROOT/.mlflow-venv"
PY="${MLFLOW_PYTHON:-python3}"

if [ -x "$VENV/bin/python" ] \
  && [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mlflow"))' 2>/dev/null || true)" = "$MLFLOW_VERSION" ]; then
  echo "mlflow $MLFLOW_VERSION already installed in $VENV"
  exit 0
fi

start=$(date +%s)
rm -rf "$VENV"
"$PY" -m venv "$VENV"
LOG="$(mktemp)"
# pip's output goes to a log, shown only when the install fails.
if ! { "$VENV/bin/pip" install --disable-pip-version-check --upgrade pip \
       && "$VENV/bin/pip" install --disable-pip-version-check "mlflow==$MLFLOW_VERSION"; } >"$LOG" 2>&1; then
  tail -n 60 "$LOG" >&2
  echo "mlflow install failed" >&2
  exit 1
fi
rm -f "$LOG"
"$VENV/bin/python" -c 'import mlflow.server' >/dev/null
echo "mlflow $MLFLOW_VERSION installed in $VENV in $(( $(date +%s) - start ))s"
