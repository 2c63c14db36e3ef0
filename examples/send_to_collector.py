"""Send traces and metrics over OTLP: to the compose stack's Collector, or any OTLP endpoint.

Extra: none (the quickstart's install, ``pip install -e .``).

    docker compose -f docker-compose.otel.yml up -d
    OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 python examples/send_to_collector.py

Then open Jaeger (http://localhost:16686) or Grafana (http://localhost:3000) and look for the
service ``agent-otel-example``. ``configure()`` reads the standard ``OTEL_*`` variables
(endpoint, protocol, headers, sampler); without an endpoint this example uses the Collector's
default OTLP/HTTP address.

It reports delivery only once it is known: when nothing listens at the endpoint it says so and
sends nothing; otherwise it runs the agent three times, flushes, and prints ``delivered trace
<id>`` only if the flush finished and the OTLP exporters reported no failure (the SDK reports
export failures through the ``opentelemetry.exporter`` loggers). Exit status 1 otherwise.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
from urllib.parse import urlsplit

from opentelemetry import trace
from quickstart import SCRIPT  # the same scripted two-step agent

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import Message
from agent_otel import configure, otel_wrapper

DEFAULT_ENDPOINT = "http://localhost:4318"


class ExportFailures(logging.StreamHandler):
    """Prints and counts the warnings and errors the OTLP exporters log (refused, rejected)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setLevel(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        super().emit(record)


def listening(endpoint: str) -> bool:
    """Whether anything accepts a TCP connection at ``endpoint``'s host and port."""
    parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "localhost", port), timeout=2):
            return True
    except OSError:
        return False


async def main(runs: int = 3) -> int:
    configured = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    target = configured or DEFAULT_ENDPOINT
    if not listening(target):
        print(
            f"nothing listens at {target}: nothing was sent. Start a Collector (docker compose "
            "-f docker-compose.otel.yml up -d) or set OTEL_EXPORTER_OTLP_ENDPOINT."
        )
        return 1
    failures = ExportFailures()
    logging.getLogger("opentelemetry.exporter").addHandler(failures)
    telemetry = configure("agent-otel-example", endpoint=None if configured else DEFAULT_ENDPOINT)
    tracer = telemetry.tracer_provider.get_tracer("example")
    wrapper = otel_wrapper(agent_name="researcher")
    trace_ids = []
    for i in range(runs):
        with tracer.start_as_current_span(f"request {i}") as request:
            await ScriptedAgent(SCRIPT).invoke(
                [Message(role="user", content="What does agent-otel do?")],
                stream_wrapper=wrapper,
            )
        trace_ids.append(trace.format_trace_id(request.get_span_context().trace_id))
    flushed = telemetry.force_flush()
    telemetry.shutdown()
    if not flushed or failures.count:
        why = "the flush timed out" if not flushed else f"{failures.count} export failures"
        print(f"not delivered to {target}: {why} (see the log above)")
        return 1
    for trace_id in trace_ids:
        print(f"delivered trace {trace_id}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
