"""Importing agent_otel is inert: the OTel API only (no SDK), no thread, no global set.

``configure()`` and its ``Telemetry`` handle load the SDK when an application asks for them.
"""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys, threading
from opentelemetry import trace
before = type(trace.get_tracer_provider()).__name__
import agent_otel, agent_otel.testing
print(json.dumps({
    "threads": threading.active_count(),
    "provider_before": before,
    "provider_after": type(trace.get_tracer_provider()).__name__,
    "configure": callable(agent_otel.configure),
    "telemetry": agent_otel.Telemetry.__name__,
}))
"""


def test_import_starts_nothing_and_loads_no_sdk() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    found = json.loads(out.stdout)

    assert found["threads"] == 1
    assert found["provider_before"] == found["provider_after"] == "ProxyTracerProvider"
    assert found["configure"] is True
    assert found["telemetry"] == "Telemetry"


def test_tracing_path_imports_only_the_api() -> None:
    probe = (
        "import sys, agent_otel; "
        "print([m for m in sys.modules if m.startswith('opentelemetry.sdk')])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
