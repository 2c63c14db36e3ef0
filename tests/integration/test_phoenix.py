"""Export a traced run to a real Arize Phoenix over OTLP/HTTP and OTLP/gRPC, read it back.

Phoenix's REST API (``GET /v1/projects/{project}/spans/otlpv1?trace_id=...``) returns the
spans in OTLP JSON shape. Phoenix keeps names, ids, parent ids, status and attributes (adding
its own ``llm.*`` / ``openinference.*`` keys), but not the OTel span kind: it stores its own
OpenInference kind and reports every span as SPAN_KIND_INTERNAL. So kinds are checked on an
in-memory copy of the very spans exported (same span ids), and everything else on Phoenix.
"""

from __future__ import annotations

from typing import Any

import pytest
from _support import ExpectedSpan, Phoenix, poll, record_known_run, spans_in_phoenix
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_otel.exporting._configure import configure

pytestmark = pytest.mark.heavy

STATUS_UNSET, STATUS_ERROR = 0, 2


def _value(any_value: dict[str, Any]) -> Any:
    for key in ("string_value", "bool_value", "int_value", "double_value"):
        if any_value.get(key) is not None:
            value = any_value[key]
            return int(value) if key == "int_value" else value
    array = any_value.get("array_value")
    if array is not None:
        return [_value(v) for v in array.get("values") or []]
    return None


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_run_arrives_in_phoenix_as_the_same_tree(
    phoenix: Phoenix, protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")  # Phoenix has no OTLP metrics receiver
    local = InMemorySpanExporter()
    endpoint = phoenix.http_url if protocol == "http/protobuf" else phoenix.grpc_url
    tel = configure(
        f"agent-otel-it-{protocol.replace('/', '-')}",
        endpoint=endpoint,
        protocol=protocol,
        console=False,
        set_global=False,
        span_processors=[SimpleSpanProcessor(local)],
    )
    try:
        expected = record_known_run(tel.tracer_provider)
        assert tel.force_flush(20_000)
    finally:
        assert tel.shutdown()

    sent = {span.name: span for span in local.get_finished_spans()}
    for name, span in sent.items():
        if name in expected and span.context is not None:
            expected[name].span_id = span.context.span_id
    assert {name: span.kind for name, span in sent.items()} == {
        name: spec.kind for name, spec in expected.items()
    }
    trace_id = format(next(iter(sent.values())).context.trace_id, "032x")

    received = poll(
        lambda: (s := spans_in_phoenix(phoenix, trace_id)) and len(s) >= len(expected) and s,
        timeout=60,
        what=f"{len(expected)} spans of trace {trace_id} in Phoenix",
    )
    by_name = {span["name"]: span for span in received}
    assert sorted(by_name) == sorted(expected)
    for name, spec in expected.items():
        _assert_span(by_name[name], spec, expected, trace_id)


def _assert_span(
    got: dict[str, Any], spec: ExpectedSpan, expected: dict[str, ExpectedSpan], trace_id: str
) -> None:
    assert got["trace_id"] == trace_id
    assert got["span_id"] == format(spec.span_id, "016x")
    parent = format(expected[spec.parent].span_id, "016x") if spec.parent else None
    assert got["parent_span_id"] == parent, spec.name
    attributes = {kv["key"]: _value(kv["value"]) for kv in got["attributes"] or []}
    assert attributes.items() >= spec.attributes.items(), spec.name  # Phoenix adds its own
    status = got["status"] or {}
    if spec.error:
        assert status.get("code") == STATUS_ERROR, spec.name
    else:
        assert status.get("code", STATUS_UNSET) == STATUS_UNSET, spec.name
    assert int(got["end_time_unix_nano"]) >= int(got["start_time_unix_nano"])
