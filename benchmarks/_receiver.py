"""A small real OTLP receiver for the load test and the throughput figure, in its own process.

It decodes every request with the real ``opentelemetry-proto`` messages (OTLP/HTTP protobuf,
plain or gzip/deflate, and OTLP/gRPC through grpcio) and counts the spans it received, so a
count is a wire decode, not a mock exporter's tally. Metric sums are kept as their latest
cumulative value per name and attributes. Not Phoenix: Phoenix stores each span in SQLite, so
its ingest rate, not the exporter path, would set the ceiling being measured.

Run it as ``python -m benchmarks._receiver [LATENCY_MS]`` (a delay added to every trace
request stands in for a collector across a network): it prints one JSON line with its ports, serves
``GET /stats`` (JSON) beside ``/v1/traces`` and ``/v1/metrics``, and exits when its standard
input closes. ``Receiver`` starts and reads it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import zlib
from collections.abc import Callable
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class _Store:
    def __init__(self, latency_s: float = 0.0) -> None:
        self.latency_s = latency_s  # added to every trace request: a collector further away
        self.lock = threading.Lock()
        self.spans = 0
        self.requests = 0
        self.sums: dict[str, dict[str, Any]] = {}

    def traces(self, request: Any) -> None:
        count = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
        if self.latency_s:
            time.sleep(self.latency_s)
        with self.lock:
            self.spans += count
            self.requests += 1

    def metrics(self, request: Any) -> None:
        with self.lock:
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        if metric.WhichOneof("data") != "sum":
                            continue
                        for point in metric.sum.data_points:
                            attrs = {a.key: _any_value(a.value) for a in point.attributes}
                            key = metric.name + json.dumps(attrs, sort_keys=True)
                            value = point.as_int if point.HasField("as_int") else point.as_double
                            self.sums[key] = {"name": metric.name, "attributes": attrs,
                                              "value": value}  # fmt: skip

    def stats(self) -> dict[str, Any]:
        with self.lock:
            sums = list(self.sums.values())
            return {"spans": self.spans, "requests": self.requests, "sums": sums}


def _any_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def _decode(body: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return zlib.decompress(body, 16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompress(body)
    return body


def _http_server(store: _Store) -> ThreadingHTTPServer:
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as m
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as t

    routes: dict[str, tuple[Any, Callable[[Any], None], bytes]] = {
        "/v1/traces": (t.ExportTraceServiceRequest, store.traces,
                       t.ExportTraceServiceResponse().SerializeToString()),
        "/v1/metrics": (m.ExportMetricsServiceRequest, store.metrics,
                        m.ExportMetricsServiceResponse().SerializeToString()),
    }  # fmt: skip

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # the reply's header and body writes must not wait

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            route = routes.get(self.path)
            if route is None:
                self._reply(404, b"", "text/plain")
                return
            message, keep, reply = route
            request = message()
            request.ParseFromString(_decode(body, self.headers.get("Content-Encoding", "")))
            keep(request)
            self._reply(200, reply, "application/x-protobuf")

        def do_GET(self) -> None:
            self._reply(200, json.dumps(store.stats()).encode(), "application/json")

        def _reply(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return ThreadingHTTPServer(("127.0.0.1", 0), Handler)


def _grpc_server(store: _Store) -> tuple[Any, int]:
    import grpc
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as m
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc as mg
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as t
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as tg

    class Traces(tg.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            store.traces(request)
            return t.ExportTraceServiceResponse()

    class Metrics(mg.MetricsServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            store.metrics(request)
            return m.ExportMetricsServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    tg.add_TraceServiceServicer_to_server(Traces(), server)
    mg.add_MetricsServiceServicer_to_server(Metrics(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


def main() -> None:
    store = _Store(float(sys.argv[1]) / 1000 if len(sys.argv) > 1 else 0.0)
    http = _http_server(store)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    grpc_server, grpc_port = _grpc_server(store)
    print(json.dumps({"http": http.server_address[1], "grpc": grpc_port}), flush=True)
    sys.stdin.read()  # until the parent closes our stdin (or dies)
    grpc_server.stop(0)
    http.shutdown()


class Receiver:
    """The receiver process: ``http_url`` (OTLP/HTTP base), ``grpc_url``, ``stats()``."""

    def __init__(self, latency_ms: float = 0.0) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self._process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks._receiver", str(latency_ms)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self.close()
            raise RuntimeError("the OTLP receiver did not start")
        ports = json.loads(line)
        self.http_url = f"http://127.0.0.1:{ports['http']}"
        self.grpc_url = f"http://127.0.0.1:{ports['grpc']}"

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.http_url}/stats", timeout=10) as response:
            stats: dict[str, Any] = json.load(response)
        return stats

    def spans(self) -> int:
        return int(self.stats()["spans"])

    def sum_of(self, name: str, **attributes: Any) -> float:
        """The sum over data points of metric ``name`` whose attributes include these."""
        return sum(
            p["value"]
            for p in self.stats()["sums"]
            if p["name"] == name and all(p["attributes"].get(k) == v for k, v in attributes.items())
        )

    def wait_spans(self, at_least: int, timeout: float = 30.0) -> int:
        """Poll until ``at_least`` spans arrived (or the deadline passed); the count then."""
        deadline = time.monotonic() + timeout
        while (count := self.spans()) < at_least and time.monotonic() < deadline:
            time.sleep(0.05)
        return count

    def close(self) -> None:
        if self._process.poll() is None:
            if self._process.stdin is not None:
                self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait(timeout=10)
        if self._process.stdout is not None:
            self._process.stdout.close()

    def __enter__(self) -> Receiver:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


if __name__ == "__main__":
    main()
