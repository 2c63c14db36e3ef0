"""An OTLP/HTTP traces receiver in a thread, for examples run as a user runs them (a process).

``with receiving() as received:`` gives the endpoint to export to
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) and keeps every span it is sent, decoded by the real
protobuf classes, with its string, int and bool attributes. ``delay_s`` holds each answer
back, as a slow or distant collector does, once the request's spans are kept. ``status``
answers every request with that HTTP status instead of 200, as a collector refusing data does
(its queue full, over its memory limit, the request too large); the spans are still kept, as
sent. ``max_bytes`` refuses a request whose body is larger with ``413``, keeping none of its
spans, as a collector (or the proxy in front of it: nginx's default is 1 MiB) does with a
request over its limit; ``refused`` counts them.
"""

from __future__ import annotations

import gzip
import http.server
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

POLL = {"poll_interval": 0.05}
"""``serve_forever``'s keywords for a test's HTTP server: its ``shutdown()`` waits out one
poll, half a second by default, at every test's teardown."""


@dataclass
class Received:
    """What a receiver was sent: each span's name and attributes, in arrival order."""

    endpoint: str
    spans: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    services: list[tuple[str, str]] = field(default_factory=list)
    """Each span's name and its resource's ``service.name``, in arrival order."""
    refused: int = 0
    """Requests answered ``413`` for being over ``max_bytes``."""
    log_records: int = 0
    """Log records sent to ``/v1/logs`` and kept (only counted)."""
    connections: list[tuple[int, str]] = field(default_factory=list)
    """For each traces request, the client's port (its connection) and the resource's
    ``service.instance.id`` (its process: each forked process has its own)."""
    garbled: int = 0
    """Traces requests that were no OTLP message (bytes of two requests mixed on one
    connection), answered ``400``."""

    def named(self, prefix: str) -> list[dict[str, Any]]:
        """The attributes of every span whose name starts with ``prefix``."""
        return [attributes for name, attributes in self.spans if name.startswith(prefix)]

    def child_environment(self) -> dict[str, str]:
        """This process's environment for a child that exports its traces (only) here,
        batched so that nothing leaves before the life event a test gives it (an exit, a
        signal, a server's shutdown)."""
        variables = {
            **os.environ,
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": self.endpoint,
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
            "OTEL_BSP_SCHEDULE_DELAY": "60000",
        }
        variables.pop("OTEL_TRACES_EXPORTER", None)
        return variables


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind is not None else None


@contextmanager
def receiving(
    delay_s: float = 0.0,
    status: int = 200,
    max_bytes: int | None = None,
    keep_alive: bool = False,
) -> Iterator[Received]:
    """Serve a traces receiver on a free local port for the block's duration."""
    received = Received(endpoint="")

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

        def do_POST(self) -> None:
            from google.protobuf.message import DecodeError
            from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if max_bytes is not None and len(body) > max_bytes:
                received.refused += 1
                self.send_response(413)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            request = trace_service_pb2.ExportTraceServiceRequest()
            if self.path.endswith("/v1/traces"):  # (metrics are answered, not kept)
                try:
                    request.ParseFromString(body)
                except DecodeError:
                    received.garbled += 1
                    self.send_response(400)
                    self.send_header("content-length", "0")
                    self.send_header("connection", "close")
                    self.end_headers()
                    return
            if self.path.endswith("/v1/logs"):
                from opentelemetry.proto.collector.logs.v1 import logs_service_pb2

                logs = logs_service_pb2.ExportLogsServiceRequest()
                logs.ParseFromString(body)
                received.log_records += sum(
                    len(scope.log_records)
                    for each in logs.resource_logs
                    for scope in each.scope_logs
                )
            for resource in request.resource_spans:
                own = {a.key: _value(a.value) for a in resource.resource.attributes}
                instance = str(own.get("service.instance.id"))
                received.connections.append((self.client_address[1], instance))
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        attributes = {a.key: _value(a.value) for a in span.attributes}
                        received.spans.append((span.name, attributes))
                        received.services.append((span.name, str(own.get("service.name"))))
            time.sleep(delay_s)
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs=POLL, daemon=True)
    thread.start()
    received.endpoint = f"http://127.0.0.1:{server.server_port}/v1/traces"
    try:
        yield received
    finally:
        server.shutdown()
        server.server_close()
