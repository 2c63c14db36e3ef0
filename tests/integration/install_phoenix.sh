#!/usr/bin/env bash
# Install Arize Phoenix, the test-only trace backend of the heavy suite, into its own virtual
# environment at <repo>/.phoenix-venv. Phoenix is Elastic-2.0 licensed: it is never a runtime
# or dev dependency of agent-otel, only a receiver our integration tests export to.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
TOOL_PYTHON="${PHOENIX_PYTHON:-python3}" \
  exec bash "$HERE/install_venv.sh" "$HERE/../../.phoenix-venv" arize-phoenix 20.26.1 phoenix.server.main
