#!/usr/bin/env bash
# Build the heavy suite's real trace tier from the Go module proxy, once per change:
#   tools/jaeger   -> jaeger              (Jaeger v2.13.0, module v1.76.0)
#   tools/otelcol  -> otelcol-agent-otel  (our Collector distribution, core+contrib v0.161.0)
# Each binary is cached under $AGENT_OTEL_TOOLS_CACHE (default ~/.cache/agent-otel-tools) by a
# hash of its module's go.mod, go.sum and *.go files and the Go version, then linked into
# tools/bin/ (gitignored), where the tests look. A cached binary makes this a no-op.
# Usage: tools/build.sh [jaeger|otelcol ...]   (default: both, one after the other)
set -euo pipefail
shopt -s nullglob  # a module without *.go files (tools/jaeger) hashes go.mod and go.sum alone
tools="$(cd "$(dirname "$0")" && pwd)"
cache="${AGENT_OTEL_TOOLS_CACHE:-$HOME/.cache/agent-otel-tools}"
mkdir -p "$cache" "$tools/bin"
command -v go >/dev/null || { echo "tools/build.sh: go is not installed" >&2; exit 1; }

build() {  # build <module dir> <binary name> <package>
  local dir="$tools/$1" name="$2" package="$3" key target started
  key="$( (go env GOVERSION; cd "$dir" && cat go.mod go.sum ./*.go) | sha256sum | cut -c1-16)"
  target="$cache/$name-$key/$name"
  if [ ! -x "$target" ]; then
    started=$SECONDS
    echo "tools/build.sh: building $name ($1, key $key)..."
    mkdir -p "$(dirname "$target")"
    # -mod=readonly: go.sum already holds every hash, so nothing is resolved anew.
    (cd "$dir" && nice go build -mod=readonly -buildvcs=false -trimpath -ldflags='-s -w' \
      -o "$target.partial" "$package")
    mv "$target.partial" "$target"
    echo "tools/build.sh: built $name in $((SECONDS - started)) s"
  fi
  ln -sfn "$target" "$tools/bin/$name"
  echo "tools/build.sh: $name -> $target"
}

for what in "${@:-jaeger otelcol}"; do
  for one in $what; do
    case "$one" in
      jaeger) build jaeger jaeger github.com/jaegertracing/jaeger/cmd/jaeger ;;
      otelcol) build otelcol otelcol-agent-otel . ;;
      *) echo "tools/build.sh: unknown tool $one (jaeger, otelcol)" >&2; exit 2 ;;
    esac
  done
done
