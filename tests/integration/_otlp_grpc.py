"""A real OTLP/gRPC receiver on loopback: the three collector services, keeping what arrives.

It speaks the wire protocol through the official generated stubs (``opentelemetry-proto``)
on a real ``grpcio`` server, so an exporter talking to it is the exporter talking to a
Collector. The zero-code test serves it where the distro sends by default (``localhost:4317``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc


@dataclass
class Received:
    """Every export request that arrived, by signal."""

    traces: list[trace_service_pb2.ExportTraceServiceRequest] = field(default_factory=list)
    metrics: list[metrics_service_pb2.ExportMetricsServiceRequest] = field(default_factory=list)
    logs: list[logs_service_pb2.ExportLogsServiceRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def spans(self) -> list[tuple[str, Any]]:
        """``(service.name, span)`` for every span received."""
        with self.lock:
            requests = list(self.traces)
        out = []
        for request in requests:
            for resource_spans in request.resource_spans:
                service = next(
                    (
                        a.value.string_value
                        for a in resource_spans.resource.attributes
                        if a.key == "service.name"
                    ),
                    "",
                )
                for scope in resource_spans.scope_spans:
                    out.extend((service, span) for span in scope.spans)
        return out

    def metric_names(self) -> set[str]:
        with self.lock:
            requests = list(self.metrics)
        return {
            metric.name
            for request in requests
            for resource in request.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        }


class _Traces(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, received: Received) -> None:
        self.received = received

    def Export(self, request: Any, context: Any) -> Any:
        with self.received.lock:
            self.received.traces.append(request)
        return trace_service_pb2.ExportTraceServiceResponse()


class _Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
    def __init__(self, received: Received) -> None:
        self.received = received

    def Export(self, request: Any, context: Any) -> Any:
        with self.received.lock:
            self.received.metrics.append(request)
        return metrics_service_pb2.ExportMetricsServiceResponse()


class _Logs(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, received: Received) -> None:
        self.received = received

    def Export(self, request: Any, context: Any) -> Any:
        with self.received.lock:
            self.received.logs.append(request)
        return logs_service_pb2.ExportLogsServiceResponse()


@contextmanager
def otlp_grpc_receiver(address: str = "127.0.0.1:0") -> Iterator[tuple[int, Received]]:
    """Serve OTLP/gRPC on ``address``; yields ``(port, received)``, stops on exit."""
    received = Received()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_Traces(received), server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(_Metrics(received), server)
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(_Logs(received), server)
    port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    server.start()
    try:
        yield port, received
    finally:
        server.stop(grace=None)
