"""An OTLP/HTTP traces receiver in a thread, for examples run as a user runs them (a process).

``with receiving() as received:`` gives the endpoint to export to
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) and keeps every span it is sent, decoded by the real
protobuf classes, with its string, int and bool attributes. ``delay_s`` holds each answer
back, as a slow or distant collector does, once the request's spans are kept. ``status``
answers every request with that HTTP status instead of 200, as a collector refusing data does
(its queue full, over its memory limit, the request too large); the spans are still kept, as
sent.
"""

from __future__ import annotations

import gzip
import http.server
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Received:
    """What a receiver was sent: each span's name and attributes, in arrival order."""

    endpoint: str
    spans: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    services: list[tuple[str, str]] = field(default_factory=list)
    """Each span's name and its resource's ``service.name``, in arrival order."""

    def named(self, prefix: str) -> list[dict[str, Any]]:
        """The attributes of every span whose name starts with ``prefix``."""
        return [attributes for name, attributes in self.spans if name.startswith(prefix)]


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind is not None else None


@contextmanager
def receiving(delay_s: float = 0.0, status: int = 200) -> Iterator[Received]:
    """Serve a traces receiver on a free local port for the block's duration."""
    received = Received(endpoint="")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            request = trace_service_pb2.ExportTraceServiceRequest()
            if self.path.endswith("/v1/traces"):  # (metrics and logs are answered, not kept)
                request.ParseFromString(body)
            for resource in request.resource_spans:
                own = {a.key: _value(a.value) for a in resource.resource.attributes}
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
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    received.endpoint = f"http://127.0.0.1:{server.server_port}/v1/traces"
    try:
        yield received
    finally:
        server.shutdown()
        server.server_close()
