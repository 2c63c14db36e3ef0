#!/usr/bin/env bash
# Install one pinned test tool (a trace backend of the heavy suite) into its own virtual
# environment: install_venv.sh <venv-dir> <distribution> <version> <module-to-import>.
# Idempotent: does nothing when the venv already holds the pinned version. pip's output goes
# to a log, shown only when the install fails. $TOOL_PYTHON picks the interpreter.
set -euo pipefail
VENV="$1" DIST="$2" VERSION="$3" MODULE="$4"
PY="${TOOL_PYTHON:-python3}"

if [ -x "$VENV/bin/python" ] \
  && [ "$("$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('$DIST'))" 2>/dev/null || true)" = "$VERSION" ]; then
  echo "$DIST $VERSION already installed in $VENV"
  exit 0
fi

start=$(date +%s)
rm -rf "$VENV"
"$PY" -m venv "$VENV"
LOG="$(mktemp)"
if ! { "$VENV/bin/pip" install --disable-pip-version-check --upgrade pip \
       && "$VENV/bin/pip" install --disable-pip-version-check "$DIST==$VERSION"; } >"$LOG" 2>&1; then
  tail -n 60 "$LOG" >&2
  echo "$DIST install failed" >&2
  exit 1
fi
rm -f "$LOG"
"$VENV/bin/python" -c "import $MODULE" >/dev/null
echo "$DIST $VERSION installed in $VENV in $(( $(date +%s) - start ))s"
