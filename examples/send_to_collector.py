"""Send traces and metrics over OTLP: to the compose stack's Collector, or any OTLP endpoint.

    docker compose -f docker-compose.otel.yml up -d
    OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 python examples/send_to_collector.py

Then open Jaeger (http://localhost:16686) or Grafana (http://localhost:3000) and look for the
service ``agent-otel-example``. ``configure()`` reads the standard ``OTEL_*`` variables
(endpoint, protocol, headers, sampler); without an endpoint this example uses the Collector's
default OTLP/HTTP address. It prints the trace ids it sent.
"""

from __future__ import annotations

import asyncio
import os

from opentelemetry import trace
from quickstart import SCRIPT  # the same scripted two-step agent

from agent_contract.examples import ScriptedAgent
from agent_contract.protocol import Message
from agent_otel import configure, otel_wrapper

DEFAULT_ENDPOINT = "http://localhost:4318"


async def main(runs: int = 3) -> None:
    endpoint = None if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") else DEFAULT_ENDPOINT
    telemetry = configure("agent-otel-example", endpoint=endpoint)
    tracer = telemetry.tracer_provider.get_tracer("example")
    wrapper = otel_wrapper(agent_name="researcher")
    for i in range(runs):
        with tracer.start_as_current_span(f"request {i}") as request:
            await ScriptedAgent(SCRIPT).invoke(
                [Message(role="user", content="What does agent-otel do?")],
                stream_wrapper=wrapper,
            )
        print(f"sent trace {trace.format_trace_id(request.get_span_context().trace_id)}")
    flushed = telemetry.force_flush()
    telemetry.shutdown()
    # A finished flush says the exporters are done trying, not that the Collector got it.
    print("flush finished" if flushed else "flush timed out")


if __name__ == "__main__":
    asyncio.run(main())
