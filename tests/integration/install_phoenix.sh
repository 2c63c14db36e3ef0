#!/usr/bin/env bash
# Install Arize Phoenix, the test-only trace backend of the heavy suite, into its own virtual
# environment at <repo>/.phoenix-venv. Phoenix is Elastic-2.0 licensed: it is never a runtime
# or dev dependency of agent-otel, only a receiver our integration tests export to.
# Idempotent: does nothing when the venv already holds the pinned version.
set -euo pipefail
PHOENIX_VERSION="20.26.1"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="$ROOT/.phoenix-venv"
PY="${PHOENIX_PYTHON:-python3}"

if [ -x "$VENV/bin/python" ] \
  && [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("arize-phoenix"))' 2>/dev/null || true)" = "$PHOENIX_VERSION" ]; then
  echo "phoenix $PHOENIX_VERSION already installed in $VENV"
  exit 0
fi

start=$(date +%s)
rm -rf "$VENV"
"$PY" -m venv "$VENV"
LOG="$(mktemp)"
# pip's output goes to a log, shown only when the install fails.
if ! { "$VENV/bin/pip" install --disable-pip-version-check --upgrade pip \
       && "$VENV/bin/pip" install --disable-pip-version-check "arize-phoenix==$PHOENIX_VERSION"; } >"$LOG" 2>&1; then
  tail -n 60 "$LOG" >&2
  echo "phoenix install failed" >&2
  exit 1
fi
rm -f "$LOG"
"$VENV/bin/python" -c 'import phoenix.server.main' >/dev/null
echo "phoenix $PHOENIX_VERSION installed in $VENV in $(( $(date +%s) - start ))s"
